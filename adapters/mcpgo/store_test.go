package mcpgo_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/adapters/mcpgo"
	"github.com/loopguard/loopguard/snapshot"
)

var errDown = errors.New("store down")

// downStore is a store that always fails.
type downStore struct{}

func (downStore) Load(context.Context, string, snapshot.Version) ([]byte, snapshot.Version, error) {
	return nil, 0, errDown
}

func (downStore) Save(context.Context, string, snapshot.Version, snapshot.Version, []byte, time.Duration) error {
	return errDown
}

// TestKeyedReportsStoreDownUnderFailOpen: with the store down and the
// default policy (fail open), a call runs and OnError is told of the store's
// error twice: when StartCall allowed the call (the error is on the
// snapshot.Call since StartCall's error means no call) and when Finish could
// not save it.
func TestKeyedReportsStoreDownUnderFailOpen(t *testing.T) {
	var (
		mu       sync.Mutex
		reported []error
	)
	keyed, err := mcpgo.NewKeyed(mcpgo.KeyedOptions{
		Key:   func(context.Context, mcp.CallToolRequest) (string, error) { return "one", nil },
		Store: downStore{},
		OnError: func(_ string, err error) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, err)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	c := connect(t, newServer(&runs, server.WithToolHandlerMiddleware(keyed.Middleware())))
	if r := call(t, c, "search", "q"); r.IsError {
		t.Fatalf("refused with the store down under fail-open: %s", r.Text)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 2 || !errors.Is(reported[0], errDown) || !errors.Is(reported[1], errDown) {
		t.Errorf("OnError got %v, want the store's error twice (StartCall, Finish)", reported)
	}
}
