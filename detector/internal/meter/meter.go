// Package meter builds the counters that the built-in rules draw on the
// audit's timeline (rule.Meter) from their summaries.
package meter

import "github.com/loopguard/loopguard/rule"

// Count is the meter of a count read from a rule's summary of type S
// (count of the zero S when the summary is not an S), against limit.
func Count[S any](label string, limit int, count func(S) int) rule.Meter {
	return rule.Meter{Label: label, Limit: float64(limit), Read: func(summary any, _ rule.Counters) float64 {
		s, _ := summary.(S)
		return float64(count(s))
	}}
}
