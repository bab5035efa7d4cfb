// Package window stops a run when the agent makes the same call too often
// within its recent calls, even when the repeats are not in a row: it catches
// a x a y a z a, which the consecutive rule of package repeat misses.
//
// The detector keeps the last Options.Window calls, across steps and in
// order. Calls of ignored tools (see guard.Options.Ignore) are left out, and
// steps without calls change nothing. By default two calls are the same when
// their outcomes are equal (guard.Call.Outcome: tool, canonical arguments and
// result or error; for a failed call guard.Call.Retry, the same arguments
// failing with the same normalised error and result, since an error alone,
// such as "exit code 1", says little): a call that is polled and answers
// something new each time (a game's "legal moves", a job's progress) is not a
// repeat, while one that keeps answering the same is. With Options.Compare set to CompareCall, calls
// are compared by their key alone (guard.Call.Key: tool and arguments), as
// the Rust crate does. The detector stops when a call is the same as more
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
// when it is not). The detector never changes in preflight.
//
// With Options.Warn, a step that makes a call which, made once more, would
// stop the run carries a WINDOWED_REPEAT_WARNING: the call is at the
// threshold and will not leave the window with the next call.
//
// Memory, snapshots and the work per call are bounded by Window: the state is
// the window's keys, and each call is counted by a scan of them.
// The detector is not in detector.Defaults: it goes beyond the reference.
package window

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/guard"
)

// Name is the detector's name: the key of its state in snapshots.
const Name = "window"

// Code is the code of the detector's stops, and WarningCode that of its
// warnings.
const (
	Code        = feedback.CodeWindowedRepeat
	WarningCode = feedback.CodeWindowedRepeatWarning
)

// ReasonWindowedRepeat is the reason of the detector's stops.
const ReasonWindowedRepeat guard.Reason = "windowed-repeat"

// Priority is the detector's priority: right after the consecutive repeat
// rule (guard.PriorityRepeat), which reports a plain run of same calls first.
const Priority = guard.PriorityRepeat + 50

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

// Options tune the detector. The zero value is the default: more than 3 same
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
	// Tool is the name of the repeated tool, as guard.Clean shows it
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

// call is one call in the window: its key and, comparing outcomes, its
// outcome (the sum the count compares).
type call struct {
	key, same canonical.Sum
}

// A Detector finds calls made too often within the newest calls. Create it
// with New.
type Detector struct {
	guard.Owned // one guard at a time

	opts Options

	// ring holds the newest calls: ring[(start+i)%len(ring)] is the i-th
	// oldest of the n held. start stays 0 until the ring is full, so
	// ring[:n] always holds exactly the calls of the window.
	ring     []call
	start, n int
	outcomes bool // compare outcomes

	sim     []call // scratch for preflight
	verdict guard.Verdict
}

var (
	_ guard.Detector   = (*Detector)(nil)
	_ guard.Summarizer = (*Detector)(nil)
	_ guard.Bounded    = (*Detector)(nil)
)

// New returns a detector with these options, or an error (a
// *guard.OptionError) for every invalid option.
func New(o Options) (*Detector, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &guard.OptionError{Detector: Name, Field: field, Err: fmt.Errorf(format, args...)})
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
	return &Detector{
		opts:     o,
		ring:     make([]call, o.Window),
		sim:      make([]call, o.Window),
		outcomes: o.Compare == CompareOutcome,
	}, nil
}

// Name returns "window".
func (d *Detector) Name() string { return Name }

// Priority returns Priority.
func (d *Detector) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Detector) Options() any { return d.opts }

// Len returns the number of calls in the window: at most Window.
func (d *Detector) Len() int { return d.n }

// RecentKeys returns a copy of the keys of the calls in the window, oldest
// first.
func (d *Detector) RecentKeys() []canonical.Sum {
	out := make([]canonical.Sum, d.n)
	for i := range out {
		out[i] = d.ring[(d.start+i)%len(d.ring)].key
	}
	return out
}

