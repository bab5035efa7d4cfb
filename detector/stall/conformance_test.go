package stall_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs the detector kit on the rule, with and without
// warnings, and with a guard that ignores a tool.
func TestConformance(t *testing.T) {
	build := func(o stall.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newDetector(t, o) }
	}
	for name, o := range map[string]stall.Options{
		"default": {},
		"short":   {Threshold: 2, Window: 3, Warn: true},
	} {
		t.Run(name, func(t *testing.T) {
			other := o
			other.Threshold = 3
			guardtest.Run(t, build(o), guardtest.WithOtherOptions(build(other)), checks())
		})
	}
	t.Run("ignore", func(t *testing.T) {
		guardtest.Run(t, build(stall.Options{Threshold: 3, Warn: true}),
			guardtest.WithGuardOptions(guard.Config{Ignore: []string{"search"}}), checks())
	})
}

func newDetector(t *testing.T, o stall.Options) *stall.Rule {
	t.Helper()
	d, err := stall.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checks is the kit's default number of runs, fewer with the race detector
// or -short.
func checks() guardtest.Option {
	if raceEnabled || testing.Short() {
		return guardtest.WithChecks(15)
	}
	return guardtest.WithChecks(100)
}
