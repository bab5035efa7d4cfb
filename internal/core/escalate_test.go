package core_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestStartCallRefusalEscalates asks a server's guard for the same call
// again and again. Once recording a refusal stops the run (the model keeps
// asking for a refused call), the answer is that stop: it used to repeat the
// first refusal ("it would have been the 3rd call in a row") for ever.
func TestStartCallRefusalEscalates(t *testing.T) {
	ctx := context.Background()
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		Allow bool
		Code  string
	}
	var got []answer
	var texts []string
	for range 7 {
		r, d := g.StartCall(ctx, testutil.Q("x"))
		if r != nil {
			r.Finish(ctx, "nothing", nil)
		}
		got = append(got, answer{d.Allow, d.Code})
		texts = append(texts, d.Feedback)
	}
	// The 3rd and 4th calls are refused by the repeat rule (the first
	// refusal is one refused request: the refusal rule's threshold is 3);
	// from the 5th on, recording the refusal stops the run and the refusal
	// rule's stop is the answer.
	rc, rr := answer{Code: "REPEATED_TOOL_CALL"}, answer{Code: "REPEATED_REFUSAL"}
	want := []answer{{Allow: true}, {Allow: true}, rc, rc, rr, rr, rr}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	for i, n := range map[int]string{4: "3 times", 5: "4 times", 6: "5 times"} {
		if !strings.HasPrefix(texts[i], "That call was not run.") || !strings.Contains(texts[i], n) {
			t.Errorf("call %d: feedback %q, want it to say the call was not run and %q", i+1, texts[i], n)
		}
	}
}

// TestStartCallSurvivesAPanickingRule panics in a rule while Finish records
// a call. The guard must stay usable: its lock of running calls used to stay
// held, and every later call of the server blocked for ever.
func TestStartCallSurvivesAPanickingRule(t *testing.T) {
	ctx := context.Background()
	panics := new(atomic.Int32)
	g, err := guard.New(append(detector.Defaults(), testutil.Panicky{Panics: panics})...)
	if err != nil {
		t.Fatal(err)
	}
	r, d := g.StartCall(ctx, testutil.Q("x"))
	if r == nil || !d.Allow {
		t.Fatalf("first call: %+v", d)
	}
	panics.Store(1)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the rule did not panic")
			}
		}()
		r.Finish(ctx, "nothing", nil)
	}()
	done := make(chan guard.Decision)
	go func() {
		r, d := g.StartCall(ctx, testutil.Q("y"))
		if r != nil {
			r.Abandon()
		}
		done <- d
	}()
	select {
	case d := <-done:
		if !d.Allow {
			t.Errorf("a new call after the panic: %+v, want allowed", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("StartCall blocked after a rule panicked in Finish")
	}
}

// TestVerdictRefusal pins the escalated answer that guard.StartCall and
// snapshot.Runs.StartCall share: every field of the stop, the call's ID, and
// feedback that says the call was not run (none when the stop has none).
func TestVerdictRefusal(t *testing.T) {
	w := []guard.Warning{{Code: "W"}}
	v := guard.Verdict{Stop: true, Reason: "r", Code: "C", Detail: "d", Detector: "det", Feedback: "Stop.", Warnings: w}
	want := guard.Decision{Reason: "r", Code: "C", Detail: "d", Detector: "det", CallID: "id",
		Feedback: "That call was not run. Stop.", Warnings: w}
	if diff := cmp.Diff(want, v.Refusal("id")); diff != "" {
		t.Errorf("Refusal (-want +got):\n%s", diff)
	}
	v.Feedback, want.Feedback = "", ""
	if diff := cmp.Diff(want, v.Refusal("id")); diff != "" {
		t.Errorf("Refusal without feedback (-want +got):\n%s", diff)
	}
}
