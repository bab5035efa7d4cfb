// Package oscillation stops a run when the agent goes round in a short
// circle of tool calls: search, read, search, read, search, read.
//
// The detector reads the run's tool calls as one sequence, across steps and in
// order, each call reduced to its key (tool name plus canonical arguments,
// rule.Call.Key); by default, results are not considered. Calls of ignored
// tools (see guard.Config.Ignore) are removed from the sequence first, and
// steps without calls change nothing.
//
// At the end of every step that adds a call, the detector looks at the tail
// of the sequence for each period p from 2 to Options.MaxPeriod, smallest
// first: it stops when the last p calls have repeated for Options.Repeats
// full cycles in a row (a b a b a b is period 2, three cycles). A cycle of one
// distinct call (a a a a a a) is no oscillation: that is package repeat's
// case. A cycle that keeps going stops again on every later step that adds a
// call to it, with a growing count of cycles.
//
// With Options.RequireIdenticalResults, calls are compared by their outcome
// (arguments plus result or error, rule.Call.Outcome) instead of their key:
// a cycle counts only while each of its calls returns what it returned last
// time round, so an agent that goes round a circle whose results keep
// changing (polling two sources, say) goes on. The cycle must still hold two
// distinct calls.
//
// A ping-pong of one tool's calls whose results repeat too stops sooner, at
// Options.SameResults full cycles (2 by default: a b a b): when the calls of
// the cycle are all of one tool, each call has a result (or an error) and
// returns what it returned the time before (rule.Call.Outcome), and no step
// since the first of those calls brought new input (rule.Facts.NewInput).
// Nothing the agent saw changed between the rounds: short-cap harnesses
// (MINT's 5 turns) end such a ping-pong before its third round. Cycles of
// up to MaxPeriod calls to different tools (handoffs, transfer_to_x then
// transfer_to_y; a status check and a wait) keep the threshold of Repeats,
// and so do calls logged without results. Evidence SameResults says which
// threshold stopped. The per-tool policies of package repeat do not apply
// here: polls of a tool declared polling there (tools.<name>.polling) that
// take turns (status of job a, of job b, of a, of b) with unchanged results
// and no new input stop at the second round too, and so do longer polls
// (status of a, a wait, status of b, a wait: see below); set SameResults
// to Repeats to let them go on.
//
// A longer circle whose results repeat stops at SameResults full cycles too:
// a cycle of MaxPeriod+1 to Options.LongPeriod calls (4 to 16 by default),
// of any tools, that holds two distinct calls, each returning what it
// returned the round before (rule.Call.Outcome), with no new input since
// the first of those calls. An agent that tours the same places of a house,
// or the same pages of a site, and sees the same things each time round
// stops at the end of its second tour. A long cycle whose results change
// (a routine of checks run again after each edit) goes on, and so do calls
// logged without results. Evidence Long says that such a cycle stopped the
// run.
//
// Both of these judge what came back, so their rounds must reach back
// before the step being judged: the calls of one step were all asked for
// before any of them came back, and a model that writes the same two edits
// twice in one reply has seen no round's results (Aider reports one outcome
// for all the edits of a reply). Such a step stops at the next step's call
// that goes on round. Cycles of Repeats rounds are judged on the calls alone
// and count the calls of one step one by one, as the reference does.
//
// In preflight, the proposed calls are appended to a copy of the sequence and
// judged the same way: the calls that would complete a cycle are refused.
// Results are unknown before a call runs, so with RequireIdenticalResults
// nothing is refused, and SameResults and LongPeriod refuse nothing either:
// a call not yet run has no result, and only Repeats cycles are refused.
//
// With Options.Warn, a step after which one more call following the cycle
// would stop the run carries an OSCILLATION_WARNING (Value: the calls of the
// cycle repeated so far at the tail; Limit: that count plus one); for a
// ping-pong or a long cycle whose results repeat, one more call with the
// same result.
//
// Memory and snapshots are bounded by MaxPeriod and LongPeriod: the detector
// keeps the last max(MaxPeriod, LongPeriod) calls (key, outcome, tool name
// and, for calls that may end up in a cycle, a short preview of the
// arguments for the evidence), two counters per period up to MaxPeriod (one
// when SameResults is Repeats), one per longer period, and the number of
// calls since the last new input. Calls with the same key share one
// preview, so that a run that goes round in circles costs no allocation:
// when the guard leaves argument fields out of the key
// (guard.Config.DropArgs, Key), the evidence shows the arguments of the
// earliest such call still held.
package oscillation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "oscillation"

// Code is the code of the detector's stops.
const Code = "OSCILLATION"

// ReasonOscillation is the reason of the detector's stops.
const ReasonOscillation rule.Reason = "oscillation"

// Defaults of the options, and the largest MaxPeriod.
const (
	DefaultMaxPeriod = 3
	DefaultRepeats   = 3
	MaxMaxPeriod     = 256
	// DefaultSameResults comes from the 190 labelled runs testdata/traces
	// had when it was chosen (it stops none of the 116 healthy runs of the
	// 217 there now): no healthy run goes twice round a cycle of one
	// tool's calls whose results repeat with no new input between (two
	// come within one call of it: a search that finds nothing, another
	// that finds something, the first again), while MINT's mbpp-6 does and
	// then ends at its 5-turn cap. Comparing calls alone, two rounds stop
	// three healthy runs (seasons searched in turn, a chess player that
	// polls its legal moves, flights searched again after the user changed
	// the request); comparing results, one (the last); without calls of one
	// tool, the two handoffs of a team come within one call.
	DefaultSameResults = 2
	// DefaultLongPeriod comes from the 245 labelled runs of
	// testdata/traces: two ALFWorld agents tour the same 6 and 7 places
	// with the same observations until their step cap, and a cycle of 4
	// to 16 calls with the same results twice round, with no new input
	// between, stops them and two other ALFWorld loops and no healthy or
	// unclear run (the longest tour is 7 calls; 8 or 32 score the same,
	// and 16 leaves room for longer tours). Periods 2 and 3 would add no
	// run that the rule does not stop already; there two agents that hand
	// over to each other, or a status check and a wait, keep the threshold
	// of Repeats.
	DefaultLongPeriod = 16
)

