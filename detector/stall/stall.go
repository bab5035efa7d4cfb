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
// its result or error, guard.Call.Outcome) is new in this run. A step without
// calls is stalled, and so is one that only calls ignored tools (see
// guard.Options.Ignore). A step that brings new input other than tool
// results (guard.Step.Input, such as a user's reply; the JSON step field
// userReply is read into it) is progress: a conversational agent learns from
// its user, not only from tools. Set Step.Input in such agents, or a long
// exchange of text-only turns is a stall.
//
// The detector stops after Options.Threshold stalled steps in a row, and
// again on every later stalled step, with a growing count. A step with a new
// outcome or new input starts the count again. A step in which the guard
// refused a call (guard.Step.Refused), and that brings nothing new, neither
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
// The detector is not in detector.Defaults: it goes beyond the reference.
// Switch it on with "stall": true (or {"threshold": N, "warn": true}) in the
// options document, or pass it to guard.New.
package stall

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/outcomes"
)

// Name is the detector's name: the key of its state in snapshots.
const Name = "stall"

// Code is the code of the detector's stops, and WarningCode that of its
// warnings.
const (
	Code        = feedback.CodeStall
	WarningCode = feedback.CodeStallWarning
)

// ReasonStall is the reason of the detector's stops.
const ReasonStall guard.Reason = "stall"

// Priority is the detector's priority: after the built-in rules (no progress
// is guard.PriorityNoProgress), before custom ones, so that a stall with the
// same text is reported as no progress.
const Priority = guard.PriorityNoProgress + 50

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

// Options tune the detector. The zero value stops after 5 stalled steps and
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

// A Detector counts stalled steps. Create it with New.
type Detector struct {
	guard.Owned // one guard at a time

	opts    Options
	seen    outcomes.Set
	stalled int // stalled steps in a row
	verdict guard.Verdict
}

var (
	_ guard.Detector   = (*Detector)(nil)
	_ guard.Bounded    = (*Detector)(nil)
	_ guard.Summarizer = (*Detector)(nil)
)

