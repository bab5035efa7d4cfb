// Package budget is the step limit and the usage budgets of loopguard: it
// stops a run when it has taken its maximum number of steps, or when its
// summed tokens, cost or duration reach a limit, and it warns as a limit
// draws near.
//
// The guard sums the usage of the steps ([rule.Totals]); a step without a
// total token count counts its input plus output tokens. A limit is spent
// when it is reached (value >= limit): the rule judges a step after it has
// happened, so waiting for the limit to be exceeded would always overshoot by
// a step. The duration budget compares the larger of the summed step
// durations and the wall-clock time since the run's state was made, when its
// guard was created or reset (read from [Options.Now], so that tests can
// control it).
//
// The budgets are judged before the step limit, in this order: total, input
// and output tokens, cost, duration, then steps. With a warning ratio
// (WarnAt), every step whose value is at or past that fraction of a limit but
// below it carries a BUDGET_WARNING, on stop verdicts too.
//
// In preflight, a call is refused when a limit is already reached by the
// totals so far (and the wall clock), or when the steps recorded so far are
// already at the step limit.
//
// The rule is a [rule.Limiter]: with the guard's Config.AllowLimitChanges, a
// saved run can be restored under other limits, to give it more room. One
// [Rule] serves any number of guards at once: each run's wall clock and last
// reading are in a state of its own (see [Rule.NewState]).
package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name, the key of its state in snapshots.
const Name = "budget"

// The codes of the rule's stops and warnings.
const (
	CodeTotalTokens  = "BUDGET_TOTAL_TOKENS"
	CodeInputTokens  = "BUDGET_INPUT_TOKENS"
	CodeOutputTokens = "BUDGET_OUTPUT_TOKENS"
	CodeCostUSD      = "BUDGET_COST_USD"
	CodeDurationMs   = "BUDGET_DURATION_MS"
	CodeMaxSteps     = "MAX_STEPS"
	CodeWarning      = "BUDGET_WARNING"
)

// The reasons of the rule's stops.
const (
	// ReasonMaxSteps is the reason of a stop at the step limit.
	ReasonMaxSteps rule.Reason = "max-steps"
	// ReasonBudget is the reason of a stop on a spent budget.
	ReasonBudget rule.Reason = "budget"
)

// The metrics, as evidence and warnings name them.
const (
	MetricTotalTokens  = "totalTokens"
	MetricInputTokens  = "inputTokens"
	MetricOutputTokens = "outputTokens"
	MetricCostUSD      = "costUsd"
	MetricDurationMs   = "durationMs"
)

// A Limit is one budget.
type Limit struct {
	// Value is the limit in the metric's unit (tokens, US dollars,
	// milliseconds). Zero means no limit; it must be finite and not
	// negative.
	Value float64 `json:"limit"`
	// WarnAt is the ratio of the limit, in (0, 1], from which the rule
	// warns. Zero means Options.WarnAt.
	WarnAt float64 `json:"warnAt"`
}

// Options tune the rule. The zero value limits nothing.
type Options struct {
	// MaxSteps is the most steps in a run: the step that reaches it stops
	// the run. Zero means no step limit (the standard set of package
	// detector uses 150, detector.DefaultMaxSteps).
	MaxSteps int `json:"maxSteps"`
	// MaxTotalTokens limits the summed total tokens (metric totalTokens).
	MaxTotalTokens Limit `json:"maxTotalTokens"`
	// MaxInputTokens limits the summed input tokens (metric inputTokens).
	MaxInputTokens Limit `json:"maxInputTokens"`
	// MaxOutputTokens limits the summed output tokens (metric
	// outputTokens).
	MaxOutputTokens Limit `json:"maxOutputTokens"`
	// MaxCostUSD limits the summed cost in US dollars (metric costUsd).
	MaxCostUSD Limit `json:"maxCostUsd"`
	// MaxDurationMs limits the run's duration in milliseconds (metric
	// durationMs): the larger of the summed step durations and the wall
	// clock since the run's state was made (its guard created or reset).
	MaxDurationMs Limit `json:"maxDurationMs"`
	// WarnAt is the warning ratio of every limit that sets none, in
	// [0, 1]. Zero means no warnings.
	WarnAt float64 `json:"warnAt"`
	// Now is the wall clock of the duration budget; nil means time.Now.
	// It is read only when MaxDurationMs is set, and it is not part of
	// the options' fingerprint.
	Now func() time.Time `json:"-"`
}

