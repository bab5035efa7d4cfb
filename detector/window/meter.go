package window

import (
	"github.com/loopguard/loopguard/detector/internal/meter"
	"github.com/loopguard/loopguard/rule"
)

// Meter returns the rule's counter on the audit's timeline: the most same
// calls in the window, against the count that stops (the window may hold
// Threshold of them: one more stops).
func (d *Rule) Meter() (rule.Meter, bool) {
	return meter.Count("window count", d.opts.Threshold+1, func(s Summary) int { return s.MaxCount }), true
}
