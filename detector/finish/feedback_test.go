package finish

import (
	"testing"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
)

func TestFeedbackGolden(t *testing.T) {
	for name, c := range map[string]struct {
		code string
		ev   Evidence
	}{
		"finish_terminal":        {CodeTerminal, Evidence{Normalized: "length", Terminal: true}},
		"finish_other":           {CodeOther, Evidence{Normalized: "other"}},
		"finish_other_text_only": {CodeOtherTextOnly, Evidence{Normalized: "other", HasText: true}},
	} {
		ruletest.Golden(t, name+".check", c.ev.feedback(c.code))
	}
}

// TestNoFeedback: a normal finish carries no feedback, and neither does a
// code the rule does not give.
func TestNoFeedback(t *testing.T) {
	for name, c := range map[string]struct {
		code string
		ev   Evidence
	}{
		"normal finish": {CodeTerminal, Evidence{Normalized: "stop", Terminal: true}},
		"unknown code":  {"MINE", Evidence{Normalized: "length", Terminal: true}},
	} {
		if got := c.ev.feedback(c.code); got != "" {
			t.Errorf("%s: feedback %q, want none", name, got)
		}
	}
}
