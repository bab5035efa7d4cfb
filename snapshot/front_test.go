package snapshot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/snapshot"
)

// TestTwoWorkersOneRun: two store-backed guards of one key, on two Runs
// (two workers) over one store, are one run: the third identical call is
// refused whichever worker gets it, by every door, each step is counted
// once, and the run's first stop survives through the store.
func TestTwoWorkersOneRun(t *testing.T) {
	ctx := context.Background()
	for _, third := range []int{0, 1} {
		store := snapshot.NewMemory(nil)
		ws := []*worker{newRuns(t, store, &defaults{}, snapshot.Options{}), newRuns(t, store, &defaults{}, snapshot.Options{})}
		gs := []*guard.Guard{ws[0].Guard("run"), ws[1].Guard("run")}
		for i := range 2 {
			if v, err := gs[i].Check(ctx, loop); err != nil || v.Stop {
				t.Fatalf("step %d on worker %d: %+v, %v", i, i, v, err)
			}
		}
		other := gs[1-third]
		for name, refused := range map[string]func() (string, error){
			"Preflight": func() (string, error) {
				d, err := gs[third].Preflight(ctx, loop.ToolCalls[0])
				return d.Code, err
			},
			"Turn.Preflight": func() (string, error) {
				ds, err := gs[third].Begin().Preflight(ctx, loop.ToolCalls[0])
				if err != nil {
					return "", err
				}
				return ds[0].Code, nil
			},
		} {
			if code, err := refused(); err != nil || code != "REPEATED_TOOL_CALL" {
				t.Errorf("third identical call on worker %d, %s: %q, %v; want REPEATED_TOOL_CALL", third, name, code, err)
			}
		}
		v, err := gs[third].Check(ctx, loop)
		if err != nil || v.Code != "REPEATED_TOOL_CALL" || !guard.IsFault(v) {
			t.Fatalf("third identical step on worker %d: %+v, %v; want a REPEATED_TOOL_CALL stop", third, v, err)
		}
		for i, g := range gs {
			s, err := g.Summary(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s.Steps != 3 || s.ToolCalls != 3 {
				t.Errorf("worker %d: %d steps, %d calls; want 3, 3 (each once)", i, s.Steps, s.ToolCalls)
			}
			want := &guard.Verdict{Stop: true, Reason: v.Reason, Code: v.Code, Detector: v.Detector, Detail: "the run stopped at step 2"}
			if i == third {
				want = &guard.Verdict{Stop: true, Reason: v.Reason, Code: v.Code, Detector: v.Detector, Detail: v.Detail,
					Evidence: v.Evidence, Feedback: v.Feedback}
			}
			if diff := cmp.Diff(want, s.FirstStop); diff != "" {
				t.Errorf("worker %d: FirstStop (-want +got):\n%s", i, diff)
			}
		}
		// The stopped run refuses every call of the other worker's turns
		// and StartCall, with the first stop, and records nothing.
		_, err = other.Begin().Run(ctx, testutil.Q("new"), func(context.Context) (any, error) { return "r", nil })
		var re *guard.RefusedError
		if !errors.As(err, &re) || re.Decision.Code != "REPEATED_TOOL_CALL" || re.Decision.Detail != "the run stopped at step 2" {
			t.Errorf("a turn's new call on the other worker: %v; want the first stop's refusal", err)
		}
		r, d, err := other.StartCall(ctx, testutil.Q("new"))
		if r != nil || err != nil || d.Code != "REPEATED_TOOL_CALL" || d.Detail != "the run stopped at step 2" {
			t.Errorf("StartCall of a new call on the other worker: %v, %+v, %v; want the first stop's refusal", r, d, err)
		}
		if s, _ := gs[third].Summary(ctx); s.Steps != 3 {
			t.Errorf("after the refusals of a stopped run: %d steps, want 3 (nothing recorded)", s.Steps)
		}
		for i, w := range ws {
			if err := w.take(); err != nil {
				t.Errorf("worker %d: told %v", i, err)
			}
		}
	}
}

// TestRunningCallsOutliveARestore: a call that StartCall allowed stays
// running when the worker's guard of the run is replaced by a newer one
// (another worker saved a step): it still counts against the next call,
// and its Finish records it once.
func TestRunningCallsOutliveARestore(t *testing.T) {
	ctx := context.Background()
	store := snapshot.NewMemory(nil)
	f := &defaults{}
	a, b := newRuns(t, store, f, snapshot.Options{}), newRuns(t, store, f, snapshot.Options{})
	ga, gb := a.Guard("run"), b.Guard("run")
	call := testutil.Q("x")
	r1, d, err := ga.StartCall(ctx, call)
	if err != nil || r1 == nil {
		t.Fatal(d, err)
	}
	r2, d, err := ga.StartCall(ctx, call)
	if err != nil || r2 == nil {
		t.Fatal(d, err)
	}
	if _, err := gb.Check(ctx, testutil.Text("elsewhere")); err != nil {
		t.Fatal(err)
	}
	f.restores.Store(0)
	// a restores the run (b saved), and the two calls still run.
	if r3, d, err := ga.StartCall(ctx, call); r3 != nil || err != nil || d.Code != "REPEATED_TOOL_CALL" {
		t.Fatalf("a third identical call while two run, after a restore: %v, %+v, %v; want refused", r3, d, err)
	}
	if n := f.restores.Load(); n != 1 {
		t.Errorf("%d restores, want 1", n)
	}
	if d, err := ga.Preflight(ctx, call); err != nil || d.Allow || d.CallIndex != 0 {
		t.Errorf("Preflight of a third while two run: %+v, %v; want refused, CallIndex 0", d, err)
	}
	if v, err := r1.Finish(ctx, "r", nil); err != nil || v.Stop {
		t.Fatal(v, err)
	}
	r2.Abandon()
	if v, err := r2.Finish(ctx, "r", nil); err != nil || v.Code != "" {
		t.Errorf("Finish after Abandon = %+v, %v; want the zero verdict", v, err)
	}
	// elsewhere, the refusal, r1's call.
	if s, err := gb.Summary(ctx); err != nil || s.Steps != 3 || s.ToolCalls != 1 {
		t.Errorf("stored run: %d steps, %d calls (%v); want 3, 1", s.Steps, s.ToolCalls, err)
	}
}

// TestReset: a store-backed guard's Reset saves a fresh run with
// compare-and-set, which every worker then reads.
func TestReset(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	a, b := newRuns(t, store, &defaults{}, snapshot.Options{}), newRuns(t, store, &defaults{}, snapshot.Options{})
	for range 3 {
		if _, err := a.check(ctx, "run", loop); err != nil {
			t.Fatal(err)
		}
	}
	// b has seen the stopped run; a resets it.
	if s, _ := b.summary(ctx, "run"); s.Steps != 3 || s.FirstStop == nil {
		t.Fatalf("before the reset: %+v", s)
	}
	if err := a.Guard("run").Reset(ctx); err != nil || a.take() != nil {
		t.Fatal(err)
	}
	for i, w := range []*worker{a, b} {
		s, err := w.summary(ctx, "run")
		if err != nil || s.Steps != 0 || s.FirstStop != nil {
			t.Errorf("worker %d after the reset: %d steps, first stop %v (%v); want a fresh run", i, s.Steps, s.FirstStop, err)
		}
	}
	if v, err := b.check(ctx, "run", loop); err != nil || v.Stop {
		t.Errorf("the first step after the reset: %+v, %v", v, err)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 1 {
		t.Errorf("%d steps stored after the reset, want 1", n)
	}
	// A reset the store does not take is told, and the run goes on from
	// the store's state.
	store.set(true, false)
	if err := a.Guard("run").Reset(ctx); err != nil || !errors.Is(a.take(), errDown) {
		t.Errorf("Reset with the store down: %v; want nil, and OnError told the store's error", err)
	}
	store.set(false, false)
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 1 {
		t.Errorf("%d steps stored after a failed reset, want 1", n)
	}
}

// TestOnErrorWithoutLock: OnError is called with no lock held: it may use
// the run's guard.
func TestOnErrorWithoutLock(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil), down: true}
	var runs *snapshot.Runs
	var told []string
	runs, err := snapshot.New(store, (&defaults{}).config(), snapshot.Options{OnError: func(key string, err error) {
		told = append(told, key)
		if len(told) == 1 {
			runs.Guard(key).Preflight(ctx, testutil.Q("from OnError")) // would deadlock with the run locked
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Guard("run").Check(ctx, loop); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"run", "run"}, told); diff != "" {
		t.Errorf("keys told (-want +got):\n%s", diff)
	}
}

// TestDoneContext: a guard's method whose ctx has ended does nothing and
// returns ctx's error.
func TestDoneContext(t *testing.T) {
	store := snapshot.NewMemory(nil)
	runs := newRuns(t, store, &defaults{}, snapshot.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := runs.Guard("run")
	if _, err := g.Check(ctx, loop); !errors.Is(err, context.Canceled) {
		t.Errorf("Check: %v, want context.Canceled", err)
	}
	if _, _, err := g.StartCall(ctx, testutil.Q("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("StartCall: %v, want context.Canceled", err)
	}
	if store.Len() != 0 || runs.take() != nil {
		t.Errorf("%d runs stored, want 0", store.Len())
	}
}

// TestSnapshotOfAStoredRun: a store-backed guard's Snapshot is the run's,
// and restores into a guard in memory that goes on as the run would.
func TestSnapshotOfAStoredRun(t *testing.T) {
	ctx := context.Background()
	f := &defaults{}
	runs := newRuns(t, snapshot.NewMemory(nil), f, snapshot.Options{})
	g := runs.Guard("run")
	for range 2 {
		if _, err := g.Check(ctx, loop); err != nil {
			t.Fatal(err)
		}
	}
	data, err := g.Snapshot(ctx, guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := guard.Restore(data, f.config())
	if err != nil {
		t.Fatal(err)
	}
	if s := testutil.Summary(t, m); s.Steps != 2 {
		t.Errorf("restored: %d steps, want 2", s.Steps)
	}
	if v := testutil.Check(t, m, loop); v.Code != "REPEATED_TOOL_CALL" {
		t.Errorf("the third identical step on the restored guard: %q, want REPEATED_TOOL_CALL", v.Code)
	}
}

// TestRunningCallsKeepTheirRun: with no cache, a run whose calls are running
// stays in memory, so that they count against the next call; once they
// finish, it is dropped, and they are in the store.
func TestRunningCallsKeepTheirRun(t *testing.T) {
	ctx := context.Background()
	store := snapshot.NewMemory(nil)
	f := &defaults{}
	runs := newRuns(t, store, f, snapshot.Options{CacheSize: -1})
	g := runs.Guard("run")
	call := testutil.Q("x")
	var running []*guard.Running
	for i := range 3 {
		r, d, err := g.StartCall(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		if (r != nil) != (i < 2) || (i == 2 && d.Code != "REPEATED_TOOL_CALL") {
			t.Fatalf("call %d: %v, %+v; want the first two allowed, the third refused", i, r, d)
		}
		if r != nil {
			running = append(running, r)
		}
	}
	for _, r := range running {
		if _, err := r.Finish(ctx, "r", nil); err != nil {
			t.Fatal(err)
		}
	}
	f.restores.Store(0)
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 3 {
		t.Errorf("%d steps stored, want 3 (the refusal, two calls)", n)
	}
	if s, _ := runs.summary(ctx, "run"); s.Steps != 3 || f.restores.Load() != 1 {
		t.Errorf("%d steps, %d restores; want 3, and the run restored (dropped from the cache)", s.Steps, f.restores.Load())
	}
}
