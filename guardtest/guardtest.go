// Package guardtest checks that a [guard.Detector] keeps the contract the
// guard relies on. It is for people who write detectors, in the way
// testing/fstest and testing/slogtest are for people who write file systems
// and log handlers.
//
// A detector that breaks the contract hurts the whole guard in ways that are
// hard to see: it changes its state when it is only asked a question, it
// restores into a different state than it saved, it panics on an odd step, or
// its fingerprint is unstable so that a saved run can never be restored. Call
// [Run] from a test of your detector's package:
//
//	func TestConformance(t *testing.T) {
//		build := func(o mydetector.Options) func() guard.Detector {
//			return func() guard.Detector {
//				d, err := mydetector.New(o)
//				if err != nil {
//					panic(err) // reported by the kit, in the subtest
//				}
//				return d
//			}
//		}
//		guardtest.Run(t, build(mydetector.Options{Threshold: 3}),
//			guardtest.WithOtherOptions(build(mydetector.Options{Threshold: 4})))
//	}
//
// The factories are called inside Run's subtests: they should panic on an
// error rather than call the outer test's t.Fatal.
//
// Each property is a subtest of its own, with a fresh detector (and more, as
// the property needs), so a property can be skipped with go test -skip. The
// properties are:
//
//   - PreflightKeepsState: Preflight leaves the detector's snapshot as it
//     was (byte-identical, for a deterministic Snapshot), answers the same
//     question the same way, does not modify the calls it is given, and a
//     twin that is never asked gives the same verdicts.
//   - ObserveKeepsStep: Observe and Verdict modify neither the step the
//     caller passed to Check (down to the maps of the arguments) nor the
//     step and facts that later detectors read.
//   - SnapshotRestore: after a snapshot with previews at any point of a
//     run, restoring it into a fresh detector gives back the same state and
//     the same verdicts and preflight answers on the rest of the run; a
//     snapshot without previews (the default) restores to the same state
//     without previews, and gives the same stop decisions.
//   - SnapshotBytes: snapshots are valid JSON, deterministic (taken twice, or
//     by two detectors given the same steps, they are equal), and share no
//     memory with the detector's state.
//   - ResetIsFresh: after Reset, or Restore of JSON null, the detector has a
//     fresh detector's snapshot and gives a fresh detector's verdicts.
//   - OddSteps: no panic, and snapshots that are still taken and restored,
//     after odd steps: empty, huge text, invalid UTF-8, NaN and negative
//     usage, invalid JSON arguments, cyclic and unencodable Go values, deep
//     nesting, thousands of parallel calls; and detectors of separate guards
//     running in parallel goroutines do not disturb one another.
//   - Fingerprint: two fresh detectors have the same fingerprint, their
//     options are JSON-able, and the fingerprint does not change as the run
//     goes on.
//   - FingerprintDiffers: a detector built with other options (see
//     [WithOtherOptions]) has the same name and another fingerprint. Without
//     WithOtherOptions it is skipped.
//   - Name: the name is valid ([guard.ValidName]) and, like the priority, the
//     same at every call and for every instance.
//   - NotShared: a detector cannot be shared silently: while a guard holds
//     it, a second guard.New refuses it with an error that wraps
//     [guard.ErrDetectorInUse] and names it (embed [guard.Owned]), or
//     sharing it is harmless: two guards that share it give the verdicts
//     that detectors of their own give (a detector without state).
//
// The properties run over random runs of steps (see [RandomStep], or give
// your own generator with [WithSteps]). The seed is logged; a failure names
// it, and [WithSeed] repeats the same runs. A failing run is shrunk, by
// dropping steps and calls, before it is reported.
//
// Detectors that need facts are driven through a guard (guard.New), because
// only the guard builds facts; Snapshot, Restore and Reset are called on the
// detector directly where the property is about the detector. A detector
// that reads a wall clock must be given a fixed one by newDetector, or its
// verdicts cannot be compared.
//
// Besides loopguard's own packages, guardtest uses only the standard library:
// its users need no property-testing or diff package.
package guardtest

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loopguard/loopguard/guard"
)

// An Option tunes [Run] and [Check].
type Option func(*config)

