package core_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// streak is a rule with run state: it stops when the same tool is called in
// limit steps in a row. One value serves every guard; each state counts its
// own run.
type streak struct{ limit int }

type streakState struct {
	r    *streak
	tool string
	n    int
}

var (
	_ rule.Rule  = (*streak)(nil)
	_ rule.Saver = (*streakState)(nil)
)

func (r *streak) Name() string         { return "streak" }
func (r *streak) Priority() int        { return rule.PriorityCustom }
func (r *streak) Options() any         { return map[string]int{"limit": r.limit} }
func (r *streak) NewState() rule.State { return &streakState{r: r} }

func (s *streakState) Observe(f *rule.Facts) {
	if len(f.Calls) != 1 {
		s.tool, s.n = "", 0
		return
	}
	if f.Calls[0].Tool != s.tool {
		s.tool, s.n = f.Calls[0].Tool, 0
	}
	s.n++
}

func (s *streakState) Verdict() rule.Verdict {
	if s.n >= s.r.limit {
		return rule.Verdict{Stop: true, Reason: "streak", Code: "STREAK", Detail: fmt.Sprintf("%s %d times", s.tool, s.n)}
	}
	return rule.Verdict{}
}

func (*streakState) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

type streakJSON struct {
	Tool string `json:"tool"`
	N    int    `json:"n"`
}

func (s *streakState) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	return json.Marshal(streakJSON{s.tool, s.n})
}

func (s *streakState) Restore(data []byte) error {
	var j *streakJSON
	if err := rule.UnmarshalState(data, &j); err != nil {
		return err
	}
	if j == nil {
		s.tool, s.n = "", 0
		return nil
	}
	s.tool, s.n = j.Tool, j.N
	return nil
}

