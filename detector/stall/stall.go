// Package stall stops a run whose steps bring nothing new, whatever they say:
// N steps in a row in which no tool returned a new outcome.
//
// It fills a gap of the no-progress rule (package noprogress), which stops
// only when the stalled steps repeat the same text. In real runs of current
// models the typical stall has a different text every time: the harness
// rejects the model's output (no action found, two actions found), no tool
// runs, and the model apologises in new words, eight or nine turns in a row.
//
// A step is stalled when none of its tool outcomes (a call's arguments plus
// its result or error, rule.Call.Outcome) is new in this run. A step without
// calls is stalled, and so is one that only calls ignored tools (see
// rule.Options.Ignore). A step that brings new input other than tool
// results (rule.Step.Input, such as a user's reply; the JSON step field
// userReply is read into it) is progress: a conversational agent learns from
// its user, not only from tools. Set Step.Input in such agents, or a long
// exchange of text-only turns is a stall.
//
// The rule stops after Options.Threshold stalled steps in a row, and
// again on every later stalled step, with a growing count. A step with a new
// outcome or new input starts the count again. A step in which the guard
// refused a call (rule.Step.Refused), and that brings nothing new, neither
// counts nor starts the count again: a model that keeps asking for a refused
// call is package refusal's case.
//
// Like the no-progress rule, it remembers the newest Options.Window distinct
// outcomes, in the order they were first seen; an outcome older than that
// counts as new again. The rule needs finished steps, so it judges nothing
// in preflight.
//
// With Options.Warn, the step that brings the count to one short of the
// threshold carries a STALL_WARNING (from a count of 2, so that a single
// text-only step never warns).
//
// The rule is not in detector.Defaults: it goes beyond the reference.
// Switch it on with "stall": true (or {"threshold": N, "warn": true}) in the
// options document, or pass it to rule.New.
package stall

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/loopguard/loopguard/internal/outcomes"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "stall"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "STALL"
	WarningCode = "STALL_WARNING"
)

// ReasonStall is the reason of the rule's stops.
const ReasonStall rule.Reason = "stall"

// Priority is the rule's priority: after the built-in rules (no progress
// is rule.PriorityNoProgress), before custom ones, so that a stall with the
// same text is reported as no progress.
const Priority = rule.PriorityNoProgress + 50

// Defaults of the options, and the largest window.
//
// DefaultThreshold comes from the real traces in testdata/traces: the longest
// run of steps without a new outcome or a user's reply is 2 in every healthy
// run (129 steps of a resolved SWE-bench run among them), while the
// format-error stall of a Gemini 3 Pro run lasts 8 steps and the looping
// WebShop runs stall for 8 to 11. Five stops that stall three steps before
// it ends, and leaves healthy runs more than twice their longest stall.
const (
	DefaultThreshold = 5
	DefaultWindow    = 1024
	MaxWindow        = 1 << 20
)

// Options tune the rule. The zero value stops after 5 stalled steps and
// remembers the newest 1024 distinct outcomes.
type Options struct {
	// Threshold is how many stalled steps in a row stop the run: 0 means
	// DefaultThreshold, any other value must be at least 2.
	Threshold int `json:"threshold"`
	// Window is how many distinct outcomes are remembered: 0 means 1024,
	// any other value must be from 1 to MaxWindow.
	Window int `json:"window"`
	// Warn adds a STALL_WARNING to the step that brings the count to
	// Threshold-1 (when that is at least 2).
	Warn bool `json:"warn,omitempty"`
}

