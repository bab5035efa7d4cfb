package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/repeat"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

func keysOf(t *testing.T, o guard.Config, calls ...guard.ToolCall) []string {
	t.Helper()
	p := &probe{name: "p"}
	g := mustNew(t, o, p)
	testutil.Check(t, g, guard.Step{ToolCalls: calls})
	var out []string
	for _, k := range p.st().seen[0].Keys {
		out = append(out, k.String())
	}
	return out
}

func TestCallKeys(t *testing.T) {
	a := testutil.Call("search", `{"q":"x","request_id":"1","ts":5}`)
	b := testutil.Call("search", `{"ts":6,"q":"x","request_id":"2"}`)
	c := guard.ToolCall{Name: "search", Args: map[string]any{"q": "x", "request_id": 3}}
	d := guard.ToolCall{Name: "search", Args: struct {
		Q  string `json:"q"`
		TS int    `json:"ts"`
	}{"x", 9}}
	other := testutil.Call("search", `{"q":"y","request_id":"1","ts":5}`)
	notObject := testutil.Call("search", `["request_id"]`)
	invalid := testutil.Call("search", `{"q":`)

	tests := []struct {
		name  string
		o     guard.Config
		calls []guard.ToolCall
		same  [][2]int // pairs of calls with equal keys
		diff  [][2]int // pairs with different keys
	}{
		{"no options: noise matters", guard.Config{}, []guard.ToolCall{a, b}, nil, [][2]int{{0, 1}}},
		{"dropped for every tool", guard.Config{DropArgs: []string{"request_id", "ts"}},
			[]guard.ToolCall{a, b, c, d, other, notObject, invalid}, [][2]int{{0, 1}, {1, 2}, {2, 3}}, [][2]int{{0, 4}, {0, 5}, {0, 6}}},
		{"dropped for one tool", guard.Config{Tools: map[string]guard.ToolOptions{"search": {DropArgs: []string{"request_id"}}}, DropArgs: []string{"ts"}},
			[]guard.ToolCall{a, b, c}, [][2]int{{0, 1}, {1, 2}}, nil},
		{"dropped for another tool", guard.Config{Tools: map[string]guard.ToolOptions{"read": {DropArgs: []string{"request_id", "ts"}}}},
			[]guard.ToolCall{a, b}, nil, [][2]int{{0, 1}}},
		{"guard key function", guard.Config{Key: func(tool string, args any) any { return tool }},
			[]guard.ToolCall{a, other}, [][2]int{{0, 1}}, nil},
		{"tool key function wins", guard.Config{Key: func(string, any) any { return 1 },
			Tools: map[string]guard.ToolOptions{"search": {Key: func(args any) any { return args }}}},
			[]guard.ToolCall{a, other}, nil, [][2]int{{0, 1}}},
		{"a panicking key function makes calls unique", guard.Config{Key: func(string, any) any { panic("no") }},
			[]guard.ToolCall{a, a}, nil, [][2]int{{0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := keysOf(t, tt.o, tt.calls...)
			for _, p := range tt.same {
				if keys[p[0]] != keys[p[1]] {
					t.Errorf("calls %d and %d must have the same key", p[0], p[1])
				}
			}
			for _, p := range tt.diff {
				if keys[p[0]] == keys[p[1]] {
					t.Errorf("calls %d and %d must have different keys", p[0], p[1])
				}
			}
		})
	}
}

func TestDroppedFieldsAreFingerprinted(t *testing.T) {
	g := mustNew(t, guard.Config{DropArgs: []string{"ts"}})
	data, _ := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if _, err := guard.Restore(data, (guard.Config{DropArgs: []string{"ts", "ts"}})); err != nil {
		t.Errorf("same dropped fields: %v", err)
	}
	if _, err := guard.Restore(data, (guard.Config{DropArgs: []string{"request_id"}})); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("other dropped fields: got %v, want ErrOptionsChanged", err)
	}
}