// entry returns the window entry of a finished call.
func (d *Detector) entry(c *guard.Call) call {
	switch {
	case d.outcomes && c.Failed:
		// A failure's outcome is its error alone ("exit code 1"); the
		// same failure is the same call failing with the same normalised
		// error and result.
		return call{key: c.Key, same: c.Retry}
	case d.outcomes:
		return call{key: c.Key, same: c.Outcome}
	}
	return call{key: c.Key, same: c.Key}
}

// push adds a call to a window ring (with start and n) and returns the
// number of calls in it that are the same, the call included.
func push(ring []call, start, n *int, e call) int {
	if *n < len(ring) {
		ring[(*start+*n)%len(ring)] = e
		*n++
	} else {
		ring[*start] = e
		*start = (*start + 1) % len(ring)
	}
	count := 0
	for i := 0; i < *n; i++ {
		if ring[i].same == e.same { // order does not matter for a count
			count++
		}
	}
	return count
}

// Observe pushes the step's calls onto the window, judging them one by one.
func (d *Detector) Observe(f *guard.Facts) {
	d.verdict = guard.Verdict{}
	added := false
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		added = true
		count := push(d.ring, &d.start, &d.n, d.entry(c))
		if !d.verdict.Stop && count > d.opts.Threshold {
			d.verdict = d.stop(c, count, guard.PhaseCheck)
		}
	}
	if !added || d.verdict.Stop || !d.opts.Warn {
		return
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		if count := d.countNext(d.entry(c).same); count > d.opts.Threshold {
			w := guard.Warning{
				Code: WarningCode, Tool: guard.Clean(c.Tool), Value: float64(count - 1), Limit: float64(count),
				Ratio: float64(count-1) / float64(count),
				Detail: fmt.Sprintf("tool %s called %d times within the last %d calls with the same arguments %s; one more stops the run (threshold %d)",
					guard.Quote(c.Tool), count-1, d.opts.Window, c.Preview(), d.opts.Threshold),
			}
			w.Feedback = feedback.ForWarning(w)
			d.verdict.Warnings = []guard.Warning{w}
			return
		}
	}
}

// countNext returns the number of same calls the window would hold if a
// call that is the same as same were pushed now.
func (d *Detector) countNext(same canonical.Sum) int {
	count := 1
	for i := 0; i < d.n; i++ {
		if d.ring[i].same == same {
			count++
		}
	}
	if d.n == len(d.ring) && d.ring[d.start].same == same {
		count-- // the oldest call leaves the window
	}
	return count
}

// stop builds a stop verdict for call c with this count.
func (d *Detector) stop(c *guard.Call, count int, phase guard.Phase) guard.Verdict {
	ev := Evidence{Tool: guard.Clean(c.Tool), ArgsPreview: c.Preview(), Count: count, Threshold: d.opts.Threshold, Window: d.opts.Window,
		IdenticalResults: d.outcomes}
	verb := "called"
	if phase == guard.PhasePreflight {
		verb = "would be called"
	}
	v := guard.Verdict{
		Stop:   true,
		Reason: ReasonWindowedRepeat,
		Code:   Code,
		Detail: fmt.Sprintf("tool %s %s %d times within the last %d calls with the same arguments %s%s (threshold %d)",
			guard.Quote(c.Tool), verb, count, ev.Window, ev.ArgsPreview, sameResult(d.outcomes, phase), ev.Threshold),
		Evidence: ev,
	}
	v.Feedback = feedback.For(v, phase)
	return v
}

