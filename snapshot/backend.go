package snapshot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/rule"
)

// backend is the run key of a Runs, behind the guards of Runs.Guard.
type backend struct {
	r   *Runs
	key string
}

var _ core.Backend = (*backend)(nil)

// do runs op on the run's entry, locked, and then tells OnError of op's
// error, with no lock held. A panic goes on with the entry released.
func (b *backend) do(op func(e *entry) error) {
	err := b.r.with(b.key, op)
	if err != nil && b.r.opts.OnError != nil {
		b.r.opts.OnError(b.key, err)
	}
}

// with runs op on the entry of key, locked.
func (r *Runs) with(key string, op func(e *entry) error) error {
	e := r.acquire(key)
	defer r.release(e)
	return op(e)
}

// Record records s, as Check does.
func (b *backend) Record(ctx context.Context, s guard.Step) (v guard.Verdict, at int, err error) {
	if err := ctx.Err(); err != nil {
		return guard.Verdict{}, 0, err
	}
	b.do(func(e *entry) (err error) {
		v, at, err = b.r.record(ctx, e, s)
		return err
	})
	return v, at, nil
}

// Preflight judges calls after the running ones, on the run's newest state.
func (b *backend) Preflight(ctx context.Context, calls []guard.ToolCall) (d guard.Decision, at int, err error) {
	if err := ctx.Err(); err != nil {
		return guard.Decision{}, 0, err
	}
	b.do(func(e *entry) error {
		g, err := b.r.current(ctx, e)
		d, at = core.PreflightIn(g, calls)
		return err
	})
	return d, at, nil
}

// View calls fn with the run's newest state, or, when the policy refuses
// every call, with a guard that does.
func (b *backend) View(ctx context.Context, fn func(m *guard.Guard)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.do(func(e *entry) error {
		g, err := b.r.current(ctx, e)
		fn(g)
		return err
	})
	return nil
}

// StartCall preflights call after the running ones and, when it is allowed,
// counts it as running on the run's guard in memory; a refusal by a rule is
// saved as a step, one by the policy is not.
func (b *backend) StartCall(ctx context.Context, call guard.ToolCall) (st core.Started, d guard.Decision, v guard.Verdict, err error) {
	if err := ctx.Err(); err != nil {
		return nil, guard.Decision{}, guard.Verdict{}, err
	}
	b.do(func(e *entry) error {
		g, err := b.r.current(ctx, e)
		if g != e.g {
			// The policy's refusal: no step.
			d, _ = core.PreflightIn(g, []guard.ToolCall{call})
			return err
		}
		var (
			run      *guard.Running
			recorded bool
		)
		e.dropOnPanic(func() { run, d, v, recorded = core.StartCallIn(g, call) })
		if run != nil {
			st = &started{b: b, run: run}
			return err
		}
		if recorded {
			_, _, cerr := b.r.commitApplied(ctx, e, guard.Step{Refused: []guard.ToolCall{call}}, v)
			err = errors.Join(err, cerr)
		}
		return err
	})
	return st, d, v, nil
}

// Reset saves a fresh run with compare-and-set, retrying on conflict. The
// run's running calls keep running.
func (b *backend) Reset(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.do(func(e *entry) error { return b.r.reset(ctx, e) })
	return nil
}

// started is a call that StartCall allowed, running on the run's guard in
// memory (moved to each newer one).
type started struct {
	b   *backend
	run *guard.Running
}

// Finish records the call with its outcome, as a step of its own, on the
// run's guard in memory and saves it.
func (s *started) Finish(ctx context.Context, result any, callErr error) (v guard.Verdict, err error) {
	r := s.b.r
	s.b.do(func(e *entry) error {
		// The call is on e.g, or on e.old if e.g was dropped: then the step
		// is applied again to the run's next guard.
		onG := e.g != nil
		var ok bool
		e.dropOnPanic(func() { v, ok = core.FinishIn(s.run, result, callErr) })
		if !ok {
			return nil
		}
		call := s.run.Call()
		call.Result, call.Err = result, callErr
		step := guard.Step{ToolCalls: []guard.ToolCall{call}}
		if !onG {
			v, _, err = r.record(ctx, e, step)
			return err
		}
		v, _, err = r.commitApplied(ctx, e, step, v)
		return err
	})
	return v, nil
}

