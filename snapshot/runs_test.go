package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/snapshot"
	"github.com/loopguard/loopguard/snapshot/storetest"
)

// defaults is the configuration of the default options ({}), with a rule
// that counts restores.
type defaults struct {
	restores atomic.Int64
}

func (f *defaults) config() guard.Config {
	cfg, err := detector.FromJSON([]byte(`{}`))
	if err != nil {
		panic(err) // the default options always build
	}
	cfg.Rules = append(cfg.Rules, restoreCounter{&f.restores})
	return cfg
}

// configs is what the tests make Runs of: the configuration of its guards.
type configs interface{ config() guard.Config }

// restoreCounter is a rule whose state keeps nothing and counts its
// restores.
type restoreCounter struct{ n *atomic.Int64 }

func (restoreCounter) Name() string                                  { return "restores" }
func (restoreCounter) Priority() int                                 { return rule.PriorityCustom }
func (restoreCounter) Options() any                                  { return nil }
func (c restoreCounter) NewState() rule.State                        { return c }
func (restoreCounter) Observe(*rule.Facts)                           {}
func (restoreCounter) Verdict() rule.Verdict                         { return rule.Verdict{} }
func (restoreCounter) Preflight(*rule.Facts) rule.Verdict            { return rule.Verdict{} }
func (restoreCounter) Snapshot(rule.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (c restoreCounter) Restore([]byte) error                        { c.n.Add(1); return nil }

// worker is a Runs whose store errors (Options.OnError) are collected, with
// the operations of the old Runs API on top of Runs.Guard: each returns the
// store's errors of the operation.
type worker struct {
	*snapshot.Runs
	mu   sync.Mutex
	errs []error
}

// take returns the errors told since the last take, joined.
func (w *worker) take() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := errors.Join(w.errs...)
	w.errs = nil
	return err
}

func (w *worker) check(ctx context.Context, key string, s guard.Step) (guard.Verdict, error) {
	w.take()
	v, err := w.Guard(key).Check(ctx, s)
	return v, errors.Join(err, w.take())
}

func (w *worker) preflight(ctx context.Context, key string, calls ...guard.ToolCall) (guard.Decision, error) {
	w.take()
	d, err := w.Guard(key).Preflight(ctx, calls...)
	return d, errors.Join(err, w.take())
}

func (w *worker) summary(ctx context.Context, key string) (guard.Summary, error) {
	w.take()
	s, err := w.Guard(key).Summary(ctx)
	return s, errors.Join(err, w.take())
}

func (w *worker) startCall(ctx context.Context, key string, call guard.ToolCall) (*guard.Running, guard.Decision, error) {
	w.take()
	r, d, err := w.Guard(key).StartCall(ctx, call)
	return r, d, errors.Join(err, w.take())
}

func (w *worker) finish(ctx context.Context, r *guard.Running, result any, callErr error) (guard.Verdict, error) {
	w.take()
	v, err := r.Finish(ctx, result, callErr)
	return v, errors.Join(err, w.take())
}

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) snapshot.Store { return snapshot.NewMemory(nil) })
}

// answer is what the tests compare of a verdict or decision: previews differ
// between a guard and one restored from a redacted snapshot, nothing else.
type answer struct {
	Stop     bool
	Code     string
	Feedback string
}

func verdictAnswer(v guard.Verdict) answer { return answer{v.Stop, v.Code, v.Feedback} }
func decisionAnswer(d guard.Decision) answer {
	return answer{!d.Allow, d.Code, d.Feedback}
}

func newRuns(t interface {
	Helper()
	Fatal(...any)
}, s snapshot.Store, f configs, o snapshot.Options) *worker {
	t.Helper()
	w := &worker{}
	if o.OnError == nil {
		o.OnError = func(key string, err error) {
			w.mu.Lock()
			w.errs = append(w.errs, err)
			w.mu.Unlock()
		}
	}
	r, err := snapshot.New(s, f.config(), o)
	if err != nil {
		t.Fatal(err)
	}
	w.Runs = r
	return w
}

// loop is the step of an agent that calls search with the same query.
var loop = testutil.Calls(testutil.Done("search", `{"q":"x"}`, "nothing"))

