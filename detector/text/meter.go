package text

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the most steps
// with one text in the window, against the threshold.
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("same text", d.opts.Threshold, func(s Summary) int { return s.MaxCount }), true
}
