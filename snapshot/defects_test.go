package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/snapshot"
)

// downStore is a store that cannot be reached: every verb fails.
type downStore struct{}

func (downStore) Load(context.Context, string, snapshot.Version) ([]byte, snapshot.Version, error) {
	return nil, 0, errDown
}

func (downStore) Save(context.Context, string, snapshot.Version, snapshot.Version, []byte, time.Duration) error {
	return errDown
}

// TestStoreNeverReached drives a run the store has never held, through each
// door, while every call to the store fails: the policy answers, and nothing
// panics (commit used to dereference the envelope of a run that was never
// loaded).
func TestStoreNeverReached(t *testing.T) {
	ctx := context.Background()
	call := loop.ToolCalls[0]
	// Each door returns the answer and what OnError was told.
	doors := map[string]func(r *worker) (answer, error){
		"Preflight then Check": func(r *worker) (answer, error) {
			d, err := r.preflight(ctx, "run", call)
			if d.Allow {
				_, cerr := r.check(ctx, "run", loop)
				err = errors.Join(err, cerr)
			}
			return decisionAnswer(d), err
		},
		"Begin then End": func(r *worker) (answer, error) {
			r.take()
			turn := r.Guard("run").Begin()
			var a answer
			_, err := turn.Run(ctx, call, func(context.Context) (any, error) { return "nothing", nil })
			var refused *guard.RefusedError
			if errors.As(err, &refused) {
				a = decisionAnswer(refused.Decision)
			} else if err != nil {
				return answer{}, err
			}
			// The store's error is told to OnError, not End's: End's is
			// nil or the stop.
			if _, err = turn.End(ctx, guard.Step{}); err != nil && !errors.As(err, new(*guard.StopError)) {
				return answer{}, fmt.Errorf("End: %w (want nil or a *guard.StopError)", err)
			}
			return a, r.take()
		},
		"StartCall then Finish": func(r *worker) (answer, error) {
			c, d, err := r.startCall(ctx, "run", call)
			if c != nil {
				_, ferr := r.finish(ctx, c, "nothing", nil)
				err = errors.Join(err, ferr)
			}
			return decisionAnswer(d), err
		},
	}
	for _, policy := range []snapshot.Policy{snapshot.FailOpen, snapshot.FailClosed} {
		for name, door := range doors {
			t.Run(policy.String()+"/"+name, func(t *testing.T) {
				runs := newRuns(t, downStore{}, &defaults{}, snapshot.Options{Policy: policy})
				var got []answer
				for range 3 {
					a, err := door(runs)
					var se *snapshot.StoreError
					if !errors.As(err, &se) || !errors.Is(err, errDown) {
						t.Fatalf("told %v, want a *StoreError wrapping the store's", err)
					}
					got = append(got, answer{Stop: a.Stop, Code: a.Code})
				}
				// Fail open: the worker catches the loop it sees itself
				// (the third identical call); fail closed: refused.
				want := []answer{{}, {}, {Stop: true, Code: "REPEATED_TOOL_CALL"}}
				if policy == snapshot.FailClosed {
					s := answer{Stop: true, Code: snapshot.CodeStore}
					want = []answer{s, s, s}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("answers (-want +got):\n%s", diff)
				}
				if _, err := runs.summary(ctx, "run"); !errors.Is(err, errDown) {
					t.Errorf("Summary: told %v, want the store's error", err)
				}
				if err := runs.Flush(ctx, "run"); policy == snapshot.FailOpen && !errors.Is(err, errDown) {
					t.Errorf("Flush: %v, want the store's error", err)
				}
			})
		}
	}
}

// loadStore answers every Load with the same thing and saves nothing.
type loadStore struct {
	data []byte
	v    snapshot.Version
	err  error
}

func (s loadStore) Load(context.Context, string, snapshot.Version) ([]byte, snapshot.Version, error) {
	return s.data, s.v, s.err
}

func (loadStore) Save(context.Context, string, snapshot.Version, snapshot.Version, []byte, time.Duration) error {
	return errors.New("loadStore saves nothing")
}