func TestObserver(t *testing.T) {
	type ctxKey struct{}
	var events []guard.Event
	var ctxValues []any
	o := guard.Config{Observer: func(ctx context.Context, e guard.Event) {
		events = append(events, e)
		ctxValues = append(ctxValues, ctx.Value(ctxKey{}))
		panic("an observer that panics must not break the guard")
	}}
	g := mustNew(t, o, &probe{name: "p", refuse: true, stopWhen: func(f *guard.Facts) bool { return f.Index == 1 }})
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	g.Check(ctx, guard.Step{})
	testutil.Check(t, g, guard.Step{})
	g.Preflight(ctx, testutil.Q("x"))
	want := []guard.Event{
		{Phase: guard.PhaseCheck, Step: 0},
		{Phase: guard.PhaseCheck, Step: 1, Verdict: guard.Verdict{Stop: true, Reason: guard.ReasonCustom, Code: guard.CodeCustom,
			Detail: "p stops", Evidence: map[string]any{"count": 2}, Detector: "p"}},
		{Phase: guard.PhasePreflight, Step: 2, Verdict: guard.Verdict{Stop: true, Reason: "probe", Code: "PROBE", Detail: "p", Detector: "p"}, Tool: "search"},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"v", nil, "v"}, ctxValues); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
}

func TestBlockingObserverHoldsUpOnlyItsCaller(t *testing.T) {
	release := make(chan struct{})
	var first atomic.Bool
	o := guard.Config{Observer: func(context.Context, guard.Event) {
		if first.CompareAndSwap(false, true) {
			<-release
		}
	}}
	g := mustNew(t, o, &probe{name: "p"})
	go testutil.Check(t, g, guard.Step{}) // blocks in the observer
	done := make(chan struct{})
	go func() {
		time.Sleep(10 * time.Millisecond)
		testutil.Check(t, g, guard.Step{}) // must not wait for the blocked observer
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a blocked observer held up another caller")
	}
	close(release)
}

func TestLogValue(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	v := guard.Verdict{Stop: true, Reason: repeat.ReasonRepeatedToolCall, Code: "REPEATED_TOOL_CALL", Detector: "repeat",
		Detail: "d", Feedback: "secret-free text", Evidence: map[string]any{"argsPreview": "SECRET"},
		Warnings: []guard.Warning{{Code: "BUDGET_WARNING"}}}
	log.Info("verdict", "v", v, "d", guard.Decision{Allow: true})
	want := `level=INFO msg=verdict v.stop=true v.reason=repeated-tool-call v.code=REPEATED_TOOL_CALL v.detector=repeat v.detail=d v.warnings=[BUDGET_WARNING] d.allow=true` + "\n"
	if buf.String() != want {
		t.Errorf("logged:\n%s\nwant:\n%s", buf.String(), want)
	}
	if strings.Contains(buf.String(), "SECRET") {
		t.Error("evidence reached the log")
	}
}

