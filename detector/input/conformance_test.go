package input_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs the detector kit on the rule: the defaults, a short
// variant that counts the kit's short inputs and warns, and with a guard
// that ignores a tool.
func TestConformance(t *testing.T) {
	build := func(o input.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newRule(t, o) }
	}
	checks := guardtest.WithChecks(100)
	if raceEnabled || testing.Short() {
		checks = guardtest.WithChecks(15)
	}
	short := input.Options{Window: 4, Threshold: 2, MinBytes: 1, Warn: true}
	guardtest.Run(t, build(input.Options{}), guardtest.WithOtherOptions(build(input.Options{Threshold: 4})), checks)
	guardtest.Run(t, build(short), guardtest.WithOtherOptions(build(input.Options{Window: 4, Threshold: 2, MinBytes: 1})), checks)
	guardtest.Run(t, build(short), guardtest.WithGuardOptions(guard.Config{Ignore: []string{"search"}}), checks)
}
