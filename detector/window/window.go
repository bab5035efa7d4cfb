// Package window stops a run when the agent makes the same call too often
// within its recent calls, even when the repeats are not in a row: it catches
// a x a y a z a, which the consecutive rule of package repeat misses.
//
// The rule keeps the last Options.Window calls, across steps and in
// order. Calls of ignored tools (see rule.Options.Ignore) are left out, and
// steps without calls change nothing. By default two calls are the same when
// their outcomes are equal (rule.Call.Outcome: tool, canonical arguments and
// result or error; for a failed call rule.Call.Retry, the same arguments
// failing with the same normalised error and result, since an error alone,
// such as "exit code 1", says little): a call that is polled and answers
// something new each time (a game's "legal moves", a job's progress) is not a
// repeat, while one that keeps answering the same is. With Options.Compare set to CompareCall, calls
// are compared by their key alone (rule.Call.Key: tool and arguments), as
// the Rust crate does. The rule stops when a call is the same as more
// than Options.Threshold of the calls in the window, itself included: with
// the defaults, the fourth same call among the last ten stops, the third does
// not. Within a step, calls are judged one by one, and the first call that
// goes over is the one reported. A call that goes over again on a later step
// stops again.
//
// With CompareCall this is the rule of the Rust crate tool-loop-guard (a
// sliding window of (tool, canonical arguments) keys), with its validation: Window and
// Threshold at least 2, and Threshold at most Window. A Threshold equal to
// Window is accepted, as by the crate, but never stops: a window holds at
// most Window same calls.
//
// In preflight the proposed calls are pushed, in order, onto a copy of the
// window, and the first that would go over is refused ("would trip"). A call
// that has not run has no result: comparing outcomes, it is taken to return
// what the same call returned the last time it is in the window (nothing
// when it is not). The rule never changes in preflight.
//
// With Options.Warn, a step that makes a call which, made once more, would
// stop the run carries a WINDOWED_REPEAT_WARNING: the call is at the
// threshold and will not leave the window with the next call.
//
// Memory, snapshots and the work per call are bounded by Window: the state is
// the window's keys, and each call is counted by a scan of them.
// The rule is not in detector.Defaults: it goes beyond the reference.
package window

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "window"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "WINDOWED_REPEAT"
	WarningCode = "WINDOWED_REPEAT_WARNING"
)

// ReasonWindowedRepeat is the reason of the rule's stops.
const ReasonWindowedRepeat rule.Reason = "windowed-repeat"

// Priority is the rule's priority: right after the consecutive repeat
// rule (rule.PriorityRepeat), which reports a plain run of same calls first.
const Priority = rule.PriorityRepeat + 50

// Defaults of the options, and the largest window.
//
// They come from the real traces in testdata/traces. A healthy coding agent
// runs the same test command again after each fix, so the same call recurs
// with other calls between: the healthy runs make the same call at most 3
// times within any 10 calls (twice the test command of astropy-12907 and
// sympy-13091). A window of 11 or more would stop the resolved django-11299
// run in its last fix-and-test round, one of 16 the resolved sympy-13091 run.
// Ten calls and a threshold of 3 stop every looping run, and the unclear
// WebShop run that keeps paging back (4 "< Prev" clicks within 8 calls).
const (
	DefaultWindow    = 10
	DefaultThreshold = 3
	// MaxWindow bounds the work per call, which scans the window: about
	// 1µs per call at 256, 60ns at the default.
	MaxWindow = 256
)

// How calls are compared.
const (
	// CompareOutcome compares calls by tool, arguments and result or
	// error: the default.
	CompareOutcome = "outcome"
	// CompareCall compares calls by tool and arguments alone.
	CompareCall = "call"
)

// Options tune the rule. The zero value is the default: more than 3 same
// calls with the same result within the last 10 stop the run.
type Options struct {
	// Window is how many of the newest calls are looked at: 0 means
	// DefaultWindow, any other value must be from 2 to MaxWindow.
	Window int `json:"window"`
	// Threshold is how many same calls the window may hold: one more
	// stops the run. 0 means DefaultThreshold; any other value must be at
	// least 2, and at most Window.
	Threshold int `json:"threshold"`
	// Warn adds a WINDOWED_REPEAT_WARNING to a step whose call, made
	// once more, would stop the run.
	Warn bool `json:"warn,omitempty"`
	// Compare says when two calls are the same: CompareOutcome (also when
	// empty) or CompareCall.
	Compare string `json:"compare"`
}

// Evidence is the evidence of a stop (and of a refusal in preflight).
type Evidence struct {
	// Tool is the name of the repeated tool, as rule.Clean shows it
	// (escaped, and cut to 256 bytes).
	Tool string `json:"tool"`
	// ArgsPreview is a short preview of the repeated arguments.
	ArgsPreview string `json:"argsPreview"`
	// Count is the number of same calls in the window, the reported call
	// included.
	Count int `json:"count"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
	// Window is Options.Window.
	Window int `json:"window"`
	// IdenticalResults reports whether the calls were compared by their
	// outcomes (Options.Compare is CompareOutcome).
	IdenticalResults bool `json:"identicalResults"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent keeps coming back to the same call between others"
}

