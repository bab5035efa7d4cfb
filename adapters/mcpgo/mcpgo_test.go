package mcpgo_test

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
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/adapters/mcpgo"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// newServer returns a server with a "search" tool whose body counts its
// runs, a "broken" tool that answers with an error result and a "crash"
// tool whose handler fails.
func newServer(runs *atomic.Int32, opts ...server.ServerOption) *server.MCPServer {
	s := server.NewMCPServer("test-server", "1.0.0", append([]server.ServerOption{server.WithToolCapabilities(true)}, opts...)...)
	s.AddTool(mcp.NewTool("search", mcp.WithString("query", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return mcp.NewToolResultText("no results for " + req.GetString("query", "")), nil
		})
	s.AddTool(mcp.NewTool("broken", mcp.WithString("query")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return mcp.NewToolResultError("backend down"), nil
		})
	s.AddTool(mcp.NewTool("crash", mcp.WithString("query")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return nil, errors.New("handler crashed")
		})
	return s
}

// connect returns an initialised in-process client of s.
func connect(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test-client", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// summary returns g's summary.
func summary(t *testing.T, g *guard.Guard) guard.Summary {
	t.Helper()
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type callResult struct {
	IsError bool
	Text    string
}

func callErr(c *client.Client, tool, query string) (callResult, error) {
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = map[string]any{"query": query}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		return callResult{}, err
	}
	var texts []string
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return callResult{IsError: res.IsError, Text: strings.Join(texts, "\n")}, nil
}

func call(t *testing.T, c *client.Client, tool, query string) callResult {
	t.Helper()
	r, err := callErr(c, tool, query)
	if err != nil {
		t.Fatalf("CallTool(%s, %q): %v", tool, query, err)
	}
	return r
}

// wantRefusal returns the feedback for a third identical call, from a twin
// guard that recorded two.
func wantRefusal(t *testing.T, tool, args string) string {
	t.Helper()
	twin := newGuard(t)
	c := guard.ToolCall{Name: tool, Args: json.RawMessage(args)}
	ctx := context.Background()
	for range 2 {
		if _, err := twin.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{c}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := twin.Preflight(ctx, c)
	if err != nil || d.Allow || d.Feedback == "" {
		t.Fatalf("twin guard allowed the third call: %+v", d)
	}
	return d.Feedback
}

func TestMiddlewareRefusesThirdIdenticalCall(t *testing.T) {
	var runs atomic.Int32
	g := newGuard(t)
	s := newServer(&runs, server.WithToolHandlerMiddleware(mcpgo.Middleware(g)))
	c := connect(t, s)

	var got []callResult
	for range 3 {
		got = append(got, call(t, c, "search", "go mcp"))
	}
	want := []callResult{
		{Text: "no results for go mcp"},
		{Text: "no results for go mcp"},
		{IsError: true, Text: wantRefusal(t, "search", `{"query":"go mcp"}`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the tool body ran %d times, want 2", n)
	}
	if sum := summary(t, g); sum.Steps != 3 || sum.ToolCalls != 2 {
		t.Errorf("summary: %d steps, %d calls; want 3 (2 calls and a refusal), 2", sum.Steps, sum.ToolCalls)
	}
	if r := call(t, c, "search", "another query"); r.IsError {
		t.Errorf("a new query was refused: %q", r.Text)
	}
}

func TestMiddlewareRecordsErrorsAsFailedCalls(t *testing.T) {
	var runs atomic.Int32
	g := newGuard(t)
	s := newServer(&runs)
	s.Use(mcpgo.Middleware(g))
	c := connect(t, s)

	if _, err := callErr(c, "crash", "x"); err == nil || !strings.Contains(err.Error(), "handler crashed") {
		t.Fatalf("crash tool: err = %v", err)
	}
	for range 2 {
		if r := call(t, c, "broken", "x"); !r.IsError || r.Text != "backend down" {
			t.Fatalf("broken tool answered %+v", r)
		}
	}
	if sum := summary(t, g); sum.Steps != 3 || sum.FailedToolCalls != 3 {
		t.Errorf("summary: %d steps, %d failed calls; want 3, 3", sum.Steps, sum.FailedToolCalls)
	}
	if r := call(t, c, "broken", "x"); !r.IsError || !strings.Contains(r.Text, "was not run") {
		t.Errorf("third failing call answered %+v, want a refusal", r)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("the tools ran %d times, want 3", n)
	}
}

func TestSessionsKeepOneGuardPerSession(t *testing.T) {
	var runs, made atomic.Int32
	sessions := mcpgo.PerSession(func(server.ClientSession) (*guard.Guard, error) {
		made.Add(1)
		return guard.New(guard.Config{Rules: detector.Defaults()})
	})
	hooks := new(server.Hooks)
	sessions.Hooks(hooks)
	s := newServer(&runs, server.WithHooks(hooks), server.WithToolHandlerMiddleware(sessions.Middleware()))
	a, b := connect(t, s), connect(t, s)

	// Two identical calls in each session: with one guard for both, b's
	// first call would be the third identical one.
	for _, c := range []*client.Client{a, b, a, b} {
		if r := call(t, c, "search", "q"); r.IsError {
			t.Fatalf("call refused: %q", r.Text)
		}
	}
	if r := call(t, a, "search", "q"); !r.IsError {
		t.Errorf("session a's third call was not refused: %+v", r)
	}
	if n, m := runs.Load(), made.Load(); n != 4 || m != 2 {
		t.Errorf("the tool ran %d times and %d guards were made, want 4 and 2", n, m)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := sessions.Len(); n != 1 {
		t.Errorf("%d sessions hold a guard after one of two ended, want 1", n)
	}
}

func TestSessionsFactoryError(t *testing.T) {
	var runs atomic.Int32
	sessions := mcpgo.PerSession(func(server.ClientSession) (*guard.Guard, error) {
		return nil, errors.New("no guard today")
	})
	s := newServer(&runs, server.WithToolHandlerMiddleware(sessions.Middleware()))
	c := connect(t, s)
	if _, err := callErr(c, "search", "q"); err == nil || !strings.Contains(err.Error(), "no guard today") {
		t.Errorf("CallTool error = %v, want the factory's error", err)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the tool ran %d times without a guard, want 0", n)
	}
}

func TestRefusalWithoutFeedback(t *testing.T) {
	res := mcpgo.Refusal(guard.Decision{Reason: guard.Reason("custom"), Code: "CUSTOM"})
	if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "not run") {
		t.Errorf("Refusal = %+v", res)
	}
}

// Calls made at the same moment see each other: while two identical calls
// are still running, a third is refused.
func TestConcurrentCallsSeeEachOther(t *testing.T) {
	var started atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	g := newGuard(t)
	s := server.NewMCPServer("slow-server", "1.0.0", server.WithToolCapabilities(true), server.WithToolHandlerMiddleware(mcpgo.Middleware(g)))
	s.AddTool(mcp.NewTool("slow", mcp.WithString("query")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started.Add(1)
			<-release
			return mcp.NewToolResultText("done"), nil
		})
	c := connect(t, s)

	results := make(chan callResult, 3)
	for range 3 {
		go func() {
			r, err := callErr(c, "slow", "q")
			if err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	select {
	case r := <-results:
		if !r.IsError {
			t.Errorf("the first call to end was not refused: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no call was refused while two were running")
	}
	deadline := time.Now().Add(5 * time.Second)
	for started.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := started.Load(); n != 2 {
		t.Errorf("%d calls running, want 2", n)
	}
	unblock()
	for range 2 {
		if r := <-results; r.IsError {
			t.Errorf("an allowed call failed: %+v", r)
		}
	}
	if n, sum := started.Load(), summary(t, g); n != 2 || sum.Steps != 3 || sum.ToolCalls != 2 {
		t.Errorf("the tool ran %d times and %d steps, %d calls were recorded, want 2, 3 (2 calls and a refusal) and 2", n, sum.Steps, sum.ToolCalls)
	}
}

// TestRefusalText: a refusal is an error result with the decision's
// feedback, and guard's plain sentence when a custom feedback left it empty.
func TestRefusalText(t *testing.T) {
	for _, tt := range []struct{ feedback, want string }{
		{"Try another query.", "Try another query."},
		{"", (&guard.RefusedError{}).Error()},
	} {
		res := mcpgo.Refusal(guard.Decision{Feedback: tt.feedback})
		text, ok := res.Content[0].(mcp.TextContent)
		if !res.IsError || len(res.Content) != 1 || !ok || text.Text != tt.want {
			t.Errorf("Refusal(feedback %q) = %+v, want an error result with %q", tt.feedback, res, tt.want)
		}
	}
}
