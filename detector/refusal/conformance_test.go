package refusal_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

func TestConformance(t *testing.T) {
	build := func(o refusal.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newRule(t, o) }
	}
	checks := guardtest.WithChecks(100)
	if raceEnabled || testing.Short() {
		checks = guardtest.WithChecks(15)
	}
	guardtest.Run(t, build(refusal.Options{}), guardtest.WithOtherOptions(build(refusal.Options{Threshold: 4})), checks)
	guardtest.Run(t, build(refusal.Options{Threshold: 2, Warn: true}), guardtest.WithOtherOptions(build(refusal.Options{Threshold: 2})), checks)
}