// Abandon lets the call go without recording it.
func (s *started) Abandon() {
	s.b.r.with(s.b.key, func(*entry) error {
		s.run.Abandon()
		return nil
	})
}

// dropOnPanic runs fn; if it panics (a rule did), e's guard, which may hold
// part of a step, is dropped before the panic goes on.
func (e *entry) dropOnPanic(fn func()) {
	done := false
	defer func() {
		if !done {
			e.drop()
		}
	}()
	fn()
	done = true
}

// drop forgets e's guard, keeping it for its running calls only.
func (e *entry) drop() {
	if e.g != nil {
		e.old = e.g
	}
	e.g, e.stale, e.applied = nil, false, 0
}

// broken drops e's guard: the run's version v cannot be used. A reset saves
// over v.
func (e *entry) broken(v Version) {
	e.drop()
	e.version, e.env = v, nil
}

// replace makes g e's guard, moving the running calls over to it.
func (e *entry) replace(g *guard.Guard) {
	from := e.g
	if from == nil {
		from = e.old
	}
	if from != nil {
		core.MoveRunning(from, g)
	}
	e.g, e.old, e.stale, e.applied = g, nil, false, 0
}

// current brings e up to date and returns the guard to answer with: e's
// guard, or, when the policy refuses every call, a guard that does. Under
// FailOpen with the store down, e's guard is what this process knows.
func (r *Runs) current(ctx context.Context, e *entry) (*guard.Guard, error) {
	err := r.sync(ctx, e)
	switch {
	case err == nil:
		return e.g, nil
	case isStateError(err):
		return r.refuser, err
	case r.opts.Policy == FailClosed:
		return r.closed, err
	}
	r.catchUp(e)
	return e.g, err
}

// record adds s to e's backlog and commits it. If a rule (or the store)
// panics on the way, the panic goes on, but first s leaves the backlog and
// e's guard is dropped: it may hold part of a step, and applying the backlog
// onto it again would count steps twice. The next operation restores the
// run from the store.
func (r *Runs) record(ctx context.Context, e *entry, s guard.Step) (guard.Verdict, int, error) {
	seq := r.seq.Add(1)
	e.backlog = append(e.backlog, pending{seq: seq, step: s})
	done := false
	defer func() {
		if done {
			return
		}
		e.drop()
		if i := slices.IndexFunc(e.backlog, func(p pending) bool { return p.seq == seq }); i >= 0 {
			e.backlog = slices.Delete(e.backlog, i, i+1)
		}
	}()
	v, at, err := r.commit(ctx, e)
	done = true
	return v, at, err
}

// commitApplied adds to e's backlog s, which e's guard has recorded already
// with verdict v, and commits it.
func (r *Runs) commitApplied(ctx context.Context, e *entry, s guard.Step, v guard.Verdict) (guard.Verdict, int, error) {
	seq := r.seq.Add(1)
	e.backlog = append(e.backlog, pending{seq: seq, step: s, v: v})
	e.applied = seq
	return r.commit(ctx, e)
}

// check records p on e's guard. If a rule panics, e's guard, which may hold
// part of the step, is dropped before the panic goes on.
func (e *entry) check(p *pending) {
	e.dropOnPanic(func() { p.v, p.at = core.CheckIn(e.g, p.step) })
	e.applied = p.seq
}

// sync brings e up to date: it saves the backlog if there is one, or else
// loads what changed.
func (r *Runs) sync(ctx context.Context, e *entry) error {
	if len(e.backlog) > 0 || e.lost > 0 {
		_, _, err := r.commit(ctx, e)
		return err
	}
	return r.refresh(ctx, e)
}

