package mcp

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopguard/loopguard/guard"
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

	mu     sync.Mutex
	guards map[*sdk.ServerSession]*sessionGuard
}

// sessionGuard is a session's guard, made once.
type sessionGuard struct {
	once sync.Once
	g    *guard.Guard // nil for no guard
	err  error
}

// PerSession returns Sessions that make each session's guard with newGuard,
// for example:
//
//	lgmcp.PerSession(func(*mcp.ServerSession) (*guard.Guard, error) {
//		return cfg.New() // cfg, err := detector.FromJSON(doc), read once
//	})
//
// newGuard must return a new guard, with detectors of its own, at every
// call: a detector.Config's New does, and so does
// guard.New(detector.Defaults()...). A built-in detector that another
// session's guard holds is refused (guard.ErrDetectorInUse).
//
// newGuard is called at most once per session, outside any lock. An error
// fails that session's tools/call requests with the error (the tool does
// not run), and newGuard is not asked again for that session. A nil guard
// with a nil error lets the session's calls through unguarded.
func PerSession(newGuard func(*sdk.ServerSession) (*guard.Guard, error)) *Sessions {
	return &Sessions{newGuard: newGuard, guards: make(map[*sdk.ServerSession]*sessionGuard)}
}

// Middleware returns the receiving middleware for an mcp.Server that guards
// each session's tools/call requests with that session's guard.
func (s *Sessions) Middleware() sdk.Middleware {
	return serverMiddleware(func(_ context.Context, ss *sdk.ServerSession) (*guard.Guard, error) {
		if ss == nil {
			return nil, nil
		}
		sg := s.session(ss)
		return sg.g, sg.err
	})
}

// Guard returns the guard of session ss, making it if the session has none
// yet, so that the server's own code can read its verdicts and summary.
func (s *Sessions) Guard(ss *sdk.ServerSession) (*guard.Guard, error) {
	sg := s.session(ss)
	return sg.g, sg.err
}

// session returns the state of ss, making its guard if it has none yet.
func (s *Sessions) session(ss *sdk.ServerSession) *sessionGuard {
	s.mu.Lock()
	sg, ok := s.guards[ss]
	if !ok {
		sg = new(sessionGuard)
		s.guards[ss] = sg
		go s.forgetWhenDone(ss)
	}
	s.mu.Unlock()
	sg.once.Do(func() {
		g, err := s.newGuard(ss)
		if g != nil && err == nil {
			sg.g = g
		}
		sg.err = err
	})
	return sg
}

// forgetWhenDone drops the guard of ss once the session has ended.
func (s *Sessions) forgetWhenDone(ss *sdk.ServerSession) {
	_ = ss.Wait()
	s.mu.Lock()
	delete(s.guards, ss)
	s.mu.Unlock()
}

// Len returns the number of sessions that hold a guard.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.guards)
}

// rawArgs returns the arguments of a tools/call as JSON text, or nil when
// there are none.
func rawArgs(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// clientArgs returns the arguments a client sends. They are compared by
// their JSON encoding, as the server will see them.
func clientArgs(v any) any {
	if raw, ok := v.(json.RawMessage); ok {
		return rawArgs(raw)
	}
	return v
}
