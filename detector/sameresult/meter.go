package sameresult

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the calls in
// the streak, against the threshold.
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("same result", d.opts.Threshold, func(s Summary) int { return s.Count }), true
}
