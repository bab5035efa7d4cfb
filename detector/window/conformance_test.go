package window_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs the detector kit on the rule, with and without
// warnings, and with a guard that ignores a tool.
func TestConformance(t *testing.T) {
	build := func(o window.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newDetector(t, o) }
	}
	for name, o := range map[string]window.Options{
		"default": {},
		"small":   {Window: 4, Threshold: 2, Warn: true},
		"largest": {Window: window.MaxWindow, Threshold: 5, Warn: true},
	} {
		t.Run(name, func(t *testing.T) {
			other := o
			other.Warn = !o.Warn
			guardtest.Run(t, build(o), guardtest.WithOtherOptions(build(other)), checks())
		})
	}
	t.Run("ignore", func(t *testing.T) {
		guardtest.Run(t, build(window.Options{Window: 5, Threshold: 2, Warn: true}),
			guardtest.WithGuardOptions(guard.Config{Ignore: []string{"search"}}), checks())
	})
}

// checks is the kit's default number of runs, fewer with the race detector
// or -short.
func checks() guardtest.Option {
	if raceEnabled || testing.Short() {
		return guardtest.WithChecks(15)
	}
	return guardtest.WithChecks(100)
}
