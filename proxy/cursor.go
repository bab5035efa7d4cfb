package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/guard"

	"github.com/loopguard/loopguard/proxy/internal/wire"
	"github.com/loopguard/loopguard/snapshot"
)

// cursorSuffix names a run's cursor in the store: the run's key with it.
const cursorSuffix = "|cursor"

// A cursor is where a run's history has been read up to. It lives in the
// store beside the run's guard, so that every replica reads each item of a
// history once: a request's new items are those after the cursor, and the
// replica that moves the cursor past them (compare-and-set) is the one that
// records their steps. It holds counts, hashes and the stop's safe text,
// never content.
type cursor struct {
	// N is the number of history items read.
	N int `json:"n"`
	// Hash is the hash of item N-1, to tell a history that goes on from
	// one that was rewritten (compacted, edited, another conversation).
	Hash uint64 `json:"h,omitempty"`
	// Last is the hash of the last model item read, so that a rewritten
	// history is read from its last model turn, once.
	Last uint64 `json:"a,omitempty"`
	// Stop is the run's stop while it holds.
	Stop *stopped `json:"stop,omitempty"`
	// Pending are the tool calls of the run's last Responses response,
	// for a next request that names it by previous_response_id (or a
	// conversation) and so holds only their outputs: their ids, names and
	// a hash of their arguments, never the arguments.
	Pending []pendingCall `json:"p,omitempty"`
}

// pendingCall is a call of a response, as a cursor keeps it.
type pendingCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is "lg:" and a hash of the arguments in canonical form, so
	// that equal arguments (in any key order or spacing) are equal.
	Args string `json:"args"`
}

// pendingOf returns the calls of a response as a cursor keeps them.
func pendingOf(calls []guard.ToolCall) []pendingCall {
	out := make([]pendingCall, 0, len(calls))
	for _, c := range calls {
		raw, _ := c.Args.(json.RawMessage)
		canon, err := canonical.Transform(raw)
		if err != nil {
			canon = raw
		}
		out = append(out, pendingCall{ID: c.ID, Name: c.Name, Args: fmt.Sprintf("lg:%016x", hash(canon))})
	}
	return out
}

// items returns the calls as Responses function_call items, to stand
// before the outputs that answer them.
func pendingItems(calls []pendingCall) [][]byte {
	out := make([][]byte, 0, len(calls))
	for _, c := range calls {
		b, _ := json.Marshal(map[string]string{"type": "function_call", "call_id": c.ID, "name": c.Name, "arguments": c.Args})
		out = append(out, b)
	}
	return out
}

// stopped is what the proxy keeps of a run's stop: enough to answer every
// later request of the run the same way, and nothing of its content.
type stopped struct {
	Code     string `json:"code"`
	Reason   string `json:"reason,omitempty"`
	Detector string `json:"detector,omitempty"`
	Feedback string `json:"feedback"`
	// Answer is the hash of the text the proxy answered the stop with, so
	// that the answer, when the agent sends it back as the model's turn,
	// is not read as one.
	Answer uint64 `json:"answer,omitempty"`
}

func hash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// advance says which items of req are new after cur, and returns the
// cursor past them. A history that goes on from cur (at least cur.N items,
// item N-1 the same) is new from N. A shorter or rewritten one is new from
// its last model item, unless that item is the one read last. A history
// without any model item that does not go on from cur is new as a whole
// (a first request).
func advance(api wire.API, cur cursor, items [][]byte) (from int, next cursor) {
	next = cur
	next.Pending = slices.Clone(cur.Pending)
	next.N = len(items)
	if len(items) > 0 {
		next.Hash = hash(items[len(items)-1])
	} else {
		next.Hash = 0
	}
	switch {
	case cur.N == 0:
		from = 0
	case len(items) >= cur.N && hash(items[cur.N-1]) == cur.Hash:
		from = cur.N
	default:
		from = 0
		for i := len(items) - 1; i >= 0; i-- {
			if api.Assistant(items[i]) {
				if hash(items[i]) == cur.Last {
					from = i + 1
				} else {
					from = i
				}
				break
			}
		}
	}
	for i := len(items) - 1; i >= from; i-- {
		if api.Assistant(items[i]) {
			next.Last = hash(items[i])
			break
		}
	}
	return from, next
}

func loadCursor(ctx context.Context, s snapshot.Store, key string) (cursor, snapshot.Version, error) {
	data, v, err := s.Load(ctx, key+cursorSuffix, 0)
	if err != nil || data == nil {
		return cursor{}, v, err
	}
	var c cursor
	if err := json.Unmarshal(data, &c); err != nil {
		return cursor{}, v, errors.Join(snapshot.ErrMalformed, err)
	}
	if c.N < 0 {
		return cursor{}, v, snapshot.ErrMalformed
	}
	return c, v, nil
}
