// Package detector is loopguard's standard set of rules, and the registry that
// builds rules from a JSON options document.
//
// Each rule lives in a package of its own, with its options, constructor,
// evidence and Spec (its keys in an options document, and how it is built
// from them); this package only lists the specs. In [Defaults]:
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
//   - [sameresult]: a tool that keeps returning the same long result while
//     its arguments change (a search whose query only grows).
//   - [oscillation]: short cycles of calls (a b a b a b).
//   - [noprogress]: steps that bring no new outcome and repeat the same text.
//   - [text]: the same text again and again within a window of steps.
//   - [input]: the same message sent to the agent again and again while it
//     answers only in words (a test report, a reviewer's request).
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
// labelled real runs showed it had to; docs/thresholds.md ("Choosing thresholds")
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
	"slices"
	"sync"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/rule"
)

// standard returns the specs of the standard set, in priority order: the
// order of [Standard]'s registrations, of [Defaults] and of the rules that
// [FromJSON] builds.
func standard() []rule.Spec {
	return []rule.Spec{
		finish.Spec(),
		budget.Spec(),
		toollimit.Spec(),
		refusal.Spec(),
		repeat.Spec(),
		failure.Spec(),
		window.Spec(),
		sameresult.Spec(),
		oscillation.Spec(),
		noprogress.Spec(),
		text.Spec(),
		stall.Spec(),
		input.Spec(),
	}
}

// DefaultMaxSteps is the step limit of the default set,
// [budget.DefaultMaxSteps]: 150, where the reference's is 50 (see there why).
const DefaultMaxSteps = budget.DefaultMaxSteps

// Defaults returns the rules with the default options: the finish-reason
// policy, a limit of 150 steps, the refusal rule (3 refusals of one call), the
// repeated-call rule (threshold 3), the failure rule (5 same failures within
// 10 calls), the same-result rule (4 calls in a row of one tool with other
// arguments and the same result of at least 512 bytes), oscillation (periods
// 2 to 3, 3 repeats, 2 for one tool's calls whose results repeat with no new
// input between), no progress (threshold 3), the repeated-text rule (3
// times within 10 steps) and the repeated-input rule (the same input of at
// least 64 bytes on 3 steps within 10 that call no tool). There are no
// token, cost or duration budgets and no tool caps. It equals what
// [FromJSON] builds from {}: the standard specs that are on by default, each
// built from no options.
//
// The rules are immutable and hold no run's state (each guard makes its own
// states from them), so one result of Defaults serves any number of guards,
// at the same time. They are built once per process and shared; the slice
// is new each time.
func Defaults() []rule.Rule {
	return slices.Clone(defaults())
}

// defaults builds the standard set once: rules never change, so every
// guard, and every caller of Defaults, may share them.
var defaults = sync.OnceValue(func() []rule.Rule {
	var rules []rule.Rule
	for _, s := range standard() {
		if !s.Default {
			continue
		}
		r, err := s.Build(rule.Input{})
		if err != nil {
			// The defaults are constants: this is a bug, never bad data.
			panic(fmt.Sprintf("detector: the default options of %s are invalid: %v", s.Name, err))
		}
		if r != nil {
			rules = append(rules, r)
		}
	}
	return rules
})
