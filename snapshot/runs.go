package snapshot

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loopguard/loopguard/guard"
)

// A Factory makes the guards of runs: a fresh one for a run that has no
// snapshot yet, and a restored one for a run that has. Each call must return
// a new guard with detectors of its own, built with the same options every
// time (a restore under other options fails). A detector.Config is a Factory.
type Factory interface {
	New() (*guard.Guard, error)
	Restore(data []byte) (*guard.Guard, error)
}

// A Policy says what [Runs] answers when the store cannot be reached (or
// keeps conflicting past the retries): allow and report the error, or refuse.
type Policy int

const (
	// FailOpen answers from what this process knows of the run: its last
	// known state and the steps it recorded since, or, when it knows
	// nothing, a verdict that goes on and a decision that allows. The error
	// is returned beside the answer. It is the default: the guard is a
	// safety net, and its store going down should not stop every agent
	// that uses it. A loop whose steps this process sees is still caught.
	FailOpen Policy = iota
	// FailClosed refuses every call and stops every run (code
	// STORE_UNAVAILABLE) while the store cannot be reached. Choose it where
	// a runaway agent costs more than an outage.
	FailClosed
)

// String returns "fail-open" or "fail-closed".
func (p Policy) String() string {
	switch p {
	case FailOpen:
		return "fail-open"
	case FailClosed:
		return "fail-closed"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// The reason, code and detector name of the stop verdicts and refusals that
// FailClosed gives while the store cannot be reached, and that every policy
// gives for a stored snapshot that cannot be trusted or read.
const (
	ReasonStore    guard.Reason = "store"
	CodeStore                   = "STORE_UNAVAILABLE"
	CodeTampered                = "STORED_STATE_INVALID"
	DetectorName                = "snapshot"
	feedbackStore               = "The run's guard could not reach its saved state, so this call was not run. Try again in a moment."
	feedbackBroken              = "The run's saved state could not be read, so this call was not run. The run cannot go on until an operator looks at it."
)

// Retry bounds the retries of a save that conflicts: after attempt n (from
// 1) Runs waits a random time between half and all of min(Max, Initial·2ⁿ⁻¹),
// and gives up after Attempts attempts.
type Retry struct {
	// Attempts is the most attempts per operation; 0 means 32.
	Attempts int
	// Initial is the first wait; 0 means 200µs.
	Initial time.Duration
	// Max is the longest wait; 0 means 50ms.
	Max time.Duration
}

// Options tune [Runs]. The zero value is ready to use: fail open, no expiry,
// unsigned snapshots, 32 attempts, 1,024 runs cached, 1,024 unsaved steps.
type Options struct {
	// Policy is what to answer when the store cannot be reached.
	Policy Policy

	// TTL, when above zero, makes every saved snapshot expire that long
	// after its save: an idle run is forgotten.
	TTL time.Duration
	// FinishedTTL, when above zero, is the expiry of a snapshot whose last
	// step stopped the run (any stop: a normal finish or a fault), in place
	// of TTL.
	FinishedTTL time.Duration

	// Key, when not empty, signs every snapshot with HMAC-SHA256 (over the
	// run key and the snapshot) and rejects, with ErrTampered, one whose
	// signature is wrong or missing. It proves that a holder of the key
	// wrote that snapshot for that run; it cannot tell an older snapshot of
	// the same run from the newest, nor see a deleted one.
	Key []byte

	// Retry bounds the retries on conflicts.
	Retry Retry

	// Timeout, when above zero, bounds each call to the store (on top of
	// the context's own deadline), so that a slow store is answered by the
	// policy instead of holding up the agent.
	Timeout time.Duration

	// CacheSize is how many runs' guards are kept in memory, least
	// recently used dropped first; 0 means 1,024, a negative number none
	// (every operation restores). A run with unsaved steps or running
	// calls is never dropped.
	CacheSize int

	// Backlog is how many steps of one run are kept while they cannot be
	// saved (the store is down); 0 means 1,024. Past it, the oldest are
	// dropped and ErrBacklogFull reported.
	Backlog int

	// OnCommit, when set, is told of every save that succeeded, after it,
	// on the goroutine of the operation, with the run's lock held (do not
	// call Runs from it). It is for metrics and tests: the commits of a run
	// chain by their versions (Old of one is New of the one before).
	OnCommit func(Commit)
}

// A Commit is one successful save of a run.
type Commit struct {
	// Key is the run key.
	Key string
	// Old is the version replaced (0: the run's first save); New the version
	// written.
	Old, New Version
	// Steps are the steps the save added, oldest first (more than one after
	// the store was down), and Verdicts the guard's verdict for each.
	Steps    []guard.Step
	Verdicts []guard.Verdict
}

// ErrBacklogFull is reported when steps were dropped because the store was
// down for longer than [Options.Backlog] steps of one run.
var ErrBacklogFull = errors.New("snapshot: too many unsaved steps; the oldest were dropped")

// A StoreError reports that the store failed an operation (after the
// retries, for conflicts: errors.Is(err, ErrConflict)). The answer given
// beside it follows the policy. Steps not yet saved are kept and saved with
// the run's next successful operation.
type StoreError struct {
	// Op is "load" or "save".
	Op string
	// Key is the run key.
	Key string
	// Policy is the policy that was applied.
	Policy Policy
	// Err is the store's error.
	Err error
}

// Error names the operation, the run and the policy applied.
func (e *StoreError) Error() string {
	return fmt.Sprintf("snapshot: %s run %q: %v (%s)", e.Op, e.Key, e.Err, e.Policy)
}

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// Runs applies guard operations to runs whose state lives in a [Store], so
// that any number of workers, in one process or many, share each run: for a
// run key, it loads the run's snapshot (or starts a fresh guard), applies the
// operation, and saves it with compare-and-set, retrying with a bounded,
// jittered backoff when another worker saved first. Steps are counted once
// and in one order, whichever worker records them.
//
// Each Runs keeps the guards it restored in memory, and restores again only
// when the store's version is not the one it saw last: a run served by one
// worker costs one store round trip per step. Preflight costs one round trip
// that carries no snapshot when nothing changed.
//
// Runs is safe for concurrent use. Operations on one run key are serialised
// within a Runs and ordered across Runs by the store.
type Runs struct {
	store  Store
	guards Factory
	opts   Options
	id     string // this writer's name in the snapshots
	// seq numbers the steps this writer records, across runs, so that a
	// run's mark (the last of them it holds) outlives the cache.
	seq atomic.Uint64

	mu    sync.Mutex
	cache map[string]*list.Element // of *entry
	lru   list.List                // most recently used at the front
}

// entry is what a Runs knows of one run.
type entry struct {
	key   string
	users int        // operations that acquired it (guarded by Runs.mu)
	mu    sync.Mutex // held through each operation on the run

	// g is the run's guard: the state of version (clean), or, when dirty,
	// some state plus the steps of backlog up to gSeq. Nil when nothing is
	// known.
	g       *guard.Guard
	version Version
	env     *envelope // the envelope of version, nil before the first load
	dirty   bool
	gSeq    uint64

	backlog []pending // steps not known to be saved, oldest first
	running []*Call   // calls StartCall allowed, not finished
	lost    int       // steps dropped from a full backlog, not yet reported
}

type pending struct {
	seq  uint64
	step guard.Step
}

// A StateError reports that a run's stored snapshot cannot be used: it fails
// its signature ([ErrTampered]), it is malformed, it was saved under other
// options, or the store holds under its key something that is not a
// snapshot ([ErrMalformed]; with [Options.Key] set, [ErrTampered] too). Every
// policy refuses such a run's calls and stops it (code
// STORED_STATE_INVALID) until the snapshot is replaced or deleted: a run's
// state that cannot be trusted is never silently started afresh.
type StateError struct {
	// Key is the run key and Version the version read.
	Key     string
	Version Version
	// Err says what is wrong.
	Err error
}

// Error names the run, the version and the problem.
func (e *StateError) Error() string {
	return fmt.Sprintf("snapshot: run %q (version %d): %v", e.Key, e.Version, e.Err)
}

// Unwrap returns what is wrong.
func (e *StateError) Unwrap() error { return e.Err }

// New returns Runs that keep runs in store and make their guards with guards.
func New(store Store, guards Factory, o Options) (*Runs, error) {
	var errs []error
	if store == nil {
		errs = append(errs, &guard.OptionError{Field: "store", Err: errors.New("is nil")})
	}
	if guards == nil {
		errs = append(errs, &guard.OptionError{Field: "guards", Err: errors.New("is nil")})
	}
	if o.Policy != FailOpen && o.Policy != FailClosed {
		errs = append(errs, &guard.OptionError{Field: "Policy", Err: fmt.Errorf("unknown policy %d", o.Policy)})
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"TTL", o.TTL}, {"FinishedTTL", o.FinishedTTL}, {"Timeout", o.Timeout}, {"Retry.Initial", o.Retry.Initial}, {"Retry.Max", o.Retry.Max}} {
		if f.d < 0 {
			errs = append(errs, &guard.OptionError{Field: f.name, Err: errors.New("must not be negative")})
		}
	}
	if o.Retry.Attempts < 0 {
		errs = append(errs, &guard.OptionError{Field: "Retry.Attempts", Err: errors.New("must not be negative")})
	}
	if o.Backlog < 0 {
		errs = append(errs, &guard.OptionError{Field: "Backlog", Err: errors.New("must not be negative")})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.Retry.Attempts == 0 {
		o.Retry.Attempts = 32
	}
	if o.Retry.Initial == 0 {
		o.Retry.Initial = 200 * time.Microsecond
	}
	if o.Retry.Max == 0 {
		o.Retry.Max = 50 * time.Millisecond
	}
	if o.CacheSize == 0 {
		o.CacheSize = 1024
	}
	if o.Backlog == 0 {
		o.Backlog = 1024
	}
	o.Key = slices.Clone(o.Key)
	return &Runs{
		store: store, guards: guards, opts: o,
		id:    strconv.FormatUint(rand.Uint64(), 36),
		cache: make(map[string]*list.Element),
	}, nil
}

// Check records a finished step of run key and returns the guard's verdict,
// as [guard.Guard.Check] would on a guard that had seen every step of the run
// saved so far. When the store fails, the error is a *StoreError, the step is
// kept to be saved with the run's next operation ([Runs.Flush] forces it),
// and the verdict follows the policy.
//
// Leave out of s.Refused the calls that the policy refused (a decision of
// [Runs.Preflight] whose Detector is [DetectorName]): they are not the
// model's refusals, and would count towards REPEATED_REFUSAL once the store
// is back. [Runs.Begin]'s turns do this themselves.
func (r *Runs) Check(ctx context.Context, key string, s guard.Step) (guard.Verdict, error) {
	e := r.acquire(key)
	defer r.release(e)
	return r.record(ctx, e, s)
}

// record adds s to e's backlog and commits it. If a detector (or the store)
// panics on the way, the panic goes on, but first s leaves the backlog and
// e's guard is dropped: it may hold part of a step, and applying the backlog
// onto it again would count steps twice. The next operation restores the
// run from the store.
func (r *Runs) record(ctx context.Context, e *entry, s guard.Step) (guard.Verdict, error) {
	seq := r.seq.Add(1)
	e.backlog = append(e.backlog, pending{seq: seq, step: s})
	done := false
	defer func() {
		if done {
			return
		}
		e.g, e.dirty, e.gSeq = nil, false, 0
		if i := slices.IndexFunc(e.backlog, func(p pending) bool { return p.seq == seq }); i >= 0 {
			e.backlog = slices.Delete(e.backlog, i, i+1)
		}
	}()
	v, err := r.commit(ctx, e)
	done = true
	return v, err
}

// check records p on e's guard. If a detector panics, e's guard, which may
// hold part of the step, is dropped before the panic goes on.
func (e *entry) check(ctx context.Context, p pending) guard.Verdict {
	done := false
	defer func() {
		if !done {
			e.g, e.dirty, e.gSeq = nil, false, 0
		}
	}()
	v := e.g.CheckContext(ctx, p.step)
	done = true
	return v
}

// Flush saves the steps of run key that could not be saved before. It
// returns nil when there were none.
func (r *Runs) Flush(ctx context.Context, key string) error {
	e := r.acquire(key)
	defer r.release(e)
	if len(e.backlog) == 0 && e.lost == 0 {
		return nil
	}
	_, err := r.commit(ctx, e)
	return err
}

// Preflight asks whether calls may run now as the next step of run key, as
// [guard.Guard.Preflight] would on the run's latest state (with the calls
// that StartCall of this Runs allowed and that have not finished). It saves
// nothing, except steps that could not be saved before.
func (r *Runs) Preflight(ctx context.Context, key string, calls ...guard.ToolCall) (guard.Decision, error) {
	e := r.acquire(key)
	defer r.release(e)
	return r.preflight(ctx, e, calls)
}

// Summary returns the summary of run key's latest state (with the steps not
// saved yet). A run with no snapshot has a zero summary.
func (r *Runs) Summary(ctx context.Context, key string) (guard.Summary, error) {
	e := r.acquire(key)
	defer r.release(e)
	err := r.sync(ctx, e)
	if e.g == nil {
		return guard.Summary{}, err
	}
	return e.g.Summary(), err
}

// preflight judges calls after the running ones, on the latest state.
func (r *Runs) preflight(ctx context.Context, e *entry, calls []guard.ToolCall) (guard.Decision, error) {
	if err := r.sync(ctx, e); err != nil {
		return r.fallbackDecision(ctx, e, calls, err), err
	}
	return e.g.PreflightContext(ctx, append(e.runningCalls(), calls...)...), nil
}

// sync brings e up to date: it saves the backlog if there is one, or else
// loads what changed.
func (r *Runs) sync(ctx context.Context, e *entry) error {
	if len(e.backlog) > 0 || e.lost > 0 {
		_, err := r.commit(ctx, e)
		return err
	}
	return r.refresh(ctx, e)
}

// refresh loads the run when the store's version is not e's and restores it.
// It drops the steps of the backlog that the stored run holds already: a
// save whose answer was lost may have happened.
func (r *Runs) refresh(ctx context.Context, e *entry) error {
	seen := e.version
	if e.g == nil || e.dirty {
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
		e.g, e.dirty = nil, false
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
		g, err = r.guards.New()
		if err != nil {
			return err
		}
		env = &envelope{Format: format, Writers: make(map[string]writer)}
	case data == nil:
		return &StoreError{Op: "load", Key: e.key, Policy: r.opts.Policy,
			Err: fmt.Errorf("the store returned version %d without its snapshot", v)}
	default:
		env, err = decode(data, e.key, r.opts.Key)
		if err == nil {
			g, err = r.guards.Restore(env.Guard)
		}
		if err != nil {
			e.g, e.dirty = nil, false
			return &StateError{Key: e.key, Version: v, Err: err}
		}
	}
	e.g, e.version, e.env, e.dirty, e.gSeq = g, v, env, false, 0
	mark := env.Writers[r.id].Seq
	i := 0
	for i < len(e.backlog) && e.backlog[i].seq <= mark {
		i++
	}
	e.backlog = slices.Delete(e.backlog, 0, i)
	return nil
}

// commit applies the backlog (the new step last) to the run's latest state
// and saves it, retrying on conflict. The verdict is that of the last step.
func (r *Runs) commit(ctx context.Context, e *entry) (guard.Verdict, error) {
	var lostErr error
	if e.lost > 0 {
		lostErr = fmt.Errorf("snapshot: run %q: %w (%d steps)", e.key, ErrBacklogFull, e.lost)
	}
	for attempt := 1; ; attempt++ {
		if e.g == nil || e.dirty {
			if err := r.refresh(ctx, e); err != nil {
				return r.fallbackVerdict(ctx, e, err), errors.Join(err, lostErr)
			}
		}
		if len(e.backlog) == 0 {
			// Everything was saved already (by a save whose answer was
			// lost).
			e.lost = 0
			return guard.Verdict{}, lostErr
		}
		verdicts := make([]guard.Verdict, len(e.backlog))
		for i, p := range e.backlog {
			verdicts[i] = e.check(ctx, p)
		}
		last := verdicts[len(verdicts)-1]
		e.dirty, e.gSeq = true, e.backlog[len(e.backlog)-1].seq
		env, data, err := r.encode(e)
		if err != nil {
			// The guard cannot be saved: start again from the store next
			// time.
			e.g, e.dirty = nil, false
			return r.policyVerdict(last), err
		}
		next := Version(rand.Uint64())
		for next == 0 || next == e.version {
			next = Version(rand.Uint64())
		}
		ttl := r.opts.TTL
		if last.Stop && r.opts.FinishedTTL > 0 {
			ttl = r.opts.FinishedTTL
		}
		cctx, cancel := r.storeContext(ctx)
		err = r.store.Save(cctx, e.key, e.version, next, data, ttl)
		cancel()
		if err == nil {
			old := e.version
			var steps []guard.Step
			if r.opts.OnCommit != nil {
				steps = make([]guard.Step, len(e.backlog))
				for i, p := range e.backlog {
					steps[i] = p.step
				}
			}
			e.version, e.env, e.dirty, e.lost = next, env, false, 0
			clear(e.backlog) // drop references to the steps
			e.backlog = e.backlog[:0]
			if r.opts.OnCommit != nil {
				r.opts.OnCommit(Commit{Key: e.key, Old: old, New: next, Steps: steps, Verdicts: verdicts})
			}
			return last, lostErr
		}
		if errors.Is(err, ErrConflict) && attempt < r.opts.Retry.Attempts {
			err = r.wait(ctx, attempt)
			if err == nil {
				continue
			}
		}
		// Unsure whether it was saved (unless it conflicted): the next
		// load says. e stays dirty, holding every step of the backlog.
		return r.policyVerdict(last), errors.Join(&StoreError{Op: "save", Key: e.key, Policy: r.opts.Policy, Err: err}, lostErr)
	}
}

// encode writes e's guard in a new envelope.
func (r *Runs) encode(e *entry) (*envelope, []byte, error) {
	snap, err := e.g.Snapshot(guard.SnapshotOptions{})
	if err != nil {
		return nil, nil, err
	}
	env := &envelope{Format: format, Commits: e.env.Commits + 1, Guard: snap,
		Writers: make(map[string]writer, len(e.env.Writers)+1)}
	for id, w := range e.env.Writers {
		env.Writers[id] = w
	}
	env.Writers[r.id] = writer{Seq: e.gSeq, Commit: env.Commits}
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
// It returns the verdict of the last step applied, and the Factory's error
// if it could not make a guard.
func (r *Runs) catchUp(ctx context.Context, e *entry) (guard.Verdict, error) {
	if e.g == nil {
		g, err := r.guards.New()
		if err != nil {
			return guard.Verdict{}, err
		}
		// A fresh guard is the state of no version: dirty, so that the
		// next operation loads the run before it saves.
		e.g, e.dirty, e.gSeq = g, true, 0
	}
	var v guard.Verdict
	for _, p := range e.backlog {
		if !e.dirty || p.seq > e.gSeq {
			v = e.check(ctx, p)
			e.dirty, e.gSeq = true, p.seq
		}
	}
	return v, nil
}

// fallbackVerdict is the answer to a Check whose run could not be loaded.
func (r *Runs) fallbackVerdict(ctx context.Context, e *entry, err error) guard.Verdict {
	if isStateError(err) {
		return brokenVerdict()
	}
	v, _ := r.catchUp(ctx, e) // a guard that cannot be made: the verdict goes on
	return r.policyVerdict(v)
}

// policyVerdict is v under FailOpen, and a stop under FailClosed.
func (r *Runs) policyVerdict(v guard.Verdict) guard.Verdict {
	if r.opts.Policy == FailClosed {
		return guard.Verdict{Stop: true, Reason: ReasonStore, Code: CodeStore, Detector: DetectorName,
			Detail: "the run's store cannot be reached", Feedback: feedbackStore}
	}
	return v
}

// fallbackDecision is the answer to a preflight whose run could not be
// loaded.
func (r *Runs) fallbackDecision(ctx context.Context, e *entry, calls []guard.ToolCall, err error) guard.Decision {
	var v guard.Verdict
	switch {
	case isStateError(err):
		v = brokenVerdict()
	case r.opts.Policy == FailClosed:
		v = r.policyVerdict(guard.Verdict{})
	default:
		if _, err := r.catchUp(ctx, e); err != nil || e.g == nil {
			return guard.Decision{Allow: true}
		}
		return e.g.PreflightContext(ctx, append(e.runningCalls(), calls...)...)
	}
	return guard.Decision{Reason: v.Reason, Code: v.Code, Detail: v.Detail, Feedback: v.Feedback, Detector: v.Detector}
}

func isStateError(err error) bool {
	var se *StateError
	return errors.As(err, &se)
}

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
	e.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	e.users--
	limit := max(r.opts.CacheSize, 0)
	for el := r.lru.Back(); el != nil && r.lru.Len() > limit; {
		prev := el.Prev()
		if x := el.Value.(*entry); x.users == 0 && len(x.backlog) == 0 && len(x.running) == 0 && x.lost == 0 {
			r.lru.Remove(el)
			delete(r.cache, x.key)
		}
		el = prev
	}
}
