package input

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the most counted
// steps with one input in the window, against the threshold.
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("same input", d.opts.Threshold, func(s Summary) int { return s.MaxCount }), true
}