// call is one call in the window: its key and, comparing outcomes, its
// outcome (the sum the count compares).
type call struct {
	key, same canonical.Sum
}

// A Rule finds calls made too often within the newest calls: validated
// options, never changed after New, so that one Rule serves any number of
// guards at once. Create it with New.
type Rule struct {
	opts     Options
	outcomes bool // compare outcomes
}

// state is one run's: the window of its newest calls.
type state struct {
	r *Rule

	ring ring.Ring[call] // the newest calls, oldest first

	sim     ring.Ring[call] // scratch for preflight
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
	switch o.Compare {
	case "":
		o.Compare = CompareOutcome
	case CompareOutcome, CompareCall:
	default:
		bad("Compare", "must be %q or %q, not %q", CompareOutcome, CompareCall, o.Compare)
	}
	if len(errs) == 0 {
		if o.Window == 0 {
			o.Window = DefaultWindow
		}
		if o.Threshold == 0 {
			o.Threshold = DefaultThreshold
		}
		if o.Threshold > o.Window {
			bad("Threshold", "%d exceeds the window of %d calls", o.Threshold, o.Window)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Rule{opts: o, outcomes: o.Compare == CompareOutcome}, nil
}

// NewState returns the state of a fresh run: an empty window.
func (d *Rule) NewState() rule.State {
	return &state{r: d, ring: ring.New[call](d.opts.Window), sim: ring.New[call](d.opts.Window)}
}

// Name returns "window".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// Len returns the number of calls in the window: at most Window. Len and
// RecentKeys are methods of the state that Rule.NewState returns, for a
// caller that drives a state itself.
func (s *state) Len() int { return s.ring.Len() }

// RecentKeys returns a copy of the keys of the calls in the window, oldest
// first.
func (s *state) RecentKeys() []canonical.Sum {
	out := make([]canonical.Sum, s.ring.Len())
	for i, c := range s.ring.All() {
		out[i] = c.key
	}
	return out
}

// entry returns the window entry of a finished call.
func (s *state) entry(c *rule.Call) call {
	switch {
	case s.r.outcomes && c.Failed:
		// A failure's outcome is its error alone ("exit code 1"); the
		// same failure is the same call failing with the same normalised
		// error and result.
		return call{key: c.Key, same: c.Retry}
	case s.r.outcomes:
		return call{key: c.Key, same: c.Outcome}
	}
	return call{key: c.Key, same: c.Key}
}

// push adds a call to a window ring and returns the number of calls in it
// that are the same, the call included.
func push(r *ring.Ring[call], e call) int {
	r.Push(e)
	count := 0
	for _, c := range r.Unordered() { // order does not matter for a count
		if c.same == e.same {
			count++
		}
	}
	return count
}

// Observe pushes the step's calls onto the window, judging them one by one.
func (s *state) Observe(f *rule.Facts) {
	s.verdict = rule.Verdict{}
	added := false
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		added = true
		count := push(&s.ring, s.entry(c))
		if !s.verdict.Stop && count > s.r.opts.Threshold {
			s.verdict = s.stop(c, count, rule.PhaseCheck)
		}
	}
	if !added || s.verdict.Stop || !s.r.opts.Warn {
		return
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		if count := s.countNext(s.entry(c).same); count > s.r.opts.Threshold {
			w := rule.Warning{
				Code: WarningCode, Tool: rule.Clean(c.Tool), Value: float64(count - 1), Limit: float64(count),
				Ratio: float64(count-1) / float64(count),
				Detail: fmt.Sprintf("tool %s called %d times within the last %d calls with the same arguments %s; one more stops the run (threshold %d)",
					rule.Quote(c.Tool), count-1, s.r.opts.Window, c.Preview(), s.r.opts.Threshold),
			}
			w.Feedback = warningFeedback(w)
			s.verdict.Warnings = []rule.Warning{w}
			return
		}
	}
}

// countNext returns the number of same calls the window would hold if a
// call that is the same as same were pushed now.
func (s *state) countNext(same canonical.Sum) int {
	count := 1
	for _, c := range s.ring.Unordered() {
		if c.same == same {
			count++
		}
	}
	if s.ring.Full() && s.ring.At(0).same == same {
		count-- // the oldest call leaves the window
	}
	return count
}

// stop builds a stop verdict for call c with this count.
func (s *state) stop(c *rule.Call, count int, phase rule.Phase) rule.Verdict {
	ev := Evidence{Tool: rule.Clean(c.Tool), ArgsPreview: c.Preview(), Count: count, Threshold: s.r.opts.Threshold, Window: s.r.opts.Window,
		IdenticalResults: s.r.outcomes}
	verb := "called"
	if phase == rule.PhasePreflight {
		verb = "would be called"
	}
	v := rule.Verdict{
		Stop:   true,
		Reason: ReasonWindowedRepeat,
		Code:   Code,
		Detail: fmt.Sprintf("tool %s %s %d times within the last %d calls with the same arguments %s%s (threshold %d)",
			rule.Quote(c.Tool), verb, count, ev.Window, ev.ArgsPreview, sameResult(s.r.outcomes, phase), ev.Threshold),
		Evidence: ev,
	}
	v.Feedback = ev.feedback(phase)
	return v
}

func sameResult(outcomes bool, phase rule.Phase) string {
	switch {
	case !outcomes:
		return ""
	case phase == rule.PhasePreflight:
		return ", which returned the same result each time"
	}
	return " and the same result"
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (s *state) Verdict() rule.Verdict { return s.verdict }

// Preflight pushes the proposed calls onto a copy of the window and refuses
// the first that would go over the threshold. It changes nothing.
func (s *state) Preflight(f *rule.Facts) rule.Verdict {
	s.sim.CopyFrom(&s.ring)
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		if count := push(&s.sim, s.predict(c.Key)); count > s.r.opts.Threshold {
			return s.stop(c, count, rule.PhasePreflight)
		}
	}
	return rule.Verdict{}
}

// predict returns the window entry of a call that has not run, in the
// simulated window sim: comparing outcomes, it returns what the newest same
// call in the window returned, if any.
func (s *state) predict(key canonical.Sum) call {
	e := call{key: key, same: key}
	if !s.r.outcomes {
		return e
	}
	for i := s.sim.Len() - 1; i >= 0; i-- {
		if c := s.sim.At(i); c.key == key {
			return c
		}
	}
	return e
}

// reset forgets the run, for a Restore of null.
func (s *state) reset() {
	s.ring.Clear()
	s.verdict = rule.Verdict{}
}

// saved is the JSON form of a run's state.
type saved struct {
	// Keys are the keys of the calls in the window, oldest first.
	Keys []canonical.Sum `json:"keys"`
	// Outcomes are their outcomes, comparing outcomes (absent otherwise).
	Outcomes []canonical.Sum `json:"outcomes,omitempty"`
}

// Snapshot returns the window's keys as JSON, or null when it is empty. The
// state holds no preview, so redaction changes nothing.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if s.ring.Len() == 0 {
		return []byte("null"), nil
	}
	out := saved{Keys: s.RecentKeys()}
	if s.r.outcomes {
		out.Outcomes = make([]canonical.Sum, s.ring.Len())
		for i, c := range s.ring.All() {
			out.Outcomes[i] = c.same
		}
	}
	return json.Marshal(out)
}

