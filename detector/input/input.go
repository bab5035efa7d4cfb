// Package input stops a run in which the same message keeps coming back to
// the agent while it only answers in words: a test runner that reports the
// same error after each of the programmer's replies (ChatDev's "module 'os'
// has no attribute 'setsid'", five times), a reviewer or a simulated user
// who sends the same request again because nothing the agent said changed
// anything. The repeated-text rule (package text) looks at what the agent
// says; this rule looks at what it is told.
//
// A step's input is what it carries that is not a tool result (rule.Step's
// Input: a user's or another agent's message, a test report, a hook's
// feedback). The rule keeps, for the last Options.Window steps, the hash of
// each step's input (rule.Facts.InputHash, of the input as given), and stops
// when a step's input is the same as that of Options.Threshold of them,
// itself included: with the defaults, the third same input within 10 steps.
//
// Only steps that answer with words alone count. A step that makes a tool
// call (one the guard does not ignore), whatever its outcome, acts on the
// message: a loop that repeats calls is the other rules' to stop, and an
// agent that is given the same task again and works on it (a hook that
// feeds the same prompt back each time the agent would stop) is not looping.
// A step in which the guard refused a call does not count either: the
// model tried to act, and asking again for a refused call is package
// refusal's pattern.
// A step whose input is shorter than Options.MinBytes (64 by default) does
// not count either: "yes", "continue" and "APPROVE" come back the same in
// healthy runs. Such steps hold a place in the window. An input that comes
// again after the window let it go counts from one again.
//
// In labelled real runs, no healthy agent got the same input of 16 bytes or
// more even twice within a run; ChatDev runs that loop get their test
// report three to five times, each answered in words.
//
// Some harnesses read the agent's actions out of its text and send the
// observation back as a user message (ReAct, mini-SWE-agent and MINT when
// their logs are read as chat transcripts): their inputs are tool results,
// and the same observation from a sweep ("Nothing happens.", an empty
// output) is no loop. Turn the rule off for them ("repeatedInput": false,
// which the audit's text-actions preset does).
//
// The rule needs finished steps, so it judges nothing in preflight. With
// Options.Warn, a step whose input brings a count to one short of the
// threshold (from 2) carries a REPEATED_INPUT_WARNING.
//
// The work per step is one scan of the window's hashes when the step counts,
// nothing more otherwise; the state is the window's hashes and step indexes.
package input

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/winopt"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "input"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "REPEATED_INPUT"
	WarningCode = "REPEATED_INPUT_WARNING"
)

// ReasonRepeatedInput is the reason of the rule's stops.
const ReasonRepeatedInput rule.Reason = "repeated-input"

// Priority is the rule's priority: after the no-progress rule, the
// repeated-text rule and the stall rule (rule.PriorityNoProgress to
// rule.PriorityNoProgress+50), which report what the agent itself repeats
// first.
const Priority = rule.PriorityNoProgress + 75

// Defaults of the options, and the largest of each.
const (
	DefaultThreshold = 3
	DefaultWindow    = 10
	DefaultMinBytes  = 64
	MaxWindow        = 256
	// MaxMinBytes is the largest MinBytes: 1 GiB.
	MaxMinBytes = 1 << 30
)

// Options tune the rule. The zero value is the default: the third same
// input of at least 64 bytes within the last 10 steps, each answered
// without a tool call, stops the run.
type Options struct {
	// Threshold is how many steps with the same input within the window
	// stop the run: 0 means DefaultThreshold; any other value must be from
	// 2 to Window.
	Threshold int `json:"threshold"`
	// Window is how many of the newest steps are looked at: 0 means
	// DefaultWindow, any other value must be from 2 to MaxWindow.
	Window int `json:"window"`
	// MinBytes is the shortest input, in bytes, that counts: 0 means
	// DefaultMinBytes, any other value must be from 1 to MaxMinBytes.
	MinBytes int `json:"minBytes"`
	// Warn adds a REPEATED_INPUT_WARNING to a step whose input brings a
	// count to Threshold-1 (when that is at least 2).
	Warn bool `json:"warn,omitempty"`
}

