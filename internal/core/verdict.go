package core

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A Reason says which kind of rule stopped a run. Each rule's package names
// its own (the built-in rules' are detector/<rule>.Reason...).
type Reason string

// ReasonCustom is given to a stop whose detector set no reason.
const ReasonCustom Reason = "custom"

// finishReason is the reason of the finish-reason rule (package
// detector/finish), the one rule whose stops may be no fault: IsFault reads
// it on verdicts whose evidence went through JSON, which no longer say
// whether they are a normal finish.
const finishReason Reason = "finish-reason"

// CodeCustom is given to a stop whose detector set no code.
const CodeCustom = "CUSTOM"

// A Phase says whether a verdict comes from [Guard.Check] or a refusal from
// [Guard.Preflight]. The model-facing feedback reads differently for each.
type Phase int

// The phases.
const (
	PhaseCheck Phase = iota
	PhasePreflight
)

// String returns "check" or "preflight".
func (p Phase) String() string {
	if p == PhasePreflight {
		return "preflight"
	}
	return "check"
}

// A Verdict is the guard's answer to a step: stop or go on, and if stop,
// which rule, why, the evidence and a text that can be handed to the model.
//
// A detector returns the zero Verdict (or one with only Warnings) to let the
// run go on.
type Verdict struct {
	// Stop reports whether the run should stop.
	Stop bool `json:"stop"`
	// Reason is the kind of rule that stopped the run.
	Reason Reason `json:"reason,omitempty"`
	// Code is the precise rule, such as "REPEATED_TOOL_CALL".
	Code string `json:"code,omitempty"`
	// Detail explains the stop to a developer. It may quote a short
	// preview of arguments or text; never send it to a model.
	Detail string `json:"detail,omitempty"`
	// Evidence holds the numbers behind the stop. Its type depends on the
	// detector; the built-in ones document theirs.
	Evidence any `json:"evidence,omitempty"`
	// Feedback is plain text that is safe to hand back to the model: it
	// names the tool, counts and limits, never arguments, results or text.
	Feedback string `json:"feedback,omitempty"`
	// Detector is the name of the detector that gave the verdict.
	Detector string `json:"detector,omitempty"`
	// Warnings are early signs, given whether or not the run stops.
	Warnings []Warning `json:"warnings,omitempty"`
}

// A Warning says that a limit or a rule is close to stopping the run.
type Warning struct {
	// Code is the warning's kind, such as "BUDGET_WARNING".
	Code string `json:"code"`
	// Metric names what is measured, such as "totalTokens" or
	// "stalledSteps".
	Metric string `json:"metric,omitempty"`
	// Tool names the tool, for the warnings of the rules about one tool
	// (repeats, caps).
	Tool string `json:"tool,omitempty"`
	// Value is the current value of the metric.
	Value float64 `json:"value"`
	// Limit is the value at which the rule stops the run.
	Limit float64 `json:"limit"`
	// Ratio is Value / Limit.
	Ratio float64 `json:"ratio"`
	// Detail explains the warning to a developer.
	Detail string `json:"detail"`
	// Feedback, when set, is text that is safe to hand to the model.
	Feedback string `json:"feedback,omitempty"`
	// Detector is the name of the detector that gave the warning.
	Detector string `json:"detector,omitempty"`
}

