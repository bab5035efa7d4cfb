package toollimit

import "github.com/loopguard/loopguard/rule"

// Meter returns the rule's counter on the audit's timeline, as a ratio: the
// capped tool nearest to the call that stops it (the call after its cap).
// Without caps there is none.
func (d *Rule) Meter() (rule.Meter, bool) {
	if len(d.tools) == 0 {
		return rule.Meter{}, false
	}
	return rule.Meter{Label: "tool cap", Limit: 1, Ratio: true, Read: func(summary any, _ rule.Counters) float64 {
		counts, _ := summary.(map[string]Count)
		use := 0.0
		for _, c := range counts {
			use = max(use, float64(c.Calls)/float64(c.Limit+1))
		}
		return use
	}}, true
}