// refresh loads the run when the store's version is not e's and restores it.
// It drops the steps of the backlog that the stored run holds already: a
// save whose answer was lost may have happened.
func (r *Runs) refresh(ctx context.Context, e *entry) error {
	seen := e.version
	if e.g == nil || e.stale || e.applied != 0 {
		seen = 0
	}
	cctx, cancel := r.storeContext(ctx)
	data, v, err := r.store.Load(cctx, e.key, seen)
	cancel()
	if errors.Is(err, ErrMalformed) {
		// The store answered with something it did not save: the run's
		// state cannot be used, as when a snapshot fails its check. It is
		// never an outage, which FailOpen would let through.
		if len(r.opts.Key) > 0 {
			err = fmt.Errorf("%w: %w", ErrTampered, err)
		}
		e.broken(v)
		return &StateError{Key: e.key, Version: v, Err: err}
	}
	if err != nil {
		return &StoreError{Op: "load", Key: e.key, Policy: r.opts.Policy, Err: err}
	}
	if seen != 0 && v == seen {
		return nil
	}
	var (
		g   *guard.Guard
		env *envelope
	)
	switch {
	case v == 0:
		g = r.fresh()
		env = &envelope{Format: format, Writers: make(map[string]writer)}
	case data == nil:
		return &StoreError{Op: "load", Key: e.key, Policy: r.opts.Policy,
			Err: fmt.Errorf("the store returned version %d without its snapshot", v)}
	default:
		env, err = decode(data, e.key, r.opts.Key)
		if err == nil {
			g, err = guard.Restore(env.Guard, r.cfg)
		}
		if err != nil {
			e.broken(v)
			return &StateError{Key: e.key, Version: v, Err: err}
		}
	}
	e.replace(g)
	e.version, e.env = v, env
	mark := env.Writers[r.id].Seq
	i := 0
	for i < len(e.backlog) && e.backlog[i].seq <= mark {
		i++
	}
	e.backlog = slices.Delete(e.backlog, 0, i)
	return nil
}

// fresh returns a guard of a fresh run.
func (r *Runs) fresh() *guard.Guard {
	g, err := guard.New(r.cfg)
	if err != nil {
		// New made a guard of this configuration already: a rule that
		// fails now breaks its own contract.
		panic(err)
	}
	return g
}

// commit applies the backlog (the new step last) to the run's latest state
// and saves it, retrying on conflict. The verdict and index are those of the
// last step.
func (r *Runs) commit(ctx context.Context, e *entry) (guard.Verdict, int, error) {
	var lostErr error
	if e.lost > 0 {
		lostErr = fmt.Errorf("snapshot: run %q: %w (%d steps)", e.key, ErrBacklogFull, e.lost)
	}
	for attempt := 1; ; attempt++ {
		if e.g == nil || e.stale {
			if err := r.refresh(ctx, e); err != nil {
				v, at := r.fallbackVerdict(e, err)
				return v, at, errors.Join(err, lostErr)
			}
		}
		if len(e.backlog) == 0 {
			// Everything was saved already (by a save whose answer was
			// lost).
			e.lost = 0
			return guard.Verdict{}, 0, lostErr
		}
		for i := range e.backlog {
			if p := &e.backlog[i]; p.seq > e.applied {
				e.check(p)
			}
		}
		last := e.backlog[len(e.backlog)-1]
		env, data, err := r.encode(ctx, e)
		if err != nil {
			// The guard cannot be saved: start again from the store next
			// time.
			e.drop()
			return r.policyVerdict(last.v), last.at, err
		}
		ttl := r.opts.TTL
		if last.v.Stop && r.opts.FinishedTTL > 0 {
			ttl = r.opts.FinishedTTL
		}
		next, err := r.save(ctx, e, data, ttl)
		if err == nil {
			old := e.version
			var c Commit
			if r.opts.OnCommit != nil {
				c = Commit{Key: e.key, Old: old, New: next,
					Steps: make([]guard.Step, len(e.backlog)), Verdicts: make([]guard.Verdict, len(e.backlog))}
				for i, p := range e.backlog {
					c.Steps[i], c.Verdicts[i] = p.step, p.v
				}
			}
			e.version, e.env, e.stale, e.applied, e.lost = next, env, false, 0, 0
			clear(e.backlog) // drop references to the steps
			e.backlog = e.backlog[:0]
			if r.opts.OnCommit != nil {
				r.opts.OnCommit(c)
			}
			return last.v, last.at, lostErr
		}
		// Unsure whether it was saved (unless it conflicted): the next
		// load says. e's guard holds every step of the backlog.
		e.stale = true
		if errors.Is(err, ErrConflict) && attempt < r.opts.Retry.Attempts {
			if err = r.wait(ctx, attempt); err == nil {
				continue
			}
		}
		return r.policyVerdict(last.v), last.at, errors.Join(&StoreError{Op: "save", Key: e.key, Policy: r.opts.Policy, Err: err}, lostErr)
	}
}

