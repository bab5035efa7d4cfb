package mcp_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	lgmcp "github.com/loopguard/loopguard/adapters/mcp"
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
	var runs atomic.Int32
	s := newServer(t, &runs)
	var reported []error
	keyed, err := lgmcp.NewKeyed(lgmcp.KeyedOptions{
		Key:     func(context.Context, *sdk.CallToolRequest) (string, error) { return "one", nil },
		Store:   downStore{},
		OnError: func(_ string, err error) { reported = append(reported, err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	s.AddReceivingMiddleware(keyed.Middleware())
	_, cs := connect(t, s, nil)
	if r := call(t, cs, "search", "q"); r.IsError {
		t.Fatalf("refused with the store down under fail-open: %s", r.Text)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if len(reported) != 2 || !errors.Is(reported[0], errDown) || !errors.Is(reported[1], errDown) {
		t.Errorf("OnError got %v, want the store's error twice (StartCall, Finish)", reported)
	}
}
