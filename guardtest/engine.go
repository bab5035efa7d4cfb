package guardtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// A property is one rule of the contract, checked on random runs.
type property struct {
	name string
	// div divides the number of checks, for properties whose runs are slow
	// or matter little.
	div int
	// skip, when set, returns why the property cannot be checked.
	skip func(e *env) string
	// fn checks the property on one run. It reports a violation by
	// calling e.fail (or by panicking), and must be deterministic.
	fn func(e *env, run []rule.Step)
}

// env is what a property runs with.
type env struct {
	*config
	t       *testing.T // what the factories are given
	newRule func(t *testing.T) rule.Rule
	prop    int // the property's index, part of the seed of its runs
}

// abort carries a violation out of a property. kind tells violations
// apart, so that shrinking keeps to the one it found.
type abort struct {
	err  error
	kind string
}

// fail stops the property with a violation.
func (e *env) fail(format string, args ...any) {
	panic(abort{fmt.Errorf(format, args...), format})
}

// A violation is a property's failure on a run.
type violation struct {
	err  error
	kind string
}

// try runs fn, turning a violation or any other panic into a violation.
func try(fn func()) (v *violation) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case abort:
			v = &violation{r.err, r.kind}
		default:
			v = &violation{fmt.Errorf("panic: %v\n%s", r, debug.Stack()), "panic"}
		}
	}()
	fn()
	return nil
}

// check runs p on its random runs and reports the first violation, on a
// shrunk run.
func (p *property) check(e *env, r *reporter) {
	if p.skip != nil {
		if why := p.skip(e); why != "" {
			r.skip = why
			return
		}
	}
	if v := try(func() { e.fresh() }); v != nil {
		r.errorf("%v", v.err)
		return
	}
	n := max(1, e.checks/max(p.div, 1))
	for i := range n {
		var run []rule.Step
		if v := try(func() { run = e.genRun(i) }); v != nil {
			r.errorf("the step generator failed: %v", v.err)
			return
		}
		v := try(func() { p.fn(e, run) })
		if v == nil {
			continue
		}
		// Shrink to a smaller run that fails the same way.
		budget := max(shrinkBudget/max(p.div, 1), 20)
		if short() {
			budget /= 4
		}
		small := shrink(run, budget, func(run []rule.Step) bool {
			w := try(func() { p.fn(e, run) })
			return w != nil && w.kind == v.kind
		})
		if w := try(func() { p.fn(e, small) }); w != nil {
			v = w
		} else {
			small = run
		}
		r.errorf("%v\n(seed %d, run %d; repeat with guardtest.WithSeed(%d)) on these %d steps (shrunk from %d):\n%s",
			v.err, e.seed, i, e.seed, len(small), len(run), showRun(small))
		return
	}
}

// genRun returns the i-th random run of the property.
func (e *env) genRun(i int) []rule.Step {
	r := rand.New(rand.NewPCG(e.seed, uint64(e.prop)<<32|uint64(i)))
	run := make([]rule.Step, 1+r.IntN(e.maxLen))
	for j := range run {
		run[j] = e.steps(r)
	}
	return run
}

// shrinkBudget is the most candidate runs shrink tries, for a property
// checked on every run; a quarter of it under go test -short.
const shrinkBudget = 200

// shrink returns a smaller run that still fails: it drops steps, chunks
// first, then single calls, trying at most budget candidates.
func shrink(run []rule.Step, budget int, fails func([]rule.Step) bool) []rule.Step {
	for chunk := max(len(run)/2, 1); chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(run) && budget > 0; {
			cand := slices.Concat(run[:i], run[i+chunk:])
			budget--
			if fails(cand) {
				run = cand
			} else {
				i += chunk
			}
		}
	}
	for i := 0; i < len(run) && budget > 0; i++ {
		for j := 0; j < len(run[i].ToolCalls) && budget > 0; {
			cand := slices.Clone(run)
			cand[i].ToolCalls = slices.Delete(slices.Clone(run[i].ToolCalls), j, j+1)
			if len(cand[i].ToolCalls) == 0 {
				cand[i].ToolCalls = nil
			}
			budget--
			if fails(cand) {
				run = cand
			} else {
				j++
			}
		}
	}
	return run
}

// fresh returns a new rule from the factory under test.
func (e *env) fresh() rule.Rule {
	var r rule.Rule
	protect("the rule's factory", func() { r = e.newRule(e.t) })
	if r == nil {
		e.fail("the rule's factory returned nil")
	}
	return r
}

// protect runs fn, turning a panic into a violation that says what
// panicked.
func protect(what string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			if a, ok := r.(abort); ok {
				panic(a)
			}
			panic(abort{fmt.Errorf("%s panicked: %v\n%s", what, r, debug.Stack()), "panic"})
		}
	}()
	fn()
}

