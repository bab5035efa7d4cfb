// Package repeat stops a run when the agent calls the same tool with the same
// arguments several times in a row.
//
// The rule reads the run's tool calls as one sequence, across steps and in
// order. Calls of ignored tools (see the guard's Config.Ignore) are removed from it
// first, so they neither extend nor break a run, and steps without calls
// change nothing. Two calls are the same call when their tool names and
// canonical arguments are equal (rule.Call.Key). The rule stops when the
// run of same calls at the end of the sequence reaches the threshold: with
// the default threshold of 3, the third call in a row stops, the second does
// not. A run that goes on past the threshold stops again on every later step
// that extends it, with a growing count.
//
// Within a step, calls are judged one by one: the first call whose run
// reaches its threshold is the one reported, even when a later call of the
// same step ends the run.
//
// A same call that succeeds with new output is a poll, not a repeat: when
// a call and the one before it both succeeded with a text result (a string,
// a []byte or a json.RawMessage) and the two texts differ beyond numbers and
// ids (see below), the run starts again at that call. An agent that waits on
// a running command (OpenHands' empty command, Claude Code's BashOutput,
// Codex's write_stdin) and gets new lines each time goes on; one that gets
// the same answer, a failure, or a result that differs only in a counter, a
// timestamp or a request id (IPython's Out[3], a search API's response time)
// is stopped as before. Texts are compared by their first LooseBytes bytes,
// lower-cased, with runs of white space made one space and every run of
// letters, digits and '_' that holds a digit made one '#'; a result that is
// one number and nothing else ("22", then "23": a counter polled until it
// reaches a target) is compared as it is, since the number is all it says.
// Results of other types, and calls without results (logs that hold none),
// are not compared.
// Options.CountNewResults counts such calls as repeats too: the reference's
// reading.
//
// A turn of a conversation between two same calls starts the run again:
// when, after the run's newest call, the agent answered in text alone (a
// step with text and no call: none refused, none failed, only ignored
// ones) and new input arrived, on that step or a later one
// (rule.Facts.NewInput: the user spoke again), the next call starts a run of
// its own. A support agent that looks the account up again after each thing
// the customer tried on the phone is not repeating itself; an agent that
// calls the same tool while the harness feeds back each result (MINT's
// feedback on every step, with no answer in words between) still is, and so
// is one that talks to itself between calls with nothing new coming in.
// Options.CountAcrossTurns counts across turns too: the reference's reading.
//
// Some tools are legitimately called again with the same arguments, such as a
// job-status tool that is polled until the job ends. For those, and for every
// tool when Options.RequireIdenticalResults is set, calls are compared by
// their outcome (arguments plus result or error, rule.Call.Outcome), so a
// run continues only while the results stay the same. Calls without a result
// compare equal.
//
// In preflight, only the default rule is judged: the call that would be the
// Nth same call in a row is refused. The input of the step to come is not
// known then, so a turn counts in preflight only once its input is
// recorded: on the answer's own step (as package trace puts a user's reply)
// or on a later one. Rules that compare results cannot be
// judged before the call has run, so with RequireIdenticalResults nothing is
// refused, and a call of a polling tool breaks the simulated run.
//
// With Options.Warn, a step that leaves the run one call short of its
// threshold carries a REPEAT_WARNING (Tool: the tool; Value: the run's
// length; Limit: the threshold), with feedback that tells the model that
// one more identical call will stop the run. A run of one call never warns,
// so a threshold of 2 gives no warnings.
package repeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "repeat"

// Code is the code of the rule's stops.
const Code = "REPEATED_TOOL_CALL"

// ReasonRepeatedToolCall is the reason of the rule's stops.
const ReasonRepeatedToolCall rule.Reason = "repeated-tool-call"

// DefaultThreshold is the threshold used when Options.Threshold is zero.
const DefaultThreshold = 3

// MaxStepIndexes is the most step indexes the evidence lists: those of the
// newest steps of the run.
const MaxStepIndexes = 64

