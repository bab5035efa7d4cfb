package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/toollimit"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// withID returns c with an ID.
func withID(id string, c guard.ToolCall) guard.ToolCall {
	c.ID = id
	return c
}

// repeatGuard returns a guard with the repeat rule at threshold 3, keeping
// its steps, with these options.
func repeatGuard(t *testing.T, o guard.Config) *guard.Guard {
	t.Helper()
	r, err := repeat.New(repeat.Options{Threshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	o.History = 16
	return mustNew(t, o, r)
}

// Parallel identical calls of one reply are judged together: of three, the
// third is refused (its index and ID say so), and a different call after it
// is allowed.
func TestTurnPreflightJudgesParallelCallsTogether(t *testing.T) {
	ctx := context.Background()
	g := repeatGuard(t, guard.Config{})
	turn := g.Begin()
	calls := []guard.ToolCall{withID("a", testutil.Q("x")), withID("b", testutil.Q("x")), withID("c", testutil.Q("x")), withID("d", testutil.Q("y"))}
	ds, err := turn.Preflight(ctx, calls...)
	if err != nil {
		t.Fatal(err)
	}
	var allowed []bool
	for _, d := range ds {
		allowed = append(allowed, d.Allow)
	}
	if diff := cmp.Diff([]bool{true, true, false, true}, allowed); diff != "" {
		t.Fatalf("allowed (-want +got):\n%s", diff)
	}
	if d := ds[2]; d.Code != repeat.Code || d.CallIndex != 2 || d.CallID != "c" || d.Feedback == "" {
		t.Errorf("the refusal: %+v; want REPEATED_TOOL_CALL at index 2, ID c, with feedback", d)
	}
	if d, ok := turn.Decision("c"); !ok || d.Allow {
		t.Errorf("Decision(c) = %+v, %v", d, ok)
	}
	if _, ok := turn.Decision("nope"); ok {
		t.Error("Decision of an unknown ID")
	}

	// Outcomes by ID; the refused call and unknown IDs take none.
	if !turn.SetResult("a", "sunny", nil) || !turn.SetResult("b", "", errors.New("timeout")) {
		t.Error("SetResult refused an allowed call")
	}
	if turn.SetResult("c", "x", nil) || turn.SetResult("nope", "x", nil) || turn.SetResult("", "x", nil) {
		t.Error("SetResult accepted a refused, unknown or empty ID")
	}
	// d never reports: it did not run.
	var answers []string
	for _, id := range []string{"a", "b", "c", "d"} {
		a, ok := turn.Answer(id)
		if !ok {
			t.Errorf("Answer(%s): no such call", id)
		}
		answers = append(answers, id+": "+a)
	}
	wantAnswers := []string{"a: sunny", "b: Error: timeout", "c: " + ds[2].Feedback, "d: That call was not run."}
	if diff := cmp.Diff(wantAnswers, answers); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}

	want := guard.Step{
		Text: "checking",
		ToolCalls: []guard.ToolCall{
			{ID: "a", Name: "search", Args: testutil.Q("x").Args, Result: "sunny"},
			{ID: "b", Name: "search", Args: testutil.Q("x").Args, Result: "", Err: errors.New("timeout")},
		},
		Refused: []guard.ToolCall{{ID: "c", Name: "search", Args: testutil.Q("x").Args}},
	}
	if diff := cmp.Diff(want, turn.Step(guard.Step{Text: "checking", ToolCalls: calls}), errText); diff != "" {
		t.Errorf("Step (-want +got):\n%s", diff)
	}
	v, err := turn.End(ctx, guard.Step{Text: "checking"})
	if err != nil || v.Stop {
		t.Fatalf("End: %v, %v", v, err)
	}
	if diff := cmp.Diff([]guard.Step{want}, g.History(), errText); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if s := testutil.Summary(t, g); s.Steps != 1 || s.ToolCalls != 2 || s.FailedToolCalls != 1 {
		t.Errorf("summary %+v", s)
	}

	// After End: nothing changes, and the answers stay.
	if turn.SetResult("d", "late", nil) {
		t.Error("SetResult after End")
	}
	if _, err := turn.Preflight(ctx, testutil.Q("z")); !errors.Is(err, guard.ErrTurnEnded) {
		t.Errorf("Preflight after End: %v", err)
	}
	if a, _ := turn.Answer("d"); a != "That call was not run." {
		t.Errorf("Answer after End = %q", a)
	}
}

// A framework that preflights a reply in one hook and runs the tools in
// another: Run takes the decision Preflight made, by ID, or by tool and
// arguments for a call without an ID, and judges nothing twice.
func TestTurnRunTakesPreflightDecisions(t *testing.T) {
	ctx := context.Background()
	var preflights atomic.Int32
	g := repeatGuard(t, guard.Config{Observer: func(_ context.Context, e guard.Event) {
		if e.Phase == guard.PhasePreflight {
			preflights.Add(1)
		}
	}})
	turn := g.Begin()
	ds, _ := turn.Preflight(ctx, withID("a", testutil.Q("x")), withID("b", testutil.Q("x")), withID("c", testutil.Q("x")))
	if ds[2].Allow || preflights.Load() != 3 {
		t.Fatalf("preflight: %+v, %d events", ds, preflights.Load())
	}
	var runs atomic.Int32
	tool := func(context.Context) (any, error) { runs.Add(1); return "r", nil }

	// By ID, in any order and in parallel.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, id := range []string{"c", "b", "a"} {
		wg.Go(func() { _, errs[i] = turn.Run(ctx, withID(id, testutil.Q("x")), tool) })
	}
	wg.Wait()
	var refused *guard.RefusedError
	if !errors.As(errs[0], &refused) || refused.Decision.CallID != "c" || errs[1] != nil || errs[2] != nil {
		t.Errorf("Run by ID: %v; want c refused, a and b run", errs)
	}
	if runs.Load() != 2 || preflights.Load() != 3 {
		t.Errorf("%d runs, %d preflight events; want 2 and 3 (Run took the decisions)", runs.Load(), preflights.Load())
	}
	// Run once more with a taken ID: that is another call, judged now.
	if _, err := turn.Run(ctx, withID("a", testutil.Q("x")), tool); !errors.As(err, &refused) || refused.Decision.CallIndex != 0 {
		t.Errorf("a fourth identical call: %v", err)
	}
	if runs.Load() != 2 || preflights.Load() != 4 {
		t.Errorf("%d runs, %d preflight events; want 2 and 4", runs.Load(), preflights.Load())
	}
	v, err := turn.End(ctx, guard.Step{})
	if err != nil || v.Stop {
		t.Fatalf("End: %v %v", v, err)
	}
	h := g.History()
	if len(h) != 1 || len(h[0].ToolCalls) != 2 || len(h[0].Refused) != 2 {
		t.Errorf("recorded %+v; want 2 calls and 2 refusals", h)
	}

	// Without IDs (a framework whose tools cannot see them): by tool and
	// canonically equal arguments.
	turn = g.Begin()
	ds, _ = turn.Preflight(ctx, testutil.Call("read", `{"path": "a", "n": 1}`), testutil.Q("new"))
	if !ds[0].Allow || !ds[1].Allow {
		t.Fatalf("preflight: %+v", ds)
	}
	before := preflights.Load()
	if _, err := turn.Run(ctx, testutil.Call("read", `{"n":1,"path":"a"}`), tool); err != nil {
		t.Fatal(err)
	}
	if preflights.Load() != before {
		t.Error("Run judged a call that Preflight had decided")
	}
	if got, _ := turn.End(ctx, guard.Step{}); got.Stop {
		t.Errorf("End: %v", got)
	}
	if h := g.History(); len(h[1].ToolCalls) != 1 || h[1].ToolCalls[0].Name != "read" {
		t.Errorf("recorded %+v; want the read call alone (search never ran)", h[1])
	}
}