func TestOneWorkerIsOneGuard(t *testing.T) {
	ctx := context.Background()
	f := &defaults{}
	runs := newRuns(t, snapshot.NewMemory(nil), f, snapshot.Options{})
	g, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	steps := []guard.Step{testutil.Text("hi"), loop, loop, testutil.Calls(testutil.Q("a")), loop, loop, loop}
	for i, s := range steps {
		want := verdictAnswer(testutil.Check(t, g, s))
		got, err := runs.check(ctx, "run", s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, verdictAnswer(got)); diff != "" {
			t.Errorf("step %d (-guard +runs):\n%s", i, diff)
		}
		wantD := decisionAnswer(testutil.Preflight(t, g, testutil.Call("search", `{"q":"x"}`)))
		gotD, err := runs.preflight(ctx, "run", testutil.Call("search", `{"q":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantD, decisionAnswer(gotD)); diff != "" {
			t.Errorf("preflight after step %d (-guard +runs):\n%s", i, diff)
		}
	}
	if lv := testutil.Summary(t, g).LastVerdict; lv == nil || !lv.Stop {
		t.Fatal("the run should have stopped on the third identical call")
	}
	// One worker that saves every step never restores.
	if n := f.restores.Load(); n != 0 {
		t.Errorf("one worker restored %d times, want 0", n)
	}
	sum, err := runs.summary(ctx, "run")
	if err != nil || sum.Steps != len(steps) {
		t.Errorf("Summary = %d steps (%v), want %d", sum.Steps, err, len(steps))
	}
}

// flaky wraps a store: it can be down, or save and then report a failure (an
// answer lost on the way back). It records the TTL of every save.
type flaky struct {
	snapshot.Store
	mu        sync.Mutex
	down      bool
	ambiguous bool
	conflict  bool // every save conflicts
	saves     int
	loadBytes int
	ttls      []time.Duration
}

var errDown = errors.New("connection refused")

func (f *flaky) set(down, ambiguous bool) {
	f.mu.Lock()
	f.down, f.ambiguous = down, ambiguous
	f.mu.Unlock()
}

func (f *flaky) Load(ctx context.Context, key string, seen snapshot.Version) ([]byte, snapshot.Version, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, 0, errDown
	}
	data, v, err := f.Store.Load(ctx, key, seen)
	f.mu.Lock()
	f.loadBytes += len(data)
	f.mu.Unlock()
	return data, v, err
}

func (f *flaky) Save(ctx context.Context, key string, old, next snapshot.Version, data []byte, ttl time.Duration) error {
	f.mu.Lock()
	f.saves++
	f.ttls = append(f.ttls, ttl)
	down, ambiguous, conflict := f.down, f.ambiguous, f.conflict
	f.mu.Unlock()
	switch {
	case conflict:
		return fmt.Errorf("wrapped: %w", snapshot.ErrConflict)
	case down:
		return errDown
	case ambiguous:
		if err := f.Store.Save(ctx, key, old, next, data, ttl); err != nil {
			return err
		}
		return errors.New("i/o timeout")
	}
	return f.Store.Save(ctx, key, old, next, data, ttl)
}

// storedSteps reads the run's step count with a Runs of its own.
func storedSteps(t *testing.T, s snapshot.Store, key string, o snapshot.Options) int {
	t.Helper()
	o.OnCommit = nil
	sum, err := newRuns(t, s, &defaults{}, o).summary(context.Background(), key)
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	return sum.Steps
}

func TestWorkersShareARun(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		store := snapshot.NewMemory(nil)
		f := &defaults{}
		workers := make([]*worker, rapid.IntRange(1, 4).Draw(t, "workers"))
		for i := range workers {
			workers[i] = newRuns(t, store, f, snapshot.Options{CacheSize: rapid.IntRange(-1, 2).Draw(t, "cache")})
		}
		key := rapid.SampledFrom([]string{"a", "b"})
		twins := map[string]*guard.Guard{}
		twin := func(k string) *guard.Guard {
			if twins[k] == nil {
				twins[k], _ = guard.New(guard.Config{Rules: detector.Defaults()})
			}
			return twins[k]
		}
		for i := range rapid.IntRange(1, 60).Draw(t, "ops") {
			w, k := workers[rapid.IntRange(0, len(workers)-1).Draw(t, "worker")], key.Draw(t, "key")
			if rapid.IntRange(0, 3).Draw(t, "preflight") == 0 {
				call := testutil.CallGen().Draw(t, "call")
				got, err := w.preflight(ctx, k, call)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := twin(k).Preflight(ctx, call)
				if diff := cmp.Diff(decisionAnswer(want), decisionAnswer(got)); diff != "" {
					t.Fatalf("op %d, preflight on %s (-guard +runs):\n%s", i, k, diff)
				}
				continue
			}
			s := testutil.StepGen().Draw(t, "step")
			got, err := w.check(ctx, k, s)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := twin(k).Check(ctx, s)
			if diff := cmp.Diff(verdictAnswer(want), verdictAnswer(got)); diff != "" {
				t.Fatalf("op %d, check on %s (-guard +runs):\n%s", i, k, diff)
			}
		}
	})
}

func TestRestoreOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	f := &defaults{}
	a, b := newRuns(t, store, f, snapshot.Options{}), newRuns(t, store, f, snapshot.Options{})
	step := func(r *worker, q string) {
		t.Helper()
		if _, err := r.check(ctx, "run", testutil.Calls(testutil.Q(q))); err != nil {
			t.Fatal(err)
		}
	}
	restores := func(want int64) {
		t.Helper()
		if got := f.restores.Swap(0); got != want {
			t.Errorf("restores = %d, want %d", got, want)
		}
	}
	for _, q := range []string{"1", "2", "3"} {
		step(a, q)
	}
	restores(0)
	step(b, "4") // b has never seen the run
	restores(1)
	step(b, "5")
	restores(0)
	step(a, "6") // a's save conflicts: b saved since
	restores(1)
	store.mu.Lock()
	store.loadBytes = 0
	store.mu.Unlock()
	for range 5 {
		if _, err := a.preflight(ctx, "run", testutil.Q("7")); err != nil {
			t.Fatal(err)
		}
	}
	restores(0)
	if store.loadBytes != 0 {
		t.Errorf("preflights of an unchanged run loaded %d bytes, want 0", store.loadBytes)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 6 {
		t.Errorf("stored steps = %d, want 6", n)
	}
}

func TestPreflightSavesNothing(t *testing.T) {
	ctx := context.Background()
	var commits atomic.Int64
	runs := newRuns(t, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{OnCommit: func(snapshot.Commit) { commits.Add(1) }})
	for range 3 {
		if _, err := runs.preflight(ctx, "run", testutil.Q("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runs.check(ctx, "run", loop); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.preflight(ctx, "run", testutil.Q("x")); err != nil {
		t.Fatal(err)
	}
	if n := commits.Load(); n != 1 {
		t.Errorf("commits = %d, want 1 (the Check)", n)
	}
}

func TestStoredSnapshotHoldsNoArgumentsResultsOrText(t *testing.T) {
	ctx := context.Background()
	store := snapshot.NewMemory(nil)
	runs := newRuns(t, store, &defaults{}, snapshot.Options{})
	s := guard.Step{Text: "secret-text", ToolCalls: []guard.ToolCall{
		testutil.Done("login", `{"password":"hunter2"}`, "secret-result"),
		testutil.Done("login", `{"password":"hunter2"}`, "secret-result"),
		testutil.Done("login", `{"password":"hunter2"}`, "secret-result"),
	}}
	for range 3 {
		if _, err := runs.check(ctx, "run", s); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := store.Load(ctx, "run", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "password", "secret-result", "secret-text"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the stored snapshot holds %q:\n%s", secret, data)
		}
	}
}

func TestSignedSnapshots(t *testing.T) {
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef")
	setup := func(t *testing.T) (*snapshot.Memory, []byte) {
		store := snapshot.NewMemory(nil)
		runs := newRuns(t, store, &defaults{}, snapshot.Options{Key: key})
		for range 2 {
			if _, err := runs.check(ctx, "run", loop); err != nil {
				t.Fatal(err)
			}
		}
		// A worker with the key reads it back.
		if n := storedSteps(t, store, "run", snapshot.Options{Key: key}); n != 2 {
			t.Fatalf("stored steps = %d, want 2", n)
		}
		data, _, _ := store.Load(ctx, "run", 0)
		return store, data
	}
	put := func(t *testing.T, s *snapshot.Memory, k string, data []byte) {
		_, v, _ := s.Load(ctx, k, 0)
		if err := s.Save(ctx, k, v, v+1, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		change func(t *testing.T, s *snapshot.Memory, data []byte)
		runKey string
		key    []byte
		policy snapshot.Policy
	}{
		{name: "altered", change: func(t *testing.T, s *snapshot.Memory, data []byte) {
			put(t, s, "run", bytes.Replace(data, []byte(`"steps":2`), []byte(`"steps":0`), 1))
		}, runKey: "run", key: key},
		{name: "copied to another run", change: func(t *testing.T, s *snapshot.Memory, data []byte) {
			put(t, s, "other", data)
		}, runKey: "other", key: key},
		{name: "signature removed", change: func(t *testing.T, s *snapshot.Memory, data []byte) {
			put(t, s, "run", data[bytes.IndexByte(data, '{'):])
		}, runKey: "run", key: key},
		{name: "wrong key", runKey: "run", key: []byte("another key")},
		{name: "no key", runKey: "run", policy: snapshot.FailOpen},
		{name: "fail closed too", change: func(t *testing.T, s *snapshot.Memory, data []byte) {
			put(t, s, "run", bytes.Replace(data, []byte(`"steps":2`), []byte(`"steps":1`), 1))
		}, runKey: "run", key: key, policy: snapshot.FailClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, data := setup(t)
			if tt.change != nil {
				tt.change(t, store, data)
			}
			runs := newRuns(t, store, &defaults{}, snapshot.Options{Key: tt.key, Policy: tt.policy})
			v, err := runs.check(ctx, tt.runKey, testutil.Text("next"))
			var se *snapshot.StateError
			if !errors.As(err, &se) || !errors.Is(err, snapshot.ErrTampered) {
				t.Fatalf("Check error = %v, want a *StateError wrapping ErrTampered", err)
			}
			if !v.Stop || v.Code != snapshot.CodeTampered || !guard.IsFault(v) {
				t.Errorf("verdict = %+v, want a %s stop", v, snapshot.CodeTampered)
			}
			d, err := runs.preflight(ctx, tt.runKey, testutil.Q("y"))
			if d.Allow || d.Code != snapshot.CodeTampered || !errors.Is(err, snapshot.ErrTampered) {
				t.Errorf("preflight = %+v, %v; want refused with %s", d, err, snapshot.CodeTampered)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	clock := &testutil.Clock{T: time.Unix(1e9, 0)}
	mem := snapshot.NewMemory(clock.Now)
	store := &flaky{Store: mem}
	o := snapshot.Options{TTL: time.Hour, FinishedTTL: time.Minute}
	runs := newRuns(t, store, &defaults{}, o)
	for range 2 {
		if _, err := runs.check(ctx, "run", loop); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(59 * time.Minute)
	if v, err := runs.check(ctx, "run", loop); err != nil || !v.Stop {
		t.Fatalf("third identical call: %+v, %v; want a stop", v, err)
	}
	if diff := cmp.Diff([]time.Duration{time.Hour, time.Hour, time.Minute}, store.ttls); diff != "" {
		t.Errorf("TTLs of the saves (-want +got):\n%s", diff)
	}
	clock.Advance(time.Minute - time.Nanosecond)
	if n := storedSteps(t, store, "run", o); n != 3 {
		t.Errorf("a minute less 1ns after the stop: %d steps stored, want 3", n)
	}
	clock.Advance(time.Nanosecond)
	if n := storedSteps(t, store, "run", o); n != 0 {
		t.Errorf("a minute after the stop: %d steps stored, want 0 (expired)", n)
	}
}

func TestStoreDown(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		policy snapshot.Policy
		// what the third identical call gets while the store is down
		want  answer
		wantD answer
	}{
		{snapshot.FailOpen, answer{Stop: true, Code: "REPEATED_TOOL_CALL"}, answer{Stop: true, Code: "REPEATED_TOOL_CALL"}},
		{snapshot.FailClosed, answer{Stop: true, Code: snapshot.CodeStore}, answer{Stop: true, Code: snapshot.CodeStore}},
	}
	for _, tt := range tests {
		t.Run(tt.policy.String(), func(t *testing.T) {
			store := &flaky{Store: snapshot.NewMemory(nil)}
			o := snapshot.Options{Policy: tt.policy}
			runs := newRuns(t, store, &defaults{}, o)
			for range 2 {
				if v, err := runs.check(ctx, "run", loop); err != nil || v.Stop {
					t.Fatalf("Check = %+v, %v", v, err)
				}
			}
			store.set(true, false)
			d, err := runs.preflight(ctx, "run", loop.ToolCalls[0])
			var se *snapshot.StoreError
			if !errors.As(err, &se) || !errors.Is(err, errDown) || se.Op != "load" || se.Policy != tt.policy {
				t.Fatalf("Preflight error = %v, want a load *StoreError wrapping the store's", err)
			}
			if got := decisionAnswer(d); got.Stop != tt.wantD.Stop || got.Code != tt.wantD.Code {
				t.Errorf("Preflight = %+v, want %+v", got, tt.wantD)
			}
			v, err := runs.check(ctx, "run", loop)
			if !errors.As(err, &se) || !errors.Is(err, errDown) {
				t.Fatalf("Check error = %v, want a *StoreError wrapping the store's", err)
			}
			if got := verdictAnswer(v); got.Stop != tt.want.Stop || got.Code != tt.want.Code {
				t.Errorf("Check = %+v, want %+v", got, tt.want)
			}
			if _, err := runs.check(ctx, "run", testutil.Text("after")); err == nil {
				t.Fatal("Check with the store down: no error")
			}
			if err := runs.Flush(ctx, "run"); err == nil {
				t.Fatal("Flush with the store down: no error")
			}
			store.set(false, false)
			if err := runs.Flush(ctx, "run"); err != nil {
				t.Fatal(err)
			}
			if err := runs.Flush(ctx, "run"); err != nil {
				t.Fatal(err)
			}
			if n := storedSteps(t, store, "run", o); n != 4 {
				t.Errorf("after the store came back: %d steps stored, want 4", n)
			}
		})
	}
}

func TestStoreDownBeforeFirstLoad(t *testing.T) {
	// A worker that knows nothing of the run still catches the loop it
	// sees itself, and the store gets every step when it is back.
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	if _, err := newRuns(t, store, &defaults{}, snapshot.Options{}).check(ctx, "run", testutil.Text("first")); err != nil {
		t.Fatal(err)
	}
	store.set(true, false)
	runs := newRuns(t, store, &defaults{}, snapshot.Options{})
	var got []answer
	for range 3 {
		v, err := runs.check(ctx, "run", loop)
		if err == nil {
			t.Fatal("no error with the store down")
		}
		got = append(got, verdictAnswer(v))
	}
	if !got[2].Stop || got[2].Code != "REPEATED_TOOL_CALL" || got[1].Stop {
		t.Errorf("verdicts while down = %+v, want the third to stop on the repeat", got)
	}
	store.set(false, false)
	v, err := runs.check(ctx, "run", loop)
	if err != nil || v.Code != "REPEATED_TOOL_CALL" {
		t.Errorf("fourth identical call, store back: %+v, %v", v, err)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 5 {
		t.Errorf("%d steps stored, want 5", n)
	}
}

func TestLostAnswerIsNotCountedTwice(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	var commits []snapshot.Commit
	runs := newRuns(t, store, &defaults{}, snapshot.Options{OnCommit: func(c snapshot.Commit) { commits = append(commits, c) }})
	other := newRuns(t, store, &defaults{}, snapshot.Options{})
	if _, err := runs.check(ctx, "run", testutil.Text("1")); err != nil {
		t.Fatal(err)
	}
	store.set(false, true) // saves happen, their answers are lost
	for i := range 2 {
		if _, err := runs.check(ctx, "run", testutil.Text(fmt.Sprint(i+2))); err == nil {
			t.Fatal("no error from a save whose answer was lost")
		}
	}
	store.set(false, false)
	// Another worker saves in between: the lost saves are found by the
	// writer's mark, not by the version.
	if _, err := other.check(ctx, "run", testutil.Text("4")); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.check(ctx, "run", testutil.Text("5")); err != nil {
		t.Fatal(err)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 5 {
		t.Errorf("%d steps stored, want 5 (each once)", n)
	}
}

func TestConflictsGiveUp(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil), conflict: true}
	runs := newRuns(t, store, &defaults{}, snapshot.Options{Retry: snapshot.Retry{Attempts: 3, Initial: time.Microsecond}})
	_, err := runs.check(ctx, "run", loop)
	var se *snapshot.StoreError
	if !errors.As(err, &se) || !errors.Is(err, snapshot.ErrConflict) || se.Op != "save" {
		t.Fatalf("error = %v, want a save *StoreError wrapping ErrConflict", err)
	}
	if store.saves != 3 {
		t.Errorf("saves = %d, want 3 attempts", store.saves)
	}
	store.conflict = false
	if err := runs.Flush(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 1 {
		t.Errorf("%d steps stored, want 1", n)
	}
}

func TestBacklogIsBounded(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil), down: true}
	runs := newRuns(t, store, &defaults{}, snapshot.Options{Backlog: 2})
	for i := range 4 {
		if _, err := runs.check(ctx, "run", testutil.Text(fmt.Sprint(i))); err == nil {
			t.Fatal("no error with the store down")
		}
	}
	store.set(false, false)
	err := runs.Flush(ctx, "run")
	if !errors.Is(err, snapshot.ErrBacklogFull) {
		t.Fatalf("Flush = %v, want ErrBacklogFull", err)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 2 {
		t.Errorf("%d steps stored, want 2 (the newest)", n)
	}
	if err := runs.Flush(ctx, "run"); err != nil {
		t.Errorf("second Flush = %v, want nil (reported once)", err)
	}
	// The steps kept are the newest, "2" and "3": a third "3" in a row
	// stops the run (the same text, no progress); with "0" and "1" kept,
	// it would not.
	if v, err := runs.check(ctx, "run", testutil.Text("3")); err != nil || v.Stop {
		t.Fatalf("the second step of text 3: %v, %s", err, guard.Explain(v))
	}
	if v, err := runs.check(ctx, "run", testutil.Text("3")); err != nil || !v.Stop {
		t.Errorf("the third step of text 3 in a row: %v, %s; want a stop (the newest steps kept)", err, guard.Explain(v))
	}

	// A backlog of exactly Backlog steps drops nothing.
	store = &flaky{Store: snapshot.NewMemory(nil), down: true}
	runs = newRuns(t, store, &defaults{}, snapshot.Options{Backlog: 2})
	for i := range 2 {
		if _, err := runs.check(ctx, "run", testutil.Text(fmt.Sprint(i))); err == nil {
			t.Fatal("no error with the store down")
		}
	}
	store.set(false, false)
	if err := runs.Flush(ctx, "run"); err != nil {
		t.Errorf("Flush of a full backlog = %v, want nil", err)
	}
	if n := storedSteps(t, store, "run", snapshot.Options{}); n != 2 {
		t.Errorf("%d steps stored, want 2", n)
	}
}

func TestTimeout(t *testing.T) {
	ctx := context.Background()
	runs := newRuns(t, slowStore{}, &defaults{}, snapshot.Options{Timeout: 10 * time.Millisecond, Policy: snapshot.FailClosed})
	start := time.Now()
	d, err := runs.preflight(ctx, "run", testutil.Q("x"))
	if !errors.Is(err, context.DeadlineExceeded) || d.Allow || d.Code != snapshot.CodeStore {
		t.Errorf("Preflight on a slow store = %+v, %v; want refused, deadline exceeded", d, err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v", el)
	}
}

// slowStore answers when the context is done.
type slowStore struct{}

func (slowStore) Load(ctx context.Context, _ string, _ snapshot.Version) ([]byte, snapshot.Version, error) {
	<-ctx.Done()
	return nil, 0, ctx.Err()
}

func (slowStore) Save(ctx context.Context, _ string, _, _ snapshot.Version, _ []byte, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestOptionErrors(t *testing.T) {
	_, err := snapshot.New(nil, guard.Config{History: -1}, snapshot.Options{Policy: 7, TTL: -1, FinishedTTL: -1, Timeout: -1,
		Retry: snapshot.Retry{Attempts: -1, Initial: -1, Max: -1}, Backlog: -1})
	if !errors.Is(err, guard.ErrInvalidOption) {
		t.Fatalf("error = %v, want ErrInvalidOption", err)
	}
	want := []string{"store", "History", "Policy", "TTL", "FinishedTTL", "Timeout", "Retry.Initial", "Retry.Max", "Retry.Attempts", "Backlog"}
	if diff := cmp.Diff(want, testutil.OptionFields(t, err, "")); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestStartCall(t *testing.T) {
	ctx := context.Background()
	runs := newRuns(t, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{})
	call := testutil.Call("search", `{"q":"x"}`)
	a, d, err := runs.startCall(ctx, "run", call)
	if err != nil || !d.Allow {
		t.Fatal(d, err)
	}
	b, d, err := runs.startCall(ctx, "run", call)
	if err != nil || !d.Allow {
		t.Fatal(d, err)
	}
	// Two identical calls running: a third at the same moment is refused.
	c, d, err := runs.startCall(ctx, "run", call)
	if err != nil || d.Allow || c != nil || d.Code != "REPEATED_TOOL_CALL" {
		t.Fatalf("third call = %v, %+v, %v; want refused", c, d, err)
	}
	b.Abandon()
	if v, err := a.Finish(ctx, "r", nil); err != nil || v.Stop {
		t.Fatal(v, err)
	}
	if v, err := a.Finish(ctx, "r", nil); err != nil || v.Stop || v.Code != "" {
		t.Errorf("second Finish = %+v, %v; want the zero verdict", v, err)
	}
	if v, err := b.Finish(ctx, "r", nil); err != nil || v.Code != "" {
		t.Errorf("Finish after Abandon = %+v, %v; want the zero verdict", v, err)
	}
	// The refusal is a step of its own, as guard.StartCall records it.
	twin, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	ta, _, _ := twin.StartCall(ctx, call)
	tb, _, _ := twin.StartCall(ctx, call)
	if tc, _, _ := twin.StartCall(ctx, call); tc != nil {
		t.Fatal("the twin allowed the third call")
	}
	tb.Abandon()
	ta.Finish(ctx, "r", nil)
	sum, _ := runs.summary(ctx, "run")
	if want := testutil.Summary(t, twin).Steps; sum.Steps != want || want != 2 {
		t.Errorf("steps = %d, the twin guard's %d, want 2 (the refusal, then a's call)", sum.Steps, want)
	}
}

func TestConcurrentWorkers(t *testing.T) {
	// Workers of two Runs on one key in parallel: every step is counted
	// once, and every verdict is the one a single guard gives in the
	// committed order.
	ctx := context.Background()
	store := snapshot.NewMemory(nil)
	var mu sync.Mutex
	var commits []snapshot.Commit
	o := snapshot.Options{OnCommit: func(c snapshot.Commit) {
		mu.Lock()
		commits = append(commits, c)
		mu.Unlock()
	}}
	shared := []*worker{newRuns(t, store, &defaults{}, o), newRuns(t, store, &defaults{}, o)}
	const goroutines, steps = 4, 40
	var wg sync.WaitGroup
	for w := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range steps {
				s := testutil.Calls(testutil.Done("search", fmt.Sprintf(`{"q":%d}`, (w+i)%3), "r"))
				if _, err := shared[w%2].check(ctx, "run", s); err != nil {
					t.Error(err)
					return
				}
				if _, err := shared[w%2].preflight(ctx, "run", testutil.Q("p")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	g, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	n, err := storetest.CheckCommits(commits, g)
	if err != nil {
		t.Fatal(err)
	}
	if n != goroutines*steps {
		t.Errorf("replayed %d steps, want %d", n, goroutines*steps)
	}
	if got := storedSteps(t, store, "run", snapshot.Options{}); got != goroutines*steps {
		t.Errorf("stored steps = %d, want %d", got, goroutines*steps)
	}
}

func TestUncachedWorkerKeepsItsSteps(t *testing.T) {
	// With no cache, every operation starts from the store: the worker's
	// mark in the stored run must not make it drop its next step as if it
	// had been saved already.
	ctx := context.Background()
	runs := newRuns(t, snapshot.NewMemory(nil), &defaults{}, snapshot.Options{CacheSize: -1})
	var got []answer
	for range 3 {
		v, err := runs.check(ctx, "run", guard.Step{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, verdictAnswer(v))
	}
	if !got[2].Stop || got[2].Code != "NO_PROGRESS" || got[1].Stop {
		t.Errorf("verdicts = %+v, want the third to stop on no progress", got)
	}
}

func TestTurn(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	a, b := newRuns(t, store, &defaults{}, snapshot.Options{}), newRuns(t, store, &defaults{}, snapshot.Options{})
	for range 2 {
		if _, err := a.check(ctx, "run", loop); err != nil {
			t.Fatal(err)
		}
	}
	// Worker b takes the next turn: the third identical call is refused,
	// another runs, and End saves the step with both.
	turn := b.Guard("run").Begin()
	ran := 0
	run := func(ctx context.Context) (any, error) { ran++; return "nothing", nil }
	_, err := turn.Run(ctx, loop.ToolCalls[0], run)
	var refused *guard.RefusedError
	if !errors.As(err, &refused) || refused.Decision.Code != "REPEATED_TOOL_CALL" {
		t.Fatalf("Run of the third identical call = %v, want a RefusedError", err)
	}
	if _, err := turn.Run(ctx, testutil.Call("search", `{"q":"other"}`), run); err != nil {
		t.Fatal(err)
	}
	v, err := turn.End(ctx, guard.Step{Text: "trying another query"})
	if err != nil || v.Stop {
		t.Fatalf("End = %+v, %v", v, err)
	}
	if _, err := turn.End(ctx, guard.Step{}); !errors.Is(err, guard.ErrTurnEnded) {
		t.Errorf("second End = %v, want ErrTurnEnded", err)
	}
	if ran != 1 {
		t.Errorf("the tool ran %d times, want 1", ran)
	}
	if err := b.take(); err != nil {
		t.Errorf("store errors: %v", err)
	}
	// The same turn on one in-process guard.
	twin, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	testutil.Check(t, twin, loop)
	testutil.Check(t, twin, loop)
	tt := twin.Begin()
	tt.Run(ctx, loop.ToolCalls[0], run)
	tt.Run(ctx, testutil.Call("search", `{"q":"other"}`), run)
	tt.End(ctx, guard.Step{Text: "trying another query"})
	sa, err := a.summary(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	tw := testutil.Summary(t, twin)
	if sa.Steps != tw.Steps || sa.ToolCalls != tw.ToolCalls || sa.Steps != 3 || sa.ToolCalls != 3 {
		t.Errorf("stored run: %d steps, %d calls; the twin guard: %d, %d; want 3, 3", sa.Steps, sa.ToolCalls, tw.Steps, tw.ToolCalls)
	}
}

func TestTurnStoreDown(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []snapshot.Policy{snapshot.FailOpen, snapshot.FailClosed} {
		t.Run(policy.String(), func(t *testing.T) {
			store := &flaky{Store: snapshot.NewMemory(nil)}
			runs := newRuns(t, store, &defaults{}, snapshot.Options{Policy: policy})
			for range 2 {
				if _, err := runs.check(ctx, "run", loop); err != nil {
					t.Fatal(err)
				}
			}
			store.set(true, false)
			turn := runs.Guard("run").Begin()
			ds, err := turn.Preflight(ctx, loop.ToolCalls[0], testutil.Call("search", `{"q":"other"}`))
			if err != nil {
				t.Fatalf("Preflight = %v, want decisions that follow the policy", err)
			}
			if err := runs.take(); !errors.Is(err, errDown) {
				t.Fatalf("OnError was told %v, want the store's error", err)
			}
			want := []answer{{Stop: true, Code: "REPEATED_TOOL_CALL"}, {}} // fail open: the worker's own state
			if policy == snapshot.FailClosed {
				want = []answer{{Stop: true, Code: snapshot.CodeStore}, {Stop: true, Code: snapshot.CodeStore}}
			}
			var got []answer
			for _, d := range ds {
				got = append(got, answer{Stop: !d.Allow, Code: d.Code})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}