// MaxToolNameLen is the most bytes of a tool name that the detector keeps
// (and reports in evidence), and so that a snapshot holds.
const MaxToolNameLen = 256

// Options tune the detector. The zero value is the default: cycles of 2 or
// 3 calls, repeated 3 times, or twice when they are of one tool and their
// results repeat with no new input between (the reference's default with
// SameResults 3); and cycles of 4 to 16 calls whose results repeat, with no
// new input between, twice.
type Options struct {
	// MaxPeriod is the longest cycle looked for: 0 means 3, any other
	// value must be from 2 to MaxMaxPeriod.
	MaxPeriod int `json:"maxPeriod"`
	// Repeats is how many full cycles in a row stop the run: 0 means 3,
	// any other value must be at least 2.
	Repeats int `json:"repeats"`
	// RequireIdenticalResults compares calls by their outcome instead of
	// their key: a cycle counts only while its results repeat too.
	RequireIdenticalResults bool `json:"requireIdenticalResults,omitempty"`
	// SameResults is how many full cycles in a row stop the run when the
	// cycle's calls are of one tool, their results repeat too, and no new
	// input came in meanwhile: 0 means DefaultSameResults (2); any other
	// value must be from 2 to Repeats. At Repeats it adds nothing: that is
	// the reference's reading, and Options then reads 0 here, so that those
	// options fingerprint (and their snapshots restore) as before the rule
	// compared results.
	SameResults int `json:"sameResults,omitempty"`
	// LongPeriod is the longest cycle beyond MaxPeriod looked for among
	// calls whose results repeat with no new input between (they stop at
	// SameResults cycles, so only when SameResults is below Repeats): 0
	// means DefaultLongPeriod (16); any other value must be from 2 to
	// MaxMaxPeriod, and one at or below MaxPeriod looks for no such cycle
	// (MaxPeriod of 16 or more with LongPeriod 0 neither). A LongPeriod
	// beyond MaxPeriod with SameResults at Repeats is an error. Options
	// reads 0 when it behaves as the default and MaxPeriod when none is
	// looked for otherwise, so that the default options fingerprint as
	// they did before the rule looked for long cycles, and a run saved by
	// such a release restores under them (its long cycles counted from
	// the restore).
	LongPeriod int `json:"longPeriod,omitempty"`
	// Warn adds an OSCILLATION_WARNING to a step after which one more
	// call of the cycle would stop the run.
	Warn bool `json:"warn,omitempty"`
}

// WarningCode is the code of the detector's warnings.
const WarningCode = "OSCILLATION_WARNING"

