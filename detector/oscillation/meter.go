package oscillation

import "github.com/loopguard/loopguard/rule"

// Meter returns the rule's counter on the audit's timeline: the rounds of
// the cycle at the tail, against Repeats; with SameResults below Repeats, as
// a ratio, the nearest of those rounds and the rounds of a cycle of one
// tool's calls, or of a long cycle, whose results repeat, against
// SameResults.
func (d *Rule) Meter() (rule.Meter, bool) {
	o := d.opts
	if !o.sameResults() {
		return rule.Meter{Label: "cycle rounds", Limit: float64(o.Repeats), Read: func(summary any, _ rule.Counters) float64 {
			s, _ := summary.(Summary)
			return rounds(s.Calls, s.Period)
		}}, true
	}
	return rule.Meter{Label: "cycle rounds", Limit: 1, Ratio: true, Read: func(summary any, _ rule.Counters) float64 {
		s, _ := summary.(Summary)
		return max(rounds(s.Calls, s.Period)/float64(o.Repeats), rounds(s.SameCalls, s.SamePeriod)/float64(o.SameResults),
			rounds(s.LongCalls, s.LongPeriod)/float64(o.SameResults))
	}}, true
}

// rounds returns calls/period, 0 without a period.
func rounds(calls, period int) float64 {
	if period == 0 {
		return 0
	}
	return float64(calls) / float64(period)
}
