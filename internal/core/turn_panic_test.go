package core_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
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
			g, err := guard.New(guard.Config{Rules: append(detector.Defaults(), rule)})
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

// TestCheckPanicLeavesPartOfTheStep pins what Guard.Check's doc says of a
// rule that panics in Observe: the lock is released (the guard answers
// again), and the step is counted although the panicking rule and those
// after it never saw it.
func TestCheckPanicLeavesPartOfTheStep(t *testing.T) {
	panics := new(atomic.Int32)
	g, err := guard.New(guard.Config{Rules: append(detector.Defaults(), testutil.Panicky{Panics: panics})})
	if err != nil {
		t.Fatal(err)
	}
	panics.Store(1)
	func() {
		defer func() { _ = recover() }()
		testutil.Check(t, g, testutil.Calls(testutil.Done("search", `{"q":1}`, "r")))
	}()
	if panics.Load() != 0 {
		t.Fatal("the rule did not panic")
	}
	done := make(chan guard.Summary, 1)
	go func() { done <- testutil.Summary(t, g) }()
	select {
	case s := <-done:
		if s.Steps != 1 {
			t.Errorf("after the panic, %d steps counted, want 1 (the half-recorded step)", s.Steps)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the guard's lock stayed held after a rule panicked in Check")
	}
	if v := testutil.Check(t, g, guard.Step{Text: "x"}); v.Stop {
		t.Errorf("the next step stopped: %s", v.Code)
	}
}
