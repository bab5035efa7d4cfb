package stall

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the stalled
// steps, against the threshold.
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("stall", d.opts.Threshold, func(s Summary) int { return s.StalledSteps }), true
}
