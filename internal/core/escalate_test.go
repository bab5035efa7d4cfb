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
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
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
		r, d := startCall(t, ctx, g, testutil.Q("x"))
		if r != nil {
			finishCall(t, ctx, r, "nothing", nil)
		}
		got = append(got, answer{d.Allow, d.Code})
		texts = append(texts, d.Feedback)
	}
	// The 3rd and 4th calls are refused by the repeat rule (the first
	// refusal is one refused request: the refusal rule's threshold is 3);
	// the 5th is refused and recording the refusal stops the run: the
	// refusal rule's stop is the answer. The run then stopped for a fault,
	// so the 6th and 7th are refused with that stop and recorded no more
	// (before the first stop was kept, they escalated to "4 times" and
	// "5 times").
	rc, rr := answer{Code: "REPEATED_TOOL_CALL"}, answer{Code: "REPEATED_REFUSAL"}
	want := []answer{{Allow: true}, {Allow: true}, rc, rc, rr, rr, rr}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(texts[4], "That call was not run.") || !strings.Contains(texts[4], "3 times") {
		t.Errorf("call 5: feedback %q, want it to say the call was not run and \"3 times\"", texts[4])
	}
	s := testutil.Summary(t, g)
	if s.FirstStop == nil || s.FirstStop.Code != "REPEATED_REFUSAL" || s.Steps != 5 {
		t.Fatalf("after 7 calls: %d steps, first stop %+v; want 5 steps (the last two not recorded), a REPEATED_REFUSAL stop", s.Steps, s.FirstStop)
	}
	for i := 5; i < 7; i++ {
		if want := "That call was not run. " + s.FirstStop.Feedback; texts[i] != want || texts[i] != texts[4] {
			t.Errorf("call %d: feedback %q, want the 5th call's, the stop's after the sentence a refusal starts with: %q", i+1, texts[i], want)
		}
	}
}

// TestStartCallSurvivesAPanickingRule panics in a rule while Finish records
// a call. The guard must stay usable: its lock of running calls used to stay
// held, and every later call of the server blocked for ever.
func TestStartCallSurvivesAPanickingRule(t *testing.T) {
	ctx := context.Background()
	panics := new(atomic.Int32)
	g, err := guard.New(guard.Config{Rules: append(detector.Defaults(), testutil.Panicky{Panics: panics})})
	if err != nil {
		t.Fatal(err)
	}
	r, d := startCall(t, ctx, g, testutil.Q("x"))
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
		finishCall(t, ctx, r, "nothing", nil)
	}()
	done := make(chan guard.Decision)
	go func() {
		r, d := startCall(t, ctx, g, testutil.Q("y"))
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