// Restore replaces the state by one that Snapshot returned: at most Window
// keys, each 32 lowercase hexadecimal characters, and as many outcomes when
// outcomes are compared.
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
	case len(in.Keys) == 0:
		return fmt.Errorf("%s: a state without keys (a fresh state is null)", Name)
	case len(in.Keys) > s.r.opts.Window:
		return fmt.Errorf("%s: %d keys in a window of %d", Name, len(in.Keys), s.r.opts.Window)
	case s.r.outcomes && len(in.Outcomes) != len(in.Keys):
		return fmt.Errorf("%s: %d outcomes for %d keys", Name, len(in.Outcomes), len(in.Keys))
	case !s.r.outcomes && in.Outcomes != nil:
		return fmt.Errorf("%s: outcomes in a window that compares calls", Name)
	}
	s.reset()
	for i, key := range in.Keys {
		c := call{key: key, same: key}
		if s.r.outcomes {
			c.same = in.Outcomes[i]
		}
		s.ring.Push(c)
	}
	return nil
}

// Summary describes the window.
type Summary struct {
	// Calls is the number of calls in the window.
	Calls int `json:"calls"`
	// MaxCount is the most times one call appears in it.
	MaxCount int `json:"maxCount"`
}

// Summary returns the window's size and its most repeated call's count (a
// Summary).
func (s *state) Summary() any {
	w := s.ring.Unordered()
	sum := Summary{Calls: len(w)}
	for i := range w {
		count := 0
		for j := range w {
			if w[j].same == w[i].same {
				count++
			}
		}
		sum.MaxCount = max(sum.MaxCount, count)
	}
	return sum
}

// CheckBounds checks the restored window against the guard's counters: its
// calls are among the calls recorded.
func (s *state) CheckBounds(c rule.Counters) error {
	if n := s.ring.Len(); n > c.ToolCalls {
		return fmt.Errorf("%s: %d calls in the window, but %d calls recorded", Name, n, c.ToolCalls)
	}
	return nil
}
