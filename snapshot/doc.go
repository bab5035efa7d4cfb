// Package snapshot keeps the state of runs in a store shared by many
// workers, so that a run's guard follows the run whichever worker, process or
// replica serves its next step.
//
// A [Store] keeps one snapshot per run key, with a version for
// compare-and-set: a save names the version it read and fails with
// [ErrConflict] when another worker saved first. [Memory] is an in-memory
// Store; a Redis one lives in its own module
// (github.com/loopguard/loopguard/stores/redis), so that this package, like
// the rest of the core, depends on the standard library alone.
//
// [Runs] is the loop every worker would otherwise write, behind the one
// guard type: [Runs.Guard] returns a run's *guard.Guard, whose Check,
// Preflight, StartCall, turns ([guard.Guard.Begin]), Summary and Reset load
// the run's snapshot and restore it (or start a fresh run), apply the
// operation, save with compare-and-set, and retry with a bounded, jittered
// backoff on conflict. A Runs keeps the runs it restored and skips the
// restore while the store's version is the one it saw last.
//
//	cfg, err := detector.FromJSON(doc) // the guards' configuration, once
//	runs, err := snapshot.New(store, cfg, snapshot.Options{OnError: logStoreError})
//	...
//	g := runs.Guard(runID)   // on any worker
//	v, err := g.Check(ctx, step)
//
// What is stored holds no arguments, results or text: the guard's snapshot is
// taken as [guard.Guard.Snapshot] takes it by default, without previews
// (counters, hashes, tool names). [Options.Key] signs it, so
// that a snapshot altered in the store is refused. [Options.Policy] says what
// to answer when the store is down or slow (see [FailOpen]); the guard's
// methods never return the store's errors, [Options.OnError] is told of them.
package snapshot
