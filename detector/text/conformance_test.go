package text_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

func TestConformance(t *testing.T) {
	build := func(o text.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule { return newDetector(t, o) }
	}
	checks := guardtest.WithChecks(100)
	if raceEnabled || testing.Short() {
		checks = guardtest.WithChecks(15)
	}
	guardtest.Run(t, build(text.Options{}), guardtest.WithOtherOptions(build(text.Options{Threshold: 4})), checks)
	guardtest.Run(t, build(text.Options{Window: 4, Threshold: 2, Warn: true}), guardtest.WithOtherOptions(build(text.Options{Window: 4, Threshold: 2})), checks)
}
