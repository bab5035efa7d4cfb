package core_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestFactsOutsideTheLock: a step's hashing holds up no other caller. A key
// function that blocks while one Check hashes its call must not stop
// another Check, a Preflight or a Summary of the same guard.
func TestFactsOutsideTheLock(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	opts := guard.Config{Tools: map[string]guard.ToolOptions{"slow": {Key: func(args any) any {
		entered <- struct{}{}
		<-release
		return args
	}}}}
	g, err := guard.New(withRules(opts, detector.Defaults()...))
	if err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "slow", Args: json.RawMessage(`{}`)}}})
	}()
	<-entered // the slow call is being hashed

	others := make(chan struct{})
	go func() {
		defer close(others)
		testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "fast", Args: json.RawMessage(`{}`)}}})
		testutil.Preflight(t, g, guard.ToolCall{Name: "fast"})
		testutil.Summary(t, g)
	}()
	select {
	case <-others:
	case <-time.After(5 * time.Second):
		t.Error("a Check that hashes holds up the guard's other callers")
	}
	close(release)
	<-slowDone
	<-others
	if s := testutil.Summary(t, g); s.Steps != 2 {
		t.Errorf("steps = %d, want 2", s.Steps)
	}
}

// bigArgs holds 100 MB that its JSON encoding does not show, so that
// hashing it is quick.
type bigArgs struct {
	Q   string `json:"q"`
	pad []byte
}

// TestNoReferenceAfterCheck: once Check (or Preflight) returns, the guard
// holds nothing of the caller's step: a 100 MB argument is collectable.
func TestNoReferenceAfterCheck(t *testing.T) {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"Check", "Preflight", "Check of a stop", "Turn"} {
		args := &bigArgs{Q: "x", pad: make([]byte, 100<<20)}
		w := weak.Make(args)
		call := guard.ToolCall{Name: "search", Args: args, Result: strings.Repeat("r", 10)}
		switch how {
		case "Check":
			testutil.Check(t, g, guard.Step{Text: "t", ToolCalls: []guard.ToolCall{call}})
		case "Preflight":
			testutil.Preflight(t, g, call)
		case "Check of a stop":
			v := testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{call, call, call}})
			if !v.Stop {
				t.Fatalf("three same calls: %s", guard.Explain(v))
			}
			g.Reset(t.Context())
		case "Turn":
			turn := g.Begin()
			turn.Run(t.Context(), call, func(ctx context.Context) (any, error) { return "ok", nil })
			turn.End(t.Context(), guard.Step{})
			g.Reset(t.Context())
		}
		call, args = guard.ToolCall{}, nil
		runtime.GC()
		runtime.GC()
		if w.Value() != nil {
			t.Errorf("after %s, the guard still holds the caller's 100 MB argument", how)
		}
	}
	runtime.KeepAlive(g)
}

// TestStepMarshalDeep: arguments nested deeper than guard.MaxStepDepth are
// left out, as documented, however deep: never a stack overflow, never an
// error, whether MarshalJSON is called or json.Marshal(step).
func TestStepMarshalDeep(t *testing.T) {
	nestSlice := func(n int) any {
		var v any = 1
		for range n {
			v = []any{v}
		}
		return v
	}
	nestMap := func(n int) any {
		var v any = "x"
		for range n {
			v = map[string]any{"a": v}
		}
		return v
	}
	nestText := func(n int) any {
		return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	type node struct {
		Next *node `json:"next"`
	}
	loop := &node{}
	loop.Next = loop
	for _, tt := range []struct {
		name string
		args any
		kept bool
	}{
		{"slices at the limit", nestSlice(guard.MaxStepDepth), true},
		{"slices past the limit", nestSlice(guard.MaxStepDepth + 1), false},
		{"maps at the limit", nestMap(guard.MaxStepDepth), true},
		{"maps past the limit", nestMap(guard.MaxStepDepth + 1), false},
		{"JSON text at the limit", nestText(guard.MaxStepDepth), true},
		{"JSON text past the limit", nestText(guard.MaxStepDepth + 1), false},
		{"JSON text 15,000 deep", nestText(15_000), false},
		{"slices 1,000,000 deep", nestSlice(1_000_000), false},
		{"maps 1,000,000 deep", nestMap(1_000_000), false},
		{"JSON text 1,000,000 deep", nestText(1_000_000), false},
		{"a cyclic map", cyclic, false},
		{"a cyclic pointer", loop, false},
	} {
		s := guard.Step{Text: "t", ToolCalls: []guard.ToolCall{{Name: "x", Args: tt.args, Result: tt.args}}}
		for _, how := range []string{"MarshalJSON", "json.Marshal"} {
			var b []byte
			var err error
			if how == "MarshalJSON" {
				b, err = s.MarshalJSON()
			} else {
				b, err = json.Marshal(s)
			}
			if err != nil {
				t.Errorf("%s, %s: %v", tt.name, how, err)
				continue
			}
			var back guard.Step
			if err := json.Unmarshal(b, &back); err != nil || len(back.ToolCalls) != 1 {
				t.Errorf("%s, %s: wrote %.200s (%v)", tt.name, how, b, err)
				continue
			}
			if kept := back.ToolCalls[0].Args != nil && back.ToolCalls[0].Result != nil; kept != tt.kept {
				t.Errorf("%s, %s: arguments and result kept = %v, want %v", tt.name, how, kept, tt.kept)
			}
		}
	}
}

// TestGuardCollectedAfterOneGC: a guard that was used and dropped is
// collected by the next collection, as any value is. Its reused buffer was a
// sync.Pool, which the runtime keeps registered (and with it the guard and
// its detectors) until two collections have passed: a program making a
// guard per run then kept every guard of the last cycle alive, and with a
// high GOGC its heap grew with the runs (audit of 200,000 OTLP runs: 1.8 GB).
func TestGuardCollectedAfterOneGC(t *testing.T) {
	const n = 8
	var ws [n]weak.Pointer[guard.Guard]
	for i := range n {
		g, err := guard.New(guard.Config{Rules: detector.Defaults()})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Check(t, g, guard.Step{Text: "t", ToolCalls: []guard.ToolCall{{Name: "search", Args: map[string]any{"q": i}}}})
		testutil.Preflight(t, g, guard.ToolCall{Name: "search"})
		ws[i] = weak.Make(g)
	}
	runtime.GC()
	for i, w := range ws {
		if w.Value() != nil {
			t.Errorf("guard %d is still alive after a collection", i)
		}
	}
}
