package hook

import (
	"sync"

	"github.com/loopguard/loopguard/guard"
)

// Sessions keeps one guard per session of a server, K being what tells a
// session from another (a pointer to it, its ID), so that one client's calls
// never count against another's. A session's guard is made the first time
// it is asked for, once. Its methods are safe for concurrent use.
type Sessions[K comparable] struct {
	added func(K)

	mu     sync.Mutex
	guards map[K]*sessionGuard
}

// sessionGuard is a session's guard, made once.
type sessionGuard struct {
	once sync.Once
	g    *guard.Guard // nil for no guard
	err  error
}

// NewSessions returns Sessions that call added, when not nil, with each
// session the first time it is asked for (outside any lock), for example
// to [Sessions.Forget] it when it ends.
func NewSessions[K comparable](added func(K)) *Sessions[K] {
	return &Sessions[K]{added: added, guards: make(map[K]*sessionGuard)}
}

// Guard returns the guard of session k, made with newGuard if the session
// has none yet. newGuard is called at most once per session (until it is
// forgotten), outside any lock; its error is returned for that session from
// then on, and newGuard not asked again. A nil guard with a nil error lets
// the session's calls through unguarded.
func (s *Sessions[K]) Guard(k K, newGuard func() (*guard.Guard, error)) (*guard.Guard, error) {
	s.mu.Lock()
	sg, ok := s.guards[k]
	if !ok {
		sg = new(sessionGuard)
		s.guards[k] = sg
	}
	s.mu.Unlock()
	if !ok && s.added != nil {
		s.added(k)
	}
	sg.once.Do(func() { sg.g, sg.err = newGuard() })
	if sg.err != nil {
		return nil, sg.err
	}
	return sg.g, nil
}

// Forget drops the guard of session k. A later call from that session gets
// a new guard.
func (s *Sessions[K]) Forget(k K) {
	s.mu.Lock()
	delete(s.guards, k)
	s.mu.Unlock()
}

// Len returns the number of sessions that hold a guard.
func (s *Sessions[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.guards)
}
