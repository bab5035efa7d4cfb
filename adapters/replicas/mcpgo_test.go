package replicas_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/adapters/mcpgo"
	"github.com/loopguard/loopguard/snapshot"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/loopguard/loopguard/stores/redis/redistest"
)

// mcpgoReplica starts one mcp-go server replica on loopback HTTP (stateless
// streamable HTTP), with its own Keyed guards on store, keyed by X-Run-Id.
func mcpgoReplica(t *testing.T, i int, store snapshot.Store, log *[]ran, mu *sync.Mutex) *httptest.Server {
	t.Helper()
	keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{Key: mcpgo.HeaderKey("X-Run-Id"), Store: store,
		OnError: func(key string, err error) { t.Errorf("replica %d, %s: %v", i, key, err) }})
	if err != nil {
		t.Fatal(err)
	}
	s := server.NewMCPServer("replica", "1.0.0", server.WithToolCapabilities(true), server.WithToolHandlerMiddleware(keyed.Middleware()))
	s.AddTool(mcp.NewTool("search", mcp.WithString("query", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			*log = append(*log, ran{Replica: i, Run: req.Header.Get("X-Run-Id"), Query: req.GetString("query", "")})
			mu.Unlock()
			return mcp.NewToolResultText("no results"), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateLess(true)))
	t.Cleanup(srv.Close)
	return srv
}

func TestMCPGoReplicasShareRunsThroughRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, false)
	var (
		mu  sync.Mutex
		log []ran
	)
	var urls []*url.URL
	for i := range 3 {
		store, err := lgredis.New(srv.Client(nil), lgredis.Options{Prefix: "mcpgo-replicas:"})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(mcpgoReplica(t, i, store, &log, &mu).URL)
		urls = append(urls, u)
	}
	rr := &roundRobin{replicas: urls, run: "run-1"}
	c, err := client.NewStreamableHttpClient(urls[0].String()+"/mcp", transport.WithHTTPBasicClient(&http.Client{Transport: rr}))
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
	for n, s := range sequence {
		rr.mu.Lock()
		rr.run = s.run
		rr.mu.Unlock()
		var req mcp.CallToolRequest
		req.Params.Name = "search"
		req.Params.Arguments = map[string]any{"query": s.query}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if refused := res.IsError && strings.Contains(text, "not run"); refused != s.refused {
			t.Errorf("call %d (%s, %s, replica %d): refused = %v (%q), want %v", n, s.run, s.query, n%3, refused, text, s.refused)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(sequenceRan, log); diff != "" {
		t.Errorf("the calls that ran (-want +got):\n%s", diff)
	}
}
