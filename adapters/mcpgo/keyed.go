package mcpgo

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// A KeyFunc names the run a tool call belongs to: calls with one key share
// one guard, whichever session, connection or replica they come through. It
// returns an error for a call it cannot key; that call does not run, and is
// answered with an error result that the model can read (the error goes to
// KeyedOptions.OnError).
type KeyFunc func(ctx context.Context, req mcp.CallToolRequest) (string, error)

// ErrNoKey is returned (wrapped) by the key functions of this package for a
// call that does not carry what they key by.
var ErrNoKey = hook.ErrNoKey

// SessionKey keys calls by their session's ID. A call without a session, or
// whose session has an empty ID, is an error, never one guard shared by every
// client: key such servers by a header, or by what your authentication puts
// in the context (a KeyFunc of your own).
//
// Which sessions have an ID depends on the transport and on the protocol
// revision. Protocol 2026-07-28, which mcp-go's clients negotiate by default,
// removed sessions from streamable HTTP: even a stateful
// server.NewStreamableHTTPServer serves each such request in an ephemeral
// session whose ID is empty. stdio ("stdio"), in-process and SSE sessions
// keep an ID under every revision. To key a streamable HTTP server by
// session, advertise only the revisions that have sessions; clients then
// negotiate one of them:
//
//	server.NewStreamableHTTPServer(s,
//		server.WithStreamableHTTPProtocolVersions(mcp.LegacyProtocolVersions()...))
func SessionKey(ctx context.Context, _ mcp.CallToolRequest) (string, error) {
	id, err := sessionID(server.ClientSessionFromContext(ctx))
	if err != nil {
		return "", err
	}
	return "session:" + id, nil
}

// sessionID returns the ID of session cs, or an ErrNoKey.
func sessionID(cs server.ClientSession) (string, error) {
	if cs == nil || cs.SessionID() == "" {
		return "", fmt.Errorf("%w: the session has no ID (use Keyed with HeaderKey, or a KeyFunc of your own)", ErrNoKey)
	}
	return cs.SessionID(), nil
}

// HeaderKey keys calls by the HTTP header name of their request, such as a
// run ID that the agent sends ("X-Run-Id"). A call without it is an error.
func HeaderKey(name string) KeyFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (string, error) {
		v := req.Header.Get(name)
		if v == "" {
			return "", fmt.Errorf("%w: no %s header", ErrNoKey, name)
		}
		return "header:" + name + ":" + v, nil
	}
}

// KeyedOptions tune [NewKeyed] (the fields are documented in
// [hook.KeyedOptions]). The zero value keys by session ([SessionKey]), with
// the server defaults, in this process's memory.
type KeyedOptions = hook.KeyedOptions[mcp.CallToolRequest]

// Keyed guards the tool calls of a server with one run per key, kept in a
// [github.com/loopguard/loopguard/snapshot.Store]: the guard of a call is
// its run's, Runs().Guard(key), used as [Middleware] uses its guard.
type Keyed struct {
	*hook.Keyed[mcp.CallToolRequest]
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

// Middleware returns the tool handler middleware.
func (k *Keyed) Middleware() server.ToolHandlerMiddleware { return middleware(k.Guard) }
