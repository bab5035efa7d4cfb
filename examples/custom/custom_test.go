package main

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
)

// TestConformance checks FailStreak with the detector kit, as the author of
// a detector would: each property of the guard.Detector contract is a
// subtest.
func TestConformance(t *testing.T) {
	newStreak := func(threshold int) func() guard.Detector {
		return func() guard.Detector {
			d, err := NewFailStreak(threshold)
			if err != nil {
				panic(err) // guardtest reports a panicking factory
			}
			return d
		}
	}
	// Runs of mostly failing calls, so that streaks build up and stop,
	// mixed with the kit's own steps.
	failing := func(r *rand.Rand) guard.Step {
		if r.IntN(3) == 0 {
			return guardtest.RandomStep(r)
		}
		var s guard.Step
		for range 1 + r.IntN(2) {
			c := guard.ToolCall{Name: []string{"charge_card", "get_invoice", "think"}[r.IntN(3)],
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
		guardtest.WithGuardOptions(guard.Options{Ignore: []string{"think"}}),
		guardtest.WithSteps(failing))
}
