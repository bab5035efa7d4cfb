// Package detector is loopguard's standard set of rules, and the registry that
// builds rules from a JSON options document.
//
// Each rule lives in a package of its own, with its options, constructor and
// evidence. In [Defaults]:
//
//   - [finish]: the finish-reason policy (terminal reasons, otherPolicy; a
//     normal "stop" on a step with tool calls goes on).
//   - [budget]: the step limit, and token, cost and duration budgets with
//     early warnings.
//   - [refusal]: a model that keeps asking for a call the guard refused.
//   - [repeat]: the same call made again and again, with per-tool thresholds
//     and polling tools.
//   - [failure]: a tool that keeps failing the same way while its arguments
//     change.
//   - [oscillation]: short cycles of calls (a b a b a b).
//   - [noprogress]: steps that bring no new outcome and repeat the same text.
//   - [text]: the same text again and again within a window of steps.
//
// Not in [Defaults]:
//
//   - [toollimit]: per-tool call caps (there is no sensible default cap).
//   - [window]: the same call, with the same result, too often within the
//     last N calls, even when not in a row (a x a y a z a).
//   - [stall]: N steps in a row without a new tool outcome or new input,
//     whatever their text.
//
// The pattern rules and the tool caps can also warn one step before they
// stop (their Warn options), with model-facing feedback.
//
// [Defaults] returns the default set, ready for a [guard.Config]:
//
//	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
//
// Where the default set differs from the reference (agent-loopguard 0.2.0),
// labelled real runs showed it had to; the README's "Choosing thresholds"
// gives the figures, and each difference stays one option away.
//
// To compose by hand, call the packages' constructors and put the rules you
// want in a [guard.Config]. To read options from JSON (a configuration file,
// the loopguard command), use [FromJSON], or a [Registry] to which you add
// rules of your own: they then read their options from the same document,
// and a misspelt key is still an error. Either way the rules are immutable:
// one Config serves any number of guards, one after another or at the same
// time.
//
// Nothing in this package is global: a Registry is a value, and every build
// makes new rules.
package detector

import (
	"fmt"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/rule"

	// For the package documentation's links.
	_ "github.com/loopguard/loopguard/detector/stall"
	_ "github.com/loopguard/loopguard/detector/toollimit"
	_ "github.com/loopguard/loopguard/detector/window"
)

// Defaults returns the rules with the default options: the finish-reason
// policy, a limit of 150 steps, the refusal rule (3 refusals of one call), the
// repeated-call rule (threshold 3), the failure rule (5 same failures within
// 10 calls), oscillation (periods 2 to 3, 3 repeats), no progress (threshold
// 3) and the repeated-text rule (3 times within 10 steps). There are no
// token, cost or duration budgets and no tool caps. It equals what
// [FromJSON] builds from {}.
//
// The rules are immutable and hold no run's state (each guard makes its own
// states from them), so one result of Defaults serves any number of guards,
// at the same time.
func Defaults() []rule.Rule {
	fin, err1 := finish.New(finish.Options{})
	bud, err2 := budget.New(budget.Options{MaxSteps: DefaultMaxSteps})
	rep, err3 := repeat.New(repeat.Options{})
	osc, err4 := oscillation.New(oscillation.Options{})
	nop, err5 := noprogress.New(noprogress.Options{})
	ref, err6 := refusal.New(refusal.Options{})
	fai, err7 := failure.New(failure.Options{})
	txt, err8 := text.New(text.Options{})
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
		if err != nil {
			// The defaults are constants: this is a bug, never bad data.
			panic(fmt.Sprintf("detector: the default options are invalid: %v", err))
		}
	}
	return []rule.Rule{fin, bud, ref, rep, fai, osc, nop, txt}
}
