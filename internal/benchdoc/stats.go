package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// A summary is a median and the 95% confidence interval around it.
type summary struct {
	center, lo, hi float64
	n              int
}

// summarize returns the median of xs and its 95% confidence interval, taken
// from the order statistics as benchstat does (a distribution-free interval:
// the widest ranks k, n-1-k such that the median lies outside with at most 5%
// probability). With too few samples the interval is infinite.
func summarize(xs []float64) summary {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return summary{}
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	// The largest k with P(Binomial(n, 1/2) <= k-1)... such that
	// 2 * P(X < k) <= 0.05, i.e. both tails together at most 5%.
	k := -1
	cum := 0.0
	for i := 0; i < n/2; i++ {
		cum += binom(n, i) / math.Pow(2, float64(n))
		if 2*cum > 0.05 {
			break
		}
		k = i
	}
	if k < 0 {
		return summary{center: med, lo: math.Inf(-1), hi: math.Inf(1), n: n}
	}
	return summary{center: med, lo: s[k], hi: s[n-1-k], n: n}
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// pm returns the interval as benchstat prints it: "± x%" of the median.
func (s summary) pm() string {
	if math.IsInf(s.hi, 0) {
		return "± ∞"
	}
	if s.center == 0 {
		return ""
	}
	d := max(s.hi-s.center, s.center-s.lo) / s.center * 100
	if d < 0.5 {
		return "± 0%"
	}
	return fmt.Sprintf("± %.0f%%", d)
}

// duration formats nanoseconds with three significant digits.
func duration(ns float64) string {
	unit, v := "ns", ns
	switch {
	case ns >= 1e9:
		unit, v = "s", ns/1e9
	case ns >= 1e6:
		unit, v = "ms", ns/1e6
	case ns >= 1e3:
		unit, v = "µs", ns/1e3
	}
	return sig3(v) + " " + unit
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return commas(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// commas groups the digits of an integer's text by thousands.
func commas(s string) string {
	if len(s) <= 3 {
		return s
	}
	return commas(s[:len(s)-3]) + "," + s[len(s)-3:]
}

// count formats an allocation or byte count: an integer when all rounds
// agree on it, the median otherwise.
func count(xs []float64) string {
	s := summarize(xs)
	return commas(strconv.FormatFloat(math.Round(s.center), 'f', 0, 64))
}