// Evidence is the evidence of a stop (and of a refusal in preflight).
type Evidence struct {
	// Period is the number of calls in one cycle.
	Period int `json:"period"`
	// Repeats is the number of full cycles at the end of the sequence. It
	// may exceed Threshold when a cycle goes on.
	Repeats int `json:"repeats"`
	// Threshold is Options.Repeats, or Options.SameResults when
	// SameResults or Long is set.
	Threshold int `json:"threshold"`
	// SameResults reports that the cycle's calls were of one tool and
	// returned the same results each time round, with no new input
	// between: the stop came at Options.SameResults cycles.
	SameResults bool `json:"sameResults,omitempty"`
	// Long reports that the cycle was longer than Options.MaxPeriod and
	// its calls, of any tools, returned the same results each time round,
	// with no new input between: the stop came at Options.SameResults
	// cycles.
	Long bool `json:"long,omitempty"`
	// Cycle lists the calls of one cycle, oldest first, each written
	// tool(argsPreview).
	Cycle []string `json:"cycle"`
	// Tools lists the tool names of the cycle's calls, in the same order,
	// as rule.Clean shows them (escaped, and cut to 256 bytes).
	Tools []string `json:"tools"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent alternates between the same calls without getting anywhere"
}

// entry is one call of the tail of the sequence.
type entry struct {
	key canonical.Sum
	// sig is what cycles compare: the key, or with
	// RequireIdenticalResults the outcome.
	sig canonical.Sum
	// out is the call's outcome (rule.Call.Outcome): the key itself when
	// the call had no result, or when it was restored from a state that
	// kept no outcomes.
	out  canonical.Sum
	tool string
	// preview is the call's argument preview, or "" when it was not taken:
	// it is taken only for a call whose key is among the last MaxPeriod
	// calls, or that has the outcome of a call a long period back, since
	// only such a call can be part of a reported cycle.
	preview string
	// redacted reports that preview was replaced by rule.Redacted in the
	// snapshot the state was restored from, and hashed that tool is the
	// hash of the name (rule.HashName).
	redacted, hashed bool
}

// A Rule finds short cycles of calls: its options, never changed after New,
// so that one Rule serves any number of guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the tail of its sequence of calls and the counters of
// the periods.
type state struct {
	opts Options // the rule's

	// The last max(opts.MaxPeriod, opts.LongPeriod) calls, oldest first.
	tail ring.Ring[entry]
	// runs[p] counts the consecutive positions i at the end of the
	// sequence with sig(i) == sig(i-p) (runs[0] and runs[1] are unused).
	// Positions without a call p places back do not match, so runs[p]
	// stays 0 while fewer than p+1 calls have been seen.
	// The tail then holds (runs[p]+p)/p full cycles of period p.
	runs []int
	// same[p] counts the same way the positions whose outcome equals that
	// of the call p places back, both calls with a result; it is kept only
	// when opts.SameResults is below opts.Repeats (nil otherwise).
	same []int
	// long[p], for the periods from opts.MaxPeriod+1 to the longest one
	// looked for, counts as same does the positions whose outcome equals
	// that of the call p places back; it is nil when no long cycle is
	// looked for (it is kept only with same). longLive reports that one
	// of them is above 0.
	long     []int
	longLive bool
	// held[b] counts the calls of the tail with a result whose outcome
	// starts with byte b (kept with long): a call whose byte no other
	// call has matches none, so the long periods are not scanned.
	held *[256]uint16
	// fresh is the number of calls since the last step with new input
	// (those of that step included), capped at maxRun.
	fresh int
	// stepCalls is the number of calls of the newest step (the one being
	// observed, during Observe): a cycle that stops at SameResults rounds
	// because its results repeat must reach back before them, since the
	// calls of one step were all asked for before any of their results came
	// back (a model that writes the same two edits twice in one reply has
	// not seen the first round's results). The summary reads it between
	// steps, so it is saved with the counters of same results.
	stepCalls int

	// Scratch for preflight, reused.
	simRuns []int
	pending []int // indexes of the proposed calls that are not ignored

	verdict rule.Verdict
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Bounded    = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
)

// New returns a rule with these options, or an error (a
// *rule.OptionError) for every invalid option.
func New(o Options) (*Rule, error) {
	var errs []error
	if o.MaxPeriod != 0 && (o.MaxPeriod < 2 || o.MaxPeriod > MaxMaxPeriod) {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "MaxPeriod",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 2 to %d, not %d", DefaultMaxPeriod, MaxMaxPeriod, o.MaxPeriod)})
	}
	if o.Repeats != 0 && o.Repeats < 2 {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "Repeats",
			Err: fmt.Errorf("must be 0 (the default, %d) or at least 2, not %d", DefaultRepeats, o.Repeats)})
	}
	repeats := o.Repeats
	if repeats == 0 {
		repeats = DefaultRepeats
	}
	switch {
	case o.SameResults == 0:
	case o.SameResults < 2:
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "SameResults",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 2 to Repeats, not %d", DefaultSameResults, o.SameResults)})
	case o.SameResults > repeats && repeats >= 2:
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "SameResults",
			Err: fmt.Errorf("%d exceeds the repeats of %d", o.SameResults, repeats)})
	}
	maxPeriod, same := o.MaxPeriod, o.SameResults
	if maxPeriod == 0 {
		maxPeriod = DefaultMaxPeriod
	}
	if same == 0 {
		same = min(DefaultSameResults, repeats)
	}
	switch {
	case o.LongPeriod != 0 && (o.LongPeriod < 2 || o.LongPeriod > MaxMaxPeriod):
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "LongPeriod",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 2 to %d, not %d", DefaultLongPeriod, MaxMaxPeriod, o.LongPeriod)})
	case o.LongPeriod > maxPeriod && same >= repeats && repeats >= 2:
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "LongPeriod",
			Err: fmt.Errorf("%d looks for cycles that stop at SameResults rounds, but SameResults is Repeats (%d): set SameResults below Repeats, or LongPeriod to 0", o.LongPeriod, repeats)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.MaxPeriod == 0 {
		o.MaxPeriod = DefaultMaxPeriod
	}
	o.Repeats = repeats
	if o.SameResults == 0 {
		o.SameResults = min(DefaultSameResults, o.Repeats)
	}
	if o.LongPeriod == 0 {
		o.LongPeriod = DefaultLongPeriod
	}
	if o.LongPeriod < o.MaxPeriod || o.SameResults >= o.Repeats {
		o.LongPeriod = o.MaxPeriod
	}
	return &Rule{opts: o}, nil
}

// sameResults reports whether the options stop a ping-pong whose results
// repeat sooner than Repeats.
func (o *Options) sameResults() bool { return o.SameResults < o.Repeats }

// longCycles reports whether the options look for cycles beyond MaxPeriod:
// only when results stop cycles sooner than Repeats (New sets LongPeriod to
// at least MaxPeriod).
func (o *Options) longCycles() bool { return o.sameResults() && o.LongPeriod > o.MaxPeriod }

// capacity is the number of calls the tail holds.
func (o *Options) capacity() int { return max(o.MaxPeriod, o.LongPeriod) }

// NewState returns the state of a fresh run: no call seen, with a tail and
// counters of its own.
func (d *Rule) NewState() rule.State {
	s := &state{
		opts:    d.opts,
		tail:    ring.New[entry](d.opts.capacity()),
		runs:    make([]int, d.opts.MaxPeriod+1),
		simRuns: make([]int, d.opts.MaxPeriod+1),
	}
	if d.opts.sameResults() {
		s.same = make([]int, d.opts.MaxPeriod+1)
	}
	if d.opts.longCycles() {
		s.long = make([]int, d.opts.LongPeriod+1)
		s.held = new([256]uint16)
	}
	return s
}

// Name returns "oscillation".
func (d *Rule) Name() string { return Name }

// Priority returns rule.PriorityOscillation.
func (d *Rule) Priority() int { return rule.PriorityOscillation }

// Options returns the options with the defaults filled in, but SameResults
// at 0 when it adds nothing (at Repeats): those options are the rule as it
// was before it compared results, and keep their fingerprint. LongPeriod
// reads 0 at its default, when SameResults is Repeats and when MaxPeriod is
// 16 or more (no long cycle is looked for then, as at the default), and
// MaxPeriod when no long cycle is looked for otherwise.
func (d *Rule) Options() any { return d.written() }

func (d *Rule) written() Options {
	o := d.opts
	switch {
	case !o.sameResults():
		// Neither compares results: the reference's reading.
		o.SameResults, o.LongPeriod = 0, 0
	case !o.longCycles() && o.MaxPeriod >= DefaultLongPeriod:
		// The default looks for none either.
		o.LongPeriod = 0
	case !o.longCycles():
		o.LongPeriod = o.MaxPeriod
	case o.LongPeriod == DefaultLongPeriod:
		o.LongPeriod = 0
	}
	return o
}

// PriorOptions returns the options as the release before the rule looked
// for long cycles wrote them (LongPeriod at 0) when LongPeriod is not at
// its default; at the default, the options of the rule before it compared
// results (SameResults at 0) when SameResults is below Repeats; nil
// otherwise. A run saved by such a release restores under these options
// (rule.Successor), its new counters starting at zero.
func (d *Rule) PriorOptions() any {
	o := d.written()
	switch {
	case o.LongPeriod != 0:
		o.LongPeriod = 0
	case d.opts.sameResults():
		o.SameResults = 0
	default:
		return nil
	}
	return o
}

// at returns the i-th oldest call of the tail.
func (d *state) at(i int) *entry { return d.tail.Ptr(i) }

// maxRun caps the counters, so that they never overflow.
const maxRun = 1 << 62

// Observe appends the step's calls to the sequence and, if it added any,
// judges the tail.
func (d *state) Observe(f *rule.Facts) {
	d.verdict = rule.Verdict{}
	if f.NewInput {
		// No rounds count from before the input, the newest step's
		// calls among them.
		d.fresh, d.stepCalls = 0, 0
	}
	n := 0
	for i := range f.Calls {
		if c := &f.Calls[i]; !c.Ignored {
			d.push(c)
			n++
		}
	}
	if n == 0 {
		return // a step without calls changes nothing
	}
	d.stepCalls = n
	if p, cycles, same := d.judgeSame(); p > 0 {
		cycle, tools := d.tailCycle(p)
		d.verdict = d.stop(p, cycles, same, false, cycle, tools, rule.PhaseCheck)
		return
	}
	if d.longLive { // a long cycle may be under way
		if p, cycles := d.judgeLong(); p > 0 {
			cycle, tools := d.tailCycle(p)
			d.verdict = d.stop(p, cycles, false, true, cycle, tools, rule.PhaseCheck)
			return
		}
	}
	if d.opts.Warn {
		d.warn()
	}
}

// tailCycle lists the last p calls, oldest first, as tool(argsPreview) and
// as tool names.
func (d *state) tailCycle(p int) (cycle, tools []string) {
	cycle, tools = make([]string, p), make([]string, p)
	for j := 0; j < p; j++ {
		e := d.at(d.tail.Len() - p + j)
		tools[j] = rule.Clean(e.tool)
		cycle[j] = tools[j] + "(" + e.preview + ")"
	}
	return cycle, tools
}

// warn sets a warning on the verdict when one more call that follows a cycle
// at the tail would stop the run: for the smallest period p whose counter is
// one short of Repeats-1 full cycles, and whose last p calls are not all the
// same call.
func (d *state) warn() {
	for p := 2; p <= d.opts.MaxPeriod; p++ {
		// runs[p]+1 reaches need*p, and runs[p] does not (judge
		// found no stop), written so as not to overflow.
		need, run, repeats := d.opts.Repeats-1, d.runs[p], d.opts.Repeats
		short := (run+1)/p >= need && run/p < need
		if !short && d.same != nil && d.oneTool(p) && d.fresh >= d.opts.SameResults*p-1 && d.hasResult(d.tail.Len()-p) {
			// One more call with the same result as the call it
			// follows (which had one), and no new input, would
			// complete SameResults cycles: the counter may have got
			// there before the calls since the last input did (warn
			// runs only when nothing stopped).
			need, run, repeats = d.opts.SameResults-1, d.same[p], d.opts.SameResults
			short = (run+1)/p >= need
		}
		if !short {
			continue
		}
		if !d.distinctTail(p) {
			continue
		}
		calls := run + p // the calls of the cycle at the tail
		d.setWarning(p, calls, "", repeats)
		return
	}
	if p := d.longShort(); p > 0 {
		d.setWarning(p, d.long[p]+p, " with the same results", d.opts.SameResults)
	}
}

// setWarning sets the warning of a cycle of p calls at the tail, calls of
// which follow it, that one more call would complete to repeats cycles;
// with is said of the cycle ("" or " with the same results").
func (d *state) setWarning(p, calls int, with string, repeats int) {
	// The detail names tools only: the oldest call of the cycle may have
	// no preview yet (one is taken only for a call seen before).
	_, tools := d.tailCycle(p)
	d.verdict.Warnings = []rule.Warning{{
		Code: WarningCode, Metric: "cycleCalls", Value: float64(calls), Limit: float64(calls + 1),
		Ratio: float64(calls) / float64(calls+1),
		Detail: fmt.Sprintf("a cycle of %d calls (%s)%s is one call short of repeating %d times in a row",
			p, strings.Join(tools, " -> "), with, repeats),
		Feedback: warningFeedback,
	}}
}

// longShort returns the smallest long period whose cycle at the tail one
// more call with the same result as the call it follows (which had one),
// and no new input, would complete to SameResults cycles; 0 when there is
// none.
func (d *state) longShort() int {
	if !d.longLive {
		return 0
	}
	need := d.opts.SameResults - 1
	for p := d.opts.MaxPeriod + 1; p < len(d.long) && p <= d.tail.Len(); p++ {
		// (long[p]+1)/p reaches need, written so as not to overflow,
		// and the calls since the last input will span the cycles; the
		// counter may have got there first (warn runs only when nothing
		// stopped).
		if (d.long[p]+1)/p < need || d.fresh+1 < d.opts.SameResults*p {
			continue
		}
		if d.hasResult(d.tail.Len()-p) && d.distinctTail(p) && !d.shortPeriod(p) {
			return p
		}
	}
	return 0
}

// push appends a call to the tail and updates the counters.
func (d *state) push(c *rule.Call) {
	sig := c.Key
	if d.opts.RequireIdenticalResults {
		sig = c.Outcome
	}
	out := c.Key
	if c.HasResult {
		out = c.Outcome
	}
	matched, shared := false, -1
	n := d.tail.Len()
	short := min(n, d.opts.MaxPeriod)
	for p := 1; p <= short; p++ {
		e := d.at(n - p)
		if e.key == c.Key {
			matched = true
			if shared < 0 && e.preview != "" && !e.redacted {
				shared = n - p
			}
		}
		if p >= 2 {
			if e.sig != sig {
				d.runs[p] = 0
			} else if d.runs[p] < maxRun {
				d.runs[p]++
			}
			if d.same != nil {
				// A call without a result has its key as its
				// outcome: it never matches.
				if e.out != out || out == c.Key {
					d.same[p] = 0
				} else if d.same[p] < maxRun {
					d.same[p]++
				}
			}
		}
	}
	// The long periods are scanned only when a call of the tail with a
	// result has the outcome's first byte, or a counter is above 0.
	if d.long != nil && (d.longLive || (out != c.Key && d.held[out[0]] != 0)) {
		if m, sh := d.pushLong(c, out, n); m {
			matched = true
			if shared < 0 {
				shared = sh
			}
		}
	}
	if d.fresh < maxRun {
		d.fresh++
	}
	// The name is cut as a snapshot cuts it, so that a restored detector
	// reports exactly what the original does. A name equal to the newest
	// call's, which was cut so, needs no cut (the common case: checking
	// that it is UTF-8 costs more than the rest of the call).
	tool := c.Tool
	if n == 0 || d.at(n-1).tool != tool {
		tool = cutName(tool)
	}
	e := entry{key: c.Key, sig: sig, out: out, tool: tool}
	switch {
	case shared >= 0:
		e.preview = d.at(shared).preview // the same key has the same preview
	case matched:
		e.preview = c.Preview()
	}
	if d.held != nil {
		if d.tail.Full() {
			if old := d.at(0); old.out != old.key {
				d.held[old.out[0]]--
			}
		}
		if out != c.Key {
			d.held[out[0]]++
		}
	}
	d.tail.Push(e)
}

// pushLong updates the counters of the long periods for a call with this
// outcome (its key when it had no result), the tail holding n calls: it
// reports whether a call of those periods had the same outcome and key,
// and the index of one with the same key and a preview that is not
// redacted (-1 if none), whose preview the call shares.
func (d *state) pushLong(c *rule.Call, out canonical.Sum, n int) (matched bool, shared int) {
	shared = -1
	// A call without a result has its key as its outcome: it never
	// matches.
	hasResult := out != c.Key
	live := false
	for p := d.opts.MaxPeriod + 1; p < len(d.long); p++ {
		if p > n {
			d.long[p] = 0
			continue
		}
		e := d.at(n - p)
		if !hasResult || e.out != out {
			d.long[p] = 0
			continue
		}
		if d.long[p] < maxRun {
			d.long[p]++
		}
		live = true
		if e.key == c.Key {
			matched = true
			if shared < 0 && e.preview != "" && !e.redacted {
				shared = n - p
			}
		}
	}
	d.longLive = live
	return matched, shared
}

// judgeLong returns the smallest long period whose cycles at the tail, of
// calls whose results repeat with no new input between, reach SameResults,
// and the number of those cycles; 0, 0 when there is none.
func (d *state) judgeLong() (period, cycles int) {
	if !d.longLive {
		return 0, 0
	}
	need := d.opts.SameResults - 1
	for p := d.opts.MaxPeriod + 1; p < len(d.long); p++ {
		// (long[p]+p)/p >= SameResults, written so as not to overflow;
		// the fresh calls span the cycles.
		if d.long[p] == 0 || d.long[p]/p < need || d.fresh/p < d.opts.SameResults || d.inStep(d.long[p], p) {
			continue
		}
		if d.distinctTail(p) && !d.shortPeriod(p) {
			return p, d.long[p]/p + 1
		}
	}
	return 0, 0
}

// shortPeriod reports whether the keys of the last p calls of the tail
// repeat with a period of at most MaxPeriod: such a cycle is a short one,
// judged at its own period (a ping-pong of two tools keeps the threshold of
// Repeats), not a long one.
func (d *state) shortPeriod(p int) bool {
	n := d.tail.Len()
	for q := 2; q <= d.opts.MaxPeriod && q < p; q++ {
		periodic := true
		for j := n - p + q; j < n && periodic; j++ {
			periodic = d.at(j).key == d.at(j-q).key
		}
		if periodic {
			return true
		}
	}
	return false
}

// judgeSame returns the smallest period whose cycles at the tail reach
// Repeats, or SameResults when they are of one tool, their results repeat
// and no new input came in meanwhile; the number of those cycles; and
// whether it was SameResults that they reached. 0, 0, false when there is
// none.
func (d *state) judgeSame() (period, cycles int, same bool) {
	p, cycles := d.judge(d.runs)
	if d.same == nil {
		return p, cycles, false
	}
	for q := 2; q <= d.opts.MaxPeriod && (p == 0 || q < p); q++ {
		// (same[q]+q)/q >= SameResults, written so as not to overflow;
		// the fresh calls span the cycles.
		if d.same[q] == 0 || d.same[q]/q < d.opts.SameResults-1 || d.fresh/q < d.opts.SameResults || d.inStep(d.same[q], q) || !d.oneTool(q) {
			continue
		}
		if d.distinctTail(q) {
			return q, d.same[q]/q + 1, true
		}
	}
	return p, cycles, false
}

// distinctTail reports whether the last p calls of the tail (p at most its
// length) hold two distinct keys: a cycle of one call is no oscillation.
func (d *state) distinctTail(p int) bool {
	n := d.tail.Len()
	last := d.at(n - 1).key
	for j := 2; j <= p; j++ {
		if d.at(n-j).key != last {
			return true
		}
	}
	return false
}

// hasResult reports whether the i-th oldest call of the tail had a result
// (or an error): only such a call can be followed with the same result.
func (d *state) hasResult(i int) bool {
	e := d.at(i)
	return e.out != e.key
}

// oneTool reports whether the last p calls of the tail are of one tool.
func (d *state) oneTool(p int) bool {
	n := d.tail.Len()
	if n < p {
		return false
	}
	last := d.at(n - 1)
	for j := 2; j <= p; j++ {
		if !sameTool(d.at(n-j), last) {
			return false
		}
	}
	return true
}

// sameTool reports whether two calls of the tail are of one tool, one of
// them perhaps restored from a snapshot that hashed the names.
func sameTool(a, b *entry) bool {
	switch {
	case a.hashed == b.hashed:
		return a.tool == b.tool
	case a.hashed:
		return a.tool == rule.HashName(b.tool)
	default:
		return b.tool == rule.HashName(a.tool)
	}
}

// judge returns the smallest period whose cycles at the tail reach the
// threshold, and the number of those cycles; 0, 0 when there is none. The
// tail's last calls are keyAt(n-1), keyAt(n-2), ...: their keys, not their
// signatures, since a cycle must hold two distinct calls, not two outcomes
// of one call.
func (d *state) judge(runs []int) (period, cycles int) {
	return d.judgeWith(runs, d.tail.Len(), d.keyAt)
}

func (d *state) keyAt(i int) canonical.Sum { return d.at(i).key }

func (d *state) judgeWith(runs []int, n int, keyAt func(int) canonical.Sum) (period, cycles int) {
	for p := 2; p <= d.opts.MaxPeriod; p++ {
		// (runs[p]+p)/p >= Repeats, written so as not to overflow.
		if runs[p]/p < d.opts.Repeats-1 {
			continue
		}
		last := keyAt(n - 1)
		distinct := false
		for j := 2; j <= p; j++ {
			if keyAt(n-j) != last {
				distinct = true
				break
			}
		}
		if distinct {
			return p, runs[p]/p + 1
		}
	}
	return 0, 0
}

// stop builds a stop verdict: same or long when the cycle's results repeat
// (of one tool's calls, or beyond MaxPeriod).
func (d *state) stop(p, cycles int, same, long bool, cycle, tools []string, phase rule.Phase) rule.Verdict {
	ev := Evidence{Period: p, Repeats: cycles, Threshold: d.opts.Repeats, Cycle: cycle, Tools: tools}
	with := ""
	if same || long {
		ev.Threshold, ev.SameResults, ev.Long = d.opts.SameResults, same, long
		with = " with the same results"
	}
	v := rule.Verdict{
		Stop:   true,
		Reason: ReasonOscillation,
		Code:   Code,
		Detail: fmt.Sprintf("a cycle of %d calls repeated %d times in a row%s (threshold %d): %s",
			p, cycles, with, ev.Threshold, strings.Join(cycle, " -> ")),
		Evidence: ev,
	}
	v.Feedback = ev.feedback(phase)
	return v
}

// Verdict returns the stop found by the last Observe, if any.
func (d *state) Verdict() rule.Verdict { return d.verdict }

// Preflight appends the proposed calls to a copy of the sequence and refuses
// them when the tail then is a cycle that reaches the threshold. It changes
// nothing. With RequireIdenticalResults it refuses nothing: results are not
// known before the calls run.
func (d *state) Preflight(f *rule.Facts) rule.Verdict {
	if d.opts.RequireIdenticalResults {
		return rule.Verdict{}
	}
	d.pending = d.pending[:0]
	for i := range f.Calls {
		if !f.Calls[i].Ignored {
			d.pending = append(d.pending, i)
		}
	}
	if len(d.pending) == 0 {
		return rule.Verdict{}
	}
	// Position i of the simulated sequence is the tail's i-th call for
	// i < d.tail.Len(), then the proposed calls.
	keyAt := func(i int) canonical.Sum {
		if i < d.tail.Len() {
			return d.at(i).key
		}
		return f.Calls[d.pending[i-d.tail.Len()]].Key
	}
	runs := d.simRuns
	copy(runs, d.runs)
	n := d.tail.Len()
	for range d.pending {
		key := keyAt(n)
		for p := 2; p < len(runs); p++ {
			if p > n || keyAt(n-p) != key {
				runs[p] = 0
			} else if runs[p] < maxRun {
				runs[p]++
			}
		}
		n++
	}
	p, cycles := d.judgeWith(runs, n, keyAt)
	if p == 0 {
		return rule.Verdict{}
	}
	cycle, tools := make([]string, p), make([]string, p)
	for j := 0; j < p; j++ {
		i := n - p + j
		if i < d.tail.Len() {
			e := d.at(i)
			tools[j] = rule.Clean(e.tool)
			cycle[j] = tools[j] + "(" + e.preview + ")"
			continue
		}
		c := &f.Calls[d.pending[i-d.tail.Len()]]
		tool := rule.Clean(cutName(c.Tool))
		cycle[j], tools[j] = tool+"("+c.Preview()+")", tool
	}
	return d.stop(p, cycles, false, false, cycle, tools, rule.PhasePreflight)
}

// Summary describes the cycle at the tail of the sequence: how far the run
// has gone round it.
type Summary struct {
	// Period is the length of the cycle of two or more distinct calls that
	// has come round the most at the tail (the smallest such period), or 0
	// when none has come round even partly a second time.
	Period int `json:"period"`
	// Calls is the number of calls at the tail that follow that cycle,
	// its first round included: Calls/Period rounds, which stop the run
	// when they reach Repeats (Options.Repeats).
	Calls int `json:"calls"`
	// SamePeriod and SameCalls are the same for a cycle of one tool's
	// calls whose results repeat, counted since the last new input: their
	// rounds stop the run when they reach Options.SameResults. Both are 0
	// when there is none, or when SameResults is Repeats.
	SamePeriod int `json:"samePeriod,omitempty"`
	SameCalls  int `json:"sameCalls,omitempty"`
	// LongPeriod and LongCalls are the same for a cycle longer than
	// MaxPeriod whose calls return what they returned the round before,
	// counted since the last new input: their rounds stop the run when
	// they reach Options.SameResults. Both are 0 when there is none.
	LongPeriod int `json:"longPeriod,omitempty"`
	LongCalls  int `json:"longCalls,omitempty"`
}

// Summary returns the cycle at the tail (a Summary). It changes nothing.
func (d *state) Summary() any {
	var s Summary
	for p := 2; p <= d.opts.MaxPeriod && p <= d.tail.Len(); p++ {
		if d.runs[p] == 0 {
			continue
		}
		if !d.distinctTail(p) {
			continue
		}
		// More rounds (runs are capped at maxRun, so this cannot
		// overflow; the comparison is in floating point, which cannot
		// overflow either).
		calls := d.runs[p] + p
		if s.Period == 0 || float64(calls)/float64(p) > float64(s.Calls)/float64(s.Period) {
			s.Period, s.Calls = p, calls
		}
	}
	for p := 2; d.same != nil && p <= d.opts.MaxPeriod && p <= d.tail.Len(); p++ {
		if d.same[p] == 0 || !d.oneTool(p) {
			continue
		}
		if !d.distinctTail(p) {
			continue
		}
		calls := d.reachBack(d.same[p], p)
		if calls > p && (s.SamePeriod == 0 || float64(calls)/float64(p) > float64(s.SameCalls)/float64(s.SamePeriod)) {
			s.SamePeriod, s.SameCalls = p, calls
		}
	}
	for p := d.opts.MaxPeriod + 1; d.longLive && p < len(d.long) && p <= d.tail.Len(); p++ {
		if d.long[p] == 0 || !d.distinctTail(p) || d.shortPeriod(p) {
			continue
		}
		calls := d.reachBack(d.long[p], p)
		if calls > p && (s.LongPeriod == 0 || float64(calls)/float64(p) > float64(s.LongCalls)/float64(s.LongPeriod)) {
			s.LongPeriod, s.LongCalls = p, calls
		}
	}
	return s
}

// reachBack returns the calls that count towards SameResults rounds of
// period p whose results repeat, for a counter of run: those since the last
// new input, and one short of the rounds when they all are the newest
// step's (the next call that goes on round completes them).
func (d *state) reachBack(run, p int) int {
	calls := min(run+p, d.fresh)
	if d.inStep(run, p) {
		calls = min(calls, d.opts.SameResults*p-1)
	}
	return calls
}

// inStep reports whether the calls that a counter of run at period p spans
// are all the newest step's: rounds judged by their results must reach back
// before them.
func (d *state) inStep(run, p int) bool { return run+p <= d.stepCalls }

// reset forgets the run.
func (d *state) reset() {
	d.tail.Clear()
	clear(d.runs)
	clear(d.same)
	clear(d.long)
	d.longLive = false
	if d.held != nil {
		*d.held = [256]uint16{}
	}
	d.fresh, d.stepCalls = 0, 0
	d.verdict = rule.Verdict{}
}

// saved is the JSON form of a run's state.
type saved struct {
	// Calls are the tail's calls, oldest first.
	Calls []callState `json:"calls"`
	// Runs are the counters of the periods 2 to MaxPeriod.
	Runs []int `json:"runs"`
	// Same are the counters of same results of the periods 2 to
	// MaxPeriod, and Fresh the calls since the last new input, when
	// SameResults is below Repeats (as it is whenever long cycles are
	// looked for). A state written before the rule compared results has
	// neither: both then start at 0.
	Same  []int `json:"same,omitempty"`
	Fresh *int  `json:"fresh,omitempty"`
	// LastStep is the number of calls of the newest step, with Same, when
	// above 0; rounds judged by their results must reach back before them.
	LastStep int `json:"lastStep,omitempty"`
	// Long are the counters of same results of the periods MaxPeriod+1 to
	// LongPeriod that are above 0, by period, when long cycles are looked
	// for. A state written before the rule looked for them has none, and
	// at most MaxPeriod calls.
	Long map[int]int `json:"long,omitempty"`
}

type callState struct {
	Key canonical.Sum `json:"key"`
	// Outcome is the call's outcome when RequireIdenticalResults or
	// SameResults compares outcomes and it differs from the key (the call
	// had a result); zero (left out) otherwise.
	Outcome canonical.Sum `json:"outcome,omitzero"`
	Tool    string        `json:"tool"`
	Preview string        `json:"preview,omitempty"`
}

// Snapshot returns the tail and the counters as JSON, or null when no call
// has been seen. Unless o.Previews is set, previews read rule.Redacted and
// tool names are written with o.Name.
func (d *state) Snapshot(o rule.SnapshotOptions) ([]byte, error) {
	if d.tail.Len() == 0 {
		return []byte("null"), nil
	}
	s := saved{Calls: make([]callState, d.tail.Len()), Runs: append([]int(nil), d.runs[2:]...)}
	if d.same != nil {
		s.Same = append([]int(nil), d.same[2:]...)
	}
	for p := d.opts.MaxPeriod + 1; d.longLive && p < len(d.long); p++ {
		if d.long[p] > 0 {
			if s.Long == nil {
				s.Long = make(map[int]int)
			}
			s.Long[p] = d.long[p]
		}
	}
	if d.same != nil {
		fresh := d.fresh
		s.Fresh, s.LastStep = &fresh, d.stepCalls
	}
	// Names repeat: one written name serves each run of calls of a tool.
	lastTool, lastName := "", ""
	for i := range s.Calls {
		e := d.at(i)
		cs := callState{Key: e.key, Tool: e.tool, Preview: e.preview}
		if !e.hashed {
			if i == 0 || e.tool != lastTool {
				lastTool, lastName = e.tool, o.Name(e.tool)
			}
			cs.Tool = lastName
		}
		if e.out != e.key && (d.same != nil || d.opts.RequireIdenticalResults) {
			cs.Outcome = e.out
		}
		if !o.Previews && cs.Preview != "" {
			cs.Preview = rule.Redacted
		}
		s.Calls[i] = cs
	}
	return json.Marshal(s)
}

// cutName makes a tool name valid UTF-8 (as a snapshot will write it) and
// cuts it to MaxToolNameLen bytes, on a character boundary, so that the state
// kept is the state restored.
func cutName(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxToolNameLen {
		return s
	}
	i := MaxToolNameLen
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.Clone(s[:i])
}

// Restore replaces the state by one that Snapshot returned. Besides the
// shape, it checks that the counters agree with the calls held. A state
// written before the rule looked for long cycles (no long counters, at most
// MaxPeriod calls) restores with those counters at 0.
func (d *state) Restore(data []byte) error {
	var s *saved
	if err := rule.UnmarshalState(data, &s); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if s == nil {
		d.reset()
		return nil
	}
	m := d.opts.MaxPeriod
	h := len(s.Calls)
	switch {
	case h == 0 || h > d.tail.Cap():
		return fmt.Errorf("%s: %d calls held (1 to %d allowed)", Name, h, d.tail.Cap())
	case len(s.Runs) != m-1:
		return fmt.Errorf("%s: %d counters for periods 2 to %d", Name, len(s.Runs), m)
	}
	switch {
	case d.same == nil && s.Same != nil:
		return fmt.Errorf("%s: counters of same results, but results are not compared (SameResults is Repeats)", Name)
	case s.Same != nil && len(s.Same) != m-1:
		return fmt.Errorf("%s: %d counters of same results for periods 2 to %d", Name, len(s.Same), m)
	case d.long == nil && s.Long != nil:
		return fmt.Errorf("%s: counters of long cycles, but none are looked for (LongPeriod is at most MaxPeriod)", Name)
	case s.Fresh == nil && (s.Same != nil || s.Long != nil):
		return fmt.Errorf("%s: counters of same results without the calls since the last input", Name)
	case s.Fresh != nil && s.Same == nil:
		return fmt.Errorf("%s: the calls since the last input without the counters of same results", Name)
	case s.Fresh != nil && (*s.Fresh < 0 || *s.Fresh > maxRun):
		return fmt.Errorf("%s: calls since the last input out of range", Name)
	case s.LastStep != 0 && s.Same == nil:
		return fmt.Errorf("%s: the calls of the newest step without the counters of same results", Name)
	case s.LastStep < 0 || s.Fresh != nil && s.LastStep > *s.Fresh:
		return fmt.Errorf("%s: %d calls of the newest step out of range (at most the calls since the last input)", Name, s.LastStep)
	}
	long := make([]int, len(d.long))
	for p, r := range s.Long {
		if p <= m || p >= len(d.long) {
			return fmt.Errorf("%s: a counter of long cycles of period %d (%d to %d allowed)", Name, p, m+1, len(d.long)-1)
		}
		if r <= 0 {
			return fmt.Errorf("%s: counter of same results of period %d out of range", Name, p)
		}
		long[p] = r
	}
	compared := d.opts.RequireIdenticalResults || d.same != nil // long cycles come with same
	sigs, outs := make([]canonical.Sum, h), make([]canonical.Sum, h)
	for i, c := range s.Calls {
		sigs[i], outs[i] = c.Key, c.Key
		if !c.Outcome.IsZero() {
			if !compared {
				return fmt.Errorf("%s: call %d: an outcome, but outcomes are not compared", Name, i)
			}
			if c.Outcome == c.Key {
				return fmt.Errorf("%s: call %d: an outcome equal to its key", Name, i)
			}
			outs[i] = c.Outcome
			if d.opts.RequireIdenticalResults {
				sigs[i] = c.Outcome
			}
		}
		if len(c.Tool) > MaxToolNameLen || !utf8.ValidString(c.Tool) {
			return fmt.Errorf("%s: call %d: tool name too long or not UTF-8", Name, i)
		}
		if c.Preview != rule.Redacted && (!utf8.ValidString(c.Preview) || utf8.RuneCountInString(c.Preview) > rule.PreviewLen) {
			return fmt.Errorf("%s: call %d: preview too long or not UTF-8", Name, i)
		}
	}
	// The counters of the short periods are checked as if the tail held
	// MaxPeriod calls: a state of the release before long cycles held no
	// more, so that, restored, its counters may span more calls than its
	// tail holds until the tail is full. Those of the long periods count
	// only calls held since then, and are checked against the tail's
	// length.
	if err := checkCounters(s.Runs, 2, h, m, "", func(i, j int) bool { return sigs[i] == sigs[j] }); err != nil {
		return err
	}
	// A call without a result has its key as its outcome: it never
	// matches for same results.
	sameOut := func(i, j int) bool { return outs[i] == outs[j] && outs[i] != s.Calls[i].Key }
	if err := checkCounters(s.Same, 2, h, m, "same results of ", sameOut); err != nil {
		return err
	}
	if d.long != nil {
		if err := checkCounters(long[m+1:], m+1, h, d.tail.Cap(), "same results of ", sameOut); err != nil {
			return err
		}
	}
	d.reset()
	for i, c := range s.Calls {
		d.tail.Push(entry{key: c.Key, sig: sigs[i], out: outs[i], tool: c.Tool, preview: c.Preview,
			redacted: c.Preview == rule.Redacted, hashed: rule.IsHashedName(c.Tool)})
		if d.held != nil && outs[i] != c.Key {
			d.held[outs[i][0]]++
		}
	}
	copy(d.runs[2:], s.Runs)
	if s.Same != nil {
		copy(d.same[2:], s.Same)
	}
	if d.long != nil {
		copy(d.long, long)
		d.longLive = len(s.Long) > 0
	}
	if s.Fresh != nil {
		d.fresh = *s.Fresh
	}
	d.stepCalls = s.LastStep
	return nil
}

// checkCounters checks restored counters of the periods first,
// first+1, ... against the h calls held: each is the length of the
// matching stretch at the end of the sequence (match(i, j): call i matches
// call j), and before the tail is full (capacity calls) the held calls are
// the whole sequence.
func checkCounters(runs []int, first, h, capacity int, what string, match func(i, j int) bool) error {
	for k, r := range runs {
		p := k + first
		if r < 0 || r > maxRun {
			return fmt.Errorf("%s: counter of %speriod %d out of range", Name, what, p)
		}
		if h < capacity && r > max(h-p, 0) {
			return fmt.Errorf("%s: counter of %speriod %d exceeds the calls seen", Name, what, p)
		}
		for j := 0; j < h-p && j <= r; j++ {
			if match(h-1-j, h-1-j-p) != (j < r) {
				return fmt.Errorf("%s: counter of %speriod %d disagrees with the calls held", Name, what, p)
			}
		}
	}
	return nil
}

// CheckBounds checks the restored tail against the guard's counters: the
// calls held, and those each counter spans, are among the calls recorded.
func (d *state) CheckBounds(c rule.Counters) error {
	if d.tail.Len() > c.ToolCalls || d.stepCalls > c.ToolCalls {
		return fmt.Errorf("%s: %d calls held and %d calls of the newest step, but %d calls recorded", Name, d.tail.Len(), d.stepCalls, c.ToolCalls)
	}
	for p := 2; p < len(d.runs); p++ {
		if r := d.runs[p]; r > 0 && r > c.ToolCalls-p {
			return fmt.Errorf("%s: counter of period %d spans %d calls, but %d calls recorded", Name, p, r+p, c.ToolCalls)
		}
		if d.same != nil {
			if r := d.same[p]; r > 0 && r > c.ToolCalls-p {
				return fmt.Errorf("%s: counter of same results of period %d spans %d calls, but %d calls recorded", Name, p, r+p, c.ToolCalls)
			}
		}
	}
	for p := d.opts.MaxPeriod + 1; p < len(d.long); p++ {
		if r := d.long[p]; r > 0 && r > c.ToolCalls-p {
			return fmt.Errorf("%s: counter of same results of period %d spans %d calls, but %d calls recorded", Name, p, r+p, c.ToolCalls)
		}
	}
	if d.fresh > c.ToolCalls {
		return fmt.Errorf("%s: %d calls since the last input, but %d calls recorded", Name, d.fresh, c.ToolCalls)
	}
	return nil
}