// The third identical call is refused and the tool body runs exactly twice,
// call after call in a hand-written loop; the refusals are recorded in
// Step.Refused.
func TestTurnRunRecordsRefusals(t *testing.T) {
	ctx := context.Background()
	g := repeatGuard(t, guard.Config{})
	runs := 0
	tool := func(context.Context) (any, error) { runs++; return "same", nil }
	for i := range 4 {
		turn := g.Begin()
		_, err := turn.Run(ctx, testutil.Q("x"), tool)
		var refused *guard.RefusedError
		if refusedWant := i >= 2; errors.As(err, &refused) != refusedWant {
			t.Fatalf("call %d: %v", i+1, err)
		}
		turn.End(ctx, guard.Step{Text: "searching"})
	}
	if runs != 2 {
		t.Errorf("the tool ran %d times, want 2", runs)
	}
	var got []int
	for _, s := range g.History() {
		got = append(got, len(s.Refused))
	}
	if diff := cmp.Diff([]int{0, 0, 1, 1}, got); diff != "" {
		t.Errorf("refusals per step (-want +got):\n%s", diff)
	}
}

// §5 of issue 12: an observer that blocks holds up only its own caller. The
// first call's observer blocks until released; the turn's other call must
// run and return meanwhile.
func TestTurnBlockingObserverHoldsUpOnlyItsCaller(t *testing.T) {
	for _, style := range []string{"Run", "Preflight"} {
		t.Run(style, func(t *testing.T) {
			ctx := context.Background()
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			g := repeatGuard(t, guard.Config{Observer: func(ctx context.Context, e guard.Event) {
				if ctx.Value(slowKey{}) != nil {
					once.Do(func() { close(entered) })
					<-release
				}
			}})
			turn := g.Begin()
			slow := context.WithValue(ctx, slowKey{}, true)
			firstDone := make(chan error)
			go func() {
				var err error
				if style == "Run" {
					_, err = turn.Run(slow, testutil.Q("a"), func(context.Context) (any, error) { return "a", nil })
				} else {
					_, err = turn.Preflight(slow, withID("a", testutil.Q("a")))
				}
				firstDone <- err
			}()
			<-entered
			secondDone := make(chan error)
			go func() {
				_, err := turn.Run(ctx, testutil.Q("b"), func(context.Context) (any, error) { return "b", nil })
				secondDone <- err
			}()
			select {
			case err := <-secondDone:
				if err != nil {
					t.Errorf("second call: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a blocked observer held up another call of the turn")
			}
			close(release)
			if err := <-firstDone; err != nil {
				t.Errorf("first call: %v", err)
			}
		})
	}
}

type slowKey struct{}

// End returns a *StopError for a fault, and no error for a verdict that goes
// on or for a normal finish.
func TestTurnEndStopError(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		finish   string
		stop     bool
		stopErr  bool
		wantCode string
	}{
		{"tool-calls", false, false, ""},
		{"stop", true, false, "FINISH_TERMINAL"},
		{"length", true, true, "FINISH_TERMINAL"},
	}
	for _, tt := range tests {
		f, err := finish.New(finish.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g := mustNew(t, guard.Config{}, f)
		v, err := g.Begin().End(ctx, guard.Step{Text: "done", FinishReason: tt.finish})
		var stop *guard.StopError
		if v.Stop != tt.stop || errors.As(err, &stop) != tt.stopErr || (err != nil) != tt.stopErr || v.Code != tt.wantCode {
			t.Errorf("%s: verdict %v, error %v", tt.finish, v, err)
			continue
		}
		if stop != nil {
			if diff := cmp.Diff(v, stop.Verdict); diff != "" {
				t.Errorf("%s: the error's verdict (-want +got):\n%s", tt.finish, diff)
			}
			if msg := stop.Error(); msg != "loopguard: run stopped: finish-reason (FINISH_TERMINAL)" {
				t.Errorf("Error() = %q", msg)
			}
		}
		if got := v.Err(); (got != nil) != tt.stopErr {
			t.Errorf("%s: Verdict.Err() = %v", tt.finish, got)
		}
	}
}

// A refusal's error text is the model-safe feedback: no argument is quoted,
// while the developer's detail stays in the decision.
func TestRefusedErrorIsSafe(t *testing.T) {
	ctx := context.Background()
	g := repeatGuard(t, guard.Config{})
	secret := testutil.Call("login", `{"password":"hunter2"}`)
	for range 2 {
		turn := g.Begin()
		turn.Run(ctx, secret, func(context.Context) (any, error) { return "denied", nil })
		turn.End(ctx, guard.Step{})
	}
	_, err := g.Begin().Run(ctx, secret, func(context.Context) (any, error) { return "denied", nil })
	var refused *guard.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("third call: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") || msg != refused.Decision.Feedback {
		t.Errorf("Error() = %q; want the feedback, without arguments", msg)
	}
	if !strings.Contains(refused.Decision.Detail, "hunter2") {
		t.Errorf("the developer's detail %q lost the argument preview", refused.Decision.Detail)
	}
	if msg := (&guard.RefusedError{}).Error(); msg != "That call was not run: loopguard refused it." {
		t.Errorf("without feedback: %q", msg)
	}
}

// In a refused batch, the decision names the first call at which the
// refusing rule refuses.
func TestDecisionSaysWhichCall(t *testing.T) {
	r := func() guard.Rule { d, _ := repeat.New(repeat.Options{Threshold: 3}); return d }
	tl := func() guard.Rule {
		d, _ := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"read": 1}})
		return d
	}
	b := func() guard.Rule { d, _ := budget.New(budget.Options{MaxSteps: 1}); return d }
	x := testutil.Q("x")
	tests := []struct {
		name    string
		ds      func() guard.Rule
		calls   []guard.ToolCall
		index   int
		id      string
		code    string
		history int // steps of x checked first
	}{
		{"repeat part-way", r, []guard.ToolCall{testutil.Q("a"), withID("1", x), withID("2", x), withID("3", x), withID("4", x)}, 3, "3", repeat.Code, 0},
		{"repeat after history", r, []guard.ToolCall{withID("1", x), testutil.Q("a")}, 0, "1", repeat.Code, 2},
		{"cap", tl, []guard.ToolCall{withID("s", x), withID("r1", testutil.Call("read", `{}`)), withID("r2", testutil.Call("read", `{"p":1}`))}, 2, "r2", "TOOL_CALL_CAP", 0},
		{"step limit, no calls", b, nil, 0, "", "MAX_STEPS", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustNew(t, guard.Config{}, tt.ds())
			for range tt.history {
				testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{x}})
			}
			d := testutil.Preflight(t, g, tt.calls...)
			if d.Allow || d.CallIndex != tt.index || d.CallID != tt.id || d.Code != tt.code {
				t.Errorf("decision %+v; want %s at index %d, ID %q", d, tt.code, tt.index, tt.id)
			}
		})
	}

	// The JSON shape is additive: callIndex and callId on refusals only.
	d := guard.Decision{Reason: repeat.ReasonRepeatedToolCall, Code: "C", CallIndex: 0, CallID: "call_1"}
	if got, _ := json.Marshal(d); string(got) != `{"allow":false,"reason":"repeated-tool-call","code":"C","callIndex":0,"callId":"call_1"}` {
		t.Errorf("refusal JSON = %s", got)
	}
	if got, _ := json.Marshal(guard.Decision{Allow: true, CallIndex: 3, CallID: "x"}); string(got) != `{"allow":true}` {
		t.Errorf("allowed JSON = %s", got)
	}
}

