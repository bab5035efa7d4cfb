package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
	"github.com/loopguard/loopguard/snapshot/storetest"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/loopguard/loopguard/stores/redis/redistest"
)

// config reads an options document: the configuration of the runs' guards.
func config(t testing.TB, doc string) guard.Config {
	t.Helper()
	cfg, err := detector.FromJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// told keeps what OnError told one worker (a Runs that one goroutine uses).
type told struct {
	mu  sync.Mutex
	err error
}

func (w *told) on(_ string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = errors.Join(w.err, err)
}

// take returns what was told since the last take.
func (w *told) take() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	w.err = nil
	return err
}

func newStore(t testing.TB, c lgredis.Client, prefix string) *lgredis.Store {
	t.Helper()
	s, err := lgredis.New(c, lgredis.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	srv := redistest.Start(t, false)
	c := srv.Client(nil)
	n := 0
	storetest.Run(t, func(t *testing.T) snapshot.Store {
		n++
		return newStore(t, c, fmt.Sprintf("test%d:", n))
	})
}

func TestKeysAndValues(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, false)
	c := srv.Client(nil)
	s := newStore(t, c, "")
	if err := s.Save(ctx, "run/1", 0, 0x0102030405060708, []byte("{}"), time.Minute); err != nil {
		t.Fatal(err)
	}
	val, err := c.Get(ctx, lgredis.DefaultPrefix+"run/1").Result()
	if err != nil || val != "\x01\x02\x03\x04\x05\x06\x07\x08{}" {
		t.Errorf("stored value = %q, %v; want the 8-byte version, then the data", val, err)
	}
	if ttl := c.PTTL(ctx, lgredis.DefaultPrefix+"run/1").Val(); ttl <= 59*time.Second || ttl > time.Minute {
		t.Errorf("PTTL = %v, want just under a minute", ttl)
	}
	if err := s.Save(ctx, "run/1", 0x0102030405060708, 9, []byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, lgredis.DefaultPrefix+"run/1").Val(); ttl != -1 {
		t.Errorf("PTTL after a save without TTL = %v, want -1 (none)", ttl)
	}
	c.Set(ctx, lgredis.DefaultPrefix+"foreign", "abc", 0)
	if _, _, err := s.Load(ctx, "foreign", 0); err == nil {
		t.Error("Load of a value that is no snapshot: no error")
	}
}

func TestDeadlines(t *testing.T) {
	srv := redistest.Start(t, false)
	c := srv.Client(nil)
	s := newStore(t, c, "")
	// Another client pauses every client for a second.
	if err := srv.Client(nil).Do(context.Background(), "CLIENT", "PAUSE", "1000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"load", "save"} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		var err error
		if op == "load" {
			_, _, err = s.Load(ctx, "run", 7)
		} else {
			err = s.Save(ctx, "run", 0, 1, []byte("x"), 0)
		}
		cancel()
		if el := time.Since(start); err == nil || el > 500*time.Millisecond {
			t.Errorf("%s on a paused server with a 50ms deadline: %v after %v; want an error within the deadline", op, err, el)
		}
	}
}

