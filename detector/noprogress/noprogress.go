// Package noprogress stops a run whose steps change nothing: the agent says
// the same thing again and again while no new tool outcome comes back.
//
// A step is stalled when none of its tool outcomes (a call's arguments plus
// its result or error, rule.Call.Outcome) is new in this run. A step without
// calls is stalled, and so is a step that only calls ignored tools (see
// guard.Config.Ignore): their calls are not outcomes. New input other than
// tool results (guard.Step.Input, such as a user's reply) is not progress
// here, as the reference reads the rule: an agent that answers the user's
// changing messages with the same text, turn after turn, is stuck (a canned
// reply). Package stall, which ignores the text, counts new input as
// progress.
//
// The rule stops after Options.Threshold stalled steps in a row that all
// have the same normalised text (rule.Facts.TextHash). An empty text counts
// as a text, so steps with only tool calls are judged on their outcomes
// alone. A new outcome, or another text, starts the count again; a stalled
// step with another text starts a new count of one. A stall that goes on
// stops again on every later stalled step with the same text.
//
// A step in which the guard refused a call (guard.Step.Refused) and that
// brings no new outcome neither counts nor starts the count again: the
// model was told by the guard itself that nothing ran, and a model that
// keeps asking for a refused call is package refusal's case, which counts
// the refusals of each call and the steps in which each tool was refused
// since it last ran (a capped tool is refused whatever its arguments). So a
// model that keeps asking for a refused call, or for a capped tool with new
// arguments, stops the same way, with REPEATED_REFUSAL at its third refused
// step (with detector.Defaults), whatever its text, and whether its loop
// goes through guard.Turn or puts the refused calls in guard.Step.Refused
// itself.
//
// To bound memory and snapshots, a run's state remembers the newest
// Options.Window distinct outcomes, in the order they were first seen: an
// outcome seen again is not new and does not move; an outcome older than the
// window counts as new again.
//
// The rule needs finished steps, so it judges nothing in preflight.
//
// With Options.Warn, the stalled step that brings the count to one short of
// the threshold carries a NO_PROGRESS_WARNING (Value: the count; Limit: the
// threshold), from a count of 2, so that a threshold of 2 gives no warnings.
//
// A stall whose text changes every step is package stall's case.
package noprogress

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/outcomes"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "noprogress"

// Code is the code of the rule's stops.
const Code = "NO_PROGRESS"

// ReasonNoProgress is the reason of the rule's stops.
const ReasonNoProgress rule.Reason = "no-progress"

// Defaults of the options, and the largest window.
const (
	DefaultThreshold = 3
	DefaultWindow    = 1024
	MaxWindow        = 1 << 20
)

// Options tune the rule. The zero value is the reference's default: three
// stalled steps with the same text stop, the newest 1024 distinct outcomes
// are remembered.
type Options struct {
	// Threshold is how many stalled steps in a row, with the same text,
	// stop the run: 0 means 3, any other value must be at least 2.
	Threshold int `json:"threshold"`
	// Window is how many distinct outcomes are remembered: 0 means 1024,
	// any other value must be from 1 to MaxWindow.
	Window int `json:"window"`
	// Warn adds a NO_PROGRESS_WARNING to the stalled step that brings the
	// count to Threshold-1 (when that is at least 2).
	Warn bool `json:"warn,omitempty"`
}

// WarningCode is the code of the rule's warnings.
const WarningCode = "NO_PROGRESS_WARNING"

// Evidence is the evidence of a stop.
type Evidence struct {
	// Steps is the number of stalled steps in a row with the same text.
	Steps int `json:"steps"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
	// TextPreview is a short preview of the normalised text that the
	// stalled steps share.
	TextPreview string `json:"textPreview"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent repeats itself while nothing new comes back"
}

