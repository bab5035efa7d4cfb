package core

import "context"

// A Backend holds the state of a run for a [Guard] that is a front for it:
// package snapshot's runs, whose state lives in a store that many workers
// share. A guard made by New holds its run itself, in memory, and has no
// backend.
//
// Each method answers as the same method of a guard in memory would on the
// run's newest state, and applies the backend's policy when its store fails:
// it still answers, and reports the failure its own way. Its error is not
// nil only when it could not answer at all (ctx ended).
type Backend interface {
	// Record records a finished step; it returns the verdict and the
	// step's index.
	Record(ctx context.Context, s Step) (Verdict, int, error)
	// Preflight judges calls, after the calls that StartCall allowed and
	// that have not finished; it returns the decision and the index of the
	// step the calls would belong to.
	Preflight(ctx context.Context, calls []ToolCall) (Decision, int, error)
	// StartCall preflights a call after the running ones and, when it is
	// allowed, counts it as running until Finish or Abandon; a refused
	// call is recorded as refused. It returns the running call (nil when
	// refused), the decision, and the verdict of the refused step.
	StartCall(ctx context.Context, call ToolCall) (Started, Decision, Verdict, error)
	// View calls fn with a guard in memory that holds the run's newest
	// state, for reading only, with the run locked. fn must not keep it.
	View(ctx context.Context, fn func(m *Guard)) error
	// Reset forgets the run.
	Reset(ctx context.Context) error
}

// A Started is a call that a [Backend] counts as running.
type Started interface {
	// Finish records the call's outcome as a step of its own, once.
	Finish(ctx context.Context, result any, err error) (Verdict, error)
	// Abandon forgets the call without recording it.
	Abandon()
}

// Front returns a guard whose run lives in b, made with cfg as New makes a
// guard in memory (its rules and options are those of the run). It is for
// backends: package snapshot uses it.
func Front(cfg Config, b Backend) (*Guard, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	g.states = nil // the backend holds the run
	g.b = b
	return g, nil
}

// FrontOf is Front for a backend that makes many fronts of one
// configuration (one per run): it returns a guard whose run lives in b, with
// the rules and options of t, a guard that New or Front made, shared with t
// (they are read-only) rather than built again.
func FrontOf(t *Guard, b Backend) *Guard {
	return &Guard{opts: t.opts, ignore: t.ignore, keys: t.keys, fails: t.fails, rules: t.rules,
		names: t.names, b: b}
}

// PolicyRule is the rule name of the stops and refusals that a backend gives
// by its policy, not by a rule of the run (a store that cannot be reached,
// a saved state that cannot be used). A turn does not record such
// refusals as the model's.
const PolicyRule = "snapshot"
