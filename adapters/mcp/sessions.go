package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// Sessions keeps one guard per client session of a server, so that one
// client's calls never count against another's. A session's guard is made by
// the factory the first time the session calls a tool, and is dropped when
// the session ends. Create it with [PerSession]; its methods are safe for
// concurrent use.
//
// A stateless transport (such as a stateless streamable HTTP handler) makes
// a session per request, so a guard per session would never refuse
// anything; and a server with several replicas has a session's calls served
// by any of them. There, use [Keyed] with a header or the authenticated user
// as the key, on a store the replicas share.
type Sessions struct {
	newGuard func(*sdk.ServerSession) (*guard.Guard, error)
	guards   *hook.Sessions[*sdk.ServerSession]
}

// PerSession returns Sessions that make each session's guard with newGuard,
// for example:
//
//	lgmcp.PerSession(func(*mcp.ServerSession) (*guard.Guard, error) {
//		return guard.New(cfg) // cfg, err := detector.FromJSON(doc), read once
//	})
//
// One guard.Config serves every session's guard: each guard.New makes a
// run of its own from it.
//
// newGuard is called at most once per session, outside any lock. An error
// fails that session's tools/call requests with the error (the tool does
// not run), and newGuard is not asked again for that session. A nil guard
// with a nil error lets the session's calls through unguarded.
func PerSession(newGuard func(*sdk.ServerSession) (*guard.Guard, error)) *Sessions {
	s := &Sessions{newGuard: newGuard}
	s.guards = hook.NewSessions(func(ss *sdk.ServerSession) {
		go func() { // drop the guard once the session has ended
			_ = ss.Wait()
			s.guards.Forget(ss)
		}()
	})
	return s
}

// Middleware returns the receiving middleware for an mcp.Server that guards
// each session's tools/call requests with that session's guard.
func (s *Sessions) Middleware() sdk.Middleware {
	return serverMiddleware(func(_ context.Context, req *sdk.CallToolRequest) (*guard.Guard, error) {
		if req.Session == nil {
			return nil, nil
		}
		return s.Guard(req.Session)
	})
}

// Guard returns the guard of session ss, making it if the session has none
// yet, so that the server's own code can read its verdicts and summary.
func (s *Sessions) Guard(ss *sdk.ServerSession) (*guard.Guard, error) {
	return s.guards.Guard(ss, func() (*guard.Guard, error) { return s.newGuard(ss) })
}

// Len returns the number of sessions that hold a guard.
func (s *Sessions) Len() int { return s.guards.Len() }
