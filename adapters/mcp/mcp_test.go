package mcp_test

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
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	lgmcp "github.com/loopguard/loopguard/adapters/mcp"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

type searchIn struct {
	Query string `json:"query"`
}

// newServer returns a server with a "search" tool whose body counts its
// runs, and a "broken" tool that always answers with an error result.
func newServer(t *testing.T, runs *atomic.Int32) *sdk.Server {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "test-server", Version: "v0.0.1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "search", Description: "searches"},
		func(_ context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			runs.Add(1)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no results for " + in.Query}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "broken", Description: "fails"},
		func(context.Context, *sdk.CallToolRequest, searchIn) (*sdk.CallToolResult, any, error) {
			runs.Add(1)
			return nil, nil, errors.New("backend down")
		})
	return s
}

// connect connects a new client to s over the SDK's in-memory transport.
func connect(t *testing.T, s *sdk.Server, c *sdk.Client) (*sdk.ServerSession, *sdk.ClientSession) {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		c = sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0.0.1"}, nil)
	}
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return ss, cs
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

// callResult is what the tests compare of a tool result.
type callResult struct {
	IsError bool
	Text    string
}

func call(t *testing.T, cs *sdk.ClientSession, tool, query string) callResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"query": query}})
	if err != nil {
		t.Fatalf("CallTool(%s, %q): %v", tool, query, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return callResult{IsError: res.IsError, Text: strings.Join(texts, "\n")}
}

// wantRefusal returns the feedback the guard gives for a third identical
// call, computed by a twin guard that recorded two.
func wantRefusal(t *testing.T, tool string, args string) string {
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

func TestServerRefusesThirdIdenticalCall(t *testing.T) {
	var runs atomic.Int32
	s := newServer(t, &runs)
	g := newGuard(t)
	s.AddReceivingMiddleware(lgmcp.Middleware(g))
	_, cs := connect(t, s, nil)

	var got []callResult
	for range 3 {
		got = append(got, call(t, cs, "search", "go mcp"))
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
	if !strings.Contains(got[2].Text, "`search`") {
		t.Errorf("feedback %q does not name the tool", got[2].Text)
	}
	// The refused call did not run: it is a step of its own that holds
	// only the refusal. Another query runs.
	if sum := summary(t, g); sum.Steps != 3 || sum.ToolCalls != 2 {
		t.Errorf("summary: %d steps, %d calls; want 3, 2", sum.Steps, sum.ToolCalls)
	}
	if r := call(t, cs, "search", "something else"); r.IsError {
		t.Errorf("a new query was refused: %q", r.Text)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("the tool body ran %d times, want 3", n)
	}
}

func TestServerRecordsErrorsAsFailedCalls(t *testing.T) {
	var runs atomic.Int32
	s := newServer(t, &runs)
	g := newGuard(t)
	s.AddReceivingMiddleware(lgmcp.Middleware(g))
	_, cs := connect(t, s, nil)

	// A tool the server does not have is a protocol error: it fails.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "missing"}); err == nil {
		t.Fatal("calling a missing tool did not fail")
	}
	r := call(t, cs, "broken", "x")
	if !r.IsError || !strings.Contains(r.Text, "backend down") {
		t.Fatalf("broken tool answered %+v", r)
	}
	sum := summary(t, g)
	if sum.Steps != 2 || sum.FailedToolCalls != 2 {
		t.Errorf("summary: %d steps, %d failed calls; want 2, 2", sum.Steps, sum.FailedToolCalls)
	}
	// Failed calls repeat like any other: the third is refused.
	call(t, cs, "broken", "x")
	if r := call(t, cs, "broken", "x"); !r.IsError || !strings.Contains(r.Text, "was not run") {
		t.Errorf("third failing call answered %+v, want a refusal", r)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the broken tool ran %d times, want 2", n)
	}
}

func TestSessionsKeepOneGuardPerSession(t *testing.T) {
	var runs atomic.Int32
	s := newServer(t, &runs)
	var made atomic.Int32
	sessions := lgmcp.PerSession(func(*sdk.ServerSession) (*guard.Guard, error) {
		made.Add(1)
		return guard.New(guard.Config{Rules: detector.Defaults()})
	})
	s.AddReceivingMiddleware(sessions.Middleware())
	ssA, csA := connect(t, s, nil)
	_, csB := connect(t, s, nil)

	// Two identical calls in each session: with one guard for both, B's
	// first call would be the third identical one.
	for _, cs := range []*sdk.ClientSession{csA, csB, csA, csB} {
		if r := call(t, cs, "search", "q"); r.IsError {
			t.Fatalf("call refused: %q", r.Text)
		}
	}
	if r := call(t, csA, "search", "q"); !r.IsError {
		t.Errorf("session A's third call was not refused: %+v", r)
	}
	if n := runs.Load(); n != 4 {
		t.Errorf("the tool body ran %d times, want 4", n)
	}
	if n := made.Load(); n != 2 {
		t.Errorf("the factory made %d guards, want 2", n)
	}
	gA, err := sessions.Guard(ssA)
	if err != nil || summary(t, gA).Steps != 3 || summary(t, gA).ToolCalls != 2 {
		t.Errorf("session A's guard: %v, err %v; want 3 steps (2 calls and a refusal)", summary(t, gA), err)
	}

	// A session that ends drops its guard.
	if err := csA.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for sessions.Len() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := sessions.Len(); n != 1 {
		t.Errorf("%d sessions hold a guard after one of two ended, want 1", n)
	}
}

func TestSessionsFactoryError(t *testing.T) {
	var runs atomic.Int32
	s := newServer(t, &runs)
	sessions := lgmcp.PerSession(func(*sdk.ServerSession) (*guard.Guard, error) {
		return nil, errors.New("no guard today")
	})
	s.AddReceivingMiddleware(sessions.Middleware())
	_, cs := connect(t, s, nil)
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "q"}})
	if err == nil || !strings.Contains(err.Error(), "no guard today") {
		t.Errorf("CallTool error = %v, want the factory's error", err)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the tool ran %d times without a guard, want 0", n)
	}
}