// Evidence is the evidence of a stop.
type Evidence struct {
	// Steps is the number of stalled steps in a row.
	Steps int `json:"steps"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "steps keep coming back with nothing new, whatever the text"
}

// A Rule counts stalled steps: validated options, never changed after New,
// so that one Rule serves any number of guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the remembered outcomes and the stalled steps.
type state struct {
	r       *Rule
	seen    outcomes.Set
	stalled int // stalled steps in a row
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
	if o.Threshold != 0 && o.Threshold < 2 {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "Threshold",
			Err: fmt.Errorf("must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)})
	}
	if o.Window < 0 || o.Window > MaxWindow {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "Window",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 1 to %d, not %d", DefaultWindow, MaxWindow, o.Window)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	return &Rule{opts: o}, nil
}

// NewState returns the state of a fresh run: no outcome remembered yet.
func (d *Rule) NewState() rule.State {
	s := &state{r: d}
	s.seen.Init(d.opts.Window)
	return s
}

// Name returns "stall".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// maxStalled caps the count, so that it never overflows.
const maxStalled = 1 << 62

// Observe records the step's outcomes and counts it if it is stalled.
func (s *state) Observe(f *rule.Facts) {
	s.verdict = rule.Verdict{}
	stalled := !f.NewInput
	for i := range f.Calls {
		c := &f.Calls[i]
		if !c.Ignored && s.seen.Add(c.Outcome) {
			stalled = false
		}
	}
	if !stalled {
		s.stalled = 0
		return
	}
	if len(f.Refused) > 0 {
		return // the refusal rule's case: neither a stalled step nor progress
	}
	if s.stalled < maxStalled {
		s.stalled++
	}
	t := s.r.opts.Threshold
	switch {
	case s.stalled >= t:
		ev := Evidence{Steps: s.stalled, Threshold: t}
		v := rule.Verdict{
			Stop:     true,
			Reason:   ReasonStall,
			Code:     Code,
			Detail:   fmt.Sprintf("%d steps in a row brought no new tool outcome and no new input (threshold %d)", ev.Steps, t),
			Evidence: ev,
		}
		v.Feedback = ev.feedback()
		s.verdict = v
	case s.r.opts.Warn && s.stalled == t-1 && s.stalled >= 2:
		w := rule.Warning{
			Code: WarningCode, Metric: "stalledSteps", Value: float64(s.stalled), Limit: float64(t),
			Ratio:  float64(s.stalled) / float64(t),
			Detail: fmt.Sprintf("%d steps in a row brought no new tool outcome and no new input; %d stop the run", s.stalled, t),
		}
		w.Feedback = warningFeedback(w)
		s.verdict.Warnings = []rule.Warning{w}
	}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (s *state) Verdict() rule.Verdict { return s.verdict }

// Preflight judges nothing: the rule needs finished steps.
func (s *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// reset forgets the run, for a Restore of null.
func (s *state) reset() {
	s.seen.Reset()
	s.stalled = 0
	s.verdict = rule.Verdict{}
}

// saved is the JSON form of a run's state.
type saved struct {
	// Stalled is the number of stalled steps in a row.
	Stalled int `json:"stalled"`
	// Outcomes are the remembered outcomes, oldest first: their 16-byte
	// sums concatenated and encoded in base64 without padding.
	Outcomes string `json:"outcomes"`
}

// Snapshot returns the count and the remembered outcomes as JSON, or null for
// a fresh state. The state holds no preview, so redaction changes nothing.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if s.stalled == 0 && s.seen.Len() == 0 {
		return []byte("null"), nil
	}
	// The JSON of saved, written by hand as in package noprogress: base64
	// has nothing to escape. TestSnapshotIsStateJSON holds the two equal.
	b := make([]byte, 0, 48+(16*s.seen.Len()*4+2)/3)
	b = append(b, `{"stalled":`...)
	b = strconv.AppendInt(b, int64(s.stalled), 10)
	b = append(b, `,"outcomes":"`...)
	b = s.seen.AppendEncode(b)
	return append(b, `"}`...), nil
}

// Restore replaces the state by one that Snapshot returned: the outcomes
// must be whole sums, at most Window of them, without duplicates.
func (s *state) Restore(data []byte) error {
	var in *saved
	if err := rule.UnmarshalState(data, &in); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if in == nil {
		s.reset()
		return nil
	}
	if in.Stalled < 0 || in.Stalled > maxStalled {
		return fmt.Errorf("%s: stalled count %d out of range", Name, in.Stalled)
	}
	if in.Stalled == 0 && in.Outcomes == "" {
		return fmt.Errorf("%s: an empty state (a fresh state is null)", Name)
	}
	var seen outcomes.Set
	seen.Init(s.r.opts.Window)
	if err := seen.Decode(in.Outcomes); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	s.reset()
	s.seen, s.stalled = seen, in.Stalled
	return nil
}

// Summary describes the rule's state.
type Summary struct {
	// StalledSteps is the number of stalled steps in a row.
	StalledSteps int `json:"stalledSteps"`
	// Outcomes is the number of distinct outcomes remembered.
	Outcomes int `json:"outcomes"`
}

// Summary returns the rule's state (a Summary).
func (s *state) Summary() any {
	return Summary{StalledSteps: s.stalled, Outcomes: s.seen.Len()}
}

// CheckBounds checks the restored state against the guard's counters: the
// stalled steps are among the steps recorded, and the outcomes come from
// calls recorded.
func (s *state) CheckBounds(c rule.Counters) error {
	if s.stalled > c.Steps {
		return fmt.Errorf("%s: %d stalled steps, but %d steps recorded", Name, s.stalled, c.Steps)
	}
	if n := s.seen.Len(); n > c.ToolCalls {
		return fmt.Errorf("%s: %d outcomes, but %d calls recorded", Name, n, c.ToolCalls)
	}
	return nil
}
