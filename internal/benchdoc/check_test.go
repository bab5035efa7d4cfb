package main

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeRunner returns a runner for one table of a reference and a benchmark
// X, whose working tree measured X at head times the reference in every
// round, and whose baseline code (if base > 0) measured it at base times.
// Allocations: headAllocs and baseAllocs in every round.
func fakeRunner(head, base, headAllocs, baseAllocs float64) *runner {
	t := table{name: "t", pkg: "./p", ref: "Ref", rows: []row{
		r("Ref", "reference", "", ""),
		r("X", "x", "", ""),
	}}
	rn := &runner{ts: []table{t}, log: io.Discard}
	fill := func(v *variant, mult, allocs float64) {
		const rounds = 6
		ref, x := &samples{}, &samples{}
		for range rounds {
			ref.wall = append(ref.wall, 1000)
			ref.allocs = append(ref.allocs, 0)
			x.wall = append(x.wall, 1000*mult)
			x.allocs = append(x.allocs, allocs)
		}
		v.bench["./p"] = map[string]*samples{"Ref": ref, "X": x}
	}
	fill(rn.add("head", ".", nil), head, headAllocs)
	if base > 0 {
		fill(rn.add("base", "base", nil), base, baseAllocs)
	}
	return rn
}

// The check fails a figure more than 25% slower than the baseline's code
// measured in the same run, or with more than 25% more allocations, and
// passes one up to exactly 25% slower or with up to 25% more (rounded down).
func TestCompareWithBaselineCode(t *testing.T) {
	tests := []struct {
		name              string
		head, base        float64 // multiples of the reference
		allocs, baseAlloc float64
		want              string // "" when the figure passes
	}{
		{"same", 2, 2, 3, 3, ""},
		{"faster", 1.5, 2, 3, 3, ""},
		{"20% slower", 2.4, 2, 3, 3, ""},
		{"25% slower", 2.5, 2, 3, 3, ""},
		{"26% slower", 2.52, 2, 3, 3, "SLOWER: 1.26× the baseline"},
		{"30% slower", 2.6, 2, 3, 3, "SLOWER: 1.30× the baseline"},
		{"4 allocs to 5", 2, 2, 5, 4, ""},
		{"4 allocs to 6", 2, 2, 6, 4, "MORE ALLOCATIONS: 6, the baseline 4"},
		{"0 allocs to 1", 2, 2, 1, 0, "MORE ALLOCATIONS: 1, the baseline 0"},
		{"119 allocs to 148", 2, 2, 148, 119, ""},
		{"119 allocs to 149", 2, 2, 149, 119, "MORE ALLOCATIONS: 149, the baseline 119"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rn := fakeRunner(tt.head, tt.base, tt.allocs, tt.baseAlloc)
			var out strings.Builder
			got := compare(rn, &baselineFile{}, &out)
			var want []failure
			if tt.want != "" {
				want = []failure{{"./p", "X", tt.want}}
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(failure{})); diff != "" {
				t.Errorf("compare (-want +got):\n%s\noutput:\n%s", diff, out.String())
			}
		})
	}
}

// Without the baseline's code, the check compares the multiples with those
// that baseline.json records, with the same tolerance.
func TestCompareWithBaselineFile(t *testing.T) {
	base := func(mult, allocs float64) *baselineFile {
		return &baselineFile{Figures: map[string]map[string]figure{
			"./p": {"X": {Multiple: mult, Of: "Ref", Allocs: allocs}},
		}}
	}
	tests := []struct {
		name string
		head float64
		base *baselineFile
		want int // failures
	}{
		{"20% slower", 1.2, base(1, 0), 0},
		{"25% slower", 1.25, base(1, 0), 0},
		{"30% slower", 1.3, base(1, 0), 1},
		{"more allocations", 1, base(1, 0), 1},
		{"measured against another reference", 3, &baselineFile{Figures: map[string]map[string]figure{
			"./p": {"X": {Multiple: 1, Of: "benchcpu.Reference"}}}}, 0},
		{"not in the baseline", 3, &baselineFile{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := 0.0
			if tt.name == "more allocations" {
				allocs = 1
			}
			rn := fakeRunner(tt.head, 0, allocs, 0)
			if got := compare(rn, tt.base, io.Discard); len(got) != tt.want {
				t.Errorf("compare = %v, want %d failures", got, tt.want)
			}
		})
	}
}

// A benchmark that reports cpu/ref (package benchcpu) is compared by that
// multiple, round by round, not by its time over the table's reference.
func TestCompareUsesCPURef(t *testing.T) {
	rn := fakeRunner(1, 1, 0, 0)
	for i, v := range rn.variants {
		s := v.bench["./p"]["X"]
		s.cpu = slicesOf(len(s.wall), 500)
		s.cpuRef = slicesOf(len(s.wall), []float64{1.3, 1}[i]) // head 30% slower
	}
	got := compare(rn, &baselineFile{}, io.Discard)
	if len(got) != 1 || got[0].why != "SLOWER: 1.30× the baseline" {
		t.Errorf("compare = %v, want X 1.30× slower", got)
	}
}