func TestClientMiddlewareNeverSendsRefusedCall(t *testing.T) {
	var runs atomic.Int32
	s := newServer(t, &runs)
	var sent atomic.Int32
	countCalls := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				sent.Add(1)
			}
			return next(ctx, method, req)
		}
	}
	s.AddReceivingMiddleware(countCalls)
	g := newGuard(t)
	c := sdk.NewClient(&sdk.Implementation{Name: "guarded-client", Version: "v0.0.1"}, nil)
	c.AddSendingMiddleware(lgmcp.ClientMiddleware(g))
	_, cs := connect(t, s, c)

	var got []callResult
	for range 3 {
		got = append(got, call(t, cs, "search", "loop"))
	}
	want := []callResult{
		{Text: "no results for loop"},
		{Text: "no results for loop"},
		{IsError: true, Text: wantRefusal(t, "search", `{"query":"loop"}`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n, m := runs.Load(), sent.Load(); n != 2 || m != 2 {
		t.Errorf("the server got %d calls and ran %d, want 2 and 2", m, n)
	}
}

func TestRefusalWithoutFeedback(t *testing.T) {
	res := lgmcp.Refusal(guard.Decision{Reason: guard.Reason("custom"), Code: "CUSTOM"})
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("Refusal = %+v", res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "not run") {
		t.Errorf("refusal text %q does not say the call was not run", text)
	}
}

// Calls made at the same moment see each other: while two identical calls
// are still running, a third is refused.
func TestConcurrentCallsSeeEachOther(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "slow-server", Version: "v0.0.1"}, nil)
	var started atomic.Int32
	release := make(chan struct{})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "waits"},
		func(context.Context, *sdk.CallToolRequest, searchIn) (*sdk.CallToolResult, any, error) {
			started.Add(1)
			<-release
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
		})
	g := newGuard(t)
	s.AddReceivingMiddleware(lgmcp.Middleware(g))
	_, cs := connect(t, s, nil)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the session closes, even when the test fails

	results := make(chan callResult, 3)
	for range 3 {
		go func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{"query": "q"}})
			if err != nil {
				t.Error(err)
				results <- callResult{}
				return
			}
			results <- callResult{IsError: res.IsError}
		}()
	}
	// The refusal comes back while the two others still run.
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
	if n := started.Load(); n != 2 {
		t.Errorf("the tool ran %d times, want 2", n)
	}
	if sum := summary(t, g); sum.Steps != 3 || sum.ToolCalls != 2 {
		t.Errorf("%d steps and %d calls recorded, want 3 (2 calls and a refusal) and 2", sum.Steps, sum.ToolCalls)
	}
}

// TestRefusalText: a refusal is an error result with the decision's
// feedback, and guard's plain sentence when a custom feedback left it empty.
func TestRefusalText(t *testing.T) {
	for _, tt := range []struct{ feedback, want string }{
		{"Try another query.", "Try another query."},
		{"", (&guard.RefusedError{}).Error()},
	} {
		res := lgmcp.Refusal(guard.Decision{Feedback: tt.feedback})
		if !res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != tt.want {
			t.Errorf("Refusal(feedback %q) = %+v, want an error result with %q", tt.feedback, res, tt.want)
		}
	}
}
