package noprogress_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs, on 30 random runs per property, the detector kit with warnings on (the other options
// are run by package guardtest's own tests).
func TestConformance(t *testing.T) {
	build := func(o noprogress.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule {
			d, err := noprogress.New(o)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	guardtest.Run(t, build(noprogress.Options{Warn: true, Window: 6}), guardtest.WithOtherOptions(build(noprogress.Options{Window: 6})), guardtest.WithChecks(30))
}
