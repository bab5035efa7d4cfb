package budget_test

import (
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/rule"
)

// TestMeter checks the budget's counter: the largest share of a limit, of
// the steps and of every budget that is set, read from the run's counters.
func TestMeter(t *testing.T) {
	r, err := budget.New(budget.Options{MaxSteps: 10, MaxTotalTokens: budget.Limit{Value: 1000},
		MaxCostUSD: budget.Limit{Value: 2}, MaxDurationMs: budget.Limit{Value: 60000}})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := r.Meter()
	if !ok || m.Label != "budget use" || m.Limit != 1 || !m.Ratio {
		t.Fatalf("Meter() = %+v, %v", m, ok)
	}
	tests := []struct {
		c    rule.Counters
		want float64
	}{
		{rule.Counters{}, 0},
		{rule.Counters{Steps: 4}, 0.4},
		{rule.Counters{Steps: 4, Totals: rule.Totals{TotalTokens: 500}}, 0.5},
		{rule.Counters{Steps: 4, Totals: rule.Totals{TotalTokens: 500, CostUSD: 1.5}}, 0.75},
		{rule.Counters{Steps: 4, Totals: rule.Totals{InputTokens: 5000, Duration: 54 * time.Second}}, 0.9},
		{rule.Counters{Steps: 12}, 1.2},
	}
	for _, tt := range tests {
		if got := m.Read(nil, tt.c); got != tt.want {
			t.Errorf("Read(%+v) = %v, want %v", tt.c, got, tt.want)
		}
	}
	// Without limits the counter stays at zero.
	r, _ = budget.New(budget.Options{})
	m, _ = r.Meter()
	if got := m.Read(nil, rule.Counters{Steps: 100, Totals: rule.Totals{TotalTokens: 1e6}}); got != 0 {
		t.Errorf("Read without limits = %v, want 0", got)
	}
}