// Options tune the rule. The zero value is the default: three same calls in
// a row stop, failed calls count, and a call with new output, or a turn of
// the conversation between calls, starts the run again (the reference's
// default, with CountNewResults and CountAcrossTurns set, counts them).
type Options struct {
	// Threshold is how many same calls in a row stop the run: 0 means 3,
	// any other value must be at least 2.
	Threshold int `json:"threshold"`
	// RequireIdenticalResults compares calls by their outcome (arguments
	// plus result or error) instead of their arguments alone.
	RequireIdenticalResults bool `json:"requireIdenticalResults"`
	// IgnoreErrors removes failed calls from the sequence before counting:
	// they neither extend nor break a run.
	IgnoreErrors bool `json:"ignoreErrors"`
	// CountNewResults counts a same call as a repeat even when it succeeded
	// with output that differs from the call before it (beyond numbers and
	// ids): the reference's reading, under which an agent that polls a
	// running command three times is stopped. It changes nothing when
	// RequireIdenticalResults is set.
	CountNewResults bool `json:"countNewResults,omitempty"`
	// CountAcrossTurns counts same calls as one run even when the agent
	// answered in text alone between them and new input then arrived: the
	// reference's reading, under which a support agent that looks the same
	// account up after each of the customer's replies is stopped at the
	// third look.
	CountAcrossTurns bool `json:"countAcrossTurns,omitempty"`
	// Tools holds per-tool policies, by tool name. Tools not listed follow
	// the options above.
	Tools map[string]ToolPolicy `json:"tools,omitempty"`
	// Warn adds a REPEAT_WARNING to a step that leaves the run one call
	// short of its threshold.
	Warn bool `json:"warn,omitempty"`
}

// WarningCode is the code of the rule's warnings.
const WarningCode = "REPEAT_WARNING"

// A ToolPolicy tunes the rule for one tool.
type ToolPolicy struct {
	// RepeatThreshold replaces Options.Threshold for runs of this tool: 0
	// means Options.Threshold, any other value must be at least 2.
	RepeatThreshold int `json:"repeatThreshold"`
	// Polling marks a tool that may be called with the same arguments
	// while its results change: its calls are compared by outcome.
	Polling bool `json:"polling"`
	// MaxIdenticalResults is, for a polling tool, how many identical
	// outcomes in a row stop the run: 0 means the tool's RepeatThreshold
	// (and, if that is zero too, Options.Threshold); any other value must
	// be at least 2. It must be zero when Polling is false.
	MaxIdenticalResults int `json:"maxIdenticalResults"`
}