// A Rule finds runs of stalled steps: its options, never changed after New,
// so that one Rule serves any number of guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the outcomes it has seen and its count of stalled
// steps.
type state struct {
	opts Options // the rule's
	seen outcomes.Set

	// stalled is the number of stalled steps in a row with the text whose
	// hash is text.
	stalled int
	text    canonical.Sum

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

// NewState returns the state of a fresh run: no outcome seen, no stalled
// step.
func (d *Rule) NewState() rule.State {
	s := &state{opts: d.opts}
	s.seen.Init(d.opts.Window)
	return s
}

// Name returns "noprogress".
func (d *Rule) Name() string { return Name }

// Priority returns rule.PriorityNoProgress.
func (d *Rule) Priority() int { return rule.PriorityNoProgress }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// maxStalled caps the count, so that it never overflows.
const maxStalled = 1 << 62

// Observe records the step's outcomes and counts it if it is stalled.
func (d *state) Observe(f *rule.Facts) {
	d.verdict = rule.Verdict{}
	stalled := true
	for i := range f.Calls {
		c := &f.Calls[i]
		if !c.Ignored && d.seen.Add(c.Outcome) {
			stalled = false
		}
	}
	switch {
	case !stalled:
		d.stalled = 0
		return
	case len(f.Refused) > 0:
		// The guard's own refusal: the refusal rule's case. The count
		// neither grows nor starts again.
		return
	case d.stalled > 0 && d.text == f.TextHash:
		if d.stalled < maxStalled {
			d.stalled++
		}
	default:
		d.stalled, d.text = 1, f.TextHash
	}
	if d.stalled < d.opts.Threshold {
		if d.opts.Warn && d.stalled == d.opts.Threshold-1 && d.stalled >= 2 {
			d.warn(f)
		}
		return
	}
	ev := Evidence{Steps: d.stalled, Threshold: d.opts.Threshold, TextPreview: f.TextPreview()}
	text := "no text"
	if f.HasText {
		text = fmt.Sprintf("the same text %q", ev.TextPreview)
	}
	v := rule.Verdict{
		Stop:   true,
		Reason: ReasonNoProgress,
		Code:   Code,
		Detail: fmt.Sprintf("%d steps in a row brought no new tool outcome and had %s (threshold %d)",
			ev.Steps, text, ev.Threshold),
		Evidence: ev,
	}
	v.Feedback = ev.feedback()
	d.verdict = v
}

// warn sets the warning of a count one short of the threshold.
func (d *state) warn(f *rule.Facts) {
	text := "no text"
	if f.HasText {
		text = fmt.Sprintf("the same text %q", f.TextPreview())
	}
	w := rule.Warning{
		Code: WarningCode, Metric: "stalledSteps", Value: float64(d.stalled), Limit: float64(d.opts.Threshold),
		Ratio: float64(d.stalled) / float64(d.opts.Threshold),
		Detail: fmt.Sprintf("%d steps in a row brought no new tool outcome and had %s; one more stops the run (threshold %d)",
			d.stalled, text, d.opts.Threshold),
	}
	w.Feedback = warningFeedback(w)
	d.verdict.Warnings = []rule.Warning{w}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (d *state) Verdict() rule.Verdict { return d.verdict }

// Preflight judges nothing: the rule needs finished steps.
func (d *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// reset forgets the run.
func (d *state) reset() {
	d.seen.Reset()
	d.stalled, d.text = 0, canonical.Sum{}
	d.verdict = rule.Verdict{}
}

// saved is the JSON form of a run's state.
type saved struct {
	// Stalled is the number of stalled steps in a row, and Text the hash
	// of their text (absent when Stalled is 0).
	Stalled int            `json:"stalled"`
	Text    *canonical.Sum `json:"text,omitempty"`
	// Outcomes are the remembered outcomes, oldest first: their 16-byte
	// sums concatenated and encoded in base64 without padding.
	Outcomes string `json:"outcomes"`
}

// Snapshot returns the count and the remembered outcomes as JSON, or null
// for a fresh state. The state holds no preview, so redaction changes
// nothing.
func (d *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if d.stalled == 0 && d.seen.Len() == 0 {
		return []byte("null"), nil
	}
	// The JSON of state, written by hand: json.Marshal would scan the
	// outcomes (22 KB of base64 when the window is full) for characters to
	// escape, and there are none. TestSnapshotIsStateJSON holds the two
	// equal.
	b := make([]byte, 0, 96+(16*d.seen.Len()*4+2)/3)
	b = append(b, `{"stalled":`...)
	b = strconv.AppendInt(b, int64(d.stalled), 10)
	if d.stalled > 0 {
		b = append(b, `,"text":"`...)
		b, _ = d.text.AppendText(b) // 32 hex digits; never fails
		b = append(b, '"')
	}
	b = append(b, `,"outcomes":"`...)
	b = d.seen.AppendEncode(b)
	return append(b, `"}`...), nil
}

// Restore replaces the state by one that Snapshot returned: the outcomes
// must be whole sums, at most Window of them, without duplicates.
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
	case s.Stalled < 0 || s.Stalled > maxStalled:
		return fmt.Errorf("%s: stalled count %d out of range", Name, s.Stalled)
	case s.Stalled == 0 && s.Outcomes == "":
		return fmt.Errorf("%s: an empty state (a fresh state is null)", Name)
	case s.Stalled > 0 && s.Text == nil:
		return fmt.Errorf("%s: stalled steps without a text", Name)
	case s.Stalled == 0 && s.Text != nil:
		return fmt.Errorf("%s: a text without stalled steps", Name)
	}
	var seen outcomes.Set
	seen.Init(d.opts.Window)
	if err := seen.Decode(s.Outcomes); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	d.reset()
	d.seen = seen
	d.stalled = s.Stalled
	if s.Text != nil {
		d.text = *s.Text
	}
	return nil
}

// Summary describes a run's state.
type Summary struct {
	// StalledSteps is the number of stalled steps in a row with the same
	// text.
	StalledSteps int `json:"stalledSteps"`
	// Outcomes is the number of distinct outcomes remembered.
	Outcomes int `json:"outcomes"`
}

// Summary returns the run's state (a Summary).
func (d *state) Summary() any {
	return Summary{StalledSteps: d.stalled, Outcomes: d.seen.Len()}
}

// CheckBounds checks the restored state against the guard's counters: the
// stalled steps are among the steps recorded, and the outcomes come from
// calls recorded.
func (d *state) CheckBounds(c rule.Counters) error {
	if d.stalled > c.Steps {
		return fmt.Errorf("%s: %d stalled steps, but %d steps recorded", Name, d.stalled, c.Steps)
	}
	if n := d.seen.Len(); n > c.ToolCalls {
		return fmt.Errorf("%s: %d outcomes, but %d calls recorded", Name, n, c.ToolCalls)
	}
	return nil
}
