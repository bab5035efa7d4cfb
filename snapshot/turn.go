package snapshot

import (
	"context"
	"errors"
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

	err error // the store's, when Begin met one

	mu    sync.Mutex
	ended bool
}

// Begin starts a turn of run key on a copy of the run's latest state.
//
// A store that fails is not an error of Begin: the turn follows the policy,
// as the verdicts of [Runs.Check] do. It judges calls on what this Runs knows
// of the run (FailOpen), or refuses every call (FailClosed, and a stored run
// that cannot be used, whatever the policy), and [Turn.Err] reports the
// store's error. So the usual
//
//	turn, err := runs.Begin(ctx, runID)
//	if err != nil {
//		return err
//	}
//
// never skips the guard because Redis is down. Begin's error is not nil only
// when it returns no turn: the Factory could not make or copy the run's
// guard.
func (r *Runs) Begin(ctx context.Context, key string) (*Turn, error) {
	e := r.acquire(key)
	defer r.release(e)
	err := r.sync(ctx, e)
	var se *StoreError
	storeDown := errors.As(err, &se)
	var g *guard.Guard
	switch {
	case isStateError(err):
		g = refusingGuard(brokenVerdict())
	case storeDown && r.opts.Policy == FailClosed:
		g = refusingGuard(r.policyVerdict(guard.Verdict{}))
	default:
		if storeDown {
			if _, ferr := r.catchUp(ctx, e); ferr != nil {
				return nil, ferr
			}
		}
		if e.g == nil {
			if err == nil {
				err = errors.New("snapshot: Begin: the run has no guard")
			}
			return nil, err
		}
		c, cerr := r.copyGuard(e.g)
		if cerr != nil {
			return nil, cerr
		}
		g = c
	}
	return &Turn{Turn: g.Begin(), r: r, key: key, err: err}, nil
}

// Err returns what went wrong with the store when [Runs.Begin] started the
// turn (a *StoreError, a *StateError, or ErrBacklogFull), or nil. The turn
// then follows the policy.
func (t *Turn) Err() error { return t.err }

// copyGuard returns a new guard with g's state.
func (r *Runs) copyGuard(g *guard.Guard) (*guard.Guard, error) {
	data, err := g.Snapshot(guard.SnapshotOptions{Previews: true}) // in memory only: details read as the run's
	if err != nil {
		return nil, err
	}
	return r.guards.Restore(data)
}

// End saves the turn's step ([guard.Turn.Step] of s) with [Runs.Check] and
// returns the verdict. As with [guard.Turn.End], a verdict that stops the run
// for a fault comes with a [*guard.StopError] ([guard.Verdict.Err]); a
// store's error (see Runs.Check) is joined to it. A turn ends once: a second
// End returns guard.ErrTurnEnded.
func (t *Turn) End(ctx context.Context, s guard.Step) (guard.Verdict, error) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return guard.Verdict{}, guard.ErrTurnEnded
	}
	t.ended = true
	t.mu.Unlock()
	v, err := t.r.Check(ctx, t.key, t.Turn.Step(s))
	return v, errors.Join(v.Err(), err)
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
