package refusal

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the most
// refusals of one call, against the threshold.
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("refusals", d.opts.Threshold, func(s Summary) int { return s.MaxCount }), true
}