// TestGuardsOfOneConfigAreIndependent: two guards built from one Config
// (and so from the same rule values) keep runs of their own: steps of one
// change nothing of the other, a Reset of one leaves the other, and a guard
// restored from one's snapshot with that Config goes on from there alone.
func TestGuardsOfOneConfigAreIndependent(t *testing.T) {
	cfg := guard.Config{Rules: []guard.Rule{&streak{limit: 3}, faultOn{}}}
	g1, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := guard.New(cfg)
	if err != nil {
		t.Fatalf("a second guard from the same Config: %v", err)
	}
	x := testutil.Calls(testutil.Q("x"))
	for i := range 2 {
		if v := testutil.Check(t, g1, x); v.Stop {
			t.Fatalf("g1 step %d stops", i)
		}
	}
	// g2 has seen nothing: two steps of its own do not stop either.
	for i := range 2 {
		if v := testutil.Check(t, g2, x); v.Stop {
			t.Fatalf("g2 step %d stops: it shares g1's state", i)
		}
	}
	if v := testutil.Check(t, g1, x); !v.Stop || v.Detail != "search 3 times" {
		t.Fatalf("g1 step 2 = %+v, want the streak's stop", v)
	}
	if s := testutil.Summary(t, g2); s.Steps != 2 || s.FirstStop != nil {
		t.Errorf("g2 after g1 stopped: %d steps, first stop %+v; want 2, nil", s.Steps, s.FirstStop)
	}
	data, err := g1.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g3, err := guard.Restore(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g1.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := testutil.Check(t, g2, x); !v.Stop {
		t.Errorf("g2's third step goes on after g1's Reset: %+v", v)
	}
	if v := testutil.Check(t, g1, x); v.Stop {
		t.Errorf("g1's first step after Reset stops: %+v", v)
	}
	if v := testutil.Check(t, g3, x); !v.Stop || v.Detail != "search 4 times" {
		t.Errorf("restored g3's next step = %+v, want the streak of 4", v)
	}
	if got := len(g1.Rules()); got != 2 || g1.Rules()[0] != g2.Rules()[0] {
		t.Errorf("the guards do not hold the Config's rules: %v, %v", g1.Rules(), g2.Rules())
	}
}

// TestGuardsOfOneConfigRunConcurrently: many guards from one Config, each
// driven by a goroutine of its own (and one guard by several), give each
// run's own verdicts; under -race, nothing is shared that is written.
func TestGuardsOfOneConfigRunConcurrently(t *testing.T) {
	cfg := guard.Config{Rules: []guard.Rule{&streak{limit: 4}, faultOn{}}, History: 2}
	const guards, steps = 8, 40
	type result struct {
		stops []int
		sum   guard.Summary
	}
	results := make([]result, guards)
	var wg sync.WaitGroup
	for i := range guards {
		wg.Go(func() {
			g, err := guard.New(cfg)
			if err != nil {
				t.Error(err)
				return
			}
			// Guard i calls tool t<i> and changes tool every i+2 steps:
			// runs of i+2 calls, which stop (at the 4th) only from i = 2.
			for s := range steps {
				tool := fmt.Sprintf("t%d_%d", i, s/(i+2))
				v, err := g.Check(t.Context(), testutil.Calls(testutil.Call(tool, `{}`)))
				if err != nil {
					t.Error(err)
					return
				}
				if v.Stop {
					results[i].stops = append(results[i].stops, s)
				}
				if _, err := g.Snapshot(t.Context(), guard.SnapshotOptions{}); err != nil {
					t.Error(err)
				}
			}
			results[i].sum, _ = g.Summary(t.Context())
		})
	}
	wg.Wait()
	for i, r := range results {
		var want []int
		for s := range steps {
			if s%(i+2) >= 3 { // the 4th call of a run and after
				want = append(want, s)
			}
		}
		if diff := cmp.Diff(want, r.stops); diff != "" {
			t.Errorf("guard %d stops (-want +got):\n%s", i, diff)
		}
		if r.sum.Steps != steps || r.sum.ToolCalls != steps {
			t.Errorf("guard %d: %d steps, %d calls; want %d each", i, r.sum.Steps, r.sum.ToolCalls, steps)
		}
		if (r.sum.FirstStop != nil) != (len(want) > 0) {
			t.Errorf("guard %d: FirstStop %+v, with %d stops", i, r.sum.FirstStop, len(want))
		}
	}

	// One guard shared by several goroutines counts every step once.
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for w := range 4 {
		wg.Go(func() {
			for s := range 25 {
				call := testutil.Call(fmt.Sprintf("w%d", w), fmt.Sprintf(`{"s":%d}`, s))
				if _, err := g.Check(t.Context(), testutil.Calls(call)); err != nil {
					t.Error(err)
				}
				if _, err := g.Preflight(t.Context(), call); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if s := testutil.Summary(t, g); s.Steps != 100 || s.ToolCalls != 100 {
		t.Errorf("a shared guard: %d steps, %d calls; want 100 each", s.Steps, s.ToolCalls)
	}
}

// TestDefaultsSharedByGuards: one detector.Defaults() in one Config serves
// many guards at once (it was refused with ErrDetectorInUse when a rule was
// also its run's state): each guard, on a goroutine of its own, stops at
// its own third identical call and at no other step, and a failed Restore
// from the Config leaves it usable.
func TestDefaultsSharedByGuards(t *testing.T) {
	cfg := guard.Config{Rules: detector.Defaults()}
	if _, err := guard.Restore([]byte(`{"version": 1}`), cfg); err == nil {
		t.Fatal("Restore of a bad snapshot succeeded")
	}
	const guards = 8
	stops := make([][]int, guards)
	var wg sync.WaitGroup
	for i := range guards {
		wg.Go(func() {
			g, err := guard.New(cfg)
			if err != nil {
				t.Error(err)
				return
			}
			// Two different calls, then the same call three times.
			steps := []guard.Step{
				testutil.Calls(testutil.Done("search", fmt.Sprintf(`{"q":"a%d"}`, i), "r1")),
				testutil.Calls(testutil.Done("read", fmt.Sprintf(`{"p":%d}`, i), "r2")),
			}
			for range 3 {
				steps = append(steps, testutil.Calls(testutil.Done("search", fmt.Sprintf(`{"q":"x%d"}`, i), "r3")))
			}
			for s, step := range steps {
				v, err := g.Check(t.Context(), step)
				if err != nil {
					t.Error(err)
					return
				}
				if v.Stop {
					stops[i] = append(stops[i], s)
				}
			}
		})
	}
	wg.Wait()
	for i, s := range stops {
		if diff := cmp.Diff([]int{4}, s); diff != "" {
			t.Errorf("guard %d: the steps that stop (-want +got):\n%s", i, diff)
		}
	}
}
