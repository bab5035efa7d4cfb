package replicas_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	lgmcp "github.com/loopguard/loopguard/adapters/mcp"
	"github.com/loopguard/loopguard/snapshot"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/loopguard/loopguard/stores/redis/redistest"
)

// sequence is what the client sends, in order: the n-th call goes to replica
// n mod 3.
var sequence = []struct {
	run, query string
	refused    bool
}{
	{"run-1", "x", false}, // replica 0
	{"run-1", "x", false}, // replica 1
	{"run-1", "x", true},  // replica 2: the third identical call of run-1
	{"run-2", "x", false}, // replica 0: another run, its first call
	{"run-1", "y", false}, // replica 1
	{"run-1", "x", false}, // replica 2: the repeat was broken by y
	{"run-2", "x", false}, // replica 0
	{"run-2", "x", true},  // replica 1: run-2's third
	{"run-1", "x", false}, // replica 2
	{"run-1", "x", true},  // replica 0: run-1's third x in a row since y
}

// sequenceRan is exactly the calls of sequence that run.
var sequenceRan = []ran{{0, "run-1", "x"}, {1, "run-1", "x"}, {0, "run-2", "x"}, {1, "run-1", "y"},
	{2, "run-1", "x"}, {0, "run-2", "x"}, {2, "run-1", "x"}}

// ran is a tool call that ran: which replica, which run, which query.
type ran struct {
	Replica int
	Run     string
	Query   string
}

// replica starts one server replica on loopback HTTP (stateless streamable
// HTTP, so any replica can serve any call), with its own Keyed guards (its
// own cache) on store, keyed by the X-Run-Id header.
func replica(t *testing.T, i int, store snapshot.Store, log *[]ran, mu *sync.Mutex) *httptest.Server {
	t.Helper()
	keyed, err := lgmcp.NewKeyed(lgmcp.KeyedOptions{Key: lgmcp.HeaderKey("X-Run-Id"), Store: store,
		OnError: func(key string, err error) { t.Errorf("replica %d, %s: %v", i, key, err) }})
	if err != nil {
		t.Fatal(err)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "replica", Version: "v0.0.1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "search"},
		func(_ context.Context, req *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			mu.Lock()
			*log = append(*log, ran{Replica: i, Run: req.Extra.Header.Get("X-Run-Id"), Query: in.Query})
			mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no results for " + in.Query}}}, nil, nil
		})
	s.AddReceivingMiddleware(keyed.Middleware())
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// roundRobin is a load balancer in the client: it sends the n-th tools/call
// to replica n mod len(replicas), everything else to the first, with the
// X-Run-Id header of the run.
type roundRobin struct {
	replicas []*url.URL
	mu       sync.Mutex
	calls    int
	run      string
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	target := rr.replicas[0]
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			rr.mu.Lock()
			target = rr.replicas[rr.calls%len(rr.replicas)]
			rr.calls++
			rr.mu.Unlock()
		}
	}
	rr.mu.Lock()
	req.Header.Set("X-Run-Id", rr.run)
	rr.mu.Unlock()
	req.URL.Scheme, req.URL.Host, req.Host = target.Scheme, target.Host, target.Host
	return http.DefaultTransport.RoundTrip(req)
}

func TestReplicasShareRunsThroughRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, false)
	var (
		mu  sync.Mutex
		log []ran
	)
	var urls []*url.URL
	for i := range 3 {
		store, err := lgredis.New(srv.Client(nil), lgredis.Options{Prefix: "mcp-replicas:"})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(replica(t, i, store, &log, &mu).URL)
		urls = append(urls, u)
	}
	rr := &roundRobin{replicas: urls, run: "run-1"}
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v0.0.1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: urls[0].String(),
		HTTPClient: &http.Client{Transport: rr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for n, s := range sequence {
		rr.mu.Lock()
		rr.run = s.run
		rr.mu.Unlock()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": s.query}})
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
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

func TestKeyedSessionKeyWithoutSession(t *testing.T) {
	// A stateless server has no session ID: keying by session is an error
	// (the call does not run), never one guard for every client.
	ctx := context.Background()
	var (
		mu  sync.Mutex
		log []ran
	)
	keyed, err := lgmcp.NewKeyed(lgmcp.KeyedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "stateless", Version: "v0.0.1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "search"},
		func(_ context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			mu.Lock()
			log = append(log, ran{Query: in.Query})
			mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
		})
	s.AddReceivingMiddleware(keyed.Middleware())
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	defer srv.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v0.0.1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	// Not run, and answered with an error result the model can read.
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	if !res.IsError || !strings.HasPrefix(text, "That call was not run") {
		t.Errorf("call on a stateless server keyed by session: %+v %q, want an error result saying the call was not run", res, text)
	}
	if len(log) != 0 {
		t.Errorf("the call ran: %v", log)
	}
}

type searchIn struct {
	Query string `json:"query"`
}
