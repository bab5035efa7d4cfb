package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/internal/benchcpu"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// typicalStep returns a step with one call: about 150 bytes of arguments and
// a 300-byte result, different for every i.
func typicalStep(i int) guard.Step {
	args := fmt.Sprintf(`{"query":"site:docs.example.com loop guard %08d","max_results":10,"lang":"en","safe":true,"filters":{"after":"2026-01-01","type":"html"}}`, i)
	result := fmt.Sprintf(`{"hits":[{"title":"Result %08d","url":"https://docs.example.com/a/%08d"}],"total":1,"took_ms":12,"note":"%s"}`, i, i, strings.Repeat("x", 180))
	return guard.Step{
		ToolCalls:    []guard.ToolCall{{Name: "search", Args: json.RawMessage(args), Result: json.RawMessage(result)}},
		FinishReason: "tool-calls",
		Usage:        guard.Usage{InputTokens: 1200, OutputTokens: 40},
	}
}

// defaultGuard returns a guard with the default detectors, but a step limit
// far away, so that a long benchmark measures the steady state rather than
// the max-steps stop.
func defaultGuard(tb testing.TB) *guard.Guard {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": 1000000000}`))
	if err != nil {
		tb.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// BenchmarkCheck measures Check of a typical step (one call, 150-byte
// arguments, 300-byte result) with the default detectors in steady state:
// every step is new, so nothing stops, and the no-progress window is full.
func BenchmarkCheck(b *testing.B) {
	g := defaultGuard(b)
	steps := make([]guard.Step, 4096)
	for i := range steps {
		steps[i] = typicalStep(i)
	}
	ctx := context.Background()
	for i := range 2048 {
		testutil.Check(b, g, steps[i])
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(steps[0].ToolCalls[0].Args.(json.RawMessage)) + len(steps[0].ToolCalls[0].Result.(json.RawMessage))))
	i := 2048
	cpu := benchcpu.Start(b)
	for b.Loop() {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatalf("unexpected stop: %v", v)
		}
		i++
	}
	cpu.Stop()
}

// BenchmarkPreflight measures Preflight of one call with the default
// detectors.
func BenchmarkPreflight(b *testing.B) {
	g := defaultGuard(b)
	for i := range 100 {
		testutil.Check(b, g, typicalStep(i))
	}
	ctx := context.Background()
	call := typicalStep(1000).ToolCalls[0]
	b.ReportAllocs()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		if d, _ := g.Preflight(ctx, call); !d.Allow {
			b.Fatalf("refused: %v", d)
		}
	}
	cpu.Stop()
}

// BenchmarkReference is the yardstick of the other figures, run in the same
// process: the standard library's json.Unmarshal of a typical step (see
// typicalStep) into an any. BENCHMARKS.md gives each figure as a multiple of
// it too, and CI compares those multiples, which do not depend on the
// machine's speed or load as much as times do.
func BenchmarkReference(b *testing.B) {
	data, err := json.Marshal(typicalStep(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Stop()
}

// TestHeapIsBoundedByOptions checks that the guard's memory does not grow
// with the run: the heap in use after 1,000,000 steps of distinct calls is
// no more than after 10,000 (within 10%).
func TestHeapIsBoundedByOptions(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a measurement: too slow under -short or -race")
	}
	g := defaultGuard(t)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	const small, large = 10_000, 1_000_000
	steps := 0
	run := func(n int) {
		for ; steps < n; steps++ {
			testutil.Check(t, g, typicalStep(steps))
		}
	}
	run(small)
	h1 := heap()
	run(large)
	h2 := heap()
	t.Logf("heap in use: %d bytes after %d steps, %d bytes after %d steps (%.3fx)", h1, small, h2, large, float64(h2)/float64(h1))
	if float64(h2) > float64(h1)*1.10 {
		t.Errorf("heap grew from %d to %d bytes", h1, h2)
	}
	runtime.KeepAlive(g)
}