// A Decision is the answer of [Guard.Preflight]: run the call, or do not, and
// why.
type Decision struct {
	// Allow reports whether the call may run.
	Allow bool `json:"allow"`
	// Reason is the kind of rule that refused the call.
	Reason Reason `json:"reason,omitempty"`
	// Code is the precise rule.
	Code string `json:"code,omitempty"`
	// Detail explains the refusal to a developer.
	Detail string `json:"detail,omitempty"`
	// Evidence is what Check would report for the same call, counting the
	// refused call.
	Evidence any `json:"evidence,omitempty"`
	// Feedback is text for the model; it says that the call was not run.
	Feedback string `json:"feedback,omitempty"`
	// Detector is the name of the detector that refused the call.
	Detector string `json:"detector,omitempty"`
	// CallIndex says, in a refusal, which call was refused: its index,
	// from 0, among the calls given to the method that decided. For
	// [Guard.Preflight] of several calls it is the first call at which
	// the refusing rule refuses them (the calls before it, alone, would
	// pass that rule); for [Turn.Preflight] it is the call's own index
	// among its calls (and stays so when [Turn.Run] takes that decision);
	// for a call that Turn.Run judges itself, and for [Guard.StartCall],
	// it is 0. Without calls (a step limit), it is 0.
	CallIndex int `json:"callIndex"`
	// CallID is, in a refusal, the ID of the refused call
	// ([ToolCall.ID]), or empty.
	CallID string `json:"callId,omitempty"`
	// Warnings are early signs, such as budget warnings on an allowed call.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Verdict returns the refusal as a stop verdict (or, when the call is
// allowed, a verdict that goes on), so that [Explain] and [IsFault] apply.
func (d Decision) Verdict() Verdict {
	return Verdict{Stop: !d.Allow, Reason: d.Reason, Code: d.Code, Detail: d.Detail,
		Evidence: d.Evidence, Feedback: d.Feedback, Detector: d.Detector, Warnings: d.Warnings}
}

// Refusal returns the decision that refuses the call with this ID because of
// the stop v: v's reason, code, detail, evidence, detector and warnings, and
// as feedback "That call was not run. " followed by v's (none if v has
// none). It is the answer [Guard.StartCall] gives when recording a refused
// call stopped the run (REPEATED_REFUSAL), so that the answer escalates to
// that stop, in memory and over a store (package snapshot).
func (v Verdict) Refusal(callID string) Decision {
	d := Decision{Reason: v.Reason, Code: v.Code, Detail: v.Detail, Evidence: v.Evidence,
		Detector: v.Detector, CallID: callID, Warnings: v.Warnings}
	if v.Feedback != "" {
		d.Feedback = "That call was not run. " + v.Feedback
	}
	return d
}

// NormalFinisher is implemented by evidence that can say a stop is the model
// finishing normally. The finish-reason detector's evidence implements it.
type NormalFinisher interface {
	// NormalFinish reports whether the stop is a normal end of the run.
	NormalFinish() bool
}

// IsFault reports whether v is a stop that is not just the model finishing
// normally: every stop is a fault except a finish-reason stop whose
// normalised reason is "stop".
func IsFault(v Verdict) bool {
	if !v.Stop {
		return false
	}
	if v.Reason != finishReason {
		return true
	}
	switch ev := v.Evidence.(type) {
	case NormalFinisher:
		return !ev.NormalFinish()
	case map[string]any: // evidence that went through JSON
		return v.Code != "FINISH_TERMINAL" || ev["normalized"] != "stop"
	}
	return true
}

// hintOf returns the hint of v's evidence, when it is a [Hinter]: each
// rule's evidence gives its own.
func hintOf(v Verdict) (h string) {
	defer func() {
		if recover() != nil {
			h = "" // a custom evidence type that panics gives no hint
		}
	}()
	if hv, ok := v.Evidence.(Hinter); ok {
		return hv.Hint()
	}
	return ""
}

// Explain returns a readable account of v for logs: the rule, the detail, a
// short hint and any warnings, one per line. It is for developers; it may
// quote argument previews. Use v.Feedback for the model. Whatever detector
// gave it, the text holds no character that a terminal could act on: they
// are written as Go escapes (see [Clean]), reasons and codes are cut to
// MaxNameLen bytes and details to 4 KiB.
func Explain(v Verdict) string {
	var b strings.Builder
	if !v.Stop {
		b.WriteString("go on")
	} else {
		fmt.Fprintf(&b, "stop: %s", Clean(string(v.Reason)))
		if v.Code != "" {
			fmt.Fprintf(&b, " (%s)", Clean(v.Code))
		}
		if v.Detail != "" {
			b.WriteString(": ")
			b.WriteString(cleanDetail(v.Detail))
		}
		if h := hintOf(v); h != "" && IsFault(v) {
			b.WriteString("; hint: ")
			b.WriteString(cleanDetail(h)) // a rule of one's own may write anything
		}
	}
	for _, w := range v.Warnings {
		b.WriteString("\nwarning: ")
		b.WriteString(Clean(w.Code))
		if w.Detail != "" {
			b.WriteString(": ")
			b.WriteString(cleanDetail(w.Detail))
		}
	}
	return b.String()
}

// String returns Explain(v).
func (v Verdict) String() string { return Explain(v) }

// MarshalJSON writes {"stop": false} (with any warnings) for a verdict that
// goes on, and every field for a stop.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	if !v.Stop {
		return json.Marshal(struct {
			Stop     bool      `json:"stop"`
			Warnings []Warning `json:"warnings,omitempty"`
		}{false, v.Warnings})
	}
	return json.Marshal(plain(v))
}

// MarshalJSON writes {"allow": true} (with any warnings) for an allowed call,
// and every field for a refusal.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	if d.Allow {
		return json.Marshal(struct {
			Allow    bool      `json:"allow"`
			Warnings []Warning `json:"warnings,omitempty"`
		}{true, d.Warnings})
	}
	return json.Marshal(plain(d))
}

// FormatNumber prints a number the way the evidence and details of loopguard
// print it: whole numbers without a fraction, others in the shortest form.
func FormatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
