package guard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestTurnUsableAfterPreflightPanic: a rule whose Preflight panics under
// Turn.Preflight (or Turn.Run) must not leave the turn's lock held: the panic
// goes on to the caller's recovery, and the turn's End (which a handler
// defers) must then return.
func TestTurnUsableAfterPreflightPanic(t *testing.T) {
	for _, door := range []string{"Preflight", "Run"} {
		t.Run(door, func(t *testing.T) {
			armed := new(atomic.Int32)
			rule := testutil.PreflightPanicky{Panicky: testutil.Panicky{Panics: new(atomic.Int32)}, Armed: armed}
			g, err := guard.New(append(detector.Defaults(), rule)...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			turn := g.Begin()
			armed.Store(1)
			func() {
				defer func() { _ = recover() }()
				if door == "Preflight" {
					turn.Preflight(ctx, testutil.Q("x"))
				} else {
					turn.Run(ctx, testutil.Q("x"), func(context.Context) (any, error) { return "r", nil })
				}
			}()
			if armed.Load() != 0 {
				t.Fatal("the rule did not panic")
			}
			done := make(chan struct{})
			go func() {
				turn.End(ctx, guard.Step{})
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Turn.End blocks after a rule panicked in Turn." + door)
			}
		})
	}
}
