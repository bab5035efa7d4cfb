package text

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the most steps
// with one text in the window, against the threshold; when long texts stop
// sooner, as a ratio, the nearer of that and the most steps with one long
// text, against Options.Long.
func (d *Rule) Meter() (rule.Meter, bool) {
	o := d.opts
	if !o.long() {
		return meter.Count("same text", o.Threshold, func(s Summary) int { return s.MaxCount }), true
	}
	return rule.Meter{Label: "same text", Limit: 1, Ratio: true, Read: func(summary any, _ rule.Counters) float64 {
		s, _ := summary.(Summary)
		return max(float64(s.MaxCount)/float64(o.Threshold), float64(s.MaxLong)/float64(o.Long))
	}}, true
}
