package sameresult_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestSameResultConformance runs the detector kit on the rule, with and
// without warnings, with a MinBytes low enough that the kit's short results
// count, and with a guard that ignores a tool.
func TestSameResultConformance(t *testing.T) {
	build := func(o sameresult.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newSameResultRule(t, o) }
	}
	for name, o := range map[string]sameresult.Options{
		"default": {},
		"short":   {Threshold: 2, MinBytes: 1, Warn: true},
		"three":   {Threshold: 3, MinBytes: 1},
	} {
		t.Run(name, func(t *testing.T) {
			other := o
			other.Threshold = o.Threshold + 3
			guardtest.Run(t, build(o), guardtest.WithOtherOptions(build(other)), sameResultChecks())
		})
	}
	t.Run("ignore", func(t *testing.T) {
		guardtest.Run(t, build(sameresult.Options{Threshold: 2, MinBytes: 1, Warn: true}),
			guardtest.WithGuardOptions(guard.Config{Ignore: []string{"search"}}), sameResultChecks())
	})
}

// sameResultChecks is the kit's default number of runs, fewer with the race
// detector or -short.
func sameResultChecks() guardtest.Option {
	if raceEnabled || testing.Short() {
		return guardtest.WithChecks(15)
	}
	return guardtest.WithChecks(100)
}
