package spell

import (
	"math"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"text", "text", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"text", "txet", 1}, // a swap is one edit
		{"maxSteps", "maxStep", 1},
		{"threshold", "treshold", 1},
		{"threshold", "thershold", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment, not Damerau: no edit of a swapped pair
		{strings.Repeat("a", MaxLen), strings.Repeat("a", MaxLen), 0},
		{strings.Repeat("a", MaxLen+1), "a", math.MaxInt},
		{"a", strings.Repeat("a", MaxLen+1), math.MaxInt},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
