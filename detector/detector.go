// Package detector is loopguard's standard set of rules, and the registry that
// builds rules from a JSON options document.
//
// Each rule lives in a package of its own, with its options, constructor and
// evidence:
//
//   - [finish]: the finish-reason policy (terminal reasons, otherPolicy).
//   - [budget]: the step limit, and token, cost and duration budgets with
//     early warnings.
//   - [toollimit]: per-tool call caps.
//   - [repeat]: the same call made again and again, with per-tool thresholds
//     and polling tools.
//   - [oscillation]: short cycles of calls (a b a b a b).
//   - [noprogress]: steps that bring no new outcome and repeat the same text.
//
// Beyond the reference, and not in [Defaults]:
//
//   - [window]: the same call too often within the last N calls, even when
//     not in a row (a x a y a z a).
//   - [stall]: N steps in a row without a new tool outcome, whatever their
//     text.
//
// The pattern rules and the tool caps can also warn one step before they
// stop (their Warn options), with model-facing feedback.
//
// [Defaults] returns the reference's default set, ready for [guard.New]:
//
//	g, err := guard.New(detector.Defaults()...)
//
// To compose by hand, call the packages' constructors and pass the detectors
// you want to [guard.New]. To read options from JSON (a configuration file,
// the loopguard command), use [FromJSON], or a [Registry] to which you add
// detectors of your own: they then read their options from the same document,
// and a misspelt key is still an error.
//
// Nothing in this package is global: a Registry is a value, and every build
// makes new detectors.
package detector

import (
	"fmt"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"

	// For the package documentation's links.
	_ "github.com/loopguard/loopguard/detector/stall"
	_ "github.com/loopguard/loopguard/detector/window"
)

// Defaults returns new detectors with the reference's defaults: the
// finish-reason policy, a limit of 50 steps, the repeated-call rule
// (threshold 3), oscillation (periods 2 to 3, 3 repeats) and no progress
// (threshold 3). There are no token, cost or duration budgets and no tool
// caps. It equals what [FromJSON] builds from {}.
//
// The detectors hold the state of one run: call Defaults again for each guard
// (guard.New refuses detectors that another guard holds, with
// guard.ErrDetectorInUse). A [Config] does that for a JSON options document.
func Defaults() []guard.Detector {
	fin, err1 := finish.New(finish.Options{})
	bud, err2 := budget.New(budget.Options{MaxSteps: DefaultMaxSteps})
	rep, err3 := repeat.New(repeat.Options{})
	osc, err4 := oscillation.New(oscillation.Options{})
	nop, err5 := noprogress.New(noprogress.Options{})
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			// The defaults are constants: this is a bug, never bad data.
			panic(fmt.Sprintf("detector: the default options are invalid: %v", err))
		}
	}
	return []guard.Detector{fin, bud, rep, osc, nop}
}