// Evidence is the evidence of a stop.
type Evidence struct {
	// Count is the number of steps in the window with the input, this one
	// included.
	Count int `json:"count"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
	// Window is Options.Window.
	Window int `json:"window"`
	// StepIndexes are the 0-based indexes of those steps, oldest first.
	StepIndexes []int `json:"stepIndexes"`
	// InputBytes is the size of the input, in bytes. The input itself is
	// not kept: it is someone else's message.
	InputBytes int `json:"inputBytes"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent is told the same thing again and again, and answers only in words"
}

// entry is one step in the window: the hash of its input (zero when the
// step does not count) and its index.
type entry struct {
	input canonical.Sum
	step  int
}

// A Rule finds an input received too often among the newest steps:
// validated options, never changed after New, so that one Rule serves any
// number of guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the window of its newest steps.
type state struct {
	r    *Rule
	ring ring.Ring[entry] // the window, oldest first

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
	b := winopt.Bounds{Rule: Name, DefaultThreshold: DefaultThreshold, DefaultWindow: DefaultWindow, MaxWindow: MaxWindow}
	errs := b.Check(&o.Threshold, &o.Window)
	switch {
	case o.MinBytes == 0:
		o.MinBytes = DefaultMinBytes
	case o.MinBytes < 1 || o.MinBytes > MaxMinBytes:
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "MinBytes",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 1 to %d, not %d", DefaultMinBytes, MaxMinBytes, o.MinBytes)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Rule{opts: o}, nil
}

// NewState returns the state of a fresh run: an empty window.
func (d *Rule) NewState() rule.State {
	return &state{r: d, ring: ring.New[entry](d.opts.Window)}
}

// Name returns "input".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// counts reports whether the step's input counts: it is at least MinBytes
// long, and the step makes no call that the guard does not ignore and had
// none refused.
func (s *state) counts(f *rule.Facts) bool {
	st := f.Step()
	if !f.NewInput || st == nil || len(st.Input) < s.r.opts.MinBytes || len(f.Refused) > 0 {
		return false
	}
	for i := range f.Calls {
		if !f.Calls[i].Ignored {
			return false
		}
	}
	return true
}

func (s *state) count(input canonical.Sum) int {
	n := 0
	w := s.ring.Unordered() // order does not matter for a count
	for i := range w {
		if w[i].input == input {
			n++
		}
	}
	return n
}

// Observe pushes the step's input onto the window and judges it.
func (s *state) Observe(f *rule.Facts) {
	s.verdict = rule.Verdict{}
	e := entry{step: f.Index}
	if !s.counts(f) {
		s.ring.Push(e)
		return
	}
	e.input = f.InputHash
	s.ring.Push(e)
	count := s.count(f.InputHash)
	size := len(f.Step().Input)
	switch {
	case count >= s.r.opts.Threshold:
		ev := Evidence{Count: count, Threshold: s.r.opts.Threshold, Window: s.r.opts.Window, InputBytes: size}
		for i := range s.ring.Len() {
			if e := s.ring.Ptr(i); e.input == f.InputHash {
				ev.StepIndexes = append(ev.StepIndexes, e.step)
			}
		}
		s.verdict = rule.Verdict{
			Stop:   true,
			Reason: ReasonRepeatedInput,
			Code:   Code,
			Detail: fmt.Sprintf("the same input (%d bytes) on %d of the last %d steps, each answered without a tool call (threshold %d)",
				size, ev.Count, ev.Window, ev.Threshold),
			Evidence: ev,
			Feedback: ev.feedback(),
		}
	case s.r.opts.Warn && count == s.r.opts.Threshold-1 && count >= 2:
		w := rule.Warning{
			Code: WarningCode, Metric: "sameInputSteps", Value: float64(count), Limit: float64(s.r.opts.Threshold),
			Ratio: float64(count) / float64(s.r.opts.Threshold),
			Detail: fmt.Sprintf("the same input (%d bytes) on %d of the last %d steps; once more stops the run (threshold %d)",
				size, count, s.r.opts.Window, s.r.opts.Threshold),
		}
		w.Feedback = warningFeedback(w)
		s.verdict.Warnings = []rule.Warning{w}
	}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (s *state) Verdict() rule.Verdict { return s.verdict }

// Preflight judges nothing: the rule needs finished steps.
func (s *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// saved is the JSON form of the rule's state: the steps in the window,
// oldest first.
type saved struct {
	// Inputs are the steps' input hashes; null for a step that does not
	// count.
	Inputs []*canonical.Sum `json:"inputs"`
	// Steps are the steps' indexes, in the same order.
	Steps []int `json:"steps"`
}

// Snapshot returns the window as JSON, or null when it is empty. It holds
// hashes, never an input.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	n := s.ring.Len()
	if n == 0 {
		return []byte("null"), nil
	}
	out := saved{Inputs: make([]*canonical.Sum, n), Steps: make([]int, n)}
	for i, e := range s.ring.All() {
		if e.input != (canonical.Sum{}) {
			sum := e.input
			out.Inputs[i] = &sum
		}
		out.Steps[i] = e.step
	}
	return json.Marshal(out)
}

// Restore replaces the state by one that Snapshot returned: at most Window
// steps, as many indexes as inputs, not negative and never decreasing (they
// repeat only once the step count has saturated).
func (s *state) Restore(data []byte) error {
	var in *saved
	if err := rule.UnmarshalState(data, &in); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if in == nil {
		s.ring.Clear()
		s.verdict = rule.Verdict{}
		return nil
	}
	switch {
	case len(in.Inputs) == 0:
		return fmt.Errorf("%s: a state without steps (a fresh state is null)", Name)
	case len(in.Inputs) > s.r.opts.Window:
		return fmt.Errorf("%s: %d steps in a window of %d", Name, len(in.Inputs), s.r.opts.Window)
	case len(in.Steps) != len(in.Inputs):
		return fmt.Errorf("%s: %d step indexes for %d inputs", Name, len(in.Steps), len(in.Inputs))
	}
	entries := make([]entry, len(in.Inputs))
	for i, step := range in.Steps {
		if step < 0 || i > 0 && step < in.Steps[i-1] {
			return fmt.Errorf("%s: step indexes must not be negative nor decrease (%v)", Name, in.Steps)
		}
		entries[i] = entry{step: step}
		if h := in.Inputs[i]; h != nil {
			if *h == (canonical.Sum{}) {
				return fmt.Errorf("%s: a zero input hash", Name)
			}
			entries[i].input = *h
		}
	}
	s.ring.Clear()
	s.verdict = rule.Verdict{}
	for _, e := range entries {
		s.ring.Push(e)
	}
	return nil
}

// CheckBounds checks the restored window against the guard's counters: no
// more steps in it than were recorded, and no step index beyond them.
func (s *state) CheckBounds(c rule.Counters) error {
	if n := s.ring.Len(); n > c.Steps {
		return fmt.Errorf("%s: %d steps in the window, but %d steps recorded", Name, n, c.Steps)
	}
	w := s.ring.Unordered()
	for i := range w {
		if s := w[i].step; s >= c.Steps {
			return fmt.Errorf("%s: step index %d, but %d steps recorded", Name, s, c.Steps)
		}
	}
	return nil
}

// Summary describes the window.
type Summary struct {
	// Steps is the number of steps in the window.
	Steps int `json:"steps"`
	// MaxCount is the most counted steps that share one input in it.
	MaxCount int `json:"maxCount"`
}

// Summary returns the window's size and the count of its most repeated
// input (a Summary).
func (s *state) Summary() any {
	sum := Summary{Steps: s.ring.Len()}
	w := s.ring.Unordered()
	for i := range w {
		if h := w[i].input; h != (canonical.Sum{}) {
			sum.MaxCount = max(sum.MaxCount, s.count(h))
		}
	}
	return sum
}
