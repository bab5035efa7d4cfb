package core

import (
	"context"
	"log/slog"
)

// An Event is what an observer is told after each Check and Preflight.
type Event struct {
	// Phase is PhaseCheck for a verdict and PhasePreflight for a decision.
	Phase Phase
	// Step is the index of the step checked, or, in preflight, of the step
	// the calls would belong to.
	Step int
	// Verdict is the verdict of Check, or for Preflight the decision as a
	// verdict (Stop when the call was refused): see [Decision.Verdict].
	Verdict Verdict
	// CallID and Tool name the one tool call that the event is about, when
	// there is one ([ToolCall.ID] and [ToolCall.Name]), so that an observer
	// can report on that call, as on the span of its execution. In
	// PhasePreflight that is the call decided: by [Turn.Preflight] (one
	// event per call), [Turn.Run] or [Guard.StartCall]; for
	// [Guard.Preflight], the refused call of a refusal, or the call asked
	// about when it was alone. In PhaseCheck it is the call whose step of
	// its own [Running.Finish] recorded, or the refused call whose step
	// StartCall recorded. Both are empty for the step of [Guard.Check] or
	// [Turn.End], which is about all of its calls; CallID is empty for a
	// call without an ID. They are the caller's strings, not copies.
	CallID, Tool string
}

// LogValue makes an Event print well with log/slog.
// The call's ID and tool are there when the event names a call, cleaned as
// the verdict's names are.
func (e Event) LogValue() slog.Value {
	if e.CallID == "" && e.Tool == "" {
		return slog.GroupValue(slog.String("phase", e.Phase.String()), slog.Int("step", e.Step),
			slog.Any("verdict", e.Verdict))
	}
	return slog.GroupValue(slog.String("phase", e.Phase.String()), slog.Int("step", e.Step),
		slog.String("callId", Clean(e.CallID)), slog.String("tool", Clean(e.Tool)), slog.Any("verdict", e.Verdict))
}

// notify calls the observer, if any, after the guard's lock is released. A
// panic in the observer is recovered and dropped: an observer can never
// break the guard. An observer that blocks holds up only the call that
// notifies it, never the guard's other callers.
func (g *Guard) notify(ctx context.Context, e Event) {
	if g.opts.Observer == nil {
		return
	}
	defer func() { _ = recover() }()
	g.opts.Observer(ctx, e)
}

// LogValue makes a Verdict print well with log/slog: stop, and for a stop
// the reason, code, detector and detail; the codes of the warnings.
// Evidence and feedback are left out (log them yourself if you want them).
// As in [Explain], characters that a terminal could act on are escaped, and
// reasons and codes cut to MaxNameLen bytes, details to 4 KiB.
func (v Verdict) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Bool("stop", v.Stop)}
	if v.Stop {
		attrs = append(attrs, slog.String("reason", Clean(string(v.Reason))), slog.String("code", Clean(v.Code)),
			slog.String("detector", Clean(v.Detector)), slog.String("detail", cleanDetail(v.Detail)))
	}
	if len(v.Warnings) > 0 {
		codes := make([]string, len(v.Warnings))
		for i, w := range v.Warnings {
			codes[i] = Clean(w.Code)
		}
		attrs = append(attrs, slog.Any("warnings", codes))
	}
	return slog.GroupValue(attrs...)
}

// LogValue makes a Decision print well with log/slog, like Verdict's.
func (d Decision) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Bool("allow", d.Allow)}
	if !d.Allow {
		attrs = append(attrs, slog.String("reason", Clean(string(d.Reason))), slog.String("code", Clean(d.Code)),
			slog.String("detector", Clean(d.Detector)), slog.String("detail", cleanDetail(d.Detail)))
	}
	if len(d.Warnings) > 0 {
		codes := make([]string, len(d.Warnings))
		for i, w := range d.Warnings {
			codes[i] = Clean(w.Code)
		}
		attrs = append(attrs, slog.Any("warnings", codes))
	}
	return slog.GroupValue(attrs...)
}
