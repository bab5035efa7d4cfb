// Package guardtest checks that a [rule.Rule] keeps the contract the guard
// relies on. It is for people who write rules, in the way testing/fstest and
// testing/slogtest are for people who write file systems and log handlers.
//
// A rule that breaks the contract hurts the whole guard in ways that are
// hard to see: its state changes when it is only asked a question, it
// restores into a different state than it saved, two runs of one rule see
// each other's steps, it panics on an odd step, or its fingerprint is
// unstable so that a saved run can never be restored. Call [Run] from a test
// of your rule's package:
//
//	func TestConformance(t *testing.T) {
//		build := func(o myrule.Options) func(t *testing.T) rule.Rule {
//			return func(t *testing.T) rule.Rule {
//				r, err := myrule.New(o)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return r
//			}
//		}
//		guardtest.Run(t, build(myrule.Options{Threshold: 3}),
//			guardtest.WithOtherOptions(build(myrule.Options{Threshold: 4})))
//	}
//
// The factories are given the subtest of the property that calls them ([Check],
// which runs outside a test, gives them nil), and must return a rule with the
// same options each time.
//
// Each property is a subtest of its own, with a rule of its own from the
// factory (one rule serves all the guards of a property, as one
// configuration serves many runs), so a property can be skipped with go
// test -skip. The properties are:
//
//   - PreflightKeepsState: Preflight leaves the state's snapshot as it was
//     (byte-identical, for a deterministic Snapshot), answers the same
//     question the same way, does not modify the calls it is given, and a
//     twin that is never asked gives the same verdicts.
//   - ObserveKeepsStep: Observe and Verdict modify neither the step the
//     caller passed to Check (down to the maps of the arguments) nor the
//     step and facts that later rules read.
//   - SnapshotRestore: a state that is a [rule.Saver] round-trips: after a
//     snapshot with previews at any point of a run, restoring it into a
//     new state gives back the same state and the same verdicts and
//     preflight answers on the rest of the run; a snapshot without previews
//     (the default) restores to the same state without previews, and gives
//     the same stop decisions. A state that is not a Saver is saved as
//     null, so the same holds only if it keeps nothing between steps.
//   - SnapshotBytes: snapshots are valid JSON, deterministic (taken twice, or
//     by two states given the same steps, they are equal), and share no
//     memory with the state.
//   - RestoreNullIsFresh: after Restore of JSON null, a Saver is a fresh
//     state: a fresh state's snapshot, a fresh state's verdicts. Skipped
//     for a state that is not a Saver.
//   - OddSteps: no panic, and snapshots that are still taken and restored,
//     after odd steps: empty, huge text, invalid UTF-8, NaN and negative
//     usage, invalid JSON arguments, cyclic and unencodable Go values, deep
//     nesting, thousands of parallel calls; and rules of separate guards
//     running in parallel goroutines do not disturb one another.
//   - Fingerprint: two rules from the factory have the same fingerprint,
//     their options are JSON-able, and the fingerprint does not change as
//     runs go on.
//   - FingerprintDiffers: a rule built with other options (see
//     [WithOtherOptions]) has the same name and another fingerprint. Without
//     WithOtherOptions it is skipped.
//   - Name: the name is valid ([rule.ValidName]) and, like the priority, the
//     same at every call, for every rule from the factory, and as runs go on.
//   - IndependentStates: NewState gives independent states: two guards of
//     one rule give the verdicts that guards of rules of their own give,
//     whether their steps alternate or one guard's step comes between the
//     Observe and the Verdict of the other's, and a state made after others
//     have run (as [guard.Guard.Reset] makes one) is a fresh state.
//
// The properties run over random runs of steps (see [RandomStep], or give
// your own generator with [WithSteps]). The seed is logged; a failure names
// it, and [WithSeed] repeats the same runs. A failing run is shrunk, by
// dropping steps and calls, before it is reported.
//
// States are driven through a guard (guard.New), because only the guard
// builds facts; Snapshot and Restore are called on the state directly where
// the property is about the state. A rule that reads a wall clock must be
// given a fixed one by its factory, or its verdicts cannot be compared.
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
	"github.com/loopguard/loopguard/rule"
)

// An Option tunes [Run] and [Check].
type Option func(*config)

type config struct {
	steps    func(*rand.Rand) rule.Step
	other    func(t *testing.T) rule.Rule
	guardCfg guard.Config
	checks   int
	seed     uint64
	seeded   bool
	maxLen   int
}

// WithSteps makes the properties run on steps from gen instead of
// [RandomStep], so that they exercise the shapes your rule cares about.
// gen must draw all its randomness from r, so that a seed repeats a run.
// To mix your steps with the default ones, call RandomStep from gen.
func WithSteps(gen func(r *rand.Rand) rule.Step) Option {
	return func(c *config) { c.steps = gen }
}

// WithOtherOptions gives a factory of rules with the same name as the rule
// under test but other options. The FingerprintDiffers property checks that
// their fingerprint differs; without this option it is skipped.
func WithOtherOptions(newOther func(t *testing.T) rule.Rule) Option {
	return func(c *config) { c.other = newOther }
}

// WithGuardOptions sets the options of the guards the properties build
// around the rule (for example Ignore, so that ignored calls are part of
// the runs). The Rules of cfg are not used: the guards run the rule under
// test (and the kit's own probes).
func WithGuardOptions(cfg guard.Config) Option {
	return func(c *config) { c.guardCfg = cfg }
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

// Run checks the rules that newRule makes, one property per subtest of t
// (named as listed in the package documentation). newRule is given the
// subtest that calls it, and must return a rule with the same options each
// time; it may call t.Fatal.
func Run(t *testing.T, newRule func(t *testing.T) rule.Rule, opts ...Option) {
	t.Helper()
	c := newConfig(opts)
	t.Logf("guardtest: seed %d (repeat with guardtest.WithSeed(%d))", c.seed, c.seed)
	for i, p := range properties {
		t.Run(p.name, func(t *testing.T) {
			t.Helper()
			r := &reporter{}
			p.check(&env{config: c, t: t, newRule: newRule, prop: i}, r)
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
// finds, joined with [errors.Join]; nil means the rule passed. Each problem
// names its property, the seed and the failing run. Properties that cannot
// be checked (such as the different fingerprints without
// [WithOtherOptions]) are left out silently. Check runs outside any test
// (in an example, say), so it gives the factories a nil *testing.T: a
// factory for Check must not use it, and reports an error by panicking
// (the problem names the panic).
func Check(newRule func(t *testing.T) rule.Rule, opts ...Option) error {
	c := newConfig(opts)
	var errs []error
	for i, p := range properties {
		r := &reporter{}
		p.check(&env{config: c, newRule: newRule, prop: i}, r)
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
