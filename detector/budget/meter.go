package budget

import "github.com/loopguard/loopguard/rule"

// Meter returns the rule's counter on the audit's timeline, as a ratio: the
// steps or the budget nearest to its limit, read from the run's counters.
func (d *Rule) Meter() (rule.Meter, bool) {
	maxSteps, limits := d.maxSteps, d.limits
	return rule.Meter{Label: "budget use", Limit: 1, Ratio: true, Read: func(_ any, c rule.Counters) float64 {
		use := 0.0
		if maxSteps > 0 {
			use = float64(c.Steps) / float64(maxSteps)
		}
		var values [numMetrics]float64
		values[totalTokens] = float64(c.Totals.TotalTokens)
		values[inputTokens] = float64(c.Totals.InputTokens)
		values[outputTokens] = float64(c.Totals.OutputTokens)
		values[costUSD] = c.Totals.CostUSD
		values[durationMs] = float64(c.Totals.Duration.Milliseconds())
		for i, l := range limits {
			if l.Value > 0 {
				use = max(use, values[i]/l.Value)
			}
		}
		return use
	}}, true
}
