package core_test

import (
	"context"
	"sync"
	"testing"

	"github.com/loopguard/loopguard/detector/repeat"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

func TestStartCall(t *testing.T) {
	ctx := context.Background()
	g := newRepeatGuard(t, 3)

	// Two identical calls running at once hold their places: the third is
	// refused before either has finished.
	a, d := startCall(t, ctx, g, testutil.Q("x"))
	b, _ := startCall(t, ctx, g, testutil.Q("x"))
	if a == nil || b == nil || !d.Allow {
		t.Fatal("the first two calls must be allowed")
	}
	if c, d := startCall(t, ctx, g, testutil.Q("x")); c != nil || d.Allow || d.Feedback == "" {
		t.Fatalf("third identical call while two run: %+v", d)
	}
	// The refusal is recorded at once, as a step that holds only it.
	if s := testutil.Summary(t, g); s.Steps != 1 || s.ToolCalls != 0 {
		t.Errorf("summary after a refusal: %+v; want 1 step, 0 calls", s)
	}
	if v := finishCall(t, ctx, a, "r", nil); v.Stop {
		t.Errorf("first finish: %v", v)
	}
	if v := finishCall(t, ctx, a, "r", nil); v.Stop || testutil.Summary(t, g).Steps != 2 {
		t.Error("a second Finish must record nothing")
	}
	b.Abandon() // its caller went away: no outcome
	if s := testutil.Summary(t, g); s.Steps != 2 || s.ToolCalls != 1 {
		t.Errorf("summary after one finish and one abandon: %+v", s)
	}
	if v := finishCall(t, ctx, b, "r", nil); v.Stop || testutil.Summary(t, g).Steps != 2 {
		t.Error("Finish after Abandon must record nothing")
	}
	// One recorded, none running: the second is allowed, the third refused.
	c, _ := startCall(t, ctx, g, testutil.Q("x"))
	if c == nil {
		t.Fatal("second identical call refused")
	}
	finishCall(t, ctx, c, "r", nil)
	if r, d := startCall(t, ctx, g, testutil.Q("x")); r != nil || d.Allow {
		t.Errorf("third identical call allowed")
	}
}

func TestStartCallConcurrent(t *testing.T) {
	ctx := context.Background()
	r, err := repeat.New(repeat.Options{Threshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	g := mustNew(t, guard.Config{History: 32}, r)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	start := make(chan struct{})
	running := make([]*guard.Running, 0, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if r, d := startCall(t, ctx, g, testutil.Q("same")); d.Allow {
				mu.Lock()
				allowed++
				running = append(running, r)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, r := range running {
		finishCall(t, ctx, r, "r", nil)
	}
	ran, refused := 0, 0
	for _, s := range g.History() {
		ran += len(s.ToolCalls)
		refused += len(s.Refused)
		if len(s.ToolCalls)+len(s.Refused) != 1 {
			t.Errorf("a step of StartCall holds %d calls and %d refusals, want one in all", len(s.ToolCalls), len(s.Refused))
		}
	}
	if allowed != 2 || ran != 2 || refused != 14 || testutil.Summary(t, g).Steps != 16 {
		t.Errorf("16 identical calls at once with threshold 3: %d allowed, %d ran, %d refused, %d steps; want 2, 2, 14, 16",
			allowed, ran, refused, testutil.Summary(t, g).Steps)
	}
}
