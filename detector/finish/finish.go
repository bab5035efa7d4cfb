// Package finish is the finish-reason rule of loopguard: it stops a run when
// the provider reports that the model's turn is over, or reports a reason the
// loop does not know while the model only wrote text.
//
// The guard normalises finish reasons (see [rule.NormalizeFinishReason]:
// "end_turn" and Gemini's "STOP" are "stop", "tool_use" is "tool-calls",
// "max_tokens" is "length", "SAFETY" is "content-filter", ...). Then a reason
// in [Options.Terminal] stops the run; "tool-calls" lets it go on; a missing
// reason says nothing; any other reason follows [Options.OtherPolicy].
//
// One exception, where loopguard deliberately differs from the reference: a
// normal "stop" on a step that has tool calls does not end the run by
// default, because the loop must still run those calls. Gemini reports STOP
// on function calls, and so do many OpenAI-compatible servers for open models
// and harnesses that read actions from the model's text; under the
// reference's reading every such run ends at its first step. "length",
// "content-filter" and "error" still end a step with tool calls: a cut or
// withheld turn cannot carry a usable call. [Options.StopWithToolCalls] set
// to [Stop] is the reference's reading.
//
// A stop on the terminal reason "stop" is the model finishing normally: its
// evidence reports [Evidence.NormalFinish], [rule.IsFault] is false for it
// and it carries no feedback. Every other stop is a fault.
//
// The rule keeps no state between steps (its state is not a [rule.Saver]:
// snapshots hold null for it) and judges nothing in preflight.
package finish

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name, the key of its state in snapshots.
const Name = "finish"

// The codes of the rule's stops.
const (
	// CodeTerminal: the finish reason is in the terminal list.
	CodeTerminal = "FINISH_TERMINAL"
	// CodeOther: an unfamiliar reason under the Stop policy.
	CodeOther = "FINISH_OTHER"
	// CodeOtherTextOnly: an unfamiliar reason on a step with text and no
	// tool calls, under the StopIfTextOnly policy.
	CodeOtherTextOnly = "FINISH_OTHER_TEXT_ONLY"
)

// ReasonFinishReason is the reason of the rule's stops.
const ReasonFinishReason rule.Reason = "finish-reason"

// ToolCalls is the normalised finish reason that lets a run go on.
const ToolCalls = "tool-calls"

// A Policy says what to do with a finish reason that is neither terminal nor
// "tool-calls".
type Policy string

// The policies.
const (
	// StopIfTextOnly stops when the step has text and no tool calls.
	StopIfTextOnly Policy = "stop-if-text-only"
	// Stop always stops.
	Stop Policy = "stop"
	// Continue never stops.
	Continue Policy = "continue"
)

// DefaultTerminal returns the terminal reasons used when
// [Options.Terminal] is nil: "stop", "length", "content-filter" and "error".
func DefaultTerminal() []string {
	return []string{"stop", "length", "content-filter", "error"}
}

// Options tune the rule. The zero value is the default: the reference's
// terminal list and policy, and a normal "stop" on a step with tool calls goes
// on.
type Options struct {
	// Terminal lists the finish reasons that end a run. Nil means
	// DefaultTerminal(); a non-nil empty slice means none. Entries are
	// normalised as finish reasons are, so a provider's own spelling
	// ("end_turn", "MAX_TOKENS") names the same reason; an entry that is
	// empty once normalised ("", "pause_turn") is an error.
	Terminal []string `json:"terminal"`
	// OtherPolicy is the policy for other reasons. Empty means
	// StopIfTextOnly.
	OtherPolicy Policy `json:"otherPolicy"`
	// StopWithToolCalls says what a terminal "stop" does on a step that
	// has tool calls: Continue (the default, also when empty) lets the run
	// go on, Stop ends it as the reference does.
	StopWithToolCalls Policy `json:"stopWithToolCalls,omitempty"`
}

