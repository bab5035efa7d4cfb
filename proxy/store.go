package proxy

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/loopguard/loopguard/snapshot"
)

// memStore is the store of a proxy without a shared one: a snapshot.Store
// in memory that keeps the keys of at most max runs, dropping the least
// recently used run first, so that the number of runs in memory is bounded.
// A run's guard snapshot (key K) and its cursor (key K+cursorSuffix) are
// dropped together: a cursor without its guard would only start the run
// afresh, but a guard without its cursor would count the history twice.
type memStore struct {
	mu    sync.Mutex
	max   int
	runs  map[string]*list.Element
	order list.List // of *memRun, front: most recently used
	now   func() time.Time
}

type memRun struct {
	run   string
	slots [2]*memEntry // guard, cursor
}

type memEntry struct {
	data    []byte
	v       snapshot.Version
	expires time.Time
}

func newMemStore(max int) *memStore {
	return &memStore{max: max, runs: make(map[string]*list.Element), now: time.Now}
}

func split(key string) (run string, slot int) {
	if r, ok := strings.CutSuffix(key, cursorSuffix); ok {
		return r, 1
	}
	return key, 0
}

// entry returns the live entry of key (nil when none or expired) and the
// run's list element (nil when the run holds nothing). It holds m.mu.
func (m *memStore) entry(key string) (*memEntry, *list.Element, int) {
	run, slot := split(key)
	el, ok := m.runs[run]
	if !ok {
		return nil, nil, slot
	}
	r := el.Value.(*memRun)
	e := r.slots[slot]
	if e != nil && !e.expires.IsZero() && !m.now().Before(e.expires) {
		r.slots[slot] = nil
		e = nil
	}
	if r.slots[0] == nil && r.slots[1] == nil {
		m.order.Remove(el)
		delete(m.runs, run)
		return nil, nil, slot
	}
	return e, el, slot
}

func (m *memStore) Load(ctx context.Context, key string, seen snapshot.Version) ([]byte, snapshot.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, el, _ := m.entry(key)
	if e == nil {
		return nil, 0, nil
	}
	m.order.MoveToFront(el)
	if seen != 0 && seen == e.v {
		return nil, e.v, nil
	}
	return e.data, e.v, nil
}

func (m *memStore) Save(ctx context.Context, key string, old, next snapshot.Version, data []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, el, slot := m.entry(key)
	var v snapshot.Version
	if cur != nil {
		v = cur.v
	}
	if v != old {
		return snapshot.ErrConflict
	}
	e := &memEntry{data: append([]byte(nil), data...), v: next}
	if ttl > 0 {
		e.expires = m.now().Add(ttl)
	}
	if el != nil {
		el.Value.(*memRun).slots[slot] = e
		m.order.MoveToFront(el)
		return nil
	}
	run, _ := split(key)
	r := &memRun{run: run}
	r.slots[slot] = e
	m.runs[run] = m.order.PushFront(r)
	for m.max > 0 && m.order.Len() > m.max {
		last := m.order.Back()
		m.order.Remove(last)
		delete(m.runs, last.Value.(*memRun).run)
	}
	return nil
}

// Len returns the number of runs held.
func (m *memStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}