// TestGarbageInTheStoreIsRefused puts under the run's key what no Runs
// wrote. It must be refused like a snapshot that fails its check, under
// every policy, and never read as an outage that FailOpen lets through.
func TestGarbageInTheStoreIsRefused(t *testing.T) {
	ctx := context.Background()
	key := []byte("secret")
	// An envelope that a Runs without a key wrote.
	mem := snapshot.NewMemory(nil)
	if _, err := newRuns(t, mem, &defaults{}, snapshot.Options{}).check(ctx, "run", loop); err != nil {
		t.Fatal(err)
	}
	unsigned, v, err := mem.Load(ctx, "run", 0)
	if err != nil || v == 0 {
		t.Fatal(v, err)
	}
	malformed := fmt.Errorf("redis: loopguard:run:run: %w", snapshot.ErrMalformed)
	tests := []struct {
		name string
		s    loadStore
		key  []byte
	}{
		{"malformed, no key", loadStore{err: malformed}, nil},
		{"malformed, key", loadStore{err: malformed}, key},
		{"empty, key", loadStore{data: []byte{}, v: 7}, key},
		{"short, key", loadStore{data: []byte("x"), v: 7}, key},
		{"an object, key", loadStore{data: []byte("{}"), v: 7}, key},
		{"unsigned envelope, key", loadStore{data: unsigned, v: 7}, key},
		{"a signature cut short, key", loadStore{data: []byte("lgmac1:00"), v: 7}, key},
		{"empty, no key", loadStore{data: []byte{}, v: 7}, nil},
		{"an object, no key", loadStore{data: []byte("{}"), v: 7}, nil},
	}
	for _, tt := range tests {
		for _, policy := range []snapshot.Policy{snapshot.FailOpen, snapshot.FailClosed} {
			t.Run(tt.name+"/"+policy.String(), func(t *testing.T) {
				// A looping delete_db through fresh workers: never run.
				for i := range 10 {
					runs := newRuns(t, tt.s, &defaults{}, snapshot.Options{Policy: policy, Key: tt.key})
					c, d, err := runs.startCall(ctx, "run", testutil.Call("delete_db", `{}`))
					if c != nil || d.Allow || d.Code != snapshot.CodeTampered {
						t.Fatalf("worker %d: StartCall = %+v, want a refusal %s", i, d, snapshot.CodeTampered)
					}
					var se *snapshot.StateError
					if !errors.As(err, &se) {
						t.Fatalf("worker %d: error %v, want a *StateError", i, err)
					}
					if tt.key != nil && !errors.Is(err, snapshot.ErrTampered) {
						t.Errorf("worker %d: error %v, want ErrTampered with a key set", i, err)
					}
					if errors.As(err, new(*snapshot.StoreError)) {
						t.Errorf("worker %d: error %v is a *StoreError: garbage is no outage", i, err)
					}
				}
			})
		}
	}
}

// panickyGuards is the default rules and a panicky rule.
type panickyGuards struct{ panics *atomic.Int32 }

func (f panickyGuards) config() guard.Config {
	return guard.Config{Rules: append(detector.Defaults(), testutil.Panicky{Panics: f.panics})}
}

// mustPanic runs fn and reports whether it panicked.
func mustPanic(fn func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	fn()
	return false
}

