package mcpgo_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/adapters/mcpgo"
	"github.com/loopguard/loopguard/guard"
)

// TestPanickingToolIsAFailedCall puts server.WithRecovery() before the guard
// (so its recovery is outside it) and calls a tool that panics. The call must
// be recorded as a failed call, not left running: an open call counts in
// every later preflight, and a Keyed run with one is never dropped from
// memory.
func TestPanickingToolIsAFailedCall(t *testing.T) {
	for _, door := range []string{"Middleware", "Keyed"} {
		t.Run(door, func(t *testing.T) {
			var mw server.ToolHandlerMiddleware
			var g *guard.Guard // the run's guard, the same path for both doors
			switch door {
			case "Middleware":
				g = newGuard(t)
				mw = mcpgo.Middleware(g)
			case "Keyed":
				keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{Key: func(context.Context, mcp.CallToolRequest) (string, error) { return "one", nil }})
				if err != nil {
					t.Fatal(err)
				}
				mw, g = keyed.Middleware(), keyed.Runs().Guard("one")
			}
			var runs atomic.Int32
			s := newServer(&runs, server.WithRecovery(), server.WithToolHandlerMiddleware(mw))
			s.AddTool(mcp.NewTool("explode", mcp.WithString("query")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					runs.Add(1)
					panic("boom")
				})
			c := connect(t, s)
			for i := range 2 {
				if _, err := callErr(c, "explode", "x"); err == nil {
					t.Fatalf("call %d of the panicking tool did not fail", i)
				}
			}
			if sum := summary(t, g); sum.Steps != 2 || sum.FailedToolCalls != 2 {
				t.Errorf("summary: %d steps, %d failed calls; want 2, 2 (the calls were left running)", sum.Steps, sum.FailedToolCalls)
			}
			// Recorded, the panicking call repeats like any failing call:
			// the third identical one is refused before it runs.
			r := call(t, c, "explode", "x")
			if !r.IsError || runs.Load() != 2 {
				t.Errorf("third call: %+v, the tool ran %d times; want a refusal and 2 runs", r, runs.Load())
			}
		})
	}
}

// TestRefusalEscalates calls the same tool again and again: once the model
// has asked three times for a refused call, the answer says so and says the
// run should end (it used to say "it would have been the 3rd call in a row"
// for ever), and from then on every call is refused with that stop.
func TestRefusalEscalates(t *testing.T) {
	for _, door := range []string{"Middleware", "Keyed"} {
		t.Run(door, func(t *testing.T) {
			mw := mcpgo.Middleware(newGuard(t))
			if door == "Keyed" {
				keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{Key: func(context.Context, mcp.CallToolRequest) (string, error) { return "one", nil }})
				if err != nil {
					t.Fatal(err)
				}
				mw = keyed.Middleware()
			}
			var runs atomic.Int32
			c := connect(t, newServer(&runs, server.WithToolHandlerMiddleware(mw)))
			first := wantRefusal(t, "search", `{"query":"q"}`)
			for i := range 7 {
				r := call(t, c, "search", "q")
				switch {
				case i < 2:
					if r.IsError {
						t.Fatalf("call %d refused: %s", i+1, r.Text)
					}
				case i == 2:
					if !r.IsError || r.Text != first {
						t.Errorf("call 3: %+v, want the refusal %q", r, first)
					}
				case i == 4:
					want := fmt.Sprintf("You have asked %d times for a call to `search`", i-1)
					if !r.IsError || !strings.HasPrefix(r.Text, "That call was not run.") || !strings.Contains(r.Text, want) {
						t.Errorf("call %d: %+v, want a refusal that says %q", i+1, r, want)
					}
				case i > 4:
					// Call 5 stopped the run for a fault (REPEATED_REFUSAL):
					// the stop sticks, and every later call is refused with
					// it (it used to count on, "asked 4 times", "5 times").
					want := "That call was not run. You have asked 3 times for a call to `search` that is not allowed to run, and it was refused each time. It will not be run, so the run is being ended here."
					if !r.IsError || !strings.HasPrefix(r.Text, want) {
						t.Errorf("call %d: %+v, want the refusal that stopped the run, %q", i+1, r, want)
					}
				}
			}
			if n := runs.Load(); n != 2 {
				t.Errorf("the tool ran %d times, want 2", n)
			}
		})
	}
}