// save saves data as the version after e's; it returns the version written.
func (r *Runs) save(ctx context.Context, e *entry, data []byte, ttl time.Duration) (Version, error) {
	next := Version(rand.Uint64())
	for next == 0 || next == e.version {
		next = Version(rand.Uint64())
	}
	cctx, cancel := r.storeContext(ctx)
	defer cancel()
	return next, r.store.Save(cctx, e.key, e.version, next, data, ttl)
}

// reset saves a fresh run over the run's newest version, retrying on
// conflict. The steps not saved yet are forgotten with the rest of the run.
// When the store fails, the run's guard in memory is fresh and the next
// operation loads the run again (the reset did not happen).
func (r *Runs) reset(ctx context.Context, e *entry) error {
	clear(e.backlog)
	e.backlog, e.lost = e.backlog[:0], 0
	for attempt := 1; ; attempt++ {
		if e.env == nil || e.stale {
			// The newest version and its writers' marks.
			if err := r.refresh(ctx, e); err != nil && !isStateError(err) {
				e.replace(r.fresh())
				e.stale = true
				return err
			}
		}
		if e.env == nil {
			e.env = &envelope{Format: format, Writers: make(map[string]writer)}
		}
		e.replace(r.fresh())
		env, data, err := r.encode(ctx, e)
		if err != nil {
			e.drop()
			return err
		}
		next, err := r.save(ctx, e, data, r.opts.TTL)
		if err == nil {
			old := e.version
			e.version, e.env = next, env
			if r.opts.OnCommit != nil {
				r.opts.OnCommit(Commit{Key: e.key, Old: old, New: next, Reset: true})
			}
			return nil
		}
		e.stale = true
		if errors.Is(err, ErrConflict) && attempt < r.opts.Retry.Attempts {
			if err = r.wait(ctx, attempt); err == nil {
				continue
			}
		}
		return &StoreError{Op: "save", Key: e.key, Policy: r.opts.Policy, Err: err}
	}
}

// encode writes e's guard in a new envelope, marked with the last step of
// this writer that it holds.
func (r *Runs) encode(ctx context.Context, e *entry) (*envelope, []byte, error) {
	snap, err := e.g.Snapshot(ctx, guard.SnapshotOptions{})
	if err != nil {
		return nil, nil, err
	}
	mark := e.env.Writers[r.id].Seq
	if n := len(e.backlog); n > 0 {
		mark = e.backlog[n-1].seq
	}
	env := &envelope{Format: format, Commits: e.env.Commits + 1, Guard: snap,
		Writers: make(map[string]writer, len(e.env.Writers)+1)}
	for id, w := range e.env.Writers {
		env.Writers[id] = w
	}
	env.Writers[r.id] = writer{Seq: mark, Commit: env.Commits}
	data, err := encode(env, e.key, r.opts.Key)
	if err != nil {
		return nil, nil, err
	}
	return env, data, nil
}

// wait sleeps before attempt+1.
func (r *Runs) wait(ctx context.Context, attempt int) error {
	d := r.opts.Retry.Initial
	for i := 1; i < attempt && d < r.opts.Retry.Max; i++ {
		d *= 2
	}
	d = min(d, r.opts.Retry.Max)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runs) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.opts.Timeout > 0 {
		return context.WithTimeout(ctx, r.opts.Timeout)
	}
	return ctx, func() {}
}

