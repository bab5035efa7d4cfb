package oscillation_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs, on 30 random runs per property, the detector kit on the options beyond the reference
// (the defaults are run by package guardtest's own tests).
func TestConformance(t *testing.T) {
	build := func(o oscillation.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newRule(t, o) }
	}
	for name, o := range map[string]oscillation.Options{
		"identical": {RequireIdenticalResults: true, Repeats: 2},
		"warn":      {Warn: true, Repeats: 2},
		"both":      {RequireIdenticalResults: true, Warn: true, MaxPeriod: 4},
		// SameResults at its default is in the defaults; here with a
		// warning, and below a larger Repeats.
		"sameResults warn": {Warn: true},
		"sameResults 3/4":  {Repeats: 4, SameResults: 3, MaxPeriod: 4},
		"reference":        reference,
		// LongPeriod at its default is in the defaults.
		"longPeriod 6 warn": {LongPeriod: 6, Warn: true},
		"longPeriod off":    {LongPeriod: 3},
	} {
		t.Run(name, func(t *testing.T) {
			other := o
			other.Warn = !o.Warn
			guardtest.Run(t, build(o), guardtest.WithOtherOptions(build(other)), guardtest.WithChecks(30))
		})
	}
}
