package mcpgo_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestNoSessionIDIsARefusalNotASharedGuard(t *testing.T) {
	// Two clients of a stateless server: before, both shared the guard of
	// session "", so the second client's first call was refused as the
	// third identical one. Then the call failed with a JSON-RPC error the
	// model could not read; now it is an error result it can.
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
				r := call(t, c, "search", "q")
				if !r.IsError || !strings.HasPrefix(r.Text, "That call was not run") {
					t.Errorf("call without a session ID: %+v, want an error result saying the call was not run", r)
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

// TestDefaultKeyUnderTheCurrentProtocol keys by default (KeyedOptions{})
// with clients that negotiate what mcp-go negotiates by default: protocol
// 2026-07-28, which has no sessions on streamable HTTP, even on a stateful
// server (each request is an ephemeral session with an empty ID). stdio
// and in-process sessions keep an ID, and a stateful HTTP server that
// advertises only the revisions with sessions makes clients negotiate one.
func TestDefaultKeyUnderTheCurrentProtocol(t *testing.T) {
	type transportCase struct {
		name    string
		connect func(t *testing.T, s *server.MCPServer) *client.Client
		keyed   bool // the default key names a run
		version string
	}
	httpClient := func(opts ...server.StreamableHTTPOption) func(*testing.T, *server.MCPServer) *client.Client {
		return func(t *testing.T, s *server.MCPServer) *client.Client {
			srv := httptest.NewServer(server.NewStreamableHTTPServer(s, opts...))
			t.Cleanup(srv.Close)
			c, err := client.NewStreamableHttpClient(srv.URL + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	cases := []transportCase{
		{"stdio", func(t *testing.T, s *server.MCPServer) *client.Client {
			cr, sw := io.Pipe()
			sr, cw := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go server.NewStdioServer(s).Listen(ctx, sr, sw)
			return client.NewClient(transport.NewIO(cr, cw, io.NopCloser(strings.NewReader(""))))
		}, true, mcp.LATEST_PROTOCOL_VERSION},
		{"in-process", func(t *testing.T, s *server.MCPServer) *client.Client {
			c, err := client.NewInProcessClient(s)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, true, mcp.LATEST_PROTOCOL_VERSION},
		{"streamable HTTP, stateful", httpClient(), false, mcp.LATEST_PROTOCOL_VERSION},
		{"streamable HTTP, stateful, revisions with sessions", httpClient(
			server.WithStreamableHTTPProtocolVersions(mcp.LegacyProtocolVersions()...)), true, mcp.LATEST_LEGACY_PROTOCOL_VERSION},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reported atomic.Int32
			keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{OnError: func(_ string, err error) {
				if errors.Is(err, mcpgo.ErrNoKey) {
					reported.Add(1)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			s := newServer(&runs, server.WithToolHandlerMiddleware(keyed.Middleware()))
			c := tc.connect(t, s)
			ctx := context.Background()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			var init mcp.InitializeRequest // mcp-go's default protocol
			init.Params.ClientInfo = mcp.Implementation{Name: "test-client", Version: "1.0.0"}
			res, err := c.Initialize(ctx, init)
			if err != nil {
				t.Fatal(err)
			}
			if res.ProtocolVersion != tc.version {
				t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, tc.version)
			}
			var got []callResult
			for range 3 {
				got = append(got, call(t, c, "search", "q"))
			}
			want := []callResult{{Text: "no results for q"}, {Text: "no results for q"},
				{IsError: true, Text: wantRefusal(t, "search", `{"query":"q"}`)}}
			wantRuns, wantReported := int32(2), int32(0)
			if !tc.keyed {
				// Nothing names the run: each call is answered with an
				// error result the model can read, and OnError is told.
				r := callResult{IsError: true, Text: got[0].Text}
				want = []callResult{r, r, r}
				wantRuns, wantReported = 0, 3
				if !strings.HasPrefix(r.Text, "That call was not run") {
					t.Errorf("answer %q does not say the call was not run", r.Text)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if runs.Load() != wantRuns || reported.Load() != wantReported {
				t.Errorf("the tool ran %d times, OnError told %d times; want %d, %d", runs.Load(), reported.Load(), wantRuns, wantReported)
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
