package repeat

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the length of
// the run of same calls, against the threshold.
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("repeat run", d.opts.Threshold, func(s Summary) int { return s.Count }), true
}
