package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// A KeyFunc names the run a tools/call belongs to: calls with one key share
// one guard, whichever session, connection or replica they come through. It
// returns an error for a call it cannot key; that call does not run, and is
// answered with an error result that the model can read (the error goes to
// KeyedOptions.OnError).
type KeyFunc func(ctx context.Context, req *sdk.CallToolRequest) (string, error)

// ErrNoKey is returned (wrapped) by the key functions of this package for a
// call that does not carry what they key by.
var ErrNoKey = hook.ErrNoKey

// SessionKey keys calls by their session's ID. A session without an ID (a
// stateless streamable HTTP handler, whose every request is a session of its
// own; stdio; an in-memory transport) is an error, never one guard shared by
// every client: key such servers by a header or by the authenticated user.
func SessionKey(_ context.Context, req *sdk.CallToolRequest) (string, error) {
	if req == nil || req.Session == nil || req.Session.ID() == "" {
		return "", fmt.Errorf("%w: the session has no ID (use HeaderKey or UserKey)", ErrNoKey)
	}
	return "session:" + req.Session.ID(), nil
}

// HeaderKey keys calls by the HTTP header name of their request, such as a
// run ID that the agent sends ("X-Run-Id"). A call without it is an error.
func HeaderKey(name string) KeyFunc {
	return func(_ context.Context, req *sdk.CallToolRequest) (string, error) {
		var v string
		if req != nil && req.Extra != nil {
			v = req.Extra.Header.Get(name)
		}
		if v == "" {
			return "", fmt.Errorf("%w: no %s header", ErrNoKey, name)
		}
		return "header:" + name + ":" + v, nil
	}
}

// UserKey keys calls by the authenticated user: the UserID that the server's
// token verifier set (auth.TokenInfo). A call without one is an error.
func UserKey(_ context.Context, req *sdk.CallToolRequest) (string, error) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
		return "", fmt.Errorf("%w: no authenticated user", ErrNoKey)
	}
	return "user:" + req.Extra.TokenInfo.UserID, nil
}

// KeyedOptions tune [NewKeyed] (the fields are documented in
// [hook.KeyedOptions]). The zero value keys by session ([SessionKey]), with
// the server defaults, in this process's memory.
type KeyedOptions = hook.KeyedOptions[*sdk.CallToolRequest]

// Keyed guards the tools/call requests of a server with one run per key,
// kept in a [github.com/loopguard/loopguard/snapshot.Store]: the guard of a
// call is its run's, Runs().Guard(key), used as [Middleware] uses its guard.
type Keyed struct {
	*hook.Keyed[*sdk.CallToolRequest]
}

// ServerDefaults returns the configuration of a server's guards when it
// names none ([hook.ServerDefaults]): detector.Defaults() without the step
// limit, which is a limit on an agent's run, not on a server session.
func ServerDefaults() guard.Config { return hook.ServerDefaults() }

// NewKeyed returns Keyed guards with these options.
func NewKeyed(o KeyedOptions) (*Keyed, error) {
	k, err := hook.NewKeyed(o, SessionKey)
	if err != nil {
		return nil, err
	}
	return &Keyed{k}, nil
}

// Middleware returns the receiving middleware for an mcp.Server.
func (k *Keyed) Middleware() sdk.Middleware { return serverMiddleware(k.Guard) }
