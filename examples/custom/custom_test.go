package main

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestConformance checks FailStreak with the rule kit, as the author of a
// rule would: each property of the rule.Rule contract is a subtest.
func TestConformance(t *testing.T) {
	newStreak := func(threshold int) func(t *testing.T) rule.Rule {
		return func(t *testing.T) rule.Rule {
			r, err := NewFailStreak(threshold)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	// Runs of mostly failing calls, so that streaks build up and stop,
	// mixed with the kit's own steps.
	failing := func(r *rand.Rand) rule.Step {
		if r.IntN(3) == 0 {
			return guardtest.RandomStep(r)
		}
		var s rule.Step
		for range 1 + r.IntN(2) {
			c := rule.ToolCall{Name: []string{"charge_card", "get_invoice", "think"}[r.IntN(3)],
				Args: map[string]any{"invoice": r.IntN(2)}}
			if r.IntN(4) > 0 {
				c.Err = errors.New("card declined")
			}
			s.ToolCalls = append(s.ToolCalls, c)
		}
		return s
	}
	guardtest.Run(t, newStreak(3),
		guardtest.WithOtherOptions(newStreak(4)),
		guardtest.WithGuardOptions(guard.Config{Ignore: []string{"think"}}),
		guardtest.WithSteps(failing))
}