// Evidence is the evidence of a budget stop.
type Evidence struct {
	// Metric names the spent budget, such as "totalTokens".
	Metric string `json:"metric"`
	// Value is the metric's value.
	Value float64 `json:"value"`
	// Limit is the budget's limit.
	Limit float64 `json:"limit"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "a token, cost or time budget is spent"
}

// StepsEvidence is the evidence of a step-limit stop.
type StepsEvidence struct {
	// Steps is the number of steps recorded.
	Steps int `json:"steps"`
	// Limit is the step limit.
	Limit int `json:"limit"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (StepsEvidence) Hint() string {
	return "the run used all its steps; raise the limit or give the agent a clearer goal"
}

// The metrics, in the order they are judged.
const (
	totalTokens = iota
	inputTokens
	outputTokens
	costUSD
	durationMs
	numMetrics

	maxSteps = numMetrics // the step limit, judged last
	noStop   = -1
)

var metrics = [numMetrics]struct{ name, code, field string }{
	{MetricTotalTokens, CodeTotalTokens, "MaxTotalTokens"},
	{MetricInputTokens, CodeInputTokens, "MaxInputTokens"},
	{MetricOutputTokens, CodeOutputTokens, "MaxOutputTokens"},
	{MetricCostUSD, CodeCostUSD, "MaxCostUSD"},
	{MetricDurationMs, CodeDurationMs, "MaxDurationMs"},
}

// A reading is what the rule measured of a step (or, in preflight, of the
// run so far).
type reading struct {
	values [numMetrics]float64
	steps  int
	stop   int // the first limit reached, or noStop
}

// Rule is the step limit and usage budgets: validated options, never changed
// after New, so that one Rule serves any number of guards at once. Create it
// with New.
type Rule struct {
	maxSteps int
	limits   [numMetrics]Limit // with the effective WarnAt; Value 0 is off
	now      func() time.Time
}

// state is one run's: its wall clock and its last reading.
type state struct {
	r     *Rule
	start time.Time // of the wall clock; set only with a duration limit

	last    reading
	scratch []byte // for the details of warnings
}

var (
	_ rule.Rule    = (*Rule)(nil)
	_ rule.Limiter = (*Rule)(nil)
	_ rule.Saver   = (*state)(nil)
)

// New returns the rule with these options, or an error (a
// *rule.OptionError) naming every invalid field.
func New(o Options) (*Rule, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: field, Err: fmt.Errorf(format, args...)})
	}
	if o.MaxSteps < 0 {
		bad("MaxSteps", "%d is negative", o.MaxSteps)
	}
	if !isRatio(o.WarnAt) {
		bad("WarnAt", "%v is not a ratio between 0 and 1", o.WarnAt)
	}
	d := &Rule{maxSteps: o.MaxSteps, now: o.Now}
	if d.now == nil {
		d.now = time.Now
	}
	for i, l := range [numMetrics]Limit{o.MaxTotalTokens, o.MaxInputTokens, o.MaxOutputTokens, o.MaxCostUSD, o.MaxDurationMs} {
		field := metrics[i].field
		if !(l.Value >= 0) || math.IsInf(l.Value, 0) {
			bad(field+".Value", "%v is not a finite number of 0 or more", l.Value)
		}
		if !isRatio(l.WarnAt) {
			bad(field+".WarnAt", "%v is not a ratio between 0 and 1", l.WarnAt)
		}
		switch {
		case l.Value == 0:
			l.WarnAt = 0 // no limit, no warning
		case l.WarnAt == 0:
			l.WarnAt = o.WarnAt
		}
		d.limits[i] = l
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// NewState returns the state of a fresh run: no step read yet, and its wall
// clock started now.
func (d *Rule) NewState() rule.State {
	s := &state{r: d}
	s.reset(0)
	return s
}

func isRatio(f float64) bool { return f >= 0 && f <= 1 }

// timed reports whether there is a duration limit, the only reason to read
// the clock.
func (d *Rule) timed() bool { return d.limits[durationMs].Value > 0 }

// reset forgets the last step and starts the wall clock as if elapsed had
// already gone by.
func (s *state) reset(elapsed time.Duration) {
	s.last = reading{stop: noStop}
	if s.r.timed() {
		s.start = s.r.now().Add(-elapsed)
	}
}

// wallClock returns the wall-clock time used so far.
func (s *state) wallClock() time.Duration {
	if e := s.r.now().Sub(s.start); e > 0 {
		return e
	}
	return 0
}

// Name returns Name.
func (d *Rule) Name() string { return Name }

// Priority returns rule.PriorityBudget.
func (d *Rule) Priority() int { return rule.PriorityBudget }

// OnlyLimits returns true: the options are all limits, so a saved run may be
// restored under other ones.
func (d *Rule) OnlyLimits() bool { return true }

// Options returns the options in effect: each limit with the warning ratio
// that applies to it (zero for a limit that is off), the shared WarnAt zero
// (it is folded into the limits) and Now nil.
func (d *Rule) Options() any {
	return Options{
		MaxSteps:        d.maxSteps,
		MaxTotalTokens:  d.limits[totalTokens],
		MaxInputTokens:  d.limits[inputTokens],
		MaxOutputTokens: d.limits[outputTokens],
		MaxCostUSD:      d.limits[costUSD],
		MaxDurationMs:   d.limits[durationMs],
	}
}

// measure reads the totals of f (and the wall clock, with a duration limit)
// and finds the first limit reached.
func (s *state) measure(f *rule.Facts, r *reading) {
	d := s.r
	t := &f.Totals
	r.values = [numMetrics]float64{
		totalTokens:  float64(t.TotalTokens),
		inputTokens:  float64(t.InputTokens),
		outputTokens: float64(t.OutputTokens),
		costUSD:      t.CostUSD,
		durationMs:   t.DurationMs(),
	}
	if d.timed() {
		r.values[durationMs] = max(r.values[durationMs], ms(s.wallClock()))
	}
	r.steps = f.Steps
	r.stop = noStop
	for i, l := range d.limits {
		if l.Value > 0 && r.values[i] >= l.Value {
			r.stop = i
			return
		}
	}
	if d.maxSteps > 0 && r.steps >= d.maxSteps {
		r.stop = maxSteps
	}
}

// warningDetail writes "totalTokens is at 8000 of its limit 10000 (80%)"
// with one allocation: warnings repeat on every step while they apply.
func (s *state) warningDetail(metric string, value, limit, ratio float64) string {
	b := append(s.scratch[:0], metric...)
	b = append(b, " is at "...)
	b = strconv.AppendFloat(b, value, 'f', -1, 64)
	b = append(b, " of its limit "...)
	b = strconv.AppendFloat(b, limit, 'f', -1, 64)
	b = append(b, " ("...)
	b = strconv.AppendFloat(b, math.Round(ratio*1000)/10, 'f', -1, 64)
	b = append(b, "%)"...)
	s.scratch = b
	return string(b)
}

func ms(e time.Duration) float64 { return float64(e) / float64(time.Millisecond) }

// verdict turns a reading into a verdict.
func (s *state) verdict(r *reading, p rule.Phase) rule.Verdict {
	d := s.r
	var v rule.Verdict
	for i, l := range d.limits {
		value := r.values[i]
		if l.WarnAt > 0 && value < l.Value && value/l.Value >= l.WarnAt {
			if v.Warnings == nil {
				v.Warnings = make([]rule.Warning, 0, 2)
			}
			ratio := value / l.Value
			w := rule.Warning{
				Code: CodeWarning, Metric: metrics[i].name, Value: value, Limit: l.Value, Ratio: ratio,
				Detail: s.warningDetail(metrics[i].name, value, l.Value, ratio),
			}
			w.Feedback = warningFeedback(w)
			v.Warnings = append(v.Warnings, w)
		}
	}
	switch {
	case r.stop == noStop:
		return v
	case r.stop == maxSteps:
		v.Reason, v.Code = ReasonMaxSteps, CodeMaxSteps
		ev := StepsEvidence{Steps: r.steps, Limit: d.maxSteps}
		v.Evidence, v.Feedback = ev, ev.feedback(p)
		if p == rule.PhasePreflight {
			v.Detail = fmt.Sprintf("%d steps are already recorded; the limit is %d", r.steps, d.maxSteps)
		} else {
			v.Detail = fmt.Sprintf("step %d reached the limit of %d steps", r.steps, d.maxSteps)
		}
	default:
		m, value, limit := metrics[r.stop], r.values[r.stop], d.limits[r.stop].Value
		v.Reason, v.Code = ReasonBudget, m.code
		ev := Evidence{Metric: m.name, Value: value, Limit: limit}
		v.Evidence, v.Feedback = ev, ev.feedback(p)
		verb := "reached"
		if p == rule.PhasePreflight {
			verb = "has already reached"
		}
		v.Detail = fmt.Sprintf("%s %s its limit: %s of %s", m.name, verb, rule.FormatNumber(value), rule.FormatNumber(limit))
	}
	v.Stop = true
	return v
}

// Observe measures the run's totals after the step.
func (s *state) Observe(f *rule.Facts) { s.measure(f, &s.last) }

// Verdict returns a stop when the last step reached a limit, and warnings for
// the limits it came near.
func (s *state) Verdict() rule.Verdict { return s.verdict(&s.last, rule.PhaseCheck) }

// Preflight refuses calls when a limit is already reached by the totals so
// far (and the wall clock) or the steps recorded so far are at the step
// limit. It returns the warnings that apply either way.
func (s *state) Preflight(f *rule.Facts) rule.Verdict {
	var r reading
	s.measure(f, &r)
	return s.verdict(&r, rule.PhasePreflight)
}

// saved is the JSON form of a run's state.
type saved struct {
	// WallClockMs is the wall-clock time used so far, in milliseconds.
	WallClockMs *float64 `json:"wallClockMs"`
}

// maxWallClockMs is the longest wall-clock time a state may hold: what a
// time.Duration holds.
const maxWallClockMs = float64(math.MaxInt64) / float64(time.Millisecond)

// Snapshot returns the wall-clock time used so far, {"wallClockMs": N}, when
// there is a duration limit, and JSON null otherwise. The totals and the
// step count are the guard's to save.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if !s.r.timed() {
		return []byte("null"), nil
	}
	elapsed := ms(s.wallClock())
	return json.Marshal(saved{WallClockMs: &elapsed})
}

// Restore restarts the wall clock so that the time used goes on from the
// saved one: the time between saving and restoring does not count. JSON null
// starts it afresh. A state saved with a duration limit is accepted under
// options without one (the limits may change on restore), and ignored.
func (s *state) Restore(data []byte) error {
	data = bytes.TrimSpace(data)
	var elapsed time.Duration
	if len(data) != 0 && string(data) != "null" {
		if data[0] != '{' {
			return fmt.Errorf("%s: state is not a JSON object", Name)
		}
		var sv saved
		if err := rule.UnmarshalState(data, &sv); err != nil {
			return fmt.Errorf("%s: state: %v", Name, err)
		}
		if sv.WallClockMs == nil {
			return fmt.Errorf("%s: state has no wallClockMs", Name)
		}
		if w := *sv.WallClockMs; !(w >= 0) || w > maxWallClockMs {
			return fmt.Errorf("%s: wallClockMs %v is not a duration", Name, w)
		}
		if ns := *sv.WallClockMs * float64(time.Millisecond); ns < math.MaxInt64 {
			elapsed = time.Duration(ns)
		} else {
			elapsed = math.MaxInt64
		}
	}
	s.reset(elapsed)
	return nil
}
