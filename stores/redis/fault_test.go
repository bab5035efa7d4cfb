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

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
	"github.com/loopguard/loopguard/stores/redis/redistest"
)

// TestKillAndRestart kills redis-server (SIGKILL) in the middle of a run that
// 4 workers drive, and restarts it half a second later, under each policy,
// with and without an append-only file. Every step submitted is in the
// stored run at the end, once; the answers during the outage follow the
// policy; nothing panics.
func TestKillAndRestart(t *testing.T) {
	for _, tt := range []struct {
		policy  snapshot.Policy
		persist bool
	}{{snapshot.FailOpen, true}, {snapshot.FailClosed, true}, {snapshot.FailOpen, false}} {
		name := fmt.Sprintf("%s/appendonly=%v", tt.policy, tt.persist)
		t.Run(name, func(t *testing.T) { killAndRestart(t, tt.policy, tt.persist) })
	}
}

type faultTally struct {
	mu                     sync.Mutex
	checks, errs           int
	storeErrs, conflicts   int
	codesDown              map[string]int // verdict codes of checks that failed
	stopsDown, allowedDown int            // preflights that failed: refused, allowed
	slowestErr             time.Duration  // the longest a failed check took
}

func killAndRestart(t *testing.T, policy snapshot.Policy, persist bool) {
	const workers = 4
	ctx := context.Background()
	srv := redistest.Start(t, persist)
	var acked atomic.Int64 // steps in acknowledged saves
	var tally faultTally
	tally.codesDown = map[string]int{}
	var runs []*guard.Guard // the run's guard on each worker
	var flushes []*snapshot.Runs
	tolds := make([]*told, workers)
	for w := range workers {
		tolds[w] = new(told)
		c := srv.Client(&redis.Options{DialTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
			WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
		r, err := snapshot.New(newStore(t, c, "fault:"), config(t, noLimit), snapshot.Options{
			Policy: policy, Timeout: 250 * time.Millisecond,
			OnCommit: func(c snapshot.Commit) { acked.Add(int64(len(c.Steps))) },
			OnError:  tolds[w].on,
		})
		if err != nil {
			t.Fatal(err)
		}
		flushes = append(flushes, r)
		runs = append(runs, r.Guard("run"))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				v, err := r.Check(ctx, step(w, i))
				err = errors.Join(err, tolds[w].take())
				took := time.Since(start)
				d, perr := r.Preflight(ctx, step(w, i+1).ToolCalls...)
				perr = errors.Join(perr, tolds[w].take())
				tally.mu.Lock()
				tally.checks++
				if err != nil {
					tally.errs++
					var se *snapshot.StoreError
					if errors.As(err, &se) {
						tally.storeErrs++
					}
					if errors.Is(err, snapshot.ErrConflict) {
						tally.conflicts++
					}
					tally.codesDown[v.Code]++
					tally.slowestErr = max(tally.slowestErr, took)
				}
				if perr != nil {
					if d.Allow {
						tally.allowedDown++
					} else {
						tally.stopsDown++
					}
				}
				tally.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	srv.Kill()
	time.Sleep(500 * time.Millisecond)
	// Read while the server is down, when no save can succeed: the last
	// answers Redis sent before it died have been read by now.
	ackedBeforeKill := acked.Load()
	srv.Restart()
	reader, _ := snapshot.New(newStore(t, srv.Client(nil), "fault:"), config(t, noLimit), snapshot.Options{CacheSize: -1})
	sum, err := reader.Guard("run").Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	afterRestart := sum.Steps
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, r := range flushes {
		if err := r.Flush(ctx, "run"); err != nil {
			t.Fatalf("Flush after the restart: %v", err)
		}
	}
	sum, err = reader.Guard("run").Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	want := tally.checks
	if !persist {
		want -= int(ackedBeforeKill) // Redis lost them: nothing on disk
	}
	if sum.Steps != want {
		t.Errorf("the stored run has %d steps, want %d (%d submitted, %d saved before the kill)", sum.Steps, want, tally.checks, ackedBeforeKill)
	}
	if persist && afterRestart < int(ackedBeforeKill) {
		t.Errorf("right after the restart the run has %d steps, fewer than the %d saved before the kill", afterRestart, ackedBeforeKill)
	}
	if tally.errs == 0 || tally.storeErrs != tally.errs {
		t.Errorf("%d checks failed, %d of them with a *StoreError; want some, all", tally.errs, tally.storeErrs)
	}
	switch policy {
	case snapshot.FailClosed:
		if n := tally.codesDown[snapshot.CodeStore]; n != tally.errs {
			t.Errorf("fail closed: %d of %d failed checks stopped with %s", n, tally.errs, snapshot.CodeStore)
		}
		if tally.allowedDown != 0 {
			t.Errorf("fail closed: %d preflights allowed while the store was down", tally.allowedDown)
		}
	case snapshot.FailOpen:
		if n := tally.codesDown[snapshot.CodeStore]; n != 0 {
			t.Errorf("fail open: %d checks stopped with %s", n, snapshot.CodeStore)
		}
	}
	t.Logf("%s, appendonly=%v: %d steps submitted by %d workers; %d saved before the kill, %d in the run right after the restart, %d at the end (want %d); %d checks failed (all *StoreError, %d of them conflicts past the retries, the slowest in %v), their verdicts %v; preflights that failed: %d refused, %d allowed",
		policy, persist, tally.checks, workers, ackedBeforeKill, afterRestart, sum.Steps, want, tally.errs, tally.conflicts, tally.slowestErr.Round(time.Millisecond), tally.codesDown, tally.stopsDown, tally.allowedDown)
}
