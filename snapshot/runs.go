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
	"github.com/loopguard/loopguard/internal/core"
)

// A Policy says what the guards of [Runs] answer when the store cannot be
// reached (or keeps conflicting past the retries): allow, or refuse. Either
// way the store's error goes to [Options.OnError].
type Policy int

const (
	// FailOpen answers from what this process knows of the run: its last
	// known state and the steps it recorded since, or, when it knows
	// nothing, a fresh run's answers. It is the default: the guard is a
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
	DetectorName                = core.PolicyRule
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
	// call Runs or its guards from it). It is for metrics and tests: the
	// commits of a run chain by their versions (Old of one is New of the one
	// before).
	OnCommit func(Commit)

	// OnError, when set, is told of what went wrong with the store in an
	// operation of a guard of [Runs.Guard]: a *StoreError, a *StateError,
	// ErrBacklogFull (joined when several), or a run's guard that could not
	// be saved. The guard's methods never return these: they answer by the
	// policy. It is called after the operation, on its goroutine, with no
	// lock held (it may call Runs).
	OnError func(key string, err error)
}

// A Commit is one successful save of a run.
type Commit struct {
	// Key is the run key.
	Key string
	// Old is the version replaced (0: the run's first save); New the version
	// written.
	Old, New Version
	// Reset reports that the save started the run afresh ([guard.Guard.Reset]),
	// before Steps.
	Reset bool
	// Steps are the steps the save added, oldest first (more than one after
	// the store was down), and Verdicts the guard's verdict for each.
	Steps    []guard.Step
	Verdicts []guard.Verdict
}

// ErrBacklogFull is reported when steps were dropped because the store was
// down for longer than [Options.Backlog] steps of one run.
var ErrBacklogFull = errors.New("snapshot: too many unsaved steps; the oldest were dropped")

// A StoreError reports that the store failed an operation (after the
// retries, for conflicts: errors.Is(err, ErrConflict)), to [Options.OnError].
// The guard's answer follows the policy. Steps not yet saved are kept and saved with
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

// Runs keeps runs whose state lives in a [Store], so that any number of
// workers, in one process or many, share each run: [Runs.Guard] returns a
// run's guard, a *guard.Guard like any other, whose every operation loads
// the run's snapshot (or starts a fresh run), applies the operation, and
// saves it with compare-and-set, retrying with a bounded, jittered backoff
// when another worker saved first. Steps are counted once and in one order,
// whichever worker records them.
//
// Each Runs keeps the runs it restored in memory, and restores again only
// when the store's version is not the one it saw last: a run served by one
// worker costs one store round trip per step. A preflight costs one round
// trip that carries no snapshot when nothing changed.
//
// Runs is safe for concurrent use. Operations on one run key are serialised
// within a Runs and ordered across Runs by the store.
type Runs struct {
	store   Store
	cfg     guard.Config
	front   *guard.Guard // a guard of cfg, whose configuration the fronts share
	opts    Options
	id      string       // this writer's name in the snapshots
	closed  *guard.Guard // refuses every call: the store is down, fail closed
	refuser *guard.Guard // refuses every call: the stored run cannot be used
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
	busy  bool       // unsaved steps or running calls: never dropped (set under mu, read under Runs.mu)
	mu    sync.Mutex // held through each operation on the run

	// g is the run's guard in memory: the state of version, then the
	// steps of backlog up to applied. Nil when nothing is known, or when
	// it was dropped (old then holds the run's running calls). When stale,
	// the state g started from is not known to be version's: the run is
	// loaded again before the next save.
	g       *guard.Guard
	old     *guard.Guard
	version Version
	env     *envelope // the envelope of version, nil before the first load
	stale   bool
	applied uint64

	backlog []pending // steps not known to be saved, oldest first
	lost    int       // steps dropped from a full backlog, not yet reported
}

// pending is a step not known to be saved, with its verdict and index once
// e.g holds it.
type pending struct {
	seq  uint64
	step guard.Step
	v    guard.Verdict
	at   int
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

// New returns Runs that keep runs in store, each with a guard made from cfg
// (as [guard.New] makes one: cfg's problems are New's errors). cfg is
// shared configuration: it must not change afterwards.
func New(store Store, cfg guard.Config, o Options) (*Runs, error) {
	var errs []error
	if store == nil {
		errs = append(errs, &guard.OptionError{Field: "store", Err: errors.New("is nil")})
	}
	front, err := guard.New(cfg) // the configuration of the fronts
	if err != nil {
		errs = append(errs, err)
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
		store: store, cfg: cfg, front: front, opts: o,
		id:      strconv.FormatUint(rand.Uint64(), 36),
		closed:  refusingGuard(storeVerdict()),
		refuser: refusingGuard(brokenVerdict()),
		cache:   make(map[string]*list.Element),
	}, nil
}

// Guard returns the guard of run key: a *guard.Guard whose run lives in the
// store, with the rules and options of the Runs' configuration. Its methods
// answer as those of a guard in memory that had seen every step of the run
// saved so far (with the calls its StartCall allowed on this Runs that have
// not finished), whichever worker saved them; each one loads what changed
// and saves what it records. Guards of one key share their run, on this Runs
// and on any other over the same store; a Guard is cheap to make, once per
// request or once per run.
//
// A store that fails is not an error of the guard's methods: they answer by
// the policy, the steps that could not be saved are kept to be saved with
// the run's next operation ([Runs.Flush] forces it), and [Options.OnError]
// is told. Their error is not nil only when ctx had ended before the
// operation began (nothing was done); a running call's Finish records the
// call whatever its ctx, since the call ran. Reset saves a fresh run; if the
// store does not take it, OnError is told and the run goes on from the
// store's state. The calls that the policy refuses
// (their Decision's Detector is [DetectorName]) are not the model's
// refusals: a [guard.Turn] leaves them out of its step, and a caller of
// Preflight and Check should leave them out of [guard.Step.Refused].
func (r *Runs) Guard(key string) *guard.Guard {
	return core.FrontOf(r.front, &backend{r: r, key: key})
}

// Flush saves the steps of run key that could not be saved before, and
// returns what went wrong (not told to [Options.OnError]), or nil when there
// was nothing to save.
func (r *Runs) Flush(ctx context.Context, key string) error {
	e := r.acquire(key)
	defer r.release(e)
	if len(e.backlog) == 0 && e.lost == 0 {
		return nil
	}
	_, _, err := r.commit(ctx, e)
	return err
}
