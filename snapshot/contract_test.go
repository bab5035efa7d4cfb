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

// TestStartCallStoreErrorIsTold: StartCall's error is never the store's.
// Under FailOpen with the store down it used to return a live call together
// with the *StoreError: a caller following "a non-nil error means no usable
// value" dropped the call without Abandon, and it stayed among the run's
// running calls for ever (counted by every later preflight, the run never
// evicted). Now the allowed call comes with a nil error and OnError is told
// the store's; a caller that returns on err finishes it, and the run counts
// it once: the third identical call, the outage's first, is the one refused.
func TestStartCallStoreErrorIsTold(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []snapshot.Policy{snapshot.FailOpen, snapshot.FailClosed} {
		t.Run(policy.String(), func(t *testing.T) {
			store := &flaky{Store: snapshot.NewMemory(nil)}
			runs := newRuns(t, store, &defaults{}, snapshot.Options{Policy: policy})
			// call is a caller that follows the contract: on an error it
			// returns, otherwise it runs an allowed call and finishes it.
			// It returns the decision's code and what OnError was told.
			call := func() (code string, told error) {
				t.Helper()
				runs.take()
				r, d, err := runs.Guard("run").StartCall(ctx, testutil.Q("x"))
				if err != nil {
					t.Fatalf("StartCall returned the error %v: the store's go to OnError", err)
				}
				if !d.Allow {
					if r != nil {
						t.Error("StartCall refused and returned a running call")
					}
					return d.Code, runs.take()
				}
				if _, err := r.Finish(ctx, "nothing", nil); err != nil {
					t.Fatal(err)
				}
				return "", runs.take()
			}
			store.set(true, false)
			code, told := call()
			switch policy {
			case snapshot.FailOpen:
				if code != "" || !errorsAs[*snapshot.StoreError](told) {
					t.Fatalf("store down, fail-open: %q, told %v; want allowed and a *StoreError", code, told)
				}
			case snapshot.FailClosed:
				if code != snapshot.CodeStore || !errorsAs[*snapshot.StoreError](told) {
					t.Fatalf("store down, fail-closed: %q, told %v; want %s and a *StoreError", code, told, snapshot.CodeStore)
				}
			}
			store.set(false, false)
			var got []string
			for range 3 {
				code, told := call()
				if told != nil {
					t.Fatalf("store back: told %v", told)
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
// REPEATED_REFUSAL at that first rule's refusal. A turn leaves the policy's
// refusals (Decision.Detector snapshot.DetectorName) out of its step.
// (Through Preflight then Check, the caller leaves them out of
// Step.Refused, as README's example does: Check cannot tell them apart.)
func TestPolicyRefusalsAreNoSteps(t *testing.T) {
	ctx := context.Background()
	store := &flaky{Store: snapshot.NewMemory(nil)}
	runs := newRuns(t, store, &defaults{}, snapshot.Options{Policy: snapshot.FailClosed})
	search := testutil.Q("status of order 7")
	// The turns' texts differ: a store-backed guard's turn is a guard's
	// turn, whose End records its step (its text) whatever the policy
	// refused; only the policy's refusals are left out of it. (Turns of
	// the old snapshot.Turn whose calls the policy refused were not saved
	// at all.)
	turn := func(i int) guard.Verdict {
		t.Helper()
		turn := runs.Guard("run").Begin()
		turn.Run(ctx, search, func(context.Context) (any, error) { return "shipped", nil })
		v, _ := turn.End(ctx, guard.Step{Text: fmt.Sprint("Let me check the order, try ", i)})
		return v
	}
	store.set(true, false)
	for i := range 2 {
		if v := turn(i); v.Code != snapshot.CodeStore {
			t.Fatalf("during the outage: %s, want %s", v.Code, snapshot.CodeStore)
		}
	}
	store.set(false, false)
	var got []string
	for i := range 3 {
		got = append(got, turn(2+i).Code)
	}
	// Searches 1 and 2 run; the 3rd is refused (REPEATED_TOOL_CALL in its
	// decision), which is the first refusal by a rule: the run goes on.
	if want := []string{"", "", ""}; !slices.Equal(got, want) {
		t.Errorf("verdicts after the outage %q, want %q: the policy's refusals were counted as the model's", got, want)
	}
	if s, err := runs.summary(ctx, "run"); err != nil || s.Steps != 5 || s.ToolCalls != 2 {
		t.Errorf("the stored run: %d steps, %d calls (%v); want 5, 2 (the outage's turns without their refused calls)", s.Steps, s.ToolCalls, err)
	}
}

// TestTurnEndStoreErrorIsTold: under FailOpen, a healthy turn's End
// returns a nil error while the store is down (it used to join the
// *StoreError, so that `if err != nil` stopped a healthy agent over an
// outage), and OnError is told the store's error, whether the store went
// down before the turn's call was judged or between that and End. A stop
// still comes as a *guard.StopError.
func TestTurnEndStoreErrorIsTold(t *testing.T) {
	ctx := context.Background()
	for _, downAtJudge := range []bool{true, false} {
		store := &flaky{Store: snapshot.NewMemory(nil)}
		runs := newRuns(t, store, &defaults{}, snapshot.Options{})
		// The 3rd to 5th identical calls are refused; the 3rd refusal
		// stops the run (REPEATED_REFUSAL).
		for i := range 5 {
			runs.take()
			store.set(downAtJudge, false)
			turn := runs.Guard("run").Begin()
			turn.Run(ctx, testutil.Q("x"), func(context.Context) (any, error) {
				store.set(true, false)
				return "same", nil
			})
			store.set(true, false)
			v, err := turn.End(ctx, guard.Step{Text: fmt.Sprint("try ", i)})
			var stop *guard.StopError
			switch {
			case i < 4 && err != nil:
				t.Errorf("down at the judgement %v, step %d: End's error %v, want nil", downAtJudge, i, err)
			case i == 4 && (!errors.As(err, &stop) || v.Code != "REPEATED_REFUSAL" || errorsAs[*snapshot.StoreError](err)):
				t.Errorf("down at the judgement %v, step %d: %s, %v; want REPEATED_REFUSAL and only a *guard.StopError", downAtJudge, i, v.Code, err)
			}
			if told := runs.take(); !errorsAs[*snapshot.StoreError](told) {
				t.Errorf("down at the judgement %v, step %d: OnError was told %v, want a *StoreError", downAtJudge, i, told)
			}
		}
	}
}