// The defaults refuse a call in a long batch at the right place, and the
// turn says which call by its index among those given.
func TestTurnPreflightCallIndexWithDefaults(t *testing.T) {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	turn := g.Begin()
	ds, _ := turn.Preflight(context.Background(), testutil.Q("a"), testutil.Q("b"), withID("b2", testutil.Q("b")), withID("b3", testutil.Q("b")))
	if d := ds[3]; d.Allow || d.CallIndex != 3 || d.CallID != "b3" {
		t.Errorf("decisions %+v; want the fourth refused, index 3", ds)
	}
}

// A call still running when the turn ends is left out of the step, and what
// it returns later changes nothing; a turn of refusals alone records no
// calls.
func TestTurnEndWhileACallRuns(t *testing.T) {
	ctx := context.Background()
	g := repeatGuard(t, guard.Config{})
	turn := g.Begin()
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		res, err := turn.Run(ctx, withID("slow", testutil.Q("slow")), func(context.Context) (any, error) {
			close(started)
			<-finish
			return "late", nil
		})
		if res != "late" {
			err = errors.Join(err, errors.New("Run lost the tool's result"))
		}
		done <- err
	}()
	<-started
	if _, err := turn.Run(ctx, testutil.Q("fast"), func(context.Context) (any, error) { return "r", nil }); err != nil {
		t.Fatal(err)
	}
	if v, err := turn.End(ctx, guard.Step{}); v.Stop || err != nil {
		t.Fatalf("End: %v %v", v, err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Errorf("the running call: %v", err)
	}
	h := g.History()
	if len(h) != 1 || len(h[0].ToolCalls) != 1 || h[0].ToolCalls[0].Result != "r" {
		t.Errorf("recorded %+v; want the fast call alone", h)
	}
	if a, _ := turn.Answer("slow"); a != "That call was not run." {
		t.Errorf("Answer(slow) = %q", a)
	}

	// Refusals alone: Refused holds them, ToolCalls is nil.
	for range 2 {
		testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{testutil.Q("x")}})
	}
	turn = g.Begin()
	turn.Preflight(ctx, testutil.Q("x"))
	s := turn.Step(guard.Step{})
	turn.End(ctx, guard.Step{})
	h = g.History()
	if last := h[len(h)-1]; last.ToolCalls != nil || len(last.Refused) != 1 || s.ToolCalls != nil || len(s.Refused) != 1 {
		t.Errorf("a turn of one refusal recorded %+v (Step gave %+v)", last, s)
	}
}

// TestTurnRunNilFunction: a nil function is the caller's bug, said so,
// and not a tool that failed: the step records no call.
func TestTurnRunNilFunction(t *testing.T) {
	ctx := context.Background()
	g := repeatGuard(t, guard.Config{})
	turn := g.Begin()
	_, err := turn.Run(ctx, testutil.Q("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "not nil") {
		t.Fatalf("Run with a nil function: %v, want an error that says so", err)
	}
	turn.End(ctx, guard.Step{Text: "searching"})
	h := g.History()
	if len(h) != 1 || len(h[0].ToolCalls) != 0 || len(h[0].Refused) != 0 {
		t.Errorf("the step after a nil function: %+v, want no calls", h)
	}
}
