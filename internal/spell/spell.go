// Package spell measures how far a misspelt name is from a known one, for
// the "did you mean" of the options reader (package detector) and of the
// trace reader (package trace), so that both suggest alike.
package spell

import "math"

// MaxLen is the longest name Distance compares, in bytes: names are short,
// and the work grows with the product of the two lengths.
const MaxLen = 64

// Distance is the optimal string alignment distance between a and b, in
// bytes: the Levenshtein distance, with a swap of two neighbours counted as
// one edit ("txet" is one edit from "text"). It is math.MaxInt when either
// is longer than MaxLen.
func Distance(a, b string) int {
	if len(a) > MaxLen || len(b) > MaxLen {
		return math.MaxInt
	}
	// Three rows of the table: two back, one back and this one.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