func slicesOf(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// summarize gives the median and benchstat's distribution-free 95%
// confidence interval: none below 6 samples, the extremes at 6, the second
// smallest and second largest at 10.
func TestSummarize(t *testing.T) {
	tests := []struct {
		xs     []float64
		center float64
		lo, hi float64
	}{
		{[]float64{3, 1, 2, 5, 4}, 3, math.Inf(-1), math.Inf(1)},
		{[]float64{6, 1, 2, 5, 4, 3}, 3.5, 1, 6},
		{[]float64{10, 1, 2, 9, 3, 8, 4, 7, 5, 6}, 5.5, 2, 9},
	}
	for _, tt := range tests {
		s := summarize(tt.xs)
		if s.center != tt.center || s.lo != tt.lo || s.hi != tt.hi {
			t.Errorf("summarize(%v) = %v, want median %v in [%v, %v]", tt.xs, s, tt.center, tt.lo, tt.hi)
		}
	}
}

// A table's text is replaced between its marker lines, and nothing else.
func TestReplaceBlock(t *testing.T) {
	doc := []byte("before\n<!-- benchdoc:a -->\nold\n<!-- /benchdoc:a -->\nafter\n")
	got, ok := replaceBlock(doc, "a", "new\n")
	if want := "before\n<!-- benchdoc:a -->\nnew\n<!-- /benchdoc:a -->\nafter\n"; !ok || string(got) != want {
		t.Errorf("replaceBlock = %q, %v; want %q", got, ok, want)
	}
	if _, ok := replaceBlock(doc, "b", "new\n"); ok {
		t.Error("replaceBlock found a table that the document does not have")
	}
}

// Speeds are of the CPU time where a benchmark reports one: go test's MB/s
// (of the wall-clock time) times wall over CPU, round by round.
func TestSpeedOfCPUTime(t *testing.T) {
	s := &samples{wall: []float64{200, 300}, mbs: []float64{100, 100}}
	if diff := cmp.Diff([]float64{100, 100}, s.speed()); diff != "" {
		t.Errorf("without CPU time (-want +got):\n%s", diff)
	}
	s.cpu = []float64{100, 100}
	if diff := cmp.Diff([]float64{200, 300}, s.speed()); diff != "" {
		t.Errorf("with CPU time (-want +got):\n%s", diff)
	}
}

// roundsRunner is fakeRunner with times given round by round: the
// reference's and X's, in the working tree and in the baseline's code.
func roundsRunner(headRef, headX, baseRef, baseX []float64) *runner {
	rn := fakeRunner(1, 1, 0, 0)
	for i, v := range rn.variants {
		v.bench["./p"]["Ref"].wall = [][]float64{headRef, baseRef}[i]
		v.bench["./p"]["X"].wall = [][]float64{headX, baseX}[i]
	}
	return rn
}

// A figure is the lesser of the median of the rounds' ratios and the ratio
// of the best rounds (each tree's least time over its reference's least
// time): rounds that other processes slowed do not fail the check, even most
// of them, nor does one lucky round of the baseline, nor a round whose
// reference alone was slowed; a figure slower in every round fails.
func TestCompareBestOfRounds(t *testing.T) {
	ref := []float64{1000, 1000, 1000, 1000, 1000, 1000}
	x := []float64{2000, 2000, 2000, 2000, 2000, 2000}
	tests := []struct {
		name           string
		headRef, headX []float64
		baseRef, baseX []float64
		want           string
	}{
		{"same", ref, x, ref, x, ""},
		{"four rounds of six slowed by 45%", ref, []float64{2000, 2900, 2900, 2900, 2900, 2000}, ref, x, ""},
		{"the baseline's reference slowed in one round", ref, x, []float64{1000, 1700, 1000, 1000, 1000, 1000}, x, ""},
		{"one lucky round of the baseline", ref, x, ref, []float64{2000, 2000, 1500, 2000, 2000, 2000}, ""},
		{"25% slower in every round, one round slowed more", ref, []float64{2500, 2500, 3500, 2500, 2500, 2500}, ref, x, ""},
		{"30% slower in every round", ref, []float64{2600, 2600, 3500, 2600, 2600, 2600}, ref, x, "SLOWER: 1.30× the baseline"},
		{"30% slower, the machine twice as slow for the baseline", ref, []float64{2600, 2600, 2600, 2600, 2600, 2600},
			[]float64{2000, 2000, 2000, 2000, 2000, 2000}, []float64{4000, 4000, 4000, 4000, 4000, 4000}, "SLOWER: 1.30× the baseline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rn := roundsRunner(tt.headRef, tt.headX, tt.baseRef, tt.baseX)
			var out strings.Builder
			got := compare(rn, &baselineFile{}, &out)
			var want []failure
			if tt.want != "" {
				want = []failure{{"./p", "X", tt.want}}
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(failure{})); diff != "" {
				t.Errorf("compare (-want +got):\n%s\noutput:\n%s", diff, out.String())
			}
		})
	}
}
