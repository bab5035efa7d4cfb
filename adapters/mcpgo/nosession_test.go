package mcpgo_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/adapters/mcpgo"
	"github.com/loopguard/loopguard/guard"
)

// statelessClient serves s over a stateless streamable HTTP server on
// loopback, where sessions have no ID, and returns an initialised client.
func statelessClient(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateLess(true)))
	t.Cleanup(srv.Close)
	c, err := client.NewStreamableHttpClient(srv.URL + "/mcp")
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

func TestNoSessionIDIsAnErrorNotASharedGuard(t *testing.T) {
	// Two clients of a stateless server: before, both shared the guard of
	// session "", so the second client's first call was refused as the
	// third identical one.
	sessions := mcpgo.PerSession(func(server.ClientSession) (*guard.Guard, error) { return newGuard(t), nil })
	keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, mw := range map[string]server.ToolHandlerMiddleware{"PerSession": sessions.Middleware(), "Keyed": keyed.Middleware()} {
		t.Run(name, func(t *testing.T) {
			var runs atomic.Int32
			s := newServer(&runs, server.WithToolHandlerMiddleware(mw))
			a, b := statelessClient(t, s), statelessClient(t, s)
			for _, c := range []*client.Client{a, a, b} {
				_, err := callErr(c, "search", "q")
				if err == nil || !strings.Contains(err.Error(), "no ID") {
					t.Errorf("call without a session ID: %v, want an error saying the session has no ID", err)
				}
			}
			if n := runs.Load(); n != 0 {
				t.Errorf("the tool ran %d times, want 0", n)
			}
			if n := sessions.Len(); n != 0 {
				t.Errorf("%d guards made, want 0", n)
			}
		})
	}
}

func TestKeyedByHeader(t *testing.T) {
	// The same stateless server keyed by a header: each run has its guard.
	keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{Key: mcpgo.HeaderKey("X-Run-Id")})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	s := newServer(&runs, server.WithToolHandlerMiddleware(keyed.Middleware()))
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateLess(true)))
	defer srv.Close()
	ctx := context.Background()
	clients := map[string]*client.Client{}
	for _, run := range []string{"a", "b"} {
		c, err := client.NewStreamableHttpClient(srv.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"X-Run-Id": run}))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var init mcp.InitializeRequest
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		clients[run] = c
	}
	for _, run := range []string{"a", "b", "a", "b"} {
		if r := call(t, clients[run], "search", "q"); r.IsError {
			t.Fatalf("run %s: refused %q", run, r.Text)
		}
	}
	if r := call(t, clients["a"], "search", "q"); !r.IsError {
		t.Errorf("run a's third identical call was not refused: %+v", r)
	}
	if n := runs.Load(); n != 4 {
		t.Errorf("the tool ran %d times, want 4", n)
	}
}
