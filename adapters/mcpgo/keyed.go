package mcpgo

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// A KeyFunc names the run a tool call belongs to: calls with one key share
// one guard, whichever session, connection or replica they come through. It
// returns an error for a call it cannot key; that call does not run, and is
// answered with an error result that the model can read (the error goes to
// KeyedOptions.OnError).
type KeyFunc func(ctx context.Context, req mcp.CallToolRequest) (string, error)

// ErrNoKey is returned (wrapped) by the key functions of this package for a
// call that does not carry what they key by.
var ErrNoKey = errors.New("mcpgo: the call carries nothing to key its guard by")

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
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil || cs.SessionID() == "" {
		return "", fmt.Errorf("%w: the session has no ID (use HeaderKey, or a KeyFunc of your own)", ErrNoKey)
	}
	return "session:" + cs.SessionID(), nil
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

// KeyedOptions tune [NewKeyed]. The zero value keys by session, with the
// server defaults, in this process's memory.
type KeyedOptions struct {
	// Key names the run of each call; nil means SessionKey.
	Key KeyFunc

	// Guards makes the runs' guards (a detector.Config is one); nil means
	// ServerDefaults.
	Guards snapshot.Factory

	// Store keeps the runs; nil keeps them in this process's memory. Give
	// every replica of a server the same shared store (such as
	// stores/redis) and the same key function, and each run has one guard
	// whichever replica serves its calls.
	Store snapshot.Store

	// Runs tunes how runs are kept: the policy when the store fails, TTLs
	// (set one: keys that stop being used are otherwise kept), signing.
	Runs snapshot.Options

	// OnError, when set, is told of the errors of the store and of the key
	// function (the answer to the call has been given already, following
	// the policy).
	OnError func(ctx context.Context, key string, err error)
}

// Keyed guards the tool calls of a server with one run per key, kept in a
// [snapshot.Store]. Each call is asked of the run's latest state before it
// runs and recorded after it, as with [Sessions].
type Keyed struct {
	runs    *snapshot.Runs
	key     KeyFunc
	onError func(context.Context, string, error)
}

// ServerDefaults returns the guards a server gets when it names none:
// detector.Defaults() without the step limit (the options document
// {"maxSteps": false}). A server's run (a session, a user, a run ID) has no
// natural length, and a limit of 150 steps would refuse every call of a long
// session after the 150th; configure one (with maxSteps in the options
// document) where you want it.
func ServerDefaults() detector.Config {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": false}`))
	if err != nil {
		panic("loopguard: the server defaults do not build: " + err.Error()) // a constant document
	}
	return cfg
}

// NewKeyed returns Keyed guards with these options.
func NewKeyed(o KeyedOptions) (*Keyed, error) {
	if o.Key == nil {
		o.Key = SessionKey
	}
	if o.Guards == nil {
		o.Guards = ServerDefaults()
	}
	if o.Store == nil {
		o.Store = snapshot.NewMemory(nil)
	}
	runs, err := snapshot.New(o.Store, o.Guards, o.Runs)
	if err != nil {
		return nil, err
	}
	return &Keyed{runs: runs, key: o.Key, onError: o.OnError}, nil
}

// Runs returns the runs, so that the server's own code can read a run's
// summary.
func (k *Keyed) Runs() *snapshot.Runs { return k.runs }

// Middleware returns the tool handler middleware.
func (k *Keyed) Middleware() server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			key, err := k.key(ctx, req)
			if err != nil {
				k.report(ctx, "", err)
				return noKey(), nil
			}
			call := guard.ToolCall{Name: req.Params.Name, Args: arguments(req.Params)}
			c, d, err := k.runs.StartCall(ctx, key, call)
			if err == nil && c != nil {
				err = c.Err() // the store's, when the policy allowed the call
			}
			if err != nil {
				k.report(ctx, key, err)
			}
			if !d.Allow {
				return Refusal(d), nil
			}
			return settle(ctx, call, func() (*mcp.CallToolResult, error) { return next(ctx, req) },
				func(result any, err error) {
					if _, ferr := c.Finish(context.WithoutCancel(ctx), result, err); ferr != nil {
						k.report(ctx, key, ferr)
					}
				}, c.Abandon)
		}
	}
}

func (k *Keyed) report(ctx context.Context, key string, err error) {
	if k.onError != nil {
		k.onError(ctx, key, err)
	}
}
