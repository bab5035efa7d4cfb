package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/canonical"
)

// A Rule is one rule of the guard, described: its name, its priority, its
// options, and how to make the state it keeps for one run. A Rule never
// changes once built, so that one value serves any number of guards, at the
// same time, from many goroutines (as a tls.Config does): each guard asks it
// for a [State] of its own with NewState.
//
// The built-in rules (package detector and its subpackages) implement
// exactly this interface; a rule of your own sits beside them on equal
// footing. Package guardtest checks that an implementation keeps the
// contract.
type Rule interface {
	// Name is the rule's stable name: the key of its state in snapshots
	// and fingerprints. It must be valid (see [ValidName]) and must never
	// change.
	Name() string

	// Priority orders the rules: the first stop in ascending priority
	// wins (ties are broken by name). The built-in rules use
	// PriorityFinish to PriorityNoProgress; a rule of your own that should
	// run after them uses PriorityCustom or more.
	Priority() int

	// Options returns the rule's options as JSON-able data. The guard
	// hashes them into the rule's fingerprint, so that a snapshot is
	// never restored under different options. Equal options must give
	// equal data, and different options different data.
	Options() any

	// NewState returns the state of a fresh run: a new value each time,
	// sharing nothing that it changes with other states.
	NewState() State
}

// A State is what a [Rule] keeps of one run. A guard calls its states with
// its lock held, one at a time, so a state needs no locking of its own.
// A state must not keep the *Facts it is given, nor anything reachable from
// it, past the call: the guard reuses them.
//
// A state that keeps something from one step to the next, and so must be
// saved with the run, also implements [Saver]. A state that does not is
// saved as null, and its rule writes no snapshot code.
type State interface {
	// Observe records one finished step. It is called for every step, on
	// every state, so that all states stay consistent.
	Observe(f *Facts)

	// Verdict returns the verdict on the step last observed: a stop,
	// warnings, or the zero Verdict to go on.
	Verdict() Verdict

	// Preflight judges calls that have not run yet, as if they were the
	// next step's calls (f.Phase is PhasePreflight and the calls have no
	// results). It returns a stop verdict to refuse them. It must not
	// change the state. A rule that cannot judge calls before they run
	// returns the zero Verdict.
	Preflight(f *Facts) Verdict
}

// A Saver is a [State] that is saved with its run.
type Saver interface {
	// Snapshot returns the state as JSON. Equal states give equal bytes,
	// and the bytes must not share memory with the state. Unless
	// o.Previews is set, the state holds no character of any argument,
	// result or text (previews read [Redacted]) and writes tool names
	// with o.Name; stop decisions must not depend on either.
	Snapshot(o SnapshotOptions) ([]byte, error)

	// Restore replaces the state by one that Snapshot returned (JSON null
	// for a fresh state). It must validate the data, never panic, and
	// return an error for a state that is malformed or that its options
	// do not allow: it accepts only what Snapshot can write.
	// [UnmarshalState] reads JSON that strictly; a state that also
	// implements [Bounded] is then checked against the run's counters.
	Restore(state []byte) error
}

// The priorities of the built-in detectors, with gaps for detectors of your
// own. A lower priority is asked first.
const (
	PriorityFinish      = 100
	PriorityBudget      = 200
	PriorityToolLimit   = 300
	PriorityRepeat      = 400
	PriorityOscillation = 500
	PriorityNoProgress  = 600
	// PriorityCustom is a good priority for a rule of your own that should
	// only speak when no built-in rule stops the run.
	PriorityCustom = 1000
)

// A Summarizer is a [State] that adds a summary of itself (JSON-able,
// nothing time-dependent) to [Guard.Summary].
type Summarizer interface {
	Summary() any
}

// A Limiter is a [Rule] whose options are only limits (such as step or
// token budgets). When [Config.AllowLimitChanges] is set, the state of such
// a rule may be restored under options that differ from those it was saved
// with.
type Limiter interface {
	OnlyLimits() bool
}

// A Successor is a [Rule] whose options gained a field since an earlier
// release, with a default that changes what the rule does. PriorOptions
// returns the options as the earlier release wrote them (the same rule
// without the new field), or nil when they are the rule's [Rule.Options]:
// [Restore] takes a state fingerprinted with either as its own, so that a
// run saved before the upgrade goes on under the new defaults (the state
// reads as it was saved, its new parts at their zero values).
type Successor interface {
	PriorOptions() any
}

// fingerprintMatches reports whether a saved fingerprint is d's: that of its
// options, or of its prior options when it is a [Successor].
func fingerprintMatches(d Rule, saved canonical.Sum) bool {
	if saved == Fingerprint(d) {
		return true
	}
	if s, ok := d.(Successor); ok {
		if prior := s.PriorOptions(); prior != nil {
			return saved == canonical.Hash(prior)
		}
	}
	return false
}

// Errors that the guard's constructors return, wrapped in a *DetectorError
// or an *OptionError that says which detector or option.
var (
	ErrNilDetector    = errors.New("detector is nil")
	ErrInvalidName    = errors.New("invalid detector name")
	ErrDuplicateName  = errors.New("two detectors have the same name")
	ErrInvalidOption  = errors.New("invalid option")
	ErrInvalidState   = errors.New("invalid snapshot")
	ErrOptionsChanged = errors.New("options differ from the snapshot's")
)

// A DetectorError reports a problem with one detector.
type DetectorError struct {
	Name  string // the detector's name ("" if it has none)
	Index int    // its position in the list given to the constructor
	Err   error
}

// Error says which detector and what is wrong.
func (e *DetectorError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("guard: detector #%d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("guard: detector %q: %v", e.Name, e.Err)
}

// Unwrap returns the underlying error.
func (e *DetectorError) Unwrap() error { return e.Err }

// An OptionError reports an invalid option. errors.Is(err, ErrInvalidOption)
// holds for every OptionError.
type OptionError struct {
	// Detector names the detector ("" for the guard's own options).
	Detector string
	// Field names the option: a Go field name (Threshold) or, for options
	// read from JSON, its path (repeatedToolCall.threshold).
	Field string
	// Err says what is wrong with it.
	Err error
}

// Error says which option of which detector and what is wrong.
func (e *OptionError) Error() string {
	var b strings.Builder
	if e.Detector != "" {
		b.WriteString(e.Detector)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "option %s: %v", e.Field, e.Err)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *OptionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidOption.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

// ValidName reports whether name can name a detector: 1 to 64 characters,
// starting with an ASCII letter, followed by ASCII letters, digits and
// '_', '-', '.', '/'. Names are case-sensitive.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/'):
		default:
			return false
		}
	}
	return true
}
