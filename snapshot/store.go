package snapshot

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A Version names one saved state of a run. Versions are opaque tokens that
// the writer chooses ([Runs] draws them at random), never reused for a key;
// zero means "no snapshot".
type Version uint64

// ErrConflict is returned by [Store.Save] when the key's version is no longer
// the one the caller read: another writer saved first. [Runs] retries it.
var ErrConflict = errors.New("snapshot: version conflict")

// ErrMalformed is returned (wrapped) by [Store.Load] when what the store
// holds under the key is not a snapshot it saved: a value of another type or
// layout (too short for its version, version 0). The store answered, so this
// is no outage: [Runs] refuses the run as it refuses a snapshot that fails
// its signature ([StateError]), whatever the policy.
var ErrMalformed = errors.New("snapshot: the store holds something that is not a snapshot under the key")

// A Store keeps one snapshot per run key, with a version for compare-and-set.
// Its methods must be safe for concurrent use, by one process or many, and
// must honour the context's deadline and cancellation.
//
// A Store holds the bytes it is given and hands them back unchanged; it never
// reads them. What they hold is decided by [Runs]: no arguments, results or
// text by default.
type Store interface {
	// Load returns the snapshot saved under key and its version, or nil
	// data and version 0 (and a nil error) when there is none (never
	// saved, or expired). When seen is not zero and the key's version is
	// still seen, Load may return nil data with that version, so that a
	// caller that holds that state already is spared the bytes; a Store
	// that always returns the data is correct too. Load must not return
	// data whose version differs from the one it returns. What the key
	// holds that this Store did not save (another type, another layout) is
	// an error wrapping [ErrMalformed], never "no snapshot".
	Load(ctx context.Context, key string, seen Version) (data []byte, v Version, err error)

	// Save stores data under key with version next, only if the key's
	// version is still old (0: only if the key has no snapshot), atomically;
	// otherwise it changes nothing and returns ErrConflict (possibly
	// wrapped). A ttl above zero makes the snapshot expire that long after
	// the save; zero keeps it until it is replaced. next is never zero.
	//
	// Any other error leaves the caller unsure whether the save happened;
	// [Runs] finds out on its next Load.
	Save(ctx context.Context, key string, old, next Version, data []byte, ttl time.Duration) error
}

// Memory is a Store that keeps snapshots in this process's memory: for tests,
// and for several goroutines of one process that share runs. Expired
// snapshots are dropped when they are next touched, and in a sweep every 1,024
// saves. The zero value is not ready: use [NewMemory].
type Memory struct {
	now func() time.Time

	mu    sync.Mutex
	runs  map[string]memoryRecord
	saves int
}

type memoryRecord struct {
	data    []byte
	version Version
	expires time.Time // zero: never
}

// NewMemory returns an empty in-memory store. now, if not nil, is the clock
// that TTLs are measured against (time.Now otherwise).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, runs: make(map[string]memoryRecord)}
}

var _ Store = (*Memory)(nil)

// Load returns a copy of the snapshot saved under key.
func (m *Memory) Load(ctx context.Context, key string, seen Version) ([]byte, Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.live(key)
	if !ok {
		return nil, 0, nil
	}
	if seen != 0 && r.version == seen {
		return nil, seen, nil
	}
	return append([]byte(nil), r.data...), r.version, nil
}

// Save stores a copy of data if the key's version is still old.
func (m *Memory) Save(ctx context.Context, key string, old, next Version, data []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if next == 0 {
		return errors.New("snapshot: Save: version 0")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, _ := m.live(key)
	if r.version != old {
		return ErrConflict
	}
	rec := memoryRecord{data: append([]byte(nil), data...), version: next}
	if ttl > 0 {
		rec.expires = m.now().Add(ttl)
	}
	m.runs[key] = rec
	if m.saves++; m.saves%1024 == 0 {
		now := m.now()
		for k, r := range m.runs {
			if r.expired(now) {
				delete(m.runs, k)
			}
		}
	}
	return nil
}

// Len returns the number of snapshots held, expired ones included until they
// are swept.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs)
}

// live returns the record of key unless it has expired (then it is dropped).
func (m *Memory) live(key string) (memoryRecord, bool) {
	r, ok := m.runs[key]
	if ok && r.expired(m.now()) {
		delete(m.runs, key)
		return memoryRecord{}, false
	}
	return r, ok
}

func (r memoryRecord) expired(now time.Time) bool {
	return !r.expires.IsZero() && !now.Before(r.expires)
}
