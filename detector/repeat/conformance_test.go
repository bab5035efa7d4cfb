package repeat_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance runs, on 30 random runs per property, the detector kit with warnings on (the other options
// are run by package guardtest's own tests).
func TestConformance(t *testing.T) {
	build := func(o repeat.Options) func(*testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule {
			d, err := repeat.New(o)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	o := repeat.Options{Warn: true, Tools: map[string]repeat.ToolPolicy{"read": {Polling: true}, "search": {RepeatThreshold: 4}}}
	guardtest.Run(t, build(o), guardtest.WithOtherOptions(build(repeat.Options{Tools: o.Tools})), guardtest.WithChecks(30))
}
