// Package failure stops a run in which a tool keeps failing the same way
// while the agent changes its arguments a little each time: an edit whose
// old text "did not appear verbatim", a command with the same build error, a
// syntax error whose line number moves.
//
// The consecutive rule of package repeat misses such loops, because the
// arguments differ; the stall rule misses them too, because each new
// argument makes a new outcome. This rule compares failures by their
// signature (rule.Call.Failure): the tool's name and the normalised text of
// the error and the result, with the strings of the arguments that it echoes
// taken out, and the lines of numbered listings (an editor that shows the
// file as the rejected edit would have left it, "12|code", "12:code", cat
// -n's "    12\tcode"), numbers and ids made '#'. What counts as a failure is
// decided by the guard: a call with an error, a result that matches a
// FailWhen pattern of guard.Config (an MCP isError, a non-zero exit code, an
// "ERROR:" prefix), or, unless guard.Config.DisableRejections is set, a
// result that starts a line with a harness's rejection of an edit
// (guard.RejectionPhrases: SWE-agent's and OpenHands' "Your proposed edit has
// introduced new syntax error(s)", Anthropic's editor's "No replacement was
// performed", aider's "SearchReplaceNoExactMatch"), which harnesses write as
// an ordinary observation.
//
// A run's state keeps the last Options.Window calls, across steps and in order
// (calls of ignored tools are left out). It counts the steps in the window in
// which a tool failed the same way since that tool last succeeded at the same
// operation: a success ends the streak (the agent is getting somewhere),
// while calls of other tools, and successes of another operation of a
// multi-purpose tool (an editor's view between two failed str_replace calls;
// see rule.Call.Op), do not. Several calls of one step that fail the same
// way count once (a harness that reports one outcome for a batch of edits).
// The run stops when a count reaches Options.Threshold: with the defaults,
// the fifth same failure within the last 10 calls. It stops sooner, at
// Options.SameCall (3 by default), when those failures are of the same call:
// the same arguments up to white space (rule.Call.Retry), such as an edit
// only re-indented or a retry of a request that keeps failing; and at
// SameCall+1 when they come from two calls only (a short ping-pong of two
// versions of a call, each failing the same way). The same-call count
// starts again after a call of another tool that succeeded with a result
// (rule.Call.Result) that no older call of the window returned: a coding
// agent that runs the same failing test, reverts its change with cp, runs
// it again, restores the change with mv and runs it once more changed what
// the test runs between the runs, while an agent that retries the same call
// between lookups that answer as before, or between thoughts logged as
// calls of a tool that returns nothing new, did not. Short runs (harnesses that
// cap a run at 5 to 7 turns) never reach five failures. Within a step calls are
// judged one by one, and the first that reaches the threshold is the one
// reported. It also catches ping-pongs of calls that each fail the same way
// while their arguments drift, which the oscillation rule, comparing
// arguments, does not see as a cycle.
//
// A failure is known only once the call has run, so the rule judges nothing
// in preflight.
//
// With Options.Warn, a step whose failure brings a count to one short of the
// threshold, a same-call count to one short of SameCall (from a count of 2),
// or a two-call count to SameCall, carries a REPEATED_FAILURE_WARNING.
package failure

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "failure"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "REPEATED_FAILURE"
	WarningCode = "REPEATED_FAILURE_WARNING"
)

// ReasonRepeatedFailure is the reason of the rule's stops.
const ReasonRepeatedFailure rule.Reason = "repeated-failure"

// Priority is the rule's priority: right after the consecutive repeat
// rule (rule.PriorityRepeat), which reports identical calls first.
const Priority = rule.PriorityRepeat + 25

// Defaults of the options, and the largest window.
//
// DefaultThreshold comes from 111 labelled real runs of 13 harnesses
// (testdata/traces). Healthy agents sometimes fail the same way three or four
// times while they try other sources or payment methods, and then recover
// (four identical AttributeErrors while scraping four different sites; three
// gift cards declined in a row); no healthy run reaches five. Looping agents
// that stay on a failing edit or move reach five and more (OpenHands retrying
// a str_replace between views, a chess player told its move is illegal).
//
// DefaultSameCall comes from the 190 runs of testdata/traces (sets A and B
// and the short-cap MINT runs included): no healthy run fails the same way
// with the same arguments (up to white space) three times within 10 calls,
// nor four times from two calls, while short looping runs do and then end
// (a DFSDT branch retrying one tracking call, an agent calling an
// authentication function it made up, MINT cells that take turns failing the
// same way). With 2, six healthy runs stop.
const (
	DefaultThreshold = 5
	DefaultSameCall  = 3
	DefaultWindow    = 10
	// MaxWindow bounds the work per call, which scans the window.
	MaxWindow = 256
)

