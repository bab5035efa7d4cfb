// Package redis is a [snapshot.Store] on Redis (github.com/redis/go-redis/v9),
// so that the workers of many processes and machines share their runs:
//
//	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
//	store, err := lgredis.New(client, lgredis.Options{})
//	runs, err := snapshot.New(store, cfg, snapshot.Options{})
//	g := runs.Guard(runID) // a *guard.Guard whose run lives in Redis
//
// Each run is one Redis string under Options.Prefix + the run key: the 8-byte
// version, then the snapshot. Anything else under that key (a shorter string,
// version 0, a list or another type) is reported as
// [snapshot.ErrMalformed], which the guards of snapshot.Runs refuse, never as
// an outage. A save is one round trip: a Lua script compares
// the stored version and sets the new value (with its TTL) atomically. A
// load is a GET, or, when the caller holds a version already, a script that
// answers with the version alone while it is unchanged. Measured against
// WATCH/MULTI, the script is the faster (see BENCHMARKS.md).
//
// Redis forgets what it has not persisted: run it with appendonly (and
// appendfsync always, or everysec for at most a second of steps) if runs must
// outlive a restart of the server.
//
// The package name matches go-redis's; import one of them under another name:
//
//	import lgredis "github.com/loopguard/loopguard/stores/redis"
package redis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "loopguard:run:"

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// Prefix is put before every run key; empty means DefaultPrefix.
	Prefix string
}

// Client is what a Store needs of a go-redis client: *redis.Client,
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient all are.
type Client interface {
	redis.Cmdable
	redis.Scripter
}

// Store keeps snapshots in Redis. It is safe for concurrent use, by as many
// processes as share the Redis server.
type Store struct {
	c      Client
	prefix string
}

var _ snapshot.Store = (*Store)(nil)

// ErrNoContextTimeout is returned by New for a client whose
// ContextTimeoutEnabled option is off: go-redis would then ignore the
// deadlines of contexts, and a Store must honour them.
var ErrNoContextTimeout = errors.New("redis: the client must have ContextTimeoutEnabled: true, or context deadlines are ignored")

// New returns a Store that keeps snapshots through c. For a client whose
// options can be read (*redis.Client, *redis.ClusterClient, *redis.Ring), New
// checks that ContextTimeoutEnabled is set, and returns ErrNoContextTimeout
// if not.
func New(c Client, o Options) (*Store, error) {
	if c == nil {
		return nil, &guard.OptionError{Field: "client", Err: errors.New("is nil")}
	}
	var ctxTimeout = true
	switch cl := c.(type) {
	case *redis.Client:
		ctxTimeout = cl.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		ctxTimeout = cl.Options().ContextTimeoutEnabled
	case *redis.Ring:
		ctxTimeout = cl.Options().ContextTimeoutEnabled
	}
	if !ctxTimeout {
		return nil, &guard.OptionError{Field: "client.ContextTimeoutEnabled", Err: ErrNoContextTimeout}
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	return &Store{c: c, prefix: o.Prefix}, nil
}

// Key returns the Redis key of a run key.
func (s *Store) Key(runKey string) string { return s.prefix + runKey }

// loadIfChanged answers with the 8-byte version alone while it is still the
// one seen (ARGV[1]), with the whole value otherwise (nil for no key).
var loadIfChanged = redis.NewScript(`
local v = redis.call('GETRANGE', KEYS[1], 0, 7)
if v == ARGV[1] then return v end
return redis.call('GET', KEYS[1])
`)

// compareAndSet sets KEYS[1] to ARGV[2] (with a TTL of ARGV[3] ms when above
// zero) if its version, the first 8 bytes, is ARGV[1] ("" for no key), and
// returns 1; else it returns 0.
var compareAndSet = redis.NewScript(`
if redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`)

// Load returns the snapshot of key and its version.
func (s *Store) Load(ctx context.Context, key string, seen snapshot.Version) ([]byte, snapshot.Version, error) {
	var (
		val string
		err error
	)
	if seen == 0 {
		val, err = s.c.Get(ctx, s.Key(key)).Result()
	} else {
		val, err = loadIfChanged.Run(ctx, s.c, []string{s.Key(key)}, versionBytes(seen)).Text()
	}
	if errors.Is(err, redis.Nil) {
		return nil, 0, nil
	}
	if wrongType(err) {
		// A list, a hash, ...: what the key holds is not ours, and Redis
		// answered. It is no outage.
		return nil, 0, fmt.Errorf("redis: %s holds no loopguard snapshot: %w (%w)", s.Key(key), snapshot.ErrMalformed, err)
	}
	if err != nil {
		return nil, 0, err
	}
	if len(val) < 8 || binary.BigEndian.Uint64([]byte(val[:8])) == 0 {
		return nil, 0, fmt.Errorf("redis: %s holds no loopguard snapshot (%d bytes, no version): %w", s.Key(key), len(val), snapshot.ErrMalformed)
	}
	v := snapshot.Version(binary.BigEndian.Uint64([]byte(val[:8])))
	if len(val) == 8 && v == seen {
		return nil, v, nil
	}
	return []byte(val[8:]), v, nil
}

// Save stores data with version next if the stored version is still old, in
// one round trip.
func (s *Store) Save(ctx context.Context, key string, old, next snapshot.Version, data []byte, ttl time.Duration) error {
	if next == 0 {
		return errors.New("redis: Save: version 0")
	}
	val := make([]byte, 8, 8+len(data))
	binary.BigEndian.PutUint64(val, uint64(next))
	val = append(val, data...)
	var oldArg []byte
	if old != 0 {
		oldArg = versionBytes(old)
	}
	ms := int64(0)
	if ttl > 0 {
		ms = max(ttl.Milliseconds(), 1)
	}
	ok, err := compareAndSet.Run(ctx, s.c, []string{s.Key(key)}, oldArg, val, ms).Int()
	if err != nil {
		return err
	}
	if ok != 1 {
		return snapshot.ErrConflict
	}
	return nil
}

// wrongType reports whether err is Redis saying that the key holds a value
// of another type than a string, from a command or from a script.
func wrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "WRONGTYPE")
}

func versionBytes(v snapshot.Version) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}
