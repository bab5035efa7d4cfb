package failure

import "github.com/loopguard/loopguard/rule"

// Meter returns the rule's counter on the audit's timeline, as a ratio:
// three counts stop, of one failure, of one failure of one call, of one
// failure from two calls, and the counter is the nearest to its limit.
func (d *Rule) Meter() (rule.Meter, bool) {
	o := d.opts
	return rule.Meter{Label: "same failure", Limit: 1, Ratio: true, Read: func(summary any, _ rule.Counters) float64 {
		s, _ := summary.(Summary)
		return max(float64(s.MaxCount)/float64(o.Threshold), float64(s.MaxSameCall)/float64(o.SameCall),
			float64(s.MaxTwoCalls)/float64(o.SameCall+1))
	}}, true
}