// New returns a detector with these options, or an error (a
// *guard.OptionError) for every invalid option.
func New(o Options) (*Detector, error) {
	var errs []error
	if o.Threshold != 0 && o.Threshold < 2 {
		errs = append(errs, &guard.OptionError{Detector: Name, Field: "Threshold",
			Err: fmt.Errorf("must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)})
	}
	if o.Window < 0 || o.Window > MaxWindow {
		errs = append(errs, &guard.OptionError{Detector: Name, Field: "Window",
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
	d := &Detector{opts: o}
	d.seen.Init(o.Window)
	return d, nil
}

// Name returns "stall".
func (d *Detector) Name() string { return Name }

// Priority returns Priority.
func (d *Detector) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Detector) Options() any { return d.opts }

// maxStalled caps the count, so that it never overflows.
const maxStalled = 1 << 62

// Observe records the step's outcomes and counts it if it is stalled.
func (d *Detector) Observe(f *guard.Facts) {
	d.verdict = guard.Verdict{}
	stalled := !f.NewInput
	for i := range f.Calls {
		c := &f.Calls[i]
		if !c.Ignored && d.seen.Add(c.Outcome) {
			stalled = false
		}
	}
	if !stalled {
		d.stalled = 0
		return
	}
	if len(f.Refused) > 0 {
		return // the refusal rule's case: neither a stalled step nor progress
	}
	if d.stalled < maxStalled {
		d.stalled++
	}
	t := d.opts.Threshold
	switch {
	case d.stalled >= t:
		ev := Evidence{Steps: d.stalled, Threshold: t}
		v := guard.Verdict{
			Stop:     true,
			Reason:   ReasonStall,
			Code:     Code,
			Detail:   fmt.Sprintf("%d steps in a row brought no new tool outcome and no new input (threshold %d)", ev.Steps, t),
			Evidence: ev,
		}
		v.Feedback = feedback.For(v, guard.PhaseCheck)
		d.verdict = v
	case d.opts.Warn && d.stalled == t-1 && d.stalled >= 2:
		w := guard.Warning{
			Code: WarningCode, Metric: "stalledSteps", Value: float64(d.stalled), Limit: float64(t),
			Ratio:  float64(d.stalled) / float64(t),
			Detail: fmt.Sprintf("%d steps in a row brought no new tool outcome and no new input; %d stop the run", d.stalled, t),
		}
		w.Feedback = feedback.ForWarning(w)
		d.verdict.Warnings = []guard.Warning{w}
	}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (d *Detector) Verdict() guard.Verdict { return d.verdict }

// Preflight judges nothing: the rule needs finished steps.
func (d *Detector) Preflight(*guard.Facts) guard.Verdict { return guard.Verdict{} }

// Reset forgets the run.
func (d *Detector) Reset() {
	d.seen.Reset()
	d.stalled = 0
	d.verdict = guard.Verdict{}
}

// state is the JSON form of the detector's state.
type state struct {
	// Stalled is the number of stalled steps in a row.
	Stalled int `json:"stalled"`
	// Outcomes are the remembered outcomes, oldest first: their 16-byte
	// sums concatenated and encoded in base64 without padding.
	Outcomes string `json:"outcomes"`
}

// Snapshot returns the count and the remembered outcomes as JSON, or null for
// a fresh state. The state holds no preview, so redaction changes nothing.
func (d *Detector) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	if d.stalled == 0 && d.seen.Len() == 0 {
		return []byte("null"), nil
	}
	// The JSON of state, written by hand as in package noprogress: base64
	// has nothing to escape. TestSnapshotIsStateJSON holds the two equal.
	b := make([]byte, 0, 48+(16*d.seen.Len()*4+2)/3)
	b = append(b, `{"stalled":`...)
	b = strconv.AppendInt(b, int64(d.stalled), 10)
	b = append(b, `,"outcomes":"`...)
	b = d.seen.AppendEncode(b)
	return append(b, `"}`...), nil
}

// Restore replaces the state by one that Snapshot returned: the outcomes
// must be whole sums, at most Window of them, without duplicates.
func (d *Detector) Restore(data []byte) error {
	var s *state
	if err := guard.UnmarshalState(data, &s); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if s == nil {
		d.Reset()
		return nil
	}
	if s.Stalled < 0 || s.Stalled > maxStalled {
		return fmt.Errorf("%s: stalled count %d out of range", Name, s.Stalled)
	}
	if s.Stalled == 0 && s.Outcomes == "" {
		return fmt.Errorf("%s: an empty state (a fresh state is null)", Name)
	}
	var seen outcomes.Set
	seen.Init(d.opts.Window)
	if err := seen.Decode(s.Outcomes); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	d.Reset()
	d.seen, d.stalled = seen, s.Stalled
	return nil
}

// Summary describes the detector's state.
type Summary struct {
	// StalledSteps is the number of stalled steps in a row.
	StalledSteps int `json:"stalledSteps"`
	// Outcomes is the number of distinct outcomes remembered.
	Outcomes int `json:"outcomes"`
}

// Summary returns the detector's state (a Summary).
func (d *Detector) Summary() any {
	return Summary{StalledSteps: d.stalled, Outcomes: d.seen.Len()}
}

// CheckBounds checks the restored state against the guard's counters: the
// stalled steps are among the steps recorded, and the outcomes come from
// calls recorded.
func (d *Detector) CheckBounds(c guard.Counters) error {
	if d.stalled > c.Steps {
		return fmt.Errorf("%s: %d stalled steps, but %d steps recorded", Name, d.stalled, c.Steps)
	}
	if n := d.seen.Len(); n > c.ToolCalls {
		return fmt.Errorf("%s: %d outcomes, but %d calls recorded", Name, n, c.ToolCalls)
	}
	return nil
}
