package guardtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// TestSoak runs one guard of every built-in rule over 10,000,000 steps
// (LOOPGUARD_SOAK_STEPS to change it) and checks that its heap stays flat
// and the time per step does not grow. It runs only with LOOPGUARD_SOAK=1.
//
//	LOOPGUARD_SOAK=1 go test -run TestSoak -v -timeout 1h ./guardtest
func TestSoak(t *testing.T) {
	if os.Getenv("LOOPGUARD_SOAK") != "1" {
		t.Skip("set LOOPGUARD_SOAK=1 to run the soak")
	}
	steps := 10_000_000
	if s := os.Getenv("LOOPGUARD_SOAK_STEPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1_000_000 {
			t.Fatalf("LOOPGUARD_SOAK_STEPS=%q: want a number of at least 1000000", s)
		}
		steps = n
	}
	const block = 1_000_000
	must := func(d rule.Rule, err error) rule.Rule {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Every detector, with limits that a long run does not reach, so that
	// the steady state is measured: the budget warns but never stops, the
	// caps are far away.
	dets := allRules(t)
	for i, d := range dets {
		switch d.Name() {
		case budget.Name:
			dets[i] = must(budget.New(budget.Options{WarnAt: 0.5, Now: fixedClock,
				MaxTotalTokens: budget.Limit{Value: 1e15}, MaxCostUSD: budget.Limit{Value: 1e12}, MaxDurationMs: budget.Limit{Value: 1e15}}))
		case toollimit.Name:
			dets[i] = must(toollimit.New(toollimit.Options{MaxCalls: map[string]int{"search": 1 << 40, "read": 1 << 40}}))
		}
	}
	g, err := guard.New(guard.Config{Ignore: []string{"think"}, History: 16, Rules: dets})
	if err != nil {
		t.Fatal(err)
	}
	// A pool of steps, so that making them costs nothing in the loop; every
	// step also carries arguments never seen before, and every 1000th a
	// tool never seen before, so that a state that grows with the run
	// shows.
	r := rand.New(rand.NewPCG(2024, 1))
	pool := make([]guard.Step, 4096)
	for i := range pool {
		pool[i] = guardtest.RandomStep(r)
		if r.IntN(20) > 0 {
			pool[i].FinishReason = "tool-calls"
		}
	}

	type sample struct {
		steps                    int
		heapInuse, heapObjects   uint64
		nsPerStep                float64
		snapshotBytes, stops     int
		preflights, refusedCalls int
	}
	ctx := context.Background()
	var samples []sample
	var ms runtime.MemStats
	stops, refused, preflights := 0, 0, 0
	for done := 0; done < steps; done += block {
		start := time.Now()
		for i := range block {
			s := pool[(done+i)%len(pool)]
			fresh := json.RawMessage(`{"page":` + strconv.Itoa(done+i) + `}`)
			s.ToolCalls = append(s.ToolCalls[:len(s.ToolCalls):len(s.ToolCalls)], guard.ToolCall{Name: "fetch", Args: fresh})
			if (done+i)%1000 == 0 {
				s.ToolCalls = append(s.ToolCalls, guard.ToolCall{Name: "tool-" + strconv.Itoa(done+i), Args: fresh})
			}
			v, err := g.Check(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if v.Stop {
				stops++
			}
			if i%10 == 0 {
				preflights++
				d, err := g.Preflight(ctx, s.ToolCalls...)
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allow {
					refused++
				}
			}
		}
		elapsed := time.Since(start)
		snap, err := g.Snapshot(ctx, guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		samples = append(samples, sample{done + block, ms.HeapInuse, ms.HeapObjects,
			float64(elapsed.Nanoseconds()) / float64(block), len(snap), stops, preflights, refused})
		last := samples[len(samples)-1]
		t.Logf("%9d steps: HeapInuse %7.2f MiB, %7d heap objects, %6.0f ns/step (Check, and Preflight every 10th), snapshot %6d bytes, %d stops, %d of %d preflights refused",
			last.steps, float64(last.heapInuse)/(1<<20), last.heapObjects, last.nsPerStep, last.snapshotBytes, last.stops, last.refusedCalls, last.preflights)
	}
	first, last := samples[0], samples[len(samples)-1]
	// A state bounded by the options keeps the heap within a little of
	// where it started.
	if grow := int64(last.heapInuse) - int64(first.heapInuse); grow > 2<<20 {
		t.Errorf("the heap grew by %.1f MiB from the first sample to the last", float64(grow)/(1<<20))
	}
	if last.snapshotBytes > 2*first.snapshotBytes+4096 {
		t.Errorf("the snapshot grew from %d to %d bytes", first.snapshotBytes, last.snapshotBytes)
	}
	// Time per step on a shared machine is noisy: a state that grows with
	// the run would make it grow many times over, not by a fraction.
	best := first.nsPerStep
	for _, s := range samples {
		best = min(best, s.nsPerStep)
	}
	if last.nsPerStep > 2.5*best {
		t.Errorf("time per step grew from %.0f ns (best) to %.0f ns (last)", best, last.nsPerStep)
	}
	fmt.Fprintf(os.Stderr, "soak: %d steps, heap %d -> %d bytes, %.0f -> %.0f ns/step\n",
		last.steps, first.heapInuse, last.heapInuse, first.nsPerStep, last.nsPerStep)
}