func TestNew(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	_, err := lgredis.New(c, lgredis.Options{})
	var oe *guard.OptionError
	if !errors.Is(err, lgredis.ErrNoContextTimeout) || !errors.As(err, &oe) || oe.Field != "client.ContextTimeoutEnabled" {
		t.Errorf("New with ContextTimeoutEnabled off = %v, want ErrNoContextTimeout naming the field", err)
	}
	if _, err := lgredis.New(nil, lgredis.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// steps is worker w's i-th step: calls from a small alphabet, so that the
// committed order repeats, cycles and stalls often.
func step(w, i int) guard.Step {
	q := (w*7 + i*3 + i/5) % 4
	s := guard.Step{ToolCalls: []guard.ToolCall{{Name: []string{"search", "open"}[q%2], Args: fmt.Sprintf(`{"q":%d}`, q/2), Result: fmt.Sprint(i % 3)}}}
	if i%4 == 0 {
		s.Text = "thinking"
	}
	return s
}

// noLimit is the defaults without a step limit, so that the loop rules
// decide every stop of a long run.
const noLimit = `{"maxSteps": false}`

func TestContention(t *testing.T) {
	// 8 workers (Runs of their own, each with its own client, as separate
	// processes would be) × 1,000 steps on one run key, each step followed
	// by a preflight.
	workers, steps := 8, 1000
	if testing.Short() {
		steps = 100
	}
	ctx := context.Background()
	srv := redistest.Start(t, false)
	commits := make(chan snapshot.Commit, workers*steps)
	var preflights, refused atomic.Int64
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		var tw told
		runs, err := snapshot.New(newStore(t, srv.Client(nil), "contention:"), config(t, noLimit),
			snapshot.Options{OnCommit: func(c snapshot.Commit) { commits <- c }, Retry: snapshot.Retry{Attempts: 1000}, OnError: tw.on})
		if err != nil {
			t.Fatal(err)
		}
		g := runs.Guard("run")
		go func() {
			for i := range steps {
				if _, err := g.Check(ctx, step(w, i)); err != nil || tw.take() != nil {
					errs <- fmt.Errorf("worker %d, step %d: %w", w, i, errors.Join(err, tw.take()))
					return
				}
				d, err := g.Preflight(ctx, step(w, i+1).ToolCalls...)
				if err == nil {
					err = tw.take()
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d, preflight %d: %w", w, i, err)
					return
				}
				preflights.Add(1)
				if !d.Allow {
					refused.Add(1)
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	close(commits)
	var all []snapshot.Commit
	stops := map[string]int{}
	for c := range commits {
		all = append(all, c)
		for _, v := range c.Verdicts {
			if v.Stop {
				stops[v.Code]++
			}
		}
	}
	g, err := guard.New(config(t, noLimit))
	if err != nil {
		t.Fatal(err)
	}
	n, err := storetest.CheckCommits(all, g)
	if err != nil {
		t.Fatal(err)
	}
	if n != workers*steps {
		t.Errorf("the commits hold %d steps, want %d", n, workers*steps)
	}
	check, _ := snapshot.New(newStore(t, srv.Client(nil), "contention:"), config(t, noLimit), snapshot.Options{})
	sum, err := check.Guard("run").Summary(ctx)
	if err != nil || sum.Steps != workers*steps {
		t.Errorf("the stored run has %d steps (%v), want %d", sum.Steps, err, workers*steps)
	}
	t.Logf("%d workers × %d steps on one run key: %d commits, %d steps, every verdict equal to a single guard's on the committed order; stops %v; %d preflights (%d refused); %.2fs, %.0f steps/s",
		workers, steps, len(all), n, stops, preflights.Load(), refused.Load(), elapsed.Seconds(), float64(n)/elapsed.Seconds())
}

// TestGarbageUnderTheKeyIsRefused writes under a run's key what no Store
// wrote: a short string, version 0, a list, a hash. Runs must refuse the run
// (STORED_STATE_INVALID), not read it as an outage that FailOpen lets
// through: a looping delete_db through fresh workers never runs.
func TestGarbageUnderTheKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, false)
	c := srv.Client(nil)
	s := newStore(t, c, "")
	rkey := lgredis.DefaultPrefix + "run"
	tests := []struct {
		name  string
		write func() error
	}{
		{"a short string", func() error { return c.Set(ctx, rkey, "abc", 0).Err() }},
		{"version 0", func() error { return c.Set(ctx, rkey, "\x00\x00\x00\x00\x00\x00\x00\x00{}", 0).Err() }},
		{"a version alone", func() error { return c.Set(ctx, rkey, "\x00\x00\x00\x00\x00\x00\x00\x07", 0).Err() }},
		{"a version and garbage", func() error { return c.Set(ctx, rkey, "\x00\x00\x00\x00\x00\x00\x00\x07garbage", 0).Err() }},
		{"a list", func() error { return c.RPush(ctx, rkey, "a", "b").Err() }},
		{"a hash", func() error { return c.HSet(ctx, rkey, "f", "v").Err() }},
	}
	for _, tt := range tests {
		for _, key := range [][]byte{nil, []byte("secret")} {
			t.Run(fmt.Sprintf("%s/signed=%v", tt.name, key != nil), func(t *testing.T) {
				c.Del(ctx, rkey)
				if err := tt.write(); err != nil {
					t.Fatal(err)
				}
				for i := range 10 {
					var tw told
					runs, err := snapshot.New(s, config(t, `{}`), snapshot.Options{Key: key, OnError: tw.on})
					if err != nil {
						t.Fatal(err)
					}
					call, d, err := runs.Guard("run").StartCall(ctx, guard.ToolCall{Name: "delete_db", Args: map[string]any{}})
					if err != nil {
						t.Fatal(err)
					}
					err = tw.take() // what OnError was told
					if call != nil || d.Allow || d.Code != snapshot.CodeTampered {
						t.Fatalf("worker %d: the call was not refused as %s: %+v, %v", i, snapshot.CodeTampered, d, err)
					}
					var se *snapshot.StateError
					if !errors.As(err, &se) || errors.As(err, new(*snapshot.StoreError)) {
						t.Fatalf("worker %d: error %v, want a *StateError and no *StoreError", i, err)
					}
					if key != nil && !errors.Is(err, snapshot.ErrTampered) {
						t.Fatalf("worker %d: error %v, want ErrTampered with a key set", i, err)
					}
				}
			})
		}
	}
	// The load that carries the version seen (a script) says so too.
	c.Del(ctx, rkey)
	c.RPush(ctx, rkey, "a")
	if _, _, err := s.Load(ctx, "run", 7); !errors.Is(err, snapshot.ErrMalformed) {
		t.Errorf("Load(seen 7) of a list: %v, want ErrMalformed", err)
	}
	// An outage is still an outage.
	srv.Stop()
	if _, _, err := s.Load(ctx, "run", 0); err == nil || errors.Is(err, snapshot.ErrMalformed) {
		t.Errorf("Load with the server down: %v, want an error that is not ErrMalformed", err)
	}
}
