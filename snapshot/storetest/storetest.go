// Package storetest checks that a [snapshot.Store] keeps the contract that
// the guards of [snapshot.Runs] rely on: versioned compare-and-set, the seen-version
// shortcut of Load, copies rather than shared memory, expiry, independent
// keys, contexts honoured, and no lost update under concurrent writers.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// Run checks the store that newStore returns, in subtests. Each subtest gets
// a fresh store from newStore and uses keys of its own under the test's
// name, so a store shared between subtests works too. TTLs are tested with
// real time: the expiry subtest sleeps about 300ms.
func Run(t *testing.T, newStore func(t *testing.T) snapshot.Store) {
	t.Run("Empty", func(t *testing.T) {
		s, key := newStore(t), keyOf(t)
		data, v, err := s.Load(context.Background(), key, 0)
		if err != nil || data != nil || v != 0 {
			t.Fatalf("Load of a key never saved = %q, %d, %v; want nil, 0, nil", data, v, err)
		}
		data, v, err = s.Load(context.Background(), key, 7)
		if err != nil || data != nil || v != 0 {
			t.Fatalf("Load(seen 7) of a key never saved = %q, %d, %v; want nil, 0, nil", data, v, err)
		}
	})

	t.Run("CompareAndSet", func(t *testing.T) {
		s, key, ctx := newStore(t), keyOf(t), context.Background()
		mustSave(t, s, key, 0, 10, "first")
		if err := s.Save(ctx, key, 0, 11, []byte("again"), 0); !errors.Is(err, snapshot.ErrConflict) {
			t.Fatalf("Save(old 0) over an existing snapshot = %v, want ErrConflict", err)
		}
		if err := s.Save(ctx, key, 9, 11, []byte("stale"), 0); !errors.Is(err, snapshot.ErrConflict) {
			t.Fatalf("Save(old 9) over version 10 = %v, want ErrConflict", err)
		}
		wantLoad(t, s, key, 0, "first", 10)
		mustSave(t, s, key, 10, 3, "second") // versions are tokens, not counters
		wantLoad(t, s, key, 0, "second", 3)
		if err := s.Save(ctx, key, 10, 12, []byte("late"), 0); !errors.Is(err, snapshot.ErrConflict) {
			t.Fatalf("Save(old 10) over version 3 = %v, want ErrConflict", err)
		}
		wantLoad(t, s, key, 0, "second", 3)
	})

	t.Run("Seen", func(t *testing.T) {
		s, key := newStore(t), keyOf(t)
		mustSave(t, s, key, 0, 5, "state")
		data, v, err := s.Load(context.Background(), key, 5)
		if err != nil || v != 5 || (data != nil && string(data) != "state") {
			t.Fatalf("Load(seen 5) of version 5 = %q, %d, %v; want nil (or the data), 5, nil", data, v, err)
		}
		wantLoad(t, s, key, 4, "state", 5) // another version seen: the data comes
	})

	t.Run("Bytes", func(t *testing.T) {
		s, key := newStore(t), keyOf(t)
		data := make([]byte, 0, 256*3)
		for i := range 256 * 3 {
			data = append(data, byte(i))
		}
		if err := s.Save(context.Background(), key, 0, 1, data, 0); err != nil {
			t.Fatal(err)
		}
		data[0] = 'X' // the store must have copied it
		got, _, err := s.Load(context.Background(), key, 0)
		if err != nil || len(got) != 256*3 || got[0] != 0 || got[255] != 255 || got[256+'\r'] != '\r' {
			t.Fatalf("binary data did not come back intact (%d bytes, err %v)", len(got), err)
		}
		got[1] = 'Y' // nor may it share what it returns
		again, _, _ := s.Load(context.Background(), key, 0)
		if again[1] != 1 {
			t.Fatal("changing what Load returned changed the stored snapshot")
		}
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		mustSave(t, s, key, 1, 2, string(big))
		wantLoad(t, s, key, 0, string(big), 2)
	})

	t.Run("Keys", func(t *testing.T) {
		s, key := newStore(t), keyOf(t)
		mustSave(t, s, key+"/a", 0, 1, "a")
		mustSave(t, s, key+"/b", 0, 1, "b")
		mustSave(t, s, key+"/a", 1, 2, "a2")
		wantLoad(t, s, key+"/b", 0, "b", 1)
		wantLoad(t, s, key+"/a", 0, "a2", 2)
		wantLoad(t, s, key+"/ü\x00:*", 0, "", 0)
	})

	t.Run("TTL", func(t *testing.T) {
		s, key := newStore(t), keyOf(t)
		ctx := context.Background()
		if err := s.Save(ctx, key, 0, 1, []byte("short"), 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, key+"/kept", 0, 1, []byte("kept"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, key+"/renewed", 0, 1, []byte("r1"), 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, key+"/renewed", 1, 2, []byte("r2"), time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		wantLoad(t, s, key, 0, "", 0)
		wantLoad(t, s, key+"/kept", 0, "kept", 1)
		wantLoad(t, s, key+"/renewed", 0, "r2", 2)
		// An expired key is a key with no snapshot: old 0 creates it.
		mustSave(t, s, key, 0, 9, "new")
	})

	t.Run("Context", func(t *testing.T) {
		s, key := newStore(t), keyOf(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := s.Load(ctx, key, 0); err == nil {
			t.Error("Load with a cancelled context succeeded")
		}
		if err := s.Save(ctx, key, 0, 1, []byte("x"), 0); err == nil {
			t.Error("Save with a cancelled context succeeded")
		}
		wantLoad(t, s, key, 0, "", 0)
	})

	t.Run("Concurrent", func(t *testing.T) {
		// Writers add 1 to a counter with load and compare-and-set: the
		// total is exact only if no update is lost.
		s, key := newStore(t), keyOf(t)
		const writers, adds = 8, 40
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range adds {
					if err := increment(s, key, uint64(w*adds+i+1)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		data, _, err := s.Load(context.Background(), key, 0)
		if err != nil || string(data) != fmt.Sprint(writers*adds) {
			t.Fatalf("counter = %q (%v), want %d", data, err, writers*adds)
		}
	})
}

// increment adds one to the decimal counter under key; the version it writes
// is unique to the writer and the add.
func increment(s snapshot.Store, key string, token uint64) error {
	ctx := context.Background()
	for attempt := 0; attempt < 10000; attempt++ {
		data, v, err := s.Load(ctx, key, 0)
		if err != nil {
			return err
		}
		var n int
		if data != nil {
			fmt.Sscan(string(data), &n)
		}
		next := snapshot.Version(token<<20 | uint64(attempt) + 1)
		err = s.Save(ctx, key, v, next, []byte(fmt.Sprint(n+1)), 0)
		if err == nil {
			return nil
		}
		if !errors.Is(err, snapshot.ErrConflict) {
			return err
		}
	}
	return errors.New("increment: too many conflicts")
}

func keyOf(t *testing.T) string { return "storetest/" + t.Name() }

func mustSave(t *testing.T, s snapshot.Store, key string, old, next snapshot.Version, data string) {
	t.Helper()
	if err := s.Save(context.Background(), key, old, next, []byte(data), 0); err != nil {
		t.Fatalf("Save(%q, old %d, next %d) = %v", key, old, next, err)
	}
}

func wantLoad(t *testing.T, s snapshot.Store, key string, seen snapshot.Version, data string, v snapshot.Version) {
	t.Helper()
	got, gv, err := s.Load(context.Background(), key, seen)
	if err != nil {
		t.Fatalf("Load(%q) = %v", key, err)
	}
	if gv != v || string(got) != data || (v == 0) != (got == nil) {
		t.Fatalf("Load(%q, seen %d) = %.40q, version %d; want %.40q, version %d", key, seen, got, gv, data, v)
	}
}

// CheckCommits checks the commits of one run, as [snapshot.Options.OnCommit]
// reported them from every worker, against g, a fresh guard of the same
// options in this process: it orders the commits by their versions (each
// one's Old is the New of the one before, from 0), replays their steps into g,
// (resetting g where a commit reset the run), and checks that every verdict
// a worker got has g's stop, code and feedback
// (previews differ: stored snapshots are redacted). It returns the number of
// steps replayed, or an error that names the first difference, a break in the
// chain, or a commit left over.
func CheckCommits(commits []snapshot.Commit, g *guard.Guard) (int, error) {
	next := make(map[snapshot.Version]snapshot.Commit, len(commits))
	for _, c := range commits {
		if _, dup := next[c.Old]; dup {
			return 0, fmt.Errorf("two commits replaced version %d", c.Old)
		}
		next[c.Old] = c
	}
	ctx := context.Background()
	steps := 0
	for v, n := snapshot.Version(0), 0; n < len(commits); n++ {
		c, ok := next[v]
		if !ok {
			return steps, fmt.Errorf("the chain breaks after %d commits: none replaced version %d", n, v)
		}
		if len(c.Steps) != len(c.Verdicts) {
			return steps, fmt.Errorf("commit %d: %d steps, %d verdicts", n, len(c.Steps), len(c.Verdicts))
		}
		if c.Reset {
			if err := g.Reset(ctx); err != nil {
				return steps, err
			}
		}
		for i, s := range c.Steps {
			want, err := g.Check(ctx, s)
			if err != nil {
				return steps, err
			}
			got := c.Verdicts[i]
			if want.Stop != got.Stop || want.Code != got.Code || want.Feedback != got.Feedback {
				return steps, fmt.Errorf("step %d (commit %d): a single guard says stop=%v %s %q, the worker got stop=%v %s %q",
					steps, n, want.Stop, want.Code, want.Feedback, got.Stop, got.Code, got.Feedback)
			}
			steps++
		}
		v = c.New
	}
	return steps, nil
}
