package failure_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

func TestConformance(t *testing.T) {
	build := func(o failure.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newRule(t, o) }
	}
	for name, o := range map[string]failure.Options{
		"default":  {},
		"small":    {Window: 4, Threshold: 2, Warn: true},
		"largest":  {Window: failure.MaxWindow, Threshold: 5, Warn: true},
		"sameCall": {Window: 6, Threshold: 4, SameCall: 2, Warn: true},
	} {
		t.Run(name, func(t *testing.T) {
			other := o
			other.Warn = !o.Warn
			guardtest.Run(t, build(o), guardtest.WithOtherOptions(build(other)), checks())
		})
	}
}

func checks() guardtest.Option {
	if raceEnabled || testing.Short() {
		return guardtest.WithChecks(15)
	}
	return guardtest.WithChecks(100)
}