func sameResult(outcomes bool, phase guard.Phase) string {
	switch {
	case !outcomes:
		return ""
	case phase == guard.PhasePreflight:
		return ", which returned the same result each time"
	}
	return " and the same result"
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (d *Detector) Verdict() guard.Verdict { return d.verdict }

// Preflight pushes the proposed calls onto a copy of the window and refuses
// the first that would go over the threshold. It changes nothing.
func (d *Detector) Preflight(f *guard.Facts) guard.Verdict {
	copy(d.sim, d.ring)
	start, n := d.start, d.n
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		if count := push(d.sim, &start, &n, d.predict(c.Key, start, n)); count > d.opts.Threshold {
			return d.stop(c, count, guard.PhasePreflight)
		}
	}
	return guard.Verdict{}
}

// predict returns the window entry of a call that has not run, in the
// simulated window sim (with start and n): comparing outcomes, it returns what
// the newest same call in the window returned, if any.
func (d *Detector) predict(key canonical.Sum, start, n int) call {
	e := call{key: key, same: key}
	if !d.outcomes {
		return e
	}
	for i := n - 1; i >= 0; i-- {
		if c := d.sim[(start+i)%len(d.sim)]; c.key == key {
			return c
		}
	}
	return e
}

// Reset forgets the run.
func (d *Detector) Reset() {
	clear(d.ring)
	d.start, d.n = 0, 0
	d.verdict = guard.Verdict{}
}

// state is the JSON form of the detector's state.
type state struct {
	// Keys are the keys of the calls in the window, oldest first.
	Keys []canonical.Sum `json:"keys"`
	// Outcomes are their outcomes, comparing outcomes (absent otherwise).
	Outcomes []canonical.Sum `json:"outcomes,omitempty"`
}

// Snapshot returns the window's keys as JSON, or null when it is empty. The
// state holds no preview, so redaction changes nothing.
func (d *Detector) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	if d.n == 0 {
		return []byte("null"), nil
	}
	s := state{Keys: d.RecentKeys()}
	if d.outcomes {
		s.Outcomes = make([]canonical.Sum, d.n)
		for i := range s.Outcomes {
			s.Outcomes[i] = d.ring[(d.start+i)%len(d.ring)].same
		}
	}
	return json.Marshal(s)
}

// Restore replaces the state by one that Snapshot returned: at most Window
// keys, each 32 lowercase hexadecimal characters, and as many outcomes when
// outcomes are compared.
func (d *Detector) Restore(data []byte) error {
	var s *state
	if err := guard.UnmarshalState(data, &s); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if s == nil {
		d.Reset()
		return nil
	}
	switch {
	case len(s.Keys) == 0:
		return fmt.Errorf("%s: a state without keys (a fresh state is null)", Name)
	case len(s.Keys) > d.opts.Window:
		return fmt.Errorf("%s: %d keys in a window of %d", Name, len(s.Keys), d.opts.Window)
	case d.outcomes && len(s.Outcomes) != len(s.Keys):
		return fmt.Errorf("%s: %d outcomes for %d keys", Name, len(s.Outcomes), len(s.Keys))
	case !d.outcomes && s.Outcomes != nil:
		return fmt.Errorf("%s: outcomes in a window that compares calls", Name)
	}
	d.Reset()
	for i, key := range s.Keys {
		d.ring[i] = call{key: key, same: key}
		if d.outcomes {
			d.ring[i].same = s.Outcomes[i]
		}
	}
	d.n = len(s.Keys)
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
func (d *Detector) Summary() any {
	s := Summary{Calls: d.n}
	for i := 0; i < d.n; i++ {
		count := 0
		for j := 0; j < d.n; j++ {
			if d.ring[j].same == d.ring[i].same {
				count++
			}
		}
		s.MaxCount = max(s.MaxCount, count)
	}
	return s
}

// CheckBounds checks the restored window against the guard's counters: its
// calls are among the calls recorded.
func (d *Detector) CheckBounds(c guard.Counters) error {
	if d.n > c.ToolCalls {
		return fmt.Errorf("%s: %d calls in the window, but %d calls recorded", Name, d.n, c.ToolCalls)
	}
	return nil
}