// Evidence is the evidence of a stop (and of a refusal in preflight).
type Evidence struct {
	// Tool is the name of the repeated tool, as rule.Clean shows it
	// (escaped, and cut to 256 bytes).
	Tool string `json:"tool"`
	// ArgsPreview is a short preview of the repeated arguments.
	ArgsPreview string `json:"argsPreview"`
	// Count is the length of the run at the reported call.
	Count int `json:"count"`
	// Threshold is the threshold that applied.
	Threshold int `json:"threshold"`
	// StepIndexes are the 0-based indexes of the steps that hold the run's
	// calls, ascending, at most the newest MaxStepIndexes of them.
	StepIndexes []int `json:"stepIndexes"`
	// IdenticalResults reports whether outcomes, not only arguments, were
	// compared.
	IdenticalResults bool `json:"identicalResults"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent repeats the same call; its result will not change"
}

// policy is how the calls of one tool are judged.
type policy struct {
	threshold int
	outcomes  bool // compare Call.Outcome instead of Call.Key
}

// A Rule finds runs of same calls: validated options, never changed after
// New, so that one Rule serves any number of guards at once. Create it with
// New.
type Rule struct {
	opts  Options // normalised
	def   policy  // the policy of tools without one
	rules map[string]policy
}

// state is one run's: the run of same calls at the end of its sequence.
type state struct {
	r *Rule

	// The run at the end of the sequence: its signature (a key or an
	// outcome), its length and the steps it spans.
	sig   canonical.Sum
	count int
	steps ring.Ring[int] // the newest MaxStepIndexes distinct step indexes, oldest first

	last lastResult // the newest call's result, to tell a poll's new output

	// talked reports that, since the run's newest call, a step answered in
	// text and asked for no call (none ran, failed or was refused, but
	// ignored ones): new input now starts the run again. It is false while
	// there is no run.
	talked bool

	verdict rule.Verdict
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
	_ rule.Bounded    = (*state)(nil)
	_ rule.Successor  = (*Rule)(nil)
)

// New returns a rule with these options, or an error (a
// *rule.OptionError) for every invalid option.
func New(o Options) (*Rule, error) {
	var errs []error
	bad := func(field string, format string, args ...any) {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: field, Err: fmt.Errorf(format, args...)})
	}
	if o.Threshold != 0 && o.Threshold < 2 {
		bad("Threshold", "must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Tools)) {
		p := o.Tools[name]
		field := fmt.Sprintf("Tools[%q].", name)
		if p.RepeatThreshold != 0 && p.RepeatThreshold < 2 {
			bad(field+"RepeatThreshold", "must be 0 (the global threshold) or at least 2, not %d", p.RepeatThreshold)
		}
		if p.MaxIdenticalResults != 0 && p.MaxIdenticalResults < 2 {
			bad(field+"MaxIdenticalResults", "must be 0 (the tool's threshold) or at least 2, not %d", p.MaxIdenticalResults)
		}
		if p.MaxIdenticalResults != 0 && !p.Polling {
			bad(field+"MaxIdenticalResults", "applies only to a polling tool (set Polling)")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.RequireIdenticalResults {
		o.CountNewResults = false // outputs that differ end a run anyway
	}
	d := &Rule{def: policy{threshold: o.Threshold, outcomes: o.RequireIdenticalResults}}
	tools := make(map[string]ToolPolicy, len(o.Tools))
	for name, p := range o.Tools {
		if p.RepeatThreshold == 0 {
			p.RepeatThreshold = o.Threshold
		}
		if p.Polling && p.MaxIdenticalResults == 0 {
			p.MaxIdenticalResults = p.RepeatThreshold
		}
		if !p.Polling && p.RepeatThreshold == o.Threshold {
			continue // the same as having no policy
		}
		tools[name] = p
		r := policy{threshold: p.RepeatThreshold, outcomes: o.RequireIdenticalResults || p.Polling}
		if p.Polling {
			r.threshold = p.MaxIdenticalResults
		}
		if d.rules == nil {
			d.rules = make(map[string]policy)
		}
		d.rules[name] = r
	}
	o.Tools = nil
	if len(tools) > 0 {
		o.Tools = tools
	}
	d.opts = o
	return d, nil
}

// NewState returns the state of a fresh run: no call seen yet.
func (d *Rule) NewState() rule.State {
	return &state{r: d, steps: ring.New[int](MaxStepIndexes)}
}

// Name returns "repeat".
func (d *Rule) Name() string { return Name }

// Priority returns rule.PriorityRepeat.
func (d *Rule) Priority() int { return rule.PriorityRepeat }

// Options returns the options with every default filled in: zero thresholds
// replaced by the ones that apply, and tool policies that change nothing
// left out. Equal behaviour gives equal options.
//
// CountNewResults is written only when set (and reads false when
// RequireIdenticalResults is set, under which it changes nothing), so that
// the default options fingerprint as they did before the rule told new
// output: a run saved by an earlier release restores under the new default,
// its newest result unknown, so that its next same call counts as it did.
// CountAcrossTurns is written only when set, for the same reason: such a run
// restores with no answer in words since its newest call.
func (d *Rule) Options() any {
	o := d.opts
	o.Tools = maps.Clone(o.Tools)
	return o
}

// PriorOptions returns, under CountAcrossTurns, the same options without
// it, as releases before turns wrote them; nil otherwise. So a run saved
// by such a release restores under the reading it was counted by
// (rule.Successor): it holds no answer in words.
func (d *Rule) PriorOptions() any {
	if !d.opts.CountAcrossTurns {
		return nil
	}
	o := d.opts
	o.CountAcrossTurns = false
	o.Tools = maps.Clone(o.Tools)
	return o
}

// tellsNewOutput reports whether a same call with new output starts the run
// again under these options.
func (d *Rule) tellsNewOutput() bool {
	return !d.opts.CountNewResults && !d.opts.RequireIdenticalResults
}

// tellsTurns reports whether a turn of the conversation between same calls
// starts the run again under these options.
func (d *Rule) tellsTurns() bool { return !d.opts.CountAcrossTurns }

// ruleFor returns the policy for calls of a tool.
func (d *Rule) ruleFor(tool string) policy {
	if d.rules != nil {
		if r, ok := d.rules[tool]; ok {
			return r
		}
	}
	return d.def
}

// Observe adds the step's calls to the sequence and judges them one by one.
func (s *state) Observe(f *rule.Facts) {
	s.verdict = rule.Verdict{}
	if s.talked && f.NewInput { // a turn of the conversation: the run starts again
		s.forget()
	}
	var last *rule.Call // the step's last call in the sequence
	var lastRule policy
	acted := false // the step asked for a call that is not ignored
	for i := range f.Refused {
		acted = acted || !f.Refused[i].Ignored
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		acted = true
		if s.r.opts.IgnoreErrors && c.Failed {
			continue
		}
		r := s.r.ruleFor(c.Tool)
		last, lastRule = c, r
		sig := c.Key
		if r.outcomes {
			sig = c.Outcome
		}
		polls := !r.outcomes && s.r.tellsNewOutput()
		newOutput := false
		if polls {
			newOutput = s.last.push(c, s.count > 0 && sig == s.sig)
		} else {
			s.last.clear()
		}
		if s.count > 0 && sig == s.sig && !newOutput {
			if s.count < maxCount {
				s.count++
			}
		} else {
			s.sig, s.count = sig, 1
			s.steps.Clear()
		}
		if n := s.steps.Len(); n == 0 || s.steps.At(n-1) != f.Index { // a new step
			s.steps.Push(f.Index)
		}
		if !s.verdict.Stop && s.count >= r.threshold {
			s.verdict = s.stop(c, s.count, r, s.steps.AppendTo(nil), rule.PhaseCheck)
		}
	}
	switch {
	case acted:
		s.talked = false
	case f.HasText && s.count > 0 && s.r.tellsTurns():
		// An answer in words, with no call asked for. With the reply on
		// the same step (as package trace reads a transcript) the turn is
		// whole; else it waits for the input of a later step.
		if f.NewInput {
			s.forget()
		} else {
			s.talked = true
		}
	}
	if s.r.opts.Warn && last != nil && !s.verdict.Stop && s.count >= 2 && s.count == lastRule.threshold-1 {
		s.verdict.Warnings = []rule.Warning{s.warning(last, lastRule)}
	}
}

// warning builds the warning for a run of s.count calls like c, one short of
// r's threshold.
func (s *state) warning(c *rule.Call, r policy) rule.Warning {
	same := "the same arguments"
	if r.outcomes {
		same = "the same arguments and the same outcome"
	}
	w := rule.Warning{
		Code: WarningCode, Tool: rule.Clean(c.Tool), Value: float64(s.count), Limit: float64(r.threshold),
		Ratio: float64(s.count) / float64(r.threshold),
		Detail: fmt.Sprintf("tool %s called %d times in a row with %s %s; one more stops the run (threshold %d)",
			rule.Quote(c.Tool), s.count, same, c.Preview(), r.threshold),
	}
	w.Feedback = warningFeedback(w)
	return w
}

// maxCount caps a run's length, so that it never overflows.
const maxCount = 1 << 62

// Verdict returns the stop found by the last Observe, if any.
func (s *state) Verdict() rule.Verdict { return s.verdict }

// stop builds a stop verdict for call c with this count, rule and steps.
func (s *state) stop(c *rule.Call, count int, r policy, steps []int, phase rule.Phase) rule.Verdict {
	ev := Evidence{
		Tool: rule.Clean(c.Tool), ArgsPreview: c.Preview(), Count: count, Threshold: r.threshold,
		StepIndexes: steps, IdenticalResults: r.outcomes,
	}
	same := "the same arguments"
	if r.outcomes {
		same = "the same arguments and the same outcome"
	}
	v := rule.Verdict{
		Stop:   true,
		Reason: ReasonRepeatedToolCall,
		Code:   Code,
		Detail: fmt.Sprintf("tool %s called %d times in a row with %s %s (threshold %d)",
			rule.Quote(c.Tool), count, same, ev.ArgsPreview, r.threshold),
		Evidence: ev,
	}
	v.Feedback = ev.feedback(phase)
	return v
}

// Preflight refuses the first of the calls that would be the Nth same call in
// a row under the default rule. It never refuses on rules that compare
// results. It changes nothing.
func (s *state) Preflight(f *rule.Facts) rule.Verdict {
	if s.r.opts.RequireIdenticalResults {
		return rule.Verdict{}
	}
	sig, count, fresh := s.sig, s.count, false
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		r := s.r.ruleFor(c.Tool)
		if r.outcomes {
			// A polling tool's outcome is unknown before it runs: the
			// call cannot be judged, and it breaks the run.
			count = 0
			continue
		}
		if count > 0 && c.Key == sig {
			if count < maxCount {
				count++
			}
		} else {
			sig, count, fresh = c.Key, 1, true
		}
		if count >= r.threshold {
			var steps []int
			if !fresh {
				steps = s.steps.AppendTo(make([]int, 0, s.steps.Len()+1))
			}
			steps = appendIndex(steps, f.Index)
			return s.stop(c, count, r, steps, rule.PhasePreflight)
		}
	}
	return rule.Verdict{}
}

// appendIndex appends i to ascending distinct indexes, keeping at most the
// newest MaxStepIndexes.
func appendIndex(steps []int, i int) []int {
	if n := len(steps); n > 0 && steps[n-1] == i {
		return steps
	}
	steps = append(steps, i)
	if len(steps) > MaxStepIndexes {
		steps = steps[len(steps)-MaxStepIndexes:]
	}
	return steps
}

// reset forgets the run, for a Restore of null.
func (s *state) reset() {
	s.forget()
	s.verdict = rule.Verdict{}
}

// forget ends the run: the next call starts one.
func (s *state) forget() {
	s.sig, s.count, s.talked = canonical.Sum{}, 0, false
	s.steps.Clear()
	s.last.clear()
}

// saved is the JSON form of a run's state.
type saved struct {
	// Sig is the signature of the run: a call's key or, when outcomes are
	// compared, its outcome.
	Sig   canonical.Sum `json:"sig"`
	Count int           `json:"count"`
	Steps []int         `json:"steps"`
	// Last is the loose hash of the newest call's result (16 hex digits),
	// when that call succeeded with a text result and new output starts a
	// run again; absent otherwise, and in snapshots of earlier releases.
	Last string `json:"last,omitempty"`
	// Talked is true when, since the run's newest call, the agent answered
	// in text alone, so that new input starts the run again; absent when
	// false, and in snapshots of earlier releases.
	Talked bool `json:"talked,omitempty"`
}

// Snapshot returns the current run as JSON, or null when there is none. The
// state holds no preview, so redaction changes nothing.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if s.count == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(saved{Sig: s.sig, Count: s.count, Steps: s.steps.AppendTo(nil), Last: s.last.saved(), Talked: s.talked})
}

// Restore replaces the state by one that Snapshot returned.
func (s *state) Restore(data []byte) error {
	var in *saved
	if err := rule.UnmarshalState(data, &in); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if in == nil {
		s.reset()
		return nil
	}
	switch {
	case in.Count < 1 || in.Count > maxCount:
		return fmt.Errorf("%s: run length %d out of range", Name, in.Count)
	case len(in.Steps) == 0:
		return fmt.Errorf("%s: a run without step indexes", Name)
	case len(in.Steps) > MaxStepIndexes:
		return fmt.Errorf("%s: %d step indexes (at most %d)", Name, len(in.Steps), MaxStepIndexes)
	case len(in.Steps) > in.Count:
		return fmt.Errorf("%s: %d step indexes for a run of %d calls", Name, len(in.Steps), in.Count)
	}
	for i, x := range in.Steps {
		if x < 0 || i > 0 && x <= in.Steps[i-1] {
			return fmt.Errorf("%s: step indexes are not ascending non-negative numbers", Name)
		}
	}
	var last lastResult
	if in.Last != "" {
		if !s.r.tellsNewOutput() {
			return fmt.Errorf("%s: a newest result, but these options count new output as a repeat", Name)
		}
		if err := last.restore(in.Last); err != nil {
			return fmt.Errorf("%s: %w", Name, err)
		}
	}
	if in.Talked && !s.r.tellsTurns() {
		return fmt.Errorf("%s: an answer in words since the newest call, but these options count across turns", Name)
	}
	s.reset()
	s.sig, s.count, s.last, s.talked = in.Sig, in.Count, last, in.Talked
	for _, x := range in.Steps {
		s.steps.Push(x) // ascending: each is new
	}
	return nil
}

// CheckBounds checks the restored run against the guard's counters: its
// calls are among those recorded, and so are its steps.
func (s *state) CheckBounds(c rule.Counters) error {
	if s.count > c.ToolCalls {
		return fmt.Errorf("%s: a run of %d calls, but %d calls recorded", Name, s.count, c.ToolCalls)
	}
	if n := s.steps.Len(); n > 0 && s.steps.At(n-1) >= c.Steps {
		return fmt.Errorf("%s: step index %d, but %d steps recorded", Name, s.steps.At(n-1), c.Steps)
	}
	if n := s.steps.Len(); s.talked && n > 0 && s.steps.At(n-1) >= c.Steps-1 {
		return fmt.Errorf("%s: an answer in words after step %d, the newest of %d steps recorded", Name, s.steps.At(n-1), c.Steps)
	}
	return nil
}

// Summary describes the current run: its length and the steps it spans.
type Summary struct {
	// Count is the length of the run of same calls at the end of the
	// sequence (0 before the first call).
	Count int `json:"count"`
	// StepIndexes are the indexes of the steps holding the run's calls.
	StepIndexes []int `json:"stepIndexes"`
}

// Summary returns the current run (a Summary).
func (s *state) Summary() any {
	return Summary{Count: s.count, StepIndexes: s.steps.AppendTo([]int{})}
}
