package snapshot

import (
	"context"
	"sync"

	"github.com/loopguard/loopguard/guard"
)

// A Turn is a [guard.Turn] on a run in the store: one step of a hand-written
// agent loop (Preflight, Run, SetResult, Decision, Answer, Step, as on
// guard.Turn), whose End saves the step through [Runs.Check]. Its calls are
// judged on a copy of the run's state as [Runs.Begin] found it: a run's steps
// come one after another, so no other step of the run is saved while its
// turn is open.
type Turn struct {
	*guard.Turn
	r   *Runs
	key string

	mu    sync.Mutex
	ended bool
}

// Begin starts a turn of run key on a copy of the run's latest state. When the
// store fails, the error is returned with a Turn that follows the policy: it
// judges calls on what this Runs knows of the run (FailOpen), or refuses
// every call (FailClosed, and a stored run that cannot be used, whatever the
// policy).
func (r *Runs) Begin(ctx context.Context, key string) (*Turn, error) {
	e := r.acquire(key)
	err := r.sync(ctx, e)
	var g *guard.Guard
	switch {
	case isStateError(err):
		g = refusingGuard(brokenVerdict())
	case err != nil && r.opts.Policy == FailClosed:
		g = refusingGuard(r.policyVerdict(guard.Verdict{}))
	default:
		if err != nil {
			r.catchUp(ctx, e)
		}
		if e.g != nil {
			g, err = r.copyGuard(e.g, err)
		}
		if g == nil {
			g = refusingGuard(r.policyVerdict(guard.Verdict{}))
		}
	}
	r.release(e)
	return &Turn{Turn: g.Begin(), r: r, key: key}, err
}

// copyGuard returns a guard with g's state; prev is returned unless copying
// fails.
func (r *Runs) copyGuard(g *guard.Guard, prev error) (*guard.Guard, error) {
	data, err := g.Snapshot(guard.SnapshotOptions{Previews: true}) // in memory only: details read as the run's
	if err != nil {
		return nil, err
	}
	c, err := r.guards.Restore(data)
	if err != nil {
		return nil, err
	}
	return c, prev
}

// End saves the turn's step ([guard.Turn.Step] of s) with [Runs.Check] and
// returns the verdict. A turn ends once: a second End returns
// guard.ErrTurnEnded.
func (t *Turn) End(ctx context.Context, s guard.Step) (guard.Verdict, error) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return guard.Verdict{}, guard.ErrTurnEnded
	}
	t.ended = true
	t.mu.Unlock()
	return t.r.Check(ctx, t.key, t.Turn.Step(s))
}

// refusingGuard returns a guard whose only rule refuses every call with v.
func refusingGuard(v guard.Verdict) *guard.Guard {
	g, err := guard.New(refuseAll{v})
	if err != nil {
		// refuseAll is a valid detector: this cannot happen.
		g, _ = guard.New()
	}
	return g
}

// refuseAll is a detector that refuses every call and stops nothing.
type refuseAll struct{ v guard.Verdict }

func (refuseAll) Name() string                                   { return DetectorName }
func (refuseAll) Priority() int                                  { return 0 }
func (refuseAll) Options() any                                   { return nil }
func (refuseAll) Observe(*guard.Facts)                           {}
func (refuseAll) Verdict() guard.Verdict                         { return guard.Verdict{} }
func (d refuseAll) Preflight(*guard.Facts) guard.Verdict         { return d.v }
func (refuseAll) Snapshot(guard.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (refuseAll) Restore([]byte) error                           { return nil }
func (refuseAll) Reset()                                         {}
