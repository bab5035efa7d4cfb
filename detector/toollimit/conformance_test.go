package toollimit_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs, on 30 random runs per property, the detector kit with warnings on (the other options
// are run by package guardtest's own tests).
func TestConformance(t *testing.T) {
	caps := map[string]int{"search": 3, "read": 1, "write": 0}
	build := func(warn bool) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule {
			d, err := toollimit.New(toollimit.Options{MaxCalls: caps, Warn: warn})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	guardtest.Run(t, build(true), guardtest.WithOtherOptions(build(false)), guardtest.WithChecks(30))
}
