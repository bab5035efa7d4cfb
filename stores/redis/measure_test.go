package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/loopguard/loopguard/stores/redis/internal/redistest"
)

// TestMeasure prints the figures of BENCHMARKS.md: operations per second
// through the Redis store, beside the in-process guard and a bare GET+SET
// round trip, and the Lua script beside WATCH/MULTI. It runs only with
// LOOPGUARD_MEASURE=1 (MEASURE_SECONDS per figure, 2 by default; best of
// MEASURE_ROUNDS, 3 by default):
//
//	LOOPGUARD_MEASURE=1 go test -run TestMeasure -v ./stores/redis
func TestMeasure(t *testing.T) {
	if os.Getenv("LOOPGUARD_MEASURE") != "1" {
		t.Skip("set LOOPGUARD_MEASURE=1 to measure")
	}
	dur := 2 * time.Second
	if s := os.Getenv("MEASURE_SECONDS"); s != "" {
		d, err := time.ParseDuration(s + "s")
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	rounds := 3
	if s := os.Getenv("MEASURE_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	srv := redistest.Start(t, false)
	ctx := context.Background()
	client := srv.Client(&redis.Options{PoolSize: 64})
	store := newStore(t, client, "measure:")

	// The size of a stored run after 100 steps, for the bare round trip.
	probe, _ := snapshot.New(store, factory{noLimit}, snapshot.Options{})
	for i := range 100 {
		probe.Check(ctx, "probe", step(0, i))
	}
	val, _ := client.Get(ctx, "measure:probe").Bytes()

	best := func(name string, n int, op func(worker, i int) error) float64 {
		var top float64
		for range rounds {
			var count atomic.Int64
			var wg sync.WaitGroup
			deadline := time.Now().Add(dur)
			errs := make(chan error, n)
			start := time.Now()
			for w := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; time.Now().Before(deadline); i++ {
						if err := op(w, i); err != nil {
							errs <- err
							return
						}
						count.Add(1)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("%s: %v", name, err)
			}
			top = max(top, float64(count.Load())/time.Since(start).Seconds())
		}
		return top
	}

	fmt.Printf("\nstored run: %d bytes (after 100 steps); %v per figure, best of %d\n\n", len(val), dur, rounds)
	fmt.Println("| Concurrent runs | Check through Redis (Runs) | Check + Preflight through Redis | In-process guard Check | Bare Redis GET+SET | Runs / bare |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, n := range []int{1, 8, 64} {
		gen := time.Now().UnixNano()
		runs, _ := snapshot.New(store, factory{noLimit}, snapshot.Options{})
		viaRedis := best("runs", n, func(w, i int) error {
			_, err := runs.Check(ctx, fmt.Sprintf("c%d-%d", gen, w), step(w, i))
			return err
		})
		runs2, _ := snapshot.New(store, factory{noLimit}, snapshot.Options{})
		withPreflight := best("runs+preflight", n, func(w, i int) error {
			key := fmt.Sprintf("p%d-%d", gen, w)
			if _, err := runs2.Preflight(ctx, key, step(w, i).ToolCalls...); err != nil {
				return err
			}
			_, err := runs2.Check(ctx, key, step(w, i))
			return err
		})
		guards := make([]*guard.Guard, n)
		for w := range guards {
			guards[w], _ = factory{noLimit}.New()
		}
		local := best("guard", n, func(w, i int) error {
			guards[w].Check(step(w, i))
			return nil
		})
		bare := best("bare", n, func(w, i int) error {
			key := fmt.Sprintf("measure:bare%d-%d", gen, w)
			if err := client.Get(ctx, key).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			return client.Set(ctx, key, val, 0).Err()
		})
		fmt.Printf("| %d | %.0f /s | %.0f /s | %.0f /s | %.0f /s | %.2f× |\n", n, viaRedis, withPreflight, local, bare, viaRedis/bare)
	}

	fmt.Println("\n| Concurrent writers (own keys) | Compare-and-set, Lua script | Compare-and-set, WATCH/MULTI | Lua / WATCH |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, n := range []int{1, 8, 64} {
		gen := time.Now().UnixNano()
		versions := make([]snapshot.Version, n)
		lua := best("lua", n, func(w, i int) error {
			next := snapshot.Version(uint64(i)<<8 | uint64(w) + 1)
			err := store.Save(ctx, fmt.Sprintf("lua%d-%d", gen, w), versions[w], next, val, 0)
			versions[w] = next
			return err
		})
		clear(versions)
		watch := best("watch", n, func(w, i int) error {
			next := snapshot.Version(uint64(i)<<8 | uint64(w) + 1)
			err := casWatch(ctx, client, store.Key(fmt.Sprintf("watch%d-%d", gen, w)), versions[w], next, val)
			versions[w] = next
			return err
		})
		fmt.Printf("| %d | %.0f /s | %.0f /s | %.2f× |\n", n, lua, watch, lua/watch)
	}
	_ = lgredis.DefaultPrefix
}

// casWatch is compare-and-set with WATCH/MULTI/EXEC, the alternative to the
// Lua script: WATCH, GETRANGE, then MULTI/SET/EXEC, three round trips.
func casWatch(ctx context.Context, c *redis.Client, key string, old, next snapshot.Version, data []byte) error {
	val := append(versionBytes(next), data...)
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		cur, err := tx.GetRange(ctx, key, 0, 7).Result()
		if err != nil {
			return err
		}
		want := ""
		if old != 0 {
			want = string(versionBytes(old))
		}
		if cur != want {
			return snapshot.ErrConflict
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, val, 0)
			return nil
		})
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return snapshot.ErrConflict
	}
	return err
}

func versionBytes(v snapshot.Version) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[7-i] = byte(v >> (8 * i))
	}
	return b
}
