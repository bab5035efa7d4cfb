package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/snapshot"
)

// TestStartCallErrorMeansNoCall: StartCall's error is not nil only when it
// returns no *Call. Under FailOpen with the store down it used to return a
// live *Call together with the *StoreError: a caller following "a non-nil
// error means no usable value" dropped the *Call without Abandon, and it
// stayed among the run's running calls for ever (counted by every later
// preflight, the run never evicted). Now the allowed call comes with a nil
// error and Call.Err reports the store's; a caller that returns on err
// finishes it, and the run counts it once: the third identical call, the
// outage's first, is the one refused.
func TestStartCallErrorMeansNoCall(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []snapshot.Policy{snapshot.FailOpen, snapshot.FailClosed} {
		t.Run(policy.String(), func(t *testing.T) {
			store := &flaky{Store: snapshot.NewMemory(nil)}
			runs := newRuns(t, store, &defaults{}, snapshot.Options{Policy: policy})
			// call is a caller that follows the contract: on an error it
			// returns, otherwise it runs an allowed call and finishes it.
			call := func() (code string, callErr, err error) {
				t.Helper()
				c, d, err := runs.StartCall(ctx, "run", testutil.Q("x"))
				if err != nil {
					if c != nil {
						t.Errorf("StartCall returned a *Call (allowed: %v) together with the error %v", d.Allow, err)
					}
					return d.Code, nil, err
				}
				if !d.Allow {
					if c != nil {
						t.Error("StartCall refused and returned a *Call")
					}
					return d.Code, nil, nil
				}
				if _, ferr := c.Finish(ctx, "nothing", nil); ferr != nil && !errorsAs[*snapshot.StoreError](ferr) {
					t.Fatal(ferr)
				}
				return "", c.Err(), nil
			}
			store.set(true, false)
			code, callErr, err := call()
			switch policy {
			case snapshot.FailOpen:
				if err != nil || !errorsAs[*snapshot.StoreError](callErr) {
					t.Fatalf("store down, fail-open: error %v, Call.Err %v; want nil and a *StoreError", err, callErr)
				}
			case snapshot.FailClosed:
				if !errorsAs[*snapshot.StoreError](err) || code != snapshot.CodeStore {
					t.Fatalf("store down, fail-closed: %s, %v; want %s and a *StoreError", code, err, snapshot.CodeStore)
				}
			}
			store.set(false, false)
			var got []string
			for range 3 {
				code, callErr, err := call()
				if err != nil || callErr != nil {
					t.Fatalf("store back: %v, %v", err, callErr)
				}
				got = append(got, code)
			}
			want := []string{"", "", "REPEATED_TOOL_CALL"} // the outage's refusal is no call
			if policy == snapshot.FailOpen {
				want = []string{"", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL"} // the outage's call counts, once
			}
			if !slices.Equal(got, want) {
				t.Errorf("after the outage: %q, want %q", got, want)
			}
		})
	}
}

// errorsAs reports whether err is or wraps an E.
func errorsAs[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}

// TestPolicyRefusalsAreNoSteps: a refusal the policy gives because the store
// failed is not a step, as StartCall's doc says. Through Begin, Run and End,
// the FailClosed policy's refusals used to be saved as refused calls once the
// store was back, and the refusal rule counted them: a model that retried its
// search twice during an outage, then searched twice more and was refused
// once by a rule (the third identical search in a row), was stopped with
// REPEATED_REFUSAL at that first rule's refusal. (Through Preflight then
// Check, the caller leaves such refusals out of Step.Refused, as README's
// example does: Runs.Check cannot tell them apart.)
func TestPolicyRefusalsAreNoSteps(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	runs := newRuns(t, store, &defaults{}, snapshot.Options{Policy: snapshot.FailClosed})
	search := testutil.Q("status of order 7")
	turn := func() guard.Verdict {
		t.Helper()
		turn, err := runs.Begin(ctx, "run")
		if err != nil {
			t.Fatal(err)
		}
		turn.Run(ctx, search, func(context.Context) (any, error) { return "shipped", nil })
		v, _ := turn.End(ctx, guard.Step{Text: "Let me check the order."})
		return v
	}
	store.set(true, false)
	for range 2 {
		if v := turn(); v.Code != snapshot.CodeStore {
			t.Fatalf("during the outage: %s, want %s", v.Code, snapshot.CodeStore)
		}
	}
	store.set(false, false)
	var got []string
	for range 3 {
		got = append(got, turn().Code)
	}
	// Searches 1 and 2 run; the 3rd is refused (REPEATED_TOOL_CALL in its
	// decision), which is the first refusal by a rule: the run goes on.
	if want := []string{"", "", ""}; !slices.Equal(got, want) {
		t.Errorf("verdicts after the outage %q, want %q: the policy's refusals were counted as the model's", got, want)
	}
}

// TestTurnEndStoreErrorIsTheTurns: under FailOpen, a healthy turn's End
// returns a nil error while the store is down (it used to join the
// *StoreError, so that `if err != nil` stopped a healthy agent over an
// outage), and Turn.Err reports the store's error, whether the store went
// down before Begin or between Begin and End. A stop still comes as a
// *guard.StopError.
func TestTurnEndStoreErrorIsTheTurns(t *testing.T) {
	ctx := context.Background()
	for _, downAtBegin := range []bool{true, false} {
		store := &flaky{Store: snapshot.NewMemory(nil)}
		runs := newRuns(t, store, &defaults{}, snapshot.Options{})
		// The 3rd to 5th identical calls are refused; the 3rd refusal
		// stops the run (REPEATED_REFUSAL).
		for i := range 5 {
			store.set(downAtBegin, false)
			turn, err := runs.Begin(ctx, "run")
			if err != nil {
				t.Fatal(err)
			}
			store.set(true, false)
			turn.Run(ctx, testutil.Q("x"), func(context.Context) (any, error) { return "same", nil })
			v, err := turn.End(ctx, guard.Step{Text: fmt.Sprint("try ", i)})
			var stop *guard.StopError
			switch {
			case i < 4 && err != nil:
				t.Errorf("down at Begin %v, step %d: End's error %v, want nil", downAtBegin, i, err)
			case i == 4 && (!errors.As(err, &stop) || v.Code != "REPEATED_REFUSAL" || errorsAs[*snapshot.StoreError](err)):
				t.Errorf("down at Begin %v, step %d: %s, %v; want REPEATED_REFUSAL and only a *guard.StopError", downAtBegin, i, v.Code, err)
			}
			if !errorsAs[*snapshot.StoreError](turn.Err()) {
				t.Errorf("down at Begin %v, step %d: Turn.Err() = %v, want a *StoreError", downAtBegin, i, turn.Err())
			}
		}
	}
}
