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
	r      *Runs
	key    string
	policy *guard.Verdict // when the policy refuses every call, its stop

	mu    sync.Mutex
	err   error // the store's, when Begin or End met one
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
	var (
		g      *guard.Guard
		policy guard.Verdict
	)
	switch {
	case isStateError(err):
		policy = brokenVerdict()
	case storeDown && r.opts.Policy == FailClosed:
		policy = r.policyVerdict(guard.Verdict{})
	}
	switch {
	case policy.Stop:
		g = refusingGuard(policy)
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
	t := &Turn{Turn: g.Begin(), r: r, key: key, err: err}
	if policy.Stop {
		t.policy = &policy
	}
	return t, nil
}

// Err returns what went wrong with the store when [Runs.Begin] started the
// turn or [Turn.End] saved its step (a *StoreError, a *StateError,
// ErrBacklogFull, joined when both met one), or nil. The turn's answers then
// follow the policy.
func (t *Turn) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

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
// for a fault comes with a [*guard.StopError] ([guard.Verdict.Err]); the
// FailClosed policy's stop while the store is down is one. A store that
// fails is not an error of End, as it is not of Begin: the verdict follows
// the policy, the step is kept to be saved later, and [Turn.Err] reports
// the store's error. End's error is otherwise not nil only when the verdict
// could not be made as it should (the Factory failed, or the guard could not
// be saved), joined to the StopError if any. A turn ends once: a second End
// returns guard.ErrTurnEnded.
//
// A turn whose calls the policy refused (Begin met the store down under
// FailClosed, or a stored run that cannot be used) is not a step, as
// StartCall's refusals by the policy are not: End saves nothing (neither the
// refused calls, which are not the model's refusals, nor the step's text and
// usage) and returns the policy's stop, so that an outage never counts
// towards REPEATED_REFUSAL, NO_PROGRESS, REPEATED_TEXT or a stall. Such a
// turn without calls, the model's answer, is saved as any other step.
func (t *Turn) End(ctx context.Context, s guard.Step) (guard.Verdict, error) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return guard.Verdict{}, guard.ErrTurnEnded
	}
	t.ended = true
	t.mu.Unlock()
	step := t.Turn.Step(s)
	if t.policy != nil && len(step.Refused) > 0 {
		return *t.policy, t.policy.Err()
	}
	v, err := t.r.Check(ctx, t.key, step)
	store, other := splitStoreErrors(err)
	if store != nil {
		t.mu.Lock()
		t.err = errors.Join(t.err, store)
		t.mu.Unlock()
	}
	return v, errors.Join(v.Err(), other)
}

// splitStoreErrors splits err (one error, or errors joined) into what went
// wrong with the store (a *StoreError, a *StateError, ErrBacklogFull) and the
// rest.
func splitStoreErrors(err error) (store, other error) {
	if err == nil {
		return nil, nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var s, o []error
	for _, e := range errs {
		var se *StoreError
		if errors.As(e, &se) || isStateError(e) || errors.Is(e, ErrBacklogFull) {
			s = append(s, e)
		} else {
			o = append(o, e)
		}
	}
	return errors.Join(s...), errors.Join(o...)
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