// catchUp applies to e's guard the steps of the backlog it does not hold,
// making a fresh guard when e has none: what this process knows of the run.
func (r *Runs) catchUp(e *entry) {
	if e.g == nil {
		// A fresh guard is the state of no version: stale, so that the
		// next operation loads the run before it saves.
		e.replace(r.fresh())
		e.stale = true
	}
	for i := range e.backlog {
		if p := &e.backlog[i]; p.seq > e.applied {
			e.check(p)
		}
	}
}

// fallbackVerdict is the answer to a step whose run could not be loaded,
// with the step's index: the newest step of the backlog's, as this process
// knows the run, under the policy.
func (r *Runs) fallbackVerdict(e *entry, err error) (guard.Verdict, int) {
	if isStateError(err) {
		return brokenVerdict(), 0
	}
	r.catchUp(e)
	if len(e.backlog) == 0 {
		return r.policyVerdict(guard.Verdict{}), 0
	}
	last := e.backlog[len(e.backlog)-1]
	return r.policyVerdict(last.v), last.at
}

// policyVerdict is v under FailOpen, and a stop under FailClosed.
func (r *Runs) policyVerdict(v guard.Verdict) guard.Verdict {
	if r.opts.Policy == FailClosed {
		return storeVerdict()
	}
	return v
}

func isStateError(err error) bool {
	var se *StateError
	return errors.As(err, &se)
}

// storeVerdict is FailClosed's stop while the store cannot be reached.
func storeVerdict() guard.Verdict {
	return guard.Verdict{Stop: true, Reason: ReasonStore, Code: CodeStore, Detector: DetectorName,
		Detail: "the run's store cannot be reached", Feedback: feedbackStore}
}

// brokenVerdict is every policy's stop for a stored run that cannot be used.
func brokenVerdict() guard.Verdict {
	return guard.Verdict{Stop: true, Reason: ReasonStore, Code: CodeTampered, Detector: DetectorName,
		Detail: "the run's stored snapshot cannot be used", Feedback: feedbackBroken}
}

// acquire returns the entry of key, locked.
func (r *Runs) acquire(key string) *entry {
	r.mu.Lock()
	el, ok := r.cache[key]
	if ok {
		r.lru.MoveToFront(el)
	} else {
		el = r.lru.PushFront(&entry{key: key})
		r.cache[key] = el
	}
	e := el.Value.(*entry)
	e.users++
	r.mu.Unlock()
	e.mu.Lock()
	return e
}

// release unlocks e, after trimming its backlog, and drops the least recently
// used runs beyond the cache size, except those in use, with unsaved steps or
// with running calls.
func (r *Runs) release(e *entry) {
	if over := len(e.backlog) - r.opts.Backlog; over > 0 {
		e.backlog = slices.Delete(e.backlog, 0, over)
		e.lost += over
	}
	running := 0
	for _, g := range []*guard.Guard{e.g, e.old} {
		if g != nil {
			running += core.RunningIn(g)
		}
	}
	e.busy = len(e.backlog) > 0 || e.lost > 0 || running > 0
	e.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	e.users--
	limit := max(r.opts.CacheSize, 0)
	for el := r.lru.Back(); el != nil && r.lru.Len() > limit; {
		prev := el.Prev()
		if x := el.Value.(*entry); x.users == 0 && !x.busy {
			r.lru.Remove(el)
			delete(r.cache, x.key)
		}
		el = prev
	}
}

// refusingGuard returns a guard whose only rule refuses every call and stops
// every step with v.
func refusingGuard(v guard.Verdict) *guard.Guard {
	g, err := guard.New(guard.Config{Rules: []rule.Rule{refuseAll{v}}})
	if err != nil {
		panic(err) // refuseAll is a valid rule
	}
	return g
}

// refuseAll is a rule, and its own state, that refuses every call and stops
// every step with its verdict. It keeps nothing.
type refuseAll struct{ v rule.Verdict }

func (refuseAll) Name() string                         { return DetectorName }
func (refuseAll) Priority() int                        { return 0 }
func (refuseAll) Options() any                         { return nil }
func (d refuseAll) NewState() rule.State               { return d }
func (refuseAll) Observe(*rule.Facts)                  {}
func (d refuseAll) Verdict() rule.Verdict              { return d.v }
func (d refuseAll) Preflight(*rule.Facts) rule.Verdict { return d.v }
