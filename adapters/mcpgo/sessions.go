package mcpgo

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// Sessions keeps one guard per client session of a server, so that one
// client's calls never count against another's. A session's guard is made by
// the factory the first time the session calls a tool. Create it with
// [PerSession]; its methods are safe for concurrent use.
//
// To drop a session's guard when the session ends, pass the server's hooks to
// [Sessions.Hooks] (or call [Sessions.Forget] yourself): otherwise every
// session's guard is kept for the life of the server.
//
// A call whose context carries no session (server.ClientSessionFromContext
// returns nil), or whose session has an empty ID (a stateless streamable HTTP
// server; streamable HTTP under protocol 2026-07-28, which has no sessions:
// see [SessionKey]), does not run: such calls cannot be told apart by
// client, and one guard for all of them would refuse one client's calls for
// another's. It is answered with an error result the model can read. Key
// them with [Keyed] and a header or a key function of your own.
type Sessions struct {
	newGuard func(server.ClientSession) (*guard.Guard, error)
	guards   *hook.Sessions[string] // by session ID
}

// PerSession returns Sessions that make each session's guard with newGuard,
// for example:
//
//	sessions := mcpgo.PerSession(func(server.ClientSession) (*guard.Guard, error) {
//		return guard.New(cfg) // cfg, err := detector.FromJSON(doc), read once
//	})
//
// One guard.Config serves every session's guard: each guard.New makes a
// run of its own from it.
//
// newGuard is called at most once per session ID, outside any lock. An error
// fails that session's tool calls with the error (the tool does not run),
// and newGuard is not asked again for that session. A nil guard with a nil
// error lets the session's calls through unguarded.
func PerSession(newGuard func(server.ClientSession) (*guard.Guard, error)) *Sessions {
	return &Sessions{newGuard: newGuard, guards: hook.NewSessions[string](nil)}
}

// Middleware returns the tool handler middleware that guards each session's
// calls with that session's guard.
func (s *Sessions) Middleware() server.ToolHandlerMiddleware {
	return middleware(func(ctx context.Context, _ mcp.CallToolRequest) (*guard.Guard, error) {
		return s.Guard(server.ClientSessionFromContext(ctx))
	})
}

// Guard returns the guard of session cs, making it if the session has none
// yet, so that the server's own code can read its verdicts and summary. A
// nil session, or one with an empty ID, is an [ErrNoKey].
func (s *Sessions) Guard(cs server.ClientSession) (*guard.Guard, error) {
	id, err := sessionID(cs)
	if err != nil {
		return nil, err
	}
	return s.guards.Guard(id, func() (*guard.Guard, error) { return s.newGuard(cs) })
}

// Hooks adds to h a hook that drops a session's guard when the session
// unregisters. Pass the same h to the server with server.WithHooks.
func (s *Sessions) Hooks(h *server.Hooks) {
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.Forget(cs.SessionID())
	})
}

// Forget drops the guard of the session with this ID. A later call from that
// session gets a new guard.
func (s *Sessions) Forget(sessionID string) { s.guards.Forget(sessionID) }

// Len returns the number of sessions that hold a guard.
func (s *Sessions) Len() int { return s.guards.Len() }