type config struct {
	steps     func(*rand.Rand) guard.Step
	other     func() guard.Detector
	guardOpts guard.Options
	checks    int
	seed      uint64
	seeded    bool
	maxLen    int
}

// WithSteps makes the properties run on steps from gen instead of
// [RandomStep], so that they exercise the shapes your detector cares about.
// gen must draw all its randomness from r, so that a seed repeats a run.
// To mix your steps with the default ones, call RandomStep from gen.
func WithSteps(gen func(r *rand.Rand) guard.Step) Option {
	return func(c *config) { c.steps = gen }
}

// WithOtherOptions gives a factory of detectors with the same name as the
// detector under test but other options. The Fingerprint property checks that
// their fingerprint differs; without this option that part of it is skipped.
func WithOtherOptions(newOther func() guard.Detector) Option {
	return func(c *config) { c.other = newOther }
}

// WithGuardOptions sets the options of the guards the properties build
// around the detector (for example Ignore, so that ignored calls are part of
// the runs).
func WithGuardOptions(o guard.Options) Option {
	return func(c *config) { c.guardOpts = o }
}

// WithChecks sets how many random runs each property is checked on. The
// default is 100, or 20 with go test -short. Fewer are used by the properties
// whose runs are slow (OddSteps) or whose checks depend little on the run
// (Fingerprint, Name).
func WithChecks(n int) Option {
	return func(c *config) { c.checks = n }
}

// WithSeed fixes the seed of the random runs, to repeat a failure. Without
// it, each call of Run or Check uses a new random seed and logs it.
func WithSeed(seed uint64) Option {
	return func(c *config) { c.seed, c.seeded = seed, true }
}

// WithMaxSteps sets the most steps in a random run (default 40; at least 1).
func WithMaxSteps(n int) Option {
	return func(c *config) { c.maxLen = n }
}

// short reports whether the kit runs under go test -short: it then checks
// 20 runs instead of 100 and shrinks a failing run less.
func short() bool { return testing.Testing() && flag.Parsed() && testing.Short() }

func newConfig(opts []Option) *config {
	c := &config{steps: RandomStep, checks: 100, maxLen: 40}
	if short() {
		c.checks = 20
	}
	for _, o := range opts {
		o(c)
	}
	if c.steps == nil {
		c.steps = RandomStep
	}
	c.checks = max(c.checks, 1)
	c.maxLen = max(c.maxLen, 1)
	if !c.seeded {
		c.seed = rand.Uint64()
	}
	return c
}

// Run checks the detectors that newDetector makes, one property per subtest
// of t (named as listed in the package documentation). newDetector is called
// for every detector a property needs, and must return a fresh detector with
// the same options each time.
func Run(t *testing.T, newDetector func() guard.Detector, opts ...Option) {
	t.Helper()
	c := newConfig(opts)
	t.Logf("guardtest: seed %d (repeat with guardtest.WithSeed(%d))", c.seed, c.seed)
	for i, p := range properties {
		t.Run(p.name, func(t *testing.T) {
			t.Helper()
			r := &reporter{}
			p.check(&env{config: c, newDet: newDetector, prop: i}, r)
			if r.skip != "" {
				t.Skip(r.skip)
			}
			for _, e := range r.errs {
				t.Error(e)
			}
		})
	}
}

// Check checks the same properties as [Run] and returns every problem it
// finds, joined with [errors.Join]; nil means the detector passed. Each
// problem names its property, the seed and the failing run. Properties that
// cannot be checked (such as the different fingerprints without
// [WithOtherOptions]) are left out silently.
func Check(newDetector func() guard.Detector, opts ...Option) error {
	c := newConfig(opts)
	var errs []error
	for i, p := range properties {
		r := &reporter{}
		p.check(&env{config: c, newDet: newDetector, prop: i}, r)
		for _, e := range r.errs {
			errs = append(errs, fmt.Errorf("guardtest: %s: %w", p.name, e))
		}
	}
	return errors.Join(errs...)
}

// Properties returns the names of the properties that Run and Check check,
// in order: the names of Run's subtests.
func Properties() []string {
	names := make([]string, len(properties))
	for i, p := range properties {
		names[i] = p.name
	}
	return names
}

// A reporter collects a property's outcome.
type reporter struct {
	errs []error
	skip string
}

func (r *reporter) errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}
