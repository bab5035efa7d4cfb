package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	lgmcp "github.com/loopguard/loopguard/adapters/mcp"
)

func TestKeyFuncs(t *testing.T) {
	ctx := context.Background()
	withHeader := &sdk.CallToolRequest{Extra: &sdk.RequestExtra{Header: http.Header{"X-Run-Id": {"r1"}}}}
	withUser := &sdk.CallToolRequest{Extra: &sdk.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "alice"}}}
	bare := &sdk.CallToolRequest{}
	tests := []struct {
		name string
		key  lgmcp.KeyFunc
		req  *sdk.CallToolRequest
		want string // "" for ErrNoKey
	}{
		{"header", lgmcp.HeaderKey("X-Run-Id"), withHeader, "header:X-Run-Id:r1"},
		{"header missing", lgmcp.HeaderKey("X-Run-Id"), withUser, ""},
		{"header, no extra", lgmcp.HeaderKey("X-Run-Id"), bare, ""},
		{"user", lgmcp.UserKey, withUser, "user:alice"},
		{"user missing", lgmcp.UserKey, withHeader, ""},
		{"session, none", lgmcp.SessionKey, bare, ""},
		{"nil request", lgmcp.SessionKey, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key(ctx, tt.req)
			if tt.want == "" {
				if !errors.Is(err, lgmcp.ErrNoKey) || got != "" {
					t.Errorf("= %q, %v; want ErrNoKey", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestKeyedSessionWithoutID(t *testing.T) {
	// The in-memory transport's sessions have no ID: keyed by session, a
	// call does not run, and is answered with an error result the model
	// can read (it used to be a JSON-RPC error); the error goes to OnError.
	var runs atomic.Int32
	s := newServer(t, &runs)
	var reported []error
	keyed, err := lgmcp.NewKeyed(lgmcp.KeyedOptions{OnError: func(_ string, err error) { reported = append(reported, err) }})
	if err != nil {
		t.Fatal(err)
	}
	s.AddReceivingMiddleware(keyed.Middleware())
	_, cs := connect(t, s, nil)
	r := call(t, cs, "search", "q")
	if !r.IsError || !strings.HasPrefix(r.Text, "That call was not run") {
		t.Errorf("answer = %+v, want an error result saying the call was not run", r)
	}
	if len(reported) != 1 || !errors.Is(reported[0], lgmcp.ErrNoKey) {
		t.Errorf("OnError got %v, want one ErrNoKey", reported)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the tool ran %d times, want 0", n)
	}
}

func TestServerDefaultsHaveNoStepLimit(t *testing.T) {
	// A session's 51st call is allowed: the server defaults have no
	// maxSteps (detector.Defaults() would refuse every call after the 50th).
	var runs atomic.Int32
	s := newServer(t, &runs)
	keyed, err := lgmcp.NewKeyed(lgmcp.KeyedOptions{Key: func(context.Context, *sdk.CallToolRequest) (string, error) { return "one", nil }})
	if err != nil {
		t.Fatal(err)
	}
	s.AddReceivingMiddleware(keyed.Middleware())
	_, cs := connect(t, s, nil)
	for i := range 60 {
		if r := call(t, cs, "search", fmt.Sprint(i)); r.IsError {
			t.Fatalf("call %d refused: %s", i, r.Text)
		}
	}
	if r := call(t, cs, "search", "59"); r.IsError {
		t.Fatalf("second identical call refused: %s", r.Text)
	}
	if r := call(t, cs, "search", "59"); !r.IsError {
		t.Errorf("third identical call was not refused: %+v", r)
	}
	sum, err := keyed.Runs().Guard("one").Summary(context.Background())
	if err != nil || sum.Steps != 62 {
		t.Errorf("Summary = %d steps, %v; want 62 (the refusal is a step)", sum.Steps, err)
	}
}

// TestSessionKeyOnAStatefulHandler keys by default on the SDK's stateful
// streamable HTTP handler, with a client that negotiates what the SDK
// negotiates by default: its sessions have IDs, and the third identical call
// is refused. (mcp-go's default revision, 2026-07-28, has no sessions on
// streamable HTTP; see adapters/mcpgo.)
func TestSessionKeyOnAStatefulHandler(t *testing.T) {
	var runs atomic.Int32
	s := newServer(t, &runs)
	keyed, err := lgmcp.NewKeyed(lgmcp.KeyedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.AddReceivingMiddleware(keyed.Middleware())
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer srv.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v0.0.1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.ID() == "" {
		t.Fatalf("protocol %s: the session has no ID", cs.InitializeResult().ProtocolVersion)
	}
	for i := range 3 {
		if r := call(t, cs, "search", "x"); r.IsError != (i == 2) {
			t.Errorf("call %d: %+v", i+1, r)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the tool ran %d times, want 2", n)
	}
}