// Options tune the rule. The zero value is the default: the fifth same
// failure within the last 10 calls stops the run.
type Options struct {
	// Threshold is how many steps with the same failure of a tool,
	// within the window and since the tool last succeeded, stop the run: 0
	// means DefaultThreshold; any other value must be from 2 to Window.
	Threshold int `json:"threshold"`
	// Window is how many of the newest calls are looked at: 0 means
	// DefaultWindow, any other value must be from 2 to MaxWindow.
	Window int `json:"window"`
	// SameCall is how many of those steps stop the run when the failures
	// are of the same call (rule.Call.Retry: the same arguments up to
	// white space), and SameCall+1 when they come from two calls, if that
	// is below Threshold: 0 means DefaultSameCall (or Threshold, when
	// that is smaller); any other value must be from 2 to Threshold (at
	// Threshold it adds nothing to it).
	SameCall int `json:"sameCall"`
	// Warn adds a REPEATED_FAILURE_WARNING to a step whose failure brings
	// a count to Threshold-1, or a same-call count to SameCall-1 (when
	// that is at least 2).
	Warn bool `json:"warn,omitempty"`
}

// Evidence is the evidence of a stop.
type Evidence struct {
	// Tool is the name of the failing tool.
	Tool string `json:"tool"`
	// Count is the number of steps in the window in which the tool failed
	// the same way since it last succeeded, the reported call's included.
	Count int `json:"count"`
	// Threshold is Options.Threshold, Options.SameCall when the failures
	// were of the same call, SameCall+1 when of two calls.
	Threshold int `json:"threshold"`
	// Calls is 1 when the counted failures were of the same call (the
	// same arguments up to white space), 2 when of two calls (a ping-pong
	// of calls that each fail the same way), and 0 (absent) for the
	// Threshold rule, whatever the arguments.
	Calls int `json:"calls,omitempty"`
	// Window is Options.Window.
	Window int `json:"window"`
	// StepIndexes are the 0-based indexes of those steps, oldest first.
	StepIndexes []int `json:"stepIndexes"`
	// ArgsPreview is a short preview of the last failing call's
	// arguments.
	ArgsPreview string `json:"argsPreview"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the same tool keeps failing the same way, whatever the arguments"
}

// entry is one call in the window: its tool (a hash of the name), its
// operation (a hash of the tool's name and rule.Call.Op), its failure
// signature (zero when it did not fail), for a success its result, and the
// index of its step. A success pushed while the window held no failure has
// neither tool nor operation: nothing before it can be part of a streak, so
// nothing about it is needed but its result, against which a later success
// is new or not (and a run without failures costs no hashing).
type entry struct {
	tool, op, failure, retry canonical.Sum
	// res is a success's rule.Call.Result; zero for a failure, a
	// success without a result, and a success restored from a state that
	// kept no results.
	res  canonical.Sum
	step int
}

// A mode is what a scan of the window counts.
type mode int

const (
	anyCall  mode = iota // the same failure, whatever the arguments
	sameCall             // the same failure of the same call, since a new result of another tool
	twoCalls             // the same failure, whatever the arguments (pairCount tells the calls apart)
)

// toolKey returns the hash of a tool's name, never the zero Sum (which marks
// an entry without a tool).
func toolKey(name string) canonical.Sum {
	h := canonical.HashString(name)
	if h == (canonical.Sum{}) {
		h[0] = 1
	}
	return h
}

// opKey returns the hash of a call's tool and operation.
func opKey(c *rule.Call) canonical.Sum {
	return canonical.HashString(c.Tool + "\x00" + c.Op())
}

// A Rule finds the same failure repeated among the newest calls: its
// options, never changed after New, so that one Rule serves any number of
// guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the window of its newest calls.
type state struct {
	opts Options // the rule's

	// ring holds the newest calls, oldest first; failures of them failed.
	ring     ring.Ring[entry]
	failures int

	verdict rule.Verdict
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
	_ rule.Bounded    = (*state)(nil)
)

// New returns a rule with these options, or an error (a
// *rule.OptionError) for every invalid option.
func New(o Options) (*Rule, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: field, Err: fmt.Errorf(format, args...)})
	}
	if o.Window != 0 && (o.Window < 2 || o.Window > MaxWindow) {
		bad("Window", "must be 0 (the default, %d) or from 2 to %d, not %d", DefaultWindow, MaxWindow, o.Window)
	}
	if o.Threshold != 0 && o.Threshold < 2 {
		bad("Threshold", "must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)
	}
	if o.SameCall != 0 && o.SameCall < 2 {
		bad("SameCall", "must be 0 (the default, %d) or at least 2, not %d", DefaultSameCall, o.SameCall)
	}
	if len(errs) == 0 {
		if o.Window == 0 {
			o.Window = DefaultWindow
		}
		if o.Threshold == 0 {
			o.Threshold = DefaultThreshold
		}
		if o.SameCall == 0 {
			o.SameCall = min(DefaultSameCall, o.Threshold)
		}
		if o.Threshold > o.Window {
			bad("Threshold", "%d exceeds the window of %d calls", o.Threshold, o.Window)
		}
		if o.SameCall > o.Threshold {
			bad("SameCall", "%d exceeds the threshold of %d", o.SameCall, o.Threshold)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Rule{opts: o}, nil
}

// NewState returns the state of a fresh run: an empty window of its own.
func (d *Rule) NewState() rule.State {
	return &state{opts: d.opts, ring: ring.New[entry](d.opts.Window)}
}

// Name returns "failure".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// push adds an entry to the window, dropping the oldest when it is full.
func (d *state) push(e entry) {
	if e.failure != (canonical.Sum{}) {
		d.failures++
	}
	if old, evicted := d.ring.Push(e); evicted && old.failure != (canonical.Sum{}) {
		d.failures--
	}
}

// counted returns the indexes of the steps, oldest first, that count for a
// failure in mode m: the steps in the window in which that failure happened
// since the tool last succeeded at the same operation (in sameCall mode, of
// the same call and since another tool's new result). The newest entries
// are read first, and a step with several calls that fail the same way
// counts once.
func (d *state) counted(e entry, m mode) []int {
	var steps []int
	d.scan(e, m, func(x entry) { steps = append(steps, x.step) })
	slices.Reverse(steps)
	return steps
}

// count returns len(d.counted(e, m)) without allocating.
func (d *state) count(e entry, m mode) int {
	n := 0
	d.scan(e, m, func(entry) { n++ })
	return n
}

// pairCount returns the count of the failure e (as count does, whatever the
// arguments) when those failures come from at most two calls (Retry sums),
// and 0 when they come from more, or from a call restored without its sum.
func (d *state) pairCount(e entry) int {
	var seen [2]canonical.Sum
	n, distinct := 0, 0
	d.scan(e, twoCalls, func(x entry) {
		n++
		switch {
		case distinct > 2:
		case x.retry == (canonical.Sum{}):
			distinct = 3 // restored from a state without retries: unknown
		case distinct > 0 && x.retry == seen[0], distinct > 1 && x.retry == seen[1]:
		case distinct < 2:
			seen[distinct] = x.retry
			distinct++
		default:
			distinct = 3
		}
	})
	if distinct > 2 {
		return 0
	}
	return n
}

// scan calls fn with the entry of each step that counts for the failure e,
// newest first; in sameCall mode, only the steps that made the same call
// (equal Retry sums) since the newest success of another tool that returned
// a new result.
func (d *state) scan(e entry, m mode, fn func(x entry)) {
	last := -1
	for i := d.ring.Len() - 1; i >= 0; i-- {
		x := d.ring.At(i)
		switch {
		case x.tool == (canonical.Sum{}):
			return // no failure came before it: nothing older counts
		case x.tool != e.tool:
			if m == sameCall && d.newSuccess(i) {
				return
			}
		case x.failure == (canonical.Sum{}):
			// A success of the tool. Without an operation, no failure
			// of the tool came before it: nothing older counts either.
			if x.op == e.op || x.op == (canonical.Sum{}) {
				return
			}
		case x.failure == e.failure && x.step != last && (m != sameCall || x.retry == e.retry):
			last = x.step
			fn(x)
		}
	}
}

// newSuccess reports whether the call at position i of the window succeeded
// with a result that no older call of the window returned.
func (d *state) newSuccess(i int) bool {
	res := d.ring.Ptr(i).res
	if res == (canonical.Sum{}) {
		return false // a failure, no result, or restored without it
	}
	for j := range i {
		if d.ring.Ptr(j).res == res {
			return false
		}
	}
	return true
}

// hasFailure reports whether a call of tool failed within the window.
func (d *state) hasFailure(tool canonical.Sum) bool {
	for _, x := range d.ring.Unordered() {
		if x.tool == tool && x.failure != (canonical.Sum{}) {
			return true
		}
	}
	return false
}

// Observe pushes the step's calls onto the window, judging the failed ones
// one by one.
func (d *state) Observe(f *rule.Facts) {
	d.verdict = rule.Verdict{}
	var warn *rule.Call
	warnCount, warnLimit := 0, 0
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		e := entry{step: f.Index}
		if !c.Failed {
			e.res = c.Result
			// A success matters only if it can end a streak of
			// failures: its tool is hashed only when the window holds a
			// failure, and its arguments read only when that failure
			// is of the same tool.
			if d.failures > 0 {
				e.tool = toolKey(c.Tool)
				if d.hasFailure(e.tool) {
					e.op = opKey(c)
				}
			}
			d.push(e)
			continue
		}
		e.tool, e.op, e.failure, e.retry = toolKey(c.Tool), opKey(c), c.Failure, c.Retry
		d.push(e)
		count, same, pair := d.count(e, anyCall), 0, 0
		if d.opts.SameCall < d.opts.Threshold {
			same = d.count(e, sameCall)
		}
		if d.opts.SameCall+1 < d.opts.Threshold {
			pair = d.pairCount(e)
		}
		switch {
		case d.verdict.Stop:
		case count >= d.opts.Threshold:
			d.verdict = d.stop(c, e, count, 0)
		case same >= d.opts.SameCall:
			d.verdict = d.stop(c, e, same, 1)
		case pair > d.opts.SameCall:
			d.verdict = d.stop(c, e, pair, 2)
		case !d.opts.Warn || warn != nil:
		case count == d.opts.Threshold-1 && count >= 2:
			warn, warnCount, warnLimit = c, count, d.opts.Threshold
		case same == d.opts.SameCall-1 && same >= 2:
			warn, warnCount, warnLimit = c, same, d.opts.SameCall
		case pair == d.opts.SameCall:
			warn, warnCount, warnLimit = c, pair, d.opts.SameCall+1
		}
	}
	if warn != nil && !d.verdict.Stop {
		what := "the same way"
		switch {
		case warnLimit == d.opts.Threshold:
		case warnLimit == d.opts.SameCall:
			what = "the same way with the same arguments"
		default:
			what = "the same way with two sets of arguments in turn"
		}
		w := rule.Warning{
			Code: WarningCode, Tool: rule.Clean(warn.Tool), Value: float64(warnCount), Limit: float64(warnLimit),
			Ratio: float64(warnCount) / float64(warnLimit),
			Detail: fmt.Sprintf("tool %s failed %s %d times within the last %d calls; one more stops the run (threshold %d)",
				rule.Quote(warn.Tool), what, warnCount, d.opts.Window, warnLimit),
		}
		w.Feedback = warningFeedback(w)
		d.verdict.Warnings = []rule.Warning{w}
	}
}

// stop builds the stop verdict for call c with this count; calls is 0 for
// the Threshold rule, 1 for the same call (Options.SameCall) and 2 for two
// calls (SameCall+1).
func (d *state) stop(c *rule.Call, e entry, count, calls int) rule.Verdict {
	ev := Evidence{Tool: rule.Clean(c.Tool), Count: count, Threshold: d.opts.Threshold, Window: d.opts.Window,
		ArgsPreview: c.Preview(), Calls: calls}
	switch calls {
	case 0:
		ev.StepIndexes = d.counted(e, anyCall)
	case 1:
		ev.StepIndexes = d.counted(e, sameCall)
	default:
		ev.StepIndexes = d.counted(e, twoCalls)
	}
	what := "the same way"
	switch calls {
	case 1:
		ev.Threshold, what = d.opts.SameCall, "the same way with the same arguments"
	case 2:
		ev.Threshold, what = d.opts.SameCall+1, "the same way with two sets of arguments in turn"
	}
	v := rule.Verdict{
		Stop:   true,
		Reason: ReasonRepeatedFailure,
		Code:   Code,
		Detail: fmt.Sprintf("tool %s failed %s %d times within the last %d calls, the last with arguments %s (threshold %d)",
			rule.Quote(c.Tool), what, count, ev.Window, ev.ArgsPreview, ev.Threshold),
		Evidence: ev,
	}
	v.Feedback = ev.feedback()
	return v
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (d *state) Verdict() rule.Verdict { return d.verdict }

// Preflight judges nothing: a failure is known only once the call has run.
func (d *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// reset forgets the run.
func (d *state) reset() {
	d.ring.Clear()
	d.failures = 0
	d.verdict = rule.Verdict{}
}

// state is the JSON form of a run's state: the calls in the window,
// oldest first.
type saved struct {
	// Tools are hashes of the calls' tool names; null where it was not
	// needed.
	Tools []*canonical.Sum `json:"tools"`
	// Ops are hashes of the calls' tools and operations; null where it was
	// not needed.
	Ops []*canonical.Sum `json:"ops"`
	// Failures are the calls' failure signatures; null for a call that
	// did not fail.
	Failures []*canonical.Sum `json:"failures"`
	// Retries are the failed calls' rule.Call.Retry sums; null for a
	// call that did not fail. Absent in states written before the rule
	// compared calls: their failures match no new call.
	Retries []*canonical.Sum `json:"retries,omitempty"`
	// Results are the successful calls' rule.Call.Result sums; null for
	// a call that failed or had no result. Absent when no call has one,
	// as in states written before the rule told new results apart: their
	// successes bring none.
	Results []*canonical.Sum `json:"results,omitempty"`
	// Steps are the indexes of the calls' steps, in the same order.
	Steps []int `json:"steps"`
}

// Snapshot returns the window as JSON, or null when it is empty. The state
// holds no text, so redaction changes nothing.
func (d *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	n := d.ring.Len()
	if n == 0 {
		return []byte("null"), nil
	}
	s := saved{Tools: make([]*canonical.Sum, n), Ops: make([]*canonical.Sum, n), Failures: make([]*canonical.Sum, n),
		Retries: make([]*canonical.Sum, n), Results: make([]*canonical.Sum, n), Steps: make([]int, n)}
	retries, results := false, false
	sums := make([]canonical.Sum, n) // the results, pointed to: one allocation
	for i, e := range d.ring.All() {
		if e.tool != (canonical.Sum{}) {
			tool := e.tool
			s.Tools[i] = &tool
		}
		if e.op != (canonical.Sum{}) {
			op := e.op
			s.Ops[i] = &op
		}
		if e.failure != (canonical.Sum{}) {
			sum := e.failure
			s.Failures[i] = &sum
		}
		if e.retry != (canonical.Sum{}) {
			sum := e.retry
			s.Retries[i], retries = &sum, true
		}
		if e.res != (canonical.Sum{}) {
			sums[i] = e.res
			s.Results[i], results = &sums[i], true
		}
		s.Steps[i] = e.step
	}
	if !retries {
		s.Retries = nil
	}
	if !results {
		s.Results = nil
	}
	return json.Marshal(s)
}

// Restore replaces the state by one that Snapshot returned: at most Window
// calls, as many tools and step indexes as failures, indexes not negative
// and never decreasing.
func (d *state) Restore(data []byte) error {
	var s *saved
	if err := rule.UnmarshalState(data, &s); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if s == nil {
		d.reset()
		return nil
	}
	switch {
	case len(s.Failures) == 0:
		return fmt.Errorf("%s: a state without calls (a fresh state is null)", Name)
	case len(s.Failures) > d.opts.Window:
		return fmt.Errorf("%s: %d calls in a window of %d", Name, len(s.Failures), d.opts.Window)
	case len(s.Steps) != len(s.Failures) || len(s.Tools) != len(s.Failures) || len(s.Ops) != len(s.Failures):
		return fmt.Errorf("%s: %d tools, %d operations and %d step indexes for %d calls", Name,
			len(s.Tools), len(s.Ops), len(s.Steps), len(s.Failures))
	case s.Retries != nil && len(s.Retries) != len(s.Failures):
		return fmt.Errorf("%s: %d retries for %d calls", Name, len(s.Retries), len(s.Failures))
	case s.Results != nil && len(s.Results) != len(s.Failures):
		return fmt.Errorf("%s: %d results for %d calls", Name, len(s.Results), len(s.Failures))
	case s.Results != nil && !slices.ContainsFunc(s.Results, func(r *canonical.Sum) bool { return r != nil }):
		return fmt.Errorf("%s: results that are all null (they are absent then)", Name)
	}
	for i, r := range s.Results {
		if r != nil && (*r == (canonical.Sum{}) || s.Failures[i] != nil) {
			return fmt.Errorf("%s: a zero result, or a result of a call that failed", Name)
		}
	}
	for i, r := range s.Retries {
		if r != nil && (*r == (canonical.Sum{}) || s.Failures[i] == nil) {
			return fmt.Errorf("%s: a zero retry sum, or a retry sum of a call that did not fail", Name)
		}
	}
	for i, step := range s.Steps {
		if step < 0 || i > 0 && step < s.Steps[i-1] {
			return fmt.Errorf("%s: step indexes must not be negative nor decrease (%v)", Name, s.Steps)
		}
		if f := s.Failures[i]; f != nil && (*f == (canonical.Sum{}) || s.Ops[i] == nil || s.Tools[i] == nil) {
			return fmt.Errorf("%s: a zero failure signature, or a failure without its tool and operation", Name)
		}
		if op := s.Ops[i]; op != nil && (*op == (canonical.Sum{}) || s.Tools[i] == nil) {
			return fmt.Errorf("%s: a zero operation, or an operation without its tool", Name)
		}
		if tool := s.Tools[i]; tool != nil && *tool == (canonical.Sum{}) {
			return fmt.Errorf("%s: a zero tool", Name)
		}
	}
	d.reset()
	for i, f := range s.Failures {
		e := entry{step: s.Steps[i]}
		if tool := s.Tools[i]; tool != nil {
			e.tool = *tool
		}
		if f != nil {
			e.failure = *f
		}
		if op := s.Ops[i]; op != nil {
			e.op = *op
		}
		if s.Retries != nil && s.Retries[i] != nil {
			e.retry = *s.Retries[i]
		}
		if s.Results != nil && s.Results[i] != nil {
			e.res = *s.Results[i]
		}
		d.push(e)
	}
	return nil
}

// CheckBounds checks the restored window against the guard's counters: it
// holds no more calls than were recorded, no more failures than failed, and
// no step index at or beyond the steps recorded.
func (d *state) CheckBounds(c rule.Counters) error {
	failures, n := 0, d.ring.Len()
	for _, e := range d.ring.Unordered() {
		if e.failure != (canonical.Sum{}) {
			failures++
		}
		if e.step >= c.Steps {
			return fmt.Errorf("%s: step index %d, but %d steps recorded", Name, e.step, c.Steps)
		}
	}
	if n > c.ToolCalls || failures > c.FailedToolCalls {
		return fmt.Errorf("%s: %d calls and %d failures in the window, but %d calls and %d failures recorded",
			Name, n, failures, c.ToolCalls, c.FailedToolCalls)
	}
	return nil
}

// Summary describes the window.
type Summary struct {
	// Calls is the number of calls in the window.
	Calls int `json:"calls"`
	// Failures is the number of those that failed.
	Failures int `json:"failures"`
	// MaxCount is the highest count of one failure (see Options).
	MaxCount int `json:"maxCount"`
	// MaxSameCall is the highest count of one failure of one call (see
	// Options.SameCall), and MaxTwoCalls that of one failure from at most
	// two calls; 0 where the rule adds nothing to Threshold.
	MaxSameCall int `json:"maxSameCall"`
	MaxTwoCalls int `json:"maxTwoCalls"`
}

// Summary returns the window's size, its failures and the counts of its most
// repeated failure (a Summary).
func (d *state) Summary() any {
	s := Summary{Calls: d.ring.Len()}
	for _, e := range d.ring.Unordered() {
		if e.failure != (canonical.Sum{}) {
			s.Failures++
			s.MaxCount = max(s.MaxCount, d.count(e, anyCall))
			if d.opts.SameCall < d.opts.Threshold {
				s.MaxSameCall = max(s.MaxSameCall, d.count(e, sameCall))
			}
			if d.opts.SameCall+1 < d.opts.Threshold {
				s.MaxTwoCalls = max(s.MaxTwoCalls, d.pairCount(e))
			}
		}
	}
	return s
}