func newRepeatGuard(t *testing.T, threshold int) *guard.Guard {
	t.Helper()
	r, err := repeat.New(repeat.Options{Threshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	return mustNew(t, guard.Config{}, r)
}

func TestTurn(t *testing.T) {
	g := newRepeatGuard(t, 3)
	ctx := context.Background()
	ran := 0
	tool := func(context.Context) (any, error) { ran++; return "same", nil }

	for i := range 2 {
		turn := g.Begin()
		if _, err := turn.Run(ctx, testutil.Q("x"), tool); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if v, err := turn.End(ctx, guard.Step{Text: "searching"}); err != nil || v.Stop {
			t.Fatalf("turn %d: %v %v", i, v, err)
		}
	}
	turn := g.Begin()
	_, err := turn.Run(ctx, testutil.Q("x"), tool)
	var refused *guard.RefusedError
	if !errors.As(err, &refused) || refused.Decision.Code != repeat.Code || refused.Decision.Feedback == "" {
		t.Fatalf("third identical call: got %v, want a refusal with feedback", err)
	}
	if ran != 2 {
		t.Errorf("the tool ran %d times, want 2", ran)
	}
	res, err := turn.Run(ctx, testutil.Q("y"), func(context.Context) (any, error) { return nil, errors.New("boom") })
	if res != nil || err == nil || err.Error() != "boom" {
		t.Errorf("failed call: %v, %v", res, err)
	}
	v, err := turn.End(ctx, guard.Step{})
	if err != nil || v.Stop {
		t.Errorf("the refused call must be left out of the step: %v %v", v, err)
	}
	if s := testutil.Summary(t, g); s.Steps != 3 || s.ToolCalls != 3 || s.FailedToolCalls != 1 {
		t.Errorf("summary = %+v", s)
	}
	if _, err := turn.End(ctx, guard.Step{}); !errors.Is(err, guard.ErrTurnEnded) {
		t.Errorf("second End: %v", err)
	}
	if _, err := turn.Run(ctx, testutil.Q("z"), tool); !errors.Is(err, guard.ErrTurnEnded) {
		t.Errorf("Run after End: %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Begin().Run(cancelled, testutil.Q("z"), tool); !errors.Is(err, context.Canceled) || ran != 2 {
		t.Errorf("cancelled: %v (ran %d)", err, ran)
	}
	if _, err := g.Begin().Run(ctx, testutil.Q("p"), func(context.Context) (any, error) { panic("tool bug") }); err == nil {
		t.Error("a panicking tool must come back as an error")
	}
}

func TestTurnParallelCallsAreOneStep(t *testing.T) {
	g := newRepeatGuard(t, 3)
	ctx := context.Background()
	turn := g.Begin()
	var wg sync.WaitGroup
	var mu sync.Mutex
	refusals := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := turn.Run(ctx, testutil.Q("same"), func(context.Context) (any, error) {
				time.Sleep(time.Millisecond)
				return "r", nil
			})
			var refused *guard.RefusedError
			if errors.As(err, &refused) {
				mu.Lock()
				refusals++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	v, _ := turn.End(ctx, guard.Step{})
	if refusals != 6 || v.Stop || testutil.Summary(t, g).ToolCalls != 2 {
		b, _ := json.Marshal(v)
		t.Errorf("8 identical parallel calls with threshold 3: %d refused (want 6), verdict %s, %d recorded (want 2)", refusals, b, testutil.Summary(t, g).ToolCalls)
	}
}

// Each event names the one call it is about, by ID and tool, for an
// observer that reports per call; events about a whole step name none. The
// repeat rule (threshold 2) refuses a second "search" of "x" within a step
// or after one.
func TestObserverNamesTheCall(t *testing.T) {
	type named struct {
		Phase        guard.Phase
		Stop         bool
		CallID, Tool string
	}
	var mu sync.Mutex
	var got []named
	r, err := repeat.New(repeat.Options{Threshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(guard.Config{Rules: []guard.Rule{r}, Observer: func(_ context.Context, e guard.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, named{e.Phase, e.Verdict.Stop, e.CallID, e.Tool})
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x := func(id string) guard.ToolCall { c := testutil.Q("x"); c.ID = id; return c }
	y := guard.ToolCall{ID: "y1", Name: "read", Args: json.RawMessage(`{}`)}

	g.Preflight(ctx, x("a"))                                              // one call, allowed: named
	g.Preflight(ctx, y, x("b"))                                           // two calls, allowed: none named
	g.Preflight(ctx, x("c"), x("d"))                                      // the second is refused: named
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{x("e")}}) // a step: none
	turn := g.Begin()
	turn.Preflight(ctx, x("f"), y) // one event per call; f repeats e
	turn.Run(ctx, guard.ToolCall{ID: "z1", Name: "write", Args: json.RawMessage(`{}`)}, func(context.Context) (any, error) { return "ok", nil })
	turn.End(ctx, guard.Step{}) // a step: none
	run, _, _ := g.StartCall(ctx, guard.ToolCall{ID: "s1", Name: "think", Args: json.RawMessage(`{}`)})
	run.Finish(ctx, "ok", nil)                                                             // the call's own step: named
	g.StartCall(ctx, guard.ToolCall{ID: "s2", Name: "think", Args: json.RawMessage(`{}`)}) // refused: the decision and its step

	want := []named{
		{guard.PhasePreflight, false, "a", "search"},
		{guard.PhasePreflight, false, "", ""},
		{guard.PhasePreflight, true, "d", "search"},
		{guard.PhaseCheck, false, "", ""},
		{guard.PhasePreflight, true, "f", "search"},
		{guard.PhasePreflight, false, "y1", "read"},
		{guard.PhasePreflight, false, "z1", "write"},
		{guard.PhaseCheck, false, "", ""},
		{guard.PhasePreflight, false, "s1", "think"},
		{guard.PhaseCheck, false, "s1", "think"},
		{guard.PhasePreflight, true, "s2", "think"},
		{guard.PhaseCheck, false, "s2", "think"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("e", "event", guard.Event{Phase: guard.PhasePreflight, CallID: "a\x1b", Tool: "search"})
	if s := b.String(); !strings.Contains(s, `event.callId=a\x1b `) || !strings.Contains(s, "event.tool=search") {
		t.Errorf("LogValue: %s", s)
	}
}