// Evidence is the evidence of a stop.
type Evidence struct {
	// FinishReason is the finish reason as the provider gave it, as
	// rule.Clean shows it (escaped, and cut to 256 bytes).
	FinishReason string `json:"finishReason"`
	// Normalized is the normalised reason (rule.NormalizeFinishReason),
	// shown the same way.
	Normalized string `json:"normalized"`
	// Policy is the configured policy for other reasons.
	Policy Policy `json:"policy"`
	// HasText reports whether the step has text that is not blank.
	HasText bool `json:"hasText"`
	// ToolCallCount is the number of tool calls in the step.
	ToolCallCount int `json:"toolCallCount"`
	// Terminal reports whether the reason is in the terminal list. It is
	// not written to JSON: the reference's evidence has no such field.
	Terminal bool `json:"-"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the provider ended the turn; the loop should not ask again"
}

// NormalFinish reports whether the stop is the model finishing normally: a
// terminal stop whose normalised reason is "stop".
func (e Evidence) NormalFinish() bool { return e.Terminal && e.Normalized == "stop" }

var _ rule.NormalFinisher = Evidence{}

// Rule is the finish-reason rule: validated options, never changed after
// New, so that one Rule serves any number of guards at once. Create it with
// New.
type Rule struct {
	terminal  []string // normalised, sorted, without duplicates
	policy    Policy
	withCalls Policy // Stop, or "" for the default (Continue)
}

// state is one run's: the last step's stop, if any. It is not saved: it
// lasts from Observe to Verdict.
type state struct {
	r    *Rule
	code string // "" when the step goes on
	ev   Evidence
}

var _ rule.Rule = (*Rule)(nil)

// New returns the rule with these options, or an error (a
// *rule.OptionError) naming every invalid field.
func New(o Options) (*Rule, error) {
	var errs []error
	d := &Rule{policy: o.OtherPolicy}
	switch o.OtherPolicy {
	case "":
		d.policy = StopIfTextOnly
	case StopIfTextOnly, Stop, Continue:
	default:
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "OtherPolicy",
			Err: fmt.Errorf("unknown policy %q (want %q, %q or %q)", o.OtherPolicy, StopIfTextOnly, Stop, Continue)})
	}
	switch o.StopWithToolCalls {
	case "", Continue:
	case Stop:
		d.withCalls = Stop
	default:
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "StopWithToolCalls",
			Err: fmt.Errorf("unknown policy %q (want %q or %q)", o.StopWithToolCalls, Continue, Stop)})
	}
	terminal := o.Terminal
	if terminal == nil {
		terminal = DefaultTerminal()
	}
	d.terminal = make([]string, 0, len(terminal))
	for i, r := range terminal {
		n := Normalize(r)
		if n == "" {
			errs = append(errs, &rule.OptionError{Detector: Name, Field: fmt.Sprintf("Terminal[%d]", i),
				Err: fmt.Errorf("%q is no finish reason once normalised", r)})
			continue
		}
		d.terminal = append(d.terminal, n)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.Sort(d.terminal)
	d.terminal = slices.Compact(d.terminal)
	return d, nil
}

// Normalize normalises a finish reason as the guard does: trimmed of ASCII
// white space, lower-cased, '_' made '-'.
func Normalize(s string) string { return rule.NormalizeFinishReason(s) }

// Name returns Name.
func (d *Rule) Name() string { return Name }

// Priority returns rule.PriorityFinish.
func (d *Rule) Priority() int { return rule.PriorityFinish }

// NewState returns the state of a fresh run.
func (d *Rule) NewState() rule.State { return &state{r: d} }

// Options returns the options in effect: the normalised terminal reasons,
// sorted and without duplicates, the policy, and StopWithToolCalls when it
// is Stop (the default is left out, so that fingerprints of the default
// options stay as they were).
func (d *Rule) Options() any {
	return Options{Terminal: slices.Clone(d.terminal), OtherPolicy: d.policy, StopWithToolCalls: d.withCalls}
}

// isTerminal reports whether the normalised reason is in the terminal list.
func (d *Rule) isTerminal(normalized string) bool {
	_, ok := slices.BinarySearch(d.terminal, normalized)
	return ok
}

// Observe judges the step's finish reason.
func (s *state) Observe(f *rule.Facts) {
	d := s.r
	s.code = ""
	reason := f.FinishReason
	if reason == "" || reason == ToolCalls && !d.isTerminal(reason) {
		return
	}
	terminal := d.isTerminal(reason)
	switch {
	case terminal && reason == rule.FinishStop && len(f.Calls)+len(f.Refused) > 0 && d.withCalls != Stop:
		// The model asked for calls (some may have been refused): it is
		// not done, and the loop must answer them.
		return
	case terminal:
		s.code = CodeTerminal
	case d.policy == Stop:
		s.code = CodeOther
	case d.policy == StopIfTextOnly && f.HasText && len(f.Calls) == 0:
		s.code = CodeOtherTextOnly
	default:
		return
	}
	// The reasons are the provider's (or the model's) text: escaped and cut.
	s.ev = Evidence{FinishReason: rule.Clean(f.RawFinishReason), Normalized: rule.Clean(reason), Policy: d.policy,
		HasText: f.HasText, ToolCallCount: len(f.Calls), Terminal: terminal}
}

// Verdict returns a stop when the last step's finish reason ends the run.
func (s *state) Verdict() rule.Verdict {
	if s.code == "" {
		return rule.Verdict{}
	}
	v := rule.Verdict{Stop: true, Reason: ReasonFinishReason, Code: s.code, Evidence: s.ev}
	switch s.code {
	case CodeTerminal:
		v.Detail = fmt.Sprintf("finish reason %q is terminal", s.ev.Normalized)
	case CodeOther:
		v.Detail = fmt.Sprintf("finish reason %q is not terminal and policy %q stops on it", s.ev.Normalized, s.r.policy)
	default:
		v.Detail = fmt.Sprintf("finish reason %q on a step with text and no tool calls (policy %q)", s.ev.Normalized, s.r.policy)
	}
	v.Feedback = s.ev.feedback(s.code)
	return v
}

// Preflight judges nothing: a call that has not run has no finish reason.
func (s *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// TextActions returns the options for agents whose harness reads the action
// out of the model's text (mini-swe-agent, ReAct-style agents) instead of
// using the provider's tool calls. Such providers report "stop" on every
// step, so "stop" ends nothing here: the loop rules judge the run and the
// harness decides when it is over. A truncated, filtered or failed turn
// ("length", "content-filter", "error") still stops the run, and unfamiliar
// reasons go on. The audit command's --preset text-actions is this.
func TextActions() Options {
	return Options{Terminal: []string{"length", "content-filter", "error"}, OtherPolicy: Continue}
}
