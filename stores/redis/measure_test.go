package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
	"github.com/loopguard/loopguard/stores/redis/redistest"
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
	probe, _ := snapshot.New(store, config(t, noLimit), snapshot.Options{})
	for i := range 100 {
		probe.Guard("probe").Check(ctx, step(0, i))
	}
	val, _ := client.Get(ctx, "measure:probe").Bytes()

	// Every figure is measured once per round, the figures of a table one
	// after another, so that each ratio compares runs made under the same
	// load; the best round of each is kept.
	type figure struct {
		name string
		n    int
		op   func(worker, i int) error
		best float64
		// CPU time per operation in the best round: this process's
		// (client) and redis-server's.
		clientCPU, serverCPU time.Duration
	}
	serverCPU := func() time.Duration {
		info, err := client.Info(ctx, "cpu").Result()
		if err != nil {
			t.Fatal(err)
		}
		var total float64
		for _, line := range strings.Split(info, "\r\n") {
			var v float64
			if strings.HasPrefix(line, "used_cpu_sys:") || strings.HasPrefix(line, "used_cpu_user:") {
				fmt.Sscan(line[strings.IndexByte(line, ':')+1:], &v)
				total += v
			}
		}
		return time.Duration(total * float64(time.Second))
	}
	measure := func(figs []*figure) {
		for range rounds {
			for _, f := range figs {
				var count atomic.Int64
				var wg sync.WaitGroup
				deadline := time.Now().Add(dur)
				errs := make(chan error, f.n)
				cpu0, srv0 := processCPU(), serverCPU()
				start := time.Now()
				for w := range f.n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; time.Now().Before(deadline); i++ {
							if err := f.op(w, i); err != nil {
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
					t.Fatalf("%s: %v", f.name, err)
				}
				rate := float64(count.Load()) / time.Since(start).Seconds()
				if rate > f.best {
					n := time.Duration(count.Load())
					f.best, f.clientCPU, f.serverCPU = rate, (processCPU()-cpu0)/n, (serverCPU()-srv0)/n
				}
			}
		}
	}

	fmt.Printf("\nstored run: %d bytes (after 100 steps); %v per figure, best of %d\n\n", len(val), dur, rounds)
	fmt.Println("| Concurrent runs | Check through Redis (Runs) | Check + Preflight through Redis | In-process guard Check | Bare Redis GET+SET | Runs / bare | CPU per Check, client + server | CPU per GET+SET, client + server |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, n := range []int{1, 8, 64} {
		gen := time.Now().UnixNano()
		runs, _ := snapshot.New(store, config(t, noLimit), snapshot.Options{})
		viaRedis := &figure{name: "runs", n: n, op: func(w, i int) error {
			_, err := runs.Guard(fmt.Sprintf("c%d-%d", gen, w)).Check(ctx, step(w, i))
			return err
		}}
		runs2, _ := snapshot.New(store, config(t, noLimit), snapshot.Options{})
		withPreflight := &figure{name: "runs+preflight", n: n, op: func(w, i int) error {
			key := fmt.Sprintf("p%d-%d", gen, w)
			g := runs2.Guard(key)
			if _, err := g.Preflight(ctx, step(w, i).ToolCalls...); err != nil {
				return err
			}
			_, err := g.Check(ctx, step(w, i))
			return err
		}}
		guards := make([]*guard.Guard, n)
		for w := range guards {
			guards[w], _ = guard.New(config(t, noLimit))
		}
		local := &figure{name: "guard", n: n, op: func(w, i int) error {
			guards[w].Check(ctx, step(w, i))
			return nil
		}}
		bare := &figure{name: "bare", n: n, op: func(w, i int) error {
			key := fmt.Sprintf("measure:bare%d-%d", gen, w)
			if err := client.Get(ctx, key).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			return client.Set(ctx, key, val, 0).Err()
		}}
		measure([]*figure{viaRedis, bare, withPreflight, local})
		fmt.Printf("| %d | %.0f /s | %.0f /s | %.0f /s | %.0f /s | %.2f× | %.0f + %.0f µs | %.0f + %.0f µs |\n", n, viaRedis.best, withPreflight.best, local.best, bare.best, viaRedis.best/bare.best,
			us(viaRedis.clientCPU), us(viaRedis.serverCPU), us(bare.clientCPU), us(bare.serverCPU))
	}

	// A long healthy run: every call new, so that the stored run is as
	// large as the defaults make it (the no-progress window full).
	longStep := func(w, i int) guard.Step {
		return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"w":%d,"q":%d}`, w, i), Result: fmt.Sprint("r", i)}}}
	}
	const primed = 1100 // steps before measuring: more than the window's 1,024 outcomes
	fmt.Println("\n| Concurrent long runs | Check through Redis (Runs) | Bare Redis GET+SET of as many bytes | Runs / bare | CPU per Check, client + server | CPU per GET+SET, client + server |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, n := range []int{1, 8, 64} {
		gen := time.Now().UnixNano()
		runs, _ := snapshot.New(store, config(t, noLimit), snapshot.Options{})
		next := make([]int, n) // each worker's next step
		var wg sync.WaitGroup
		for w := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ; next[w] < primed; next[w]++ {
					if _, err := runs.Guard(fmt.Sprintf("l%d-%d", gen, w)).Check(ctx, longStep(w, next[w])); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		long, _ := client.Get(ctx, fmt.Sprintf("measure:l%d-0", gen)).Bytes()
		viaRedis := &figure{name: "long runs", n: n, op: func(w, _ int) error {
			v, err := runs.Guard(fmt.Sprintf("l%d-%d", gen, w)).Check(ctx, longStep(w, next[w]))
			next[w]++
			if v.Stop {
				return fmt.Errorf("a healthy run stopped: %s", guard.Explain(v))
			}
			return err
		}}
		bare := &figure{name: "bare, long", n: n, op: func(w, i int) error {
			key := fmt.Sprintf("measure:barelong%d-%d", gen, w)
			if err := client.Get(ctx, key).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			return client.Set(ctx, key, long, 0).Err()
		}}
		measure([]*figure{viaRedis, bare})
		fmt.Printf("| %d (%d bytes stored) | %.0f /s | %.0f /s | %.2f× | %.0f + %.0f µs | %.0f + %.0f µs |\n", n, len(long), viaRedis.best, bare.best, viaRedis.best/bare.best,
			us(viaRedis.clientCPU), us(viaRedis.serverCPU), us(bare.clientCPU), us(bare.serverCPU))
	}

	fmt.Println("\n| Concurrent writers (own keys) | Compare-and-set, Lua script | Compare-and-set, WATCH/MULTI | Lua / WATCH |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, n := range []int{1, 8, 64} {
		gen := time.Now().UnixNano()
		luaVersions, watchVersions := make([]snapshot.Version, n), make([]snapshot.Version, n)
		lua := &figure{name: "lua", n: n, op: func(w, i int) error {
			next := snapshot.Version(uint64(i)<<8 | uint64(w) + 1)
			err := store.Save(ctx, fmt.Sprintf("lua%d-%d", gen, w), luaVersions[w], next, val, 0)
			luaVersions[w] = next
			return err
		}}
		watch := &figure{name: "watch", n: n, op: func(w, i int) error {
			next := snapshot.Version(uint64(i)<<8 | uint64(w) + 1)
			err := casWatch(ctx, client, store.Key(fmt.Sprintf("watch%d-%d", gen, w)), watchVersions[w], next, val)
			watchVersions[w] = next
			return err
		}}
		measure([]*figure{lua, watch})
		fmt.Printf("| %d | %.0f /s | %.0f /s | %.2f× |\n", n, lua.best, watch.best, lua.best/watch.best)
	}
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

// processCPU is the user and system time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