// TestPanickingRuleCountsNoStep makes a rule panic under a store-backed
// guard's Check (and Finish). The
// panic must leave the stored run and the cached guard as they were: the step
// is not recorded, and retrying it counts it once (it used to stay in the
// backlog and be applied again onto the half-updated guard).
func TestPanickingRuleCountsNoStep(t *testing.T) {
	ctx := context.Background()
	panics := new(atomic.Int32)
	store := snapshot.NewMemory(nil)
	runs := newRuns(t, store, panickyGuards{panics}, snapshot.Options{})
	step := func(i int) guard.Step {
		return testutil.Calls(testutil.Done("search", fmt.Sprintf(`{"q":"%d"}`, i), "nothing"))
	}
	steps := func(runs *worker) int {
		t.Helper()
		s, err := runs.summary(ctx, "run")
		if err != nil {
			t.Fatal(err)
		}
		return s.Steps
	}
	summary := func() int { t.Helper(); return steps(runs) }
	stored := func() int { t.Helper(); return steps(newRuns(t, store, panickyGuards{panics}, snapshot.Options{})) }
	for i := range 10 {
		if i == 4 {
			panics.Store(1)
			if !mustPanic(func() { runs.check(ctx, "run", step(i)) }) {
				t.Fatal("the rule did not panic")
			}
			if n := summary(); n != 4 {
				t.Errorf("after the panic, the cached run has %d steps, want 4", n)
			}
		}
		if _, err := runs.check(ctx, "run", step(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := stored(); n != 10 {
		t.Errorf("%d steps stored, want 10", n)
	}
	if n := summary(); n != 10 {
		t.Errorf("the cached run has %d steps, want 10", n)
	}

	// A rule that always panics fails each step, and nothing else: the
	// run is not poisoned, and it goes on once the rule stops.
	panics.Store(-1)
	for range 3 {
		if !mustPanic(func() { runs.check(ctx, "run", step(10)) }) {
			t.Fatal("the rule did not panic")
		}
		if d, err := runs.preflight(ctx, "run", testutil.Q("new")); err != nil || !d.Allow {
			t.Errorf("Preflight after a panic = %+v, %v; want allowed", d, err)
		}
	}
	if c, _, err := runs.startCall(ctx, "run", testutil.Q("new")); err != nil || c == nil {
		t.Fatalf("StartCall = %v, %v", c, err)
	} else if !mustPanic(func() { c.Finish(ctx, "nothing", nil) }) {
		t.Fatal("the rule did not panic in Finish")
	}
	if n := stored(); n != 10 {
		t.Errorf("after the rule panicked on every step: %d steps stored, want 10", n)
	}
	panics.Store(0)
	if _, err := runs.check(ctx, "run", step(10)); err != nil {
		t.Fatal(err)
	}
	if n, m := stored(), summary(); n != 11 || m != 11 {
		t.Errorf("%d steps stored, %d cached, want 11", n, m)
	}
}

// TestTurnEndStopError checks that the End of a turn of a store-backed guard
// reports a stop as one of a guard in memory does: with a *guard.StopError.
func TestTurnEndStopError(t *testing.T) {
	ctx := context.Background()
	runs := newRuns(t, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{})
	twin, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	for i := range 3 {
		v, err := runs.Guard("run").Begin().End(ctx, loop)
		if err := runs.take(); err != nil {
			t.Fatal(err)
		}
		wv, werr := twin.Begin().End(ctx, loop)
		if v.Stop != wv.Stop || v.Code != wv.Code {
			t.Errorf("step %d: verdict %+v, the guard's %+v", i, verdictAnswer(v), verdictAnswer(wv))
		}
		var stop, wstop *guard.StopError
		if errors.As(err, &stop) != errors.As(werr, &wstop) {
			t.Errorf("step %d: End's error %v, guard.Turn.End's %v", i, err, werr)
		}
		if i == 2 && (stop == nil || stop.Verdict.Code != wv.Code) {
			t.Errorf("third identical step: error %v, want a *guard.StopError for %s", err, wv.Code)
		}
	}
}

// TestStartCallRefusalEscalates is guard.TestStartCallRefusalEscalates on a
// run in the store: once recording a refusal stops the run, the answer is
// that stop (REPEATED_REFUSAL, counting the requests), not the first
// refusal's words again, and the run stays stopped.
func TestStartCallRefusalEscalates(t *testing.T) {
	ctx := context.Background()
	runs := newRuns(t, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{})
	twin, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	for i := range 7 {
		c, d, err := runs.startCall(ctx, "run", testutil.Q("x"))
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			c.Finish(ctx, "nothing", nil)
		}
		r, wd, _ := twin.StartCall(ctx, testutil.Q("x"))
		if r != nil {
			r.Finish(ctx, "nothing", nil)
		}
		if diff := cmp.Diff(decisionAnswer(wd), decisionAnswer(d)); diff != "" {
			t.Errorf("call %d (-guard +runs):\n%s", i+1, diff)
		}
		// The 5th call's refusal stops the run, counting 3 requests; the
		// run then stays stopped (Summary.FirstStop): StartCall refuses
		// the 6th and 7th with that stop, and records nothing, so the
		// count stays 3.
		if i >= 4 && (d.Code != "REPEATED_REFUSAL" || !strings.Contains(d.Feedback, "3 times")) {
			t.Errorf("call %d: %s %q, want REPEATED_REFUSAL counting 3 requests", i+1, d.Code, d.Feedback)
		}
		if stopped := d.Detail == "the run stopped at step 4"; stopped != (i > 4) {
			t.Errorf("call %d: detail %q; want the first stop's (step 4) from the 6th call on", i+1, d.Detail)
		}
	}
}
