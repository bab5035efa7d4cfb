package snapshot_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/snapshot"
)

// preflightPanickyGuards is the default rules and a rule whose Preflight
// panics while *armed is above zero.
type preflightPanickyGuards struct{ armed *atomic.Int32 }

func (f preflightPanickyGuards) config() guard.Config {
	return guard.Config{Rules: append(detector.Defaults(),
		testutil.PreflightPanicky{Panicky: testutil.Panicky{Panics: new(atomic.Int32)}, Armed: f.armed})}
}

// TestTurnUsableAfterPreflightPanic is guard's test of the same name on a
// run in the store: after a rule panicked under Turn.Preflight or Turn.Run
// (in the backend's View, with the run locked), the turn's End returns (it
// used to block for ever on the turn's lock), and the run goes on: the
// run's lock was released too.
func TestTurnUsableAfterPreflightPanic(t *testing.T) {
	for _, door := range []string{"Preflight", "Run"} {
		t.Run(door, func(t *testing.T) {
			ctx := context.Background()
			armed := new(atomic.Int32)
			runs := newRuns(t, snapshot.NewMemory(nil), preflightPanickyGuards{armed}, snapshot.Options{})
			turn := runs.Guard("run").Begin()
			armed.Store(1)
			panicked := mustPanic(func() {
				if door == "Preflight" {
					turn.Preflight(ctx, testutil.Q("x"))
				} else {
					turn.Run(ctx, testutil.Q("x"), func(context.Context) (any, error) { return "r", nil })
				}
			})
			if !panicked || armed.Load() != 0 {
				t.Fatal("the rule did not panic")
			}
			done := make(chan error, 1)
			go func() {
				_, err := turn.End(ctx, guard.Step{Text: "x"})
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Turn.End blocks after a rule panicked in Turn." + door)
			}
			if s, err := runs.summary(ctx, "run"); err != nil || s.Steps != 1 {
				t.Errorf("after End: %d steps, %v; want 1", s.Steps, err)
			}
		})
	}
}
