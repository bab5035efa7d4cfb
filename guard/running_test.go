package guard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

func TestStartCall(t *testing.T) {
	ctx := context.Background()
	g := newRepeatGuard(t, 3)

	// Two identical calls running at once hold their places: the third is
	// refused before either has finished.
	a, d := g.StartCall(ctx, testutil.Q("x"))
	b, _ := g.StartCall(ctx, testutil.Q("x"))
	if a == nil || b == nil || !d.Allow {
		t.Fatal("the first two calls must be allowed")
	}
	if c, d := g.StartCall(ctx, testutil.Q("x")); c != nil || d.Allow || d.Feedback == "" {
		t.Fatalf("third identical call while two run: %+v", d)
	}
	if v := a.Finish(ctx, "r", nil); v.Stop {
		t.Errorf("first finish: %v", v)
	}
	if v := a.Finish(ctx, "r", nil); v.Stop || g.Summary().Steps != 1 {
		t.Error("a second Finish must record nothing")
	}
	b.Abandon() // its caller went away: no outcome
	if s := g.Summary(); s.Steps != 1 || s.ToolCalls != 1 {
		t.Errorf("summary after one finish and one abandon: %+v", s)
	}
	if v := b.Finish(ctx, "r", nil); v.Stop || g.Summary().Steps != 1 {
		t.Error("Finish after Abandon must record nothing")
	}
	// One recorded, none running: the second is allowed, the third refused.
	c, _ := g.StartCall(ctx, testutil.Q("x"))
	if c == nil {
		t.Fatal("second identical call refused")
	}
	c.Finish(ctx, "r", nil)
	if r, d := g.StartCall(ctx, testutil.Q("x")); r != nil || d.Allow {
		t.Errorf("third identical call allowed")
	}
}

func TestStartCallConcurrent(t *testing.T) {
	ctx := context.Background()
	g := newRepeatGuard(t, 3)
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
			if r, d := g.StartCall(ctx, testutil.Q("same")); d.Allow {
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
		r.Finish(ctx, "r", nil)
	}
	if allowed != 2 || g.Summary().Steps != 2 {
		t.Errorf("16 identical calls at once with threshold 3: %d allowed, %d recorded; want 2 and 2", allowed, g.Summary().Steps)
	}
}