// tap is the rule under test as a guard sees it: it hands out the rule's own
// states, and keeps the last one so that a property can ask the state
// itself (its Snapshot, its Restore).
type tap struct {
	rule.Rule
	state rule.State
}

// NewState returns a state of the rule under test, and keeps it.
func (p *tap) NewState() rule.State {
	p.state = p.Rule.NewState()
	return p.state
}

// OnlyLimits is the rule's own, so that a tap restores as the rule does.
func (p *tap) OnlyLimits() bool {
	l, ok := p.Rule.(rule.Limiter)
	return ok && l.OnlyLimits()
}

// cfg returns the configured guard options with these rules.
func (e *env) cfg(rules []rule.Rule) guard.Config {
	c := e.guardCfg
	c.Rules = rules
	return c
}

// newGuard returns a guard of r and the other rules, with the configured
// options, and the tap through which it got r's state.
func (e *env) newGuard(r rule.Rule, others ...rule.Rule) (*guard.Guard, *tap) {
	p := &tap{Rule: r}
	var g *guard.Guard
	var err error
	protect("guard.New", func() { g, err = guard.New(e.cfg(append([]rule.Rule{p}, others...))) })
	if err != nil {
		e.fail("guard.New rejected the rule: %v", err)
	}
	if p.state == nil {
		e.fail("guard.New did not ask the rule for a state")
	}
	return g, p
}

// plainGuard returns a guard of r itself, with the configured options: for
// guards that run in parallel, which a tap would make race.
func (e *env) plainGuard(r rule.Rule) *guard.Guard {
	var g *guard.Guard
	var err error
	protect("guard.New", func() { g, err = guard.New(e.cfg([]rule.Rule{r})) })
	if err != nil {
		e.fail("guard.New rejected the rule: %v", err)
	}
	return g
}

// restore returns a guard of r restored from a snapshot, and its tap.
func (e *env) restore(r rule.Rule, snap []byte, what string) (*guard.Guard, *tap) {
	p := &tap{Rule: r}
	var g *guard.Guard
	var err error
	protect("Restore", func() { g, err = guard.Restore(snap, e.cfg([]rule.Rule{p})) })
	if err != nil {
		e.fail("Restore rejected %s: %v\nsnapshot: %s", what, err, showBytes(snap))
	}
	return g, p
}

func check(g *guard.Guard, s rule.Step, i int) (v rule.Verdict) {
	var err error
	protect(fmt.Sprintf("Check of step %d", i), func() { v, err = g.Check(context.Background(), s) })
	if err != nil {
		panic(abort{fmt.Errorf("Check of step %d failed: %w", i, err), "check error"})
	}
	return v
}

func preflight(g *guard.Guard, calls []rule.ToolCall, i int) (d guard.Decision) {
	var err error
	protect(fmt.Sprintf("Preflight before step %d", i), func() { d, err = g.Preflight(context.Background(), calls...) })
	if err != nil {
		panic(abort{fmt.Errorf("Preflight before step %d failed: %w", i, err), "preflight error"})
	}
	return d
}

// The snapshot options the properties use: full keeps previews and tool
// names as given, redact is the default, which keeps neither.
var (
	full   = rule.SnapshotOptions{Previews: true}
	redact = rule.SnapshotOptions{}
)

// snap returns the state's own snapshot: null for a state that is not a
// [rule.Saver], as the guard writes it.
func (e *env) snap(p *tap, o rule.SnapshotOptions, when string) []byte {
	sv, ok := p.state.(rule.Saver)
	if !ok {
		return []byte("null")
	}
	var b []byte
	var err error
	protect("Snapshot "+when, func() { b, err = sv.Snapshot(o) })
	if err != nil {
		e.fail("Snapshot failed %s: %v", when, err)
	}
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// guardSnap returns the guard's snapshot.
func (e *env) guardSnap(g *guard.Guard, o rule.SnapshotOptions, when string) []byte {
	var b []byte
	var err error
	protect("Snapshot "+when, func() { b, err = g.Snapshot(context.Background(), o) })
	if err != nil {
		e.fail("Snapshot failed %s: %v", when, err)
	}
	return b
}

func name(r rule.Rule) (n string) {
	protect("Name", func() { n = r.Name() })
	return n
}

func priority(r rule.Rule) (p int) {
	protect("Priority", func() { p = r.Priority() })
	return p
}

// after says "after N steps".
func after(n int) string {
	if n == 1 {
		return "after 1 step"
	}
	return fmt.Sprintf("after %d steps", n)
}
