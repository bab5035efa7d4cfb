package oscillation

import "github.com/loopguard/loopguard/rule"

// Meter returns the rule's counter on the audit's timeline: the rounds of
// the cycle at the tail, against Repeats.
func (d *Rule) Meter() (rule.Meter, bool) {
	return rule.Meter{Label: "cycle rounds", Limit: float64(d.opts.Repeats), Read: func(summary any, _ rule.Counters) float64 {
		s, _ := summary.(Summary)
		if s.Period == 0 {
			return 0
		}
		return float64(s.Calls) / float64(s.Period)
	}}, true
}
