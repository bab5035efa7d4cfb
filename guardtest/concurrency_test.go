package guardtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// An op is one call of a guard by the concurrency test: a Check of a step
// or a Preflight of calls. The backing array of its first call's arguments
// is its identity, which the guard keeps when it copies the call.
type op struct {
	check bool
	step  guard.Step
	calls []guard.ToolCall

	verdict  guard.Verdict
	decision guard.Decision
}

func (o *op) id() *byte {
	first := o.calls
	if o.check {
		first = o.step.ToolCalls
	}
	return unsafe.SliceData(first[0].Args.(json.RawMessage))
}

// identified returns c with arguments in a backing array of their own.
func identified(c guard.ToolCall) guard.ToolCall {
	raw, ok := c.Args.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(c.Args)
		if err != nil {
			b = []byte("null")
		}
		raw = b
	}
	c.Args = json.RawMessage(slices.Clone(raw))
	return c
}

// orderSpy records, under the guard's lock, the order in which the guard
// runs the ops.
type orderSpy struct {
	mu    sync.Mutex // the test's own lock for the log; the guard's lock is held too
	order []*byte
}

func (s *orderSpy) record(f *rule.Facts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw := f.Calls[0].ToolCall().Args.(json.RawMessage)
	s.order = append(s.order, unsafe.SliceData(raw))
}

// The spy is a rule and its own state, for one guard: it keeps nothing a
// snapshot must hold.
func (s *orderSpy) Name() string                         { return "order-spy" }
func (s *orderSpy) Priority() int                        { return 0 }
func (s *orderSpy) Options() any                         { return nil }
func (s *orderSpy) NewState() rule.State                 { return s }
func (s *orderSpy) Observe(f *rule.Facts)                { s.record(f) }
func (s *orderSpy) Verdict() rule.Verdict                { return rule.Verdict{} }
func (s *orderSpy) Preflight(f *rule.Facts) rule.Verdict { s.record(f); return rule.Verdict{} }

// TestConcurrentGuard: 8 goroutines call Check and Preflight on one guard at
// once. Replayed one by one, in the order the guard ran them, on a fresh
// guard, the same calls give the same verdicts and decisions.
func TestConcurrentGuard(t *testing.T) {
	const goroutines = 8
	perGoroutine := 400
	switch {
	case race && testing.Short():
		perGoroutine = 50
	case race:
		perGoroutine = 150
	}
	rules := allRules(t) // shared by the guard under test and the replay
	cfg := func(spy *orderSpy) guard.Config {
		return guard.Config{Ignore: []string{"think"}, History: 4, Rules: append(slices.Clone(rules), spy)}
	}
	spy := &orderSpy{}
	g, err := guard.New(cfg(spy))
	if err != nil {
		t.Fatal(err)
	}

	// Each goroutine's ops, made before the start.
	ops := make([][]*op, goroutines)
	byID := map[*byte]*op{}
	for w := range ops {
		r := rand.New(rand.NewPCG(uint64(w), 99))
		for range perGoroutine {
			o := &op{check: r.IntN(10) < 7}
			s := guardtest.RandomStep(r)
			if r.IntN(20) > 0 {
				s.FinishReason = "tool-calls" // a run that goes on
			}
			if len(s.ToolCalls) == 0 {
				s.ToolCalls = guardtest.RandomStep(r).ToolCalls
			}
			if len(s.ToolCalls) == 0 {
				s.ToolCalls = []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":0}`)}}
			}
			s.ToolCalls = slices.Clone(s.ToolCalls)
			s.ToolCalls[0] = identified(s.ToolCalls[0])
			if o.check {
				o.step = s
			} else {
				for _, c := range s.ToolCalls {
					o.calls = append(o.calls, guard.ToolCall{Name: c.Name, Args: c.Args})
				}
			}
			ops[w] = append(ops[w], o)
			byID[o.id()] = o
		}
	}

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, goroutines)
	for w := range goroutines {
		wg.Go(func() {
			<-start
			ctx := context.Background()
			for _, o := range ops[w] {
				var err error
				if o.check {
					o.verdict, err = g.Check(ctx, o.step)
				} else {
					o.decision, err = g.Preflight(ctx, o.calls...)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	if got, want := len(spy.order), goroutines*perGoroutine; got != want {
		t.Fatalf("the guard ran %d ops, want %d", got, want)
	}
	// Replay serially, in the guard's order, on a fresh guard.
	replay, err := guard.New(cfg(&orderSpy{}))
	if err != nil {
		t.Fatal(err)
	}
	counts, replayCounts := map[string]int{}, map[string]int{}
	checks := 0
	for i, id := range spy.order {
		o := byID[id]
		if o == nil {
			t.Fatalf("op %d of the guard's order is unknown", i)
		}
		if o.check {
			checks++
			v := testutil.Check(t, replay, o.step)
			counts[outcome(o.verdict)]++
			replayCounts[outcome(v)]++
			if !sameJSON(t, o.verdict, v) {
				t.Errorf("op %d (Check): concurrently %s, replayed %s", i, jsonOf(o.verdict), jsonOf(v))
			}
		} else {
			d := testutil.Preflight(t, replay, o.calls...)
			counts["preflight "+outcome(d.Verdict())]++
			replayCounts["preflight "+outcome(d.Verdict())]++
			if !sameJSON(t, o.decision, d) {
				t.Errorf("op %d (Preflight): concurrently %s, replayed %s", i, jsonOf(o.decision), jsonOf(d))
			}
		}
	}
	if !reflect.DeepEqual(counts, replayCounts) {
		t.Errorf("verdict counts: concurrently %v, replayed %v", counts, replayCounts)
	}
	if got := testutil.Summary(t, g).Steps; got != checks {
		t.Errorf("Summary().Steps = %d, want %d", got, checks)
	}
	a := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	b := testutil.Snapshot(t, replay, guard.SnapshotOptions{})
	if string(a) != string(b) {
		t.Errorf("snapshots differ:\nconcurrent: %s\nreplayed:   %s", a, b)
	}
	t.Logf("%d ops from %d goroutines; outcomes: %v", len(spy.order), goroutines, sortedCounts(counts))
}

func outcome(v guard.Verdict) string {
	if !v.Stop {
		return "go on"
	}
	return v.Code
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return jsonOf(a) == jsonOf(b)
}

func sortedCounts(m map[string]int) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += fmt.Sprintf("%s=%d ", k, m[k])
	}
	return s
}
