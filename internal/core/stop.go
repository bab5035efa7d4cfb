package core

import (
	"fmt"
	"strconv"
)

// A StopError ends an agent loop that the guard stopped: [Turn.End] and
// [Verdict.Err] return one for a stop that [IsFault] calls a fault, and
// adapters return it from the loops they drive. A normal finish (the model
// answered and its provider said "stop") is not an error, so it never comes
// as a StopError. Find it with errors.As:
//
//	var stop *guard.StopError
//	if errors.As(err, &stop) {
//		log.Print(guard.Explain(stop.Verdict)) // for you
//		reply(stop.Verdict.Feedback)           // for the model, if it gets a last word
//	}
type StopError struct {
	// Verdict is the guard's stop verdict, with its rule, evidence and
	// model-facing feedback.
	Verdict Verdict
}

// Error names the rule that stopped the run, by reason and code. It never
// quotes arguments, results or text: the developer's detail is in
// e.Verdict (see [Explain]).
func (e *StopError) Error() string {
	return fmt.Sprintf("loopguard: run stopped: %s (%s)", e.Verdict.Reason, e.Verdict.Code)
}

// Err returns a [*StopError] that carries v when v stops the run for a fault
// (see [IsFault]), and nil otherwise: a verdict that goes on, and a normal
// finish, are not errors. It lets a loop that calls [Guard.Check] end the way
// one that calls [Turn.End] does:
//
//	v := g.Check(step)
//	if err := v.Err(); err != nil {
//		return err // stopped: a *guard.StopError
//	}
//	if v.Stop {
//		return nil // the model finished
//	}
func (v Verdict) Err() error {
	if !IsFault(v) {
		return nil
	}
	return &StopError{Verdict: v}
}

// A RefusedError says that the guard refused a tool call, which did not
// run. [Turn.Run] returns it, and adapters return it where a framework
// expects a tool's error. Its text is the decision's model-facing feedback,
// so it is safe to hand to the model as the tool's answer; the developer's
// detail (which may quote arguments) stays in Decision.
type RefusedError struct {
	// Decision is the guard's refusal: the rule, the detail, the evidence,
	// the feedback and which call was refused (CallIndex, CallID).
	Decision Decision
}

// Error returns the decision's feedback, or, when it has none (a custom
// Config.Feedback may leave it empty), a plain sentence saying the call was
// not run. It never quotes the call's arguments.
func (e *RefusedError) Error() string {
	return refusalText(e.Decision)
}

// fallbackFeedback answers a refused call whose decision has no feedback.
const fallbackFeedback = "That call was not run: loopguard refused it."

// refusalText returns the model-facing text of a refusal.
func refusalText(d Decision) string {
	if d.Feedback == "" {
		return fallbackFeedback
	}
	return d.Feedback
}

// refusedAt returns the index of the first call at which det refuses the
// calls of f: the end of their shortest prefix that det refuses. f is
// restored before it returns. det refuses all of f's calls, so there is
// such a prefix; without calls it returns 0.
func refusedAt(det State, f *Facts) int {
	calls := f.Calls
	defer func() { f.Calls = calls }()
	for k := range len(calls) - 1 {
		f.Calls = calls[:k+1]
		if det.Preflight(f).Stop {
			return k
		}
	}
	return max(len(calls)-1, 0)
}

// stoppedFeedback is the text of a call refused because the run had stopped
// and the stop's own feedback is not known (it is not saved).
const stoppedFeedback = "That call was not run: this run has been stopped. Do not call any more tools; give your final answer."

// stoppedDecision refuses a call of a run that stopped at step.
func stoppedDecision(first *Verdict, step int) Decision {
	// As a refusal that stops the run reads (Verdict.Refusal): the call
	// was not run, then why the run should end.
	fb := stoppedFeedback
	if first.Feedback != "" {
		fb = "That call was not run. " + first.Feedback
	}
	return Decision{Reason: first.Reason, Code: first.Code, Detector: first.Detector, Feedback: fb,
		Detail: "the run stopped at step " + strconv.Itoa(step)}
}
