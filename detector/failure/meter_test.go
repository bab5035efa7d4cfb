package failure_test

import (
	"testing"

	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/rule"
)

// TestMeter checks the failure rule's counter: the count nearest to its
// limit among the three that stop (one failure, one call's, two calls').
func TestMeter(t *testing.T) {
	r, err := failure.New(failure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := r.Meter()
	if !ok || m.Label != "same failure" || m.Limit != 1 || !m.Ratio {
		t.Fatalf("Meter() = %+v, %v", m, ok)
	}
	for _, tt := range []struct {
		s    any
		want float64
	}{
		{nil, 0},
		{failure.Summary{MaxCount: 2}, 0.4},
		{failure.Summary{MaxCount: 2, MaxSameCall: 3}, 1},
		{failure.Summary{MaxCount: 2, MaxTwoCalls: 3}, 0.75},
		{failure.Summary{MaxCount: 5, MaxSameCall: 1, MaxTwoCalls: 1}, 1},
	} {
		if got := m.Read(tt.s, rule.Counters{}); got != tt.want {
			t.Errorf("Read(%+v) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
