package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// A KeyFunc names the run a tools/call belongs to: calls with one key share
// one guard, whichever session, connection or replica they come through. It
// returns an error for a call it cannot key; that call does not run, and is
// answered with an error result that the model can read (the error goes to
// KeyedOptions.OnError).
type KeyFunc func(ctx context.Context, req *sdk.CallToolRequest) (string, error)

// ErrNoKey is returned (wrapped) by the key functions of this package for a
// call that does not carry what they key by.
var ErrNoKey = errors.New("mcp: the call carries nothing to key its guard by")

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

// Keyed guards the tools/call requests of a server with one run per key,
// kept in a [snapshot.Store]. Each call is asked of the run's latest state
// before it runs and recorded after it, as with [Sessions].
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

// Middleware returns the receiving middleware for an mcp.Server.
func (k *Keyed) Middleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			ctreq, ok := req.(*sdk.CallToolRequest)
			if method != methodCallTool || !ok || ctreq.Params == nil {
				return next(ctx, method, req)
			}
			key, err := k.key(ctx, ctreq)
			if err != nil {
				k.report(ctx, "", err)
				return noKey(), nil
			}
			call := guard.ToolCall{Name: ctreq.Params.Name, Args: rawArgs(ctreq.Params.Arguments)}
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
			return settle(ctx, call, func() (sdk.Result, error) { return next(ctx, method, req) },
				func(result any, err error) {
					if _, ferr := c.Finish(context.WithoutCancel(ctx), result, err); ferr != nil {
						k.report(ctx, key, ferr)
					}
				}, c.Abandon)
		}
	}
}

// noKeyText answers a call that the key function could not key.
const noKeyText = "That call was not run: the server could not tell which run it belongs to, so its loop guard could not check it. Calling it again will not help; go on without it or answer with what you have."

// noKey is the tool result that answers a call the key function could not
// key: an error result the model can read, which never quotes the error.
func noKey() *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: noKeyText}}}
}

func (k *Keyed) report(ctx context.Context, key string, err error) {
	if k.onError != nil {
		k.onError(ctx, key, err)
	}
}
