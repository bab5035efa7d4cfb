package guardtest

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"

	"github.com/loopguard/loopguard/guard"
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
	fn func(e *env, run []guard.Step)
}

// env is what a property runs with.
type env struct {
	*config
	newDet func() guard.Detector
	prop   int // the property's index, part of the seed of its runs
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
		var run []guard.Step
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
		small := shrink(run, budget, func(run []guard.Step) bool {
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
func (e *env) genRun(i int) []guard.Step {
	r := rand.New(rand.NewPCG(e.seed, uint64(e.prop)<<32|uint64(i)))
	run := make([]guard.Step, 1+r.IntN(e.maxLen))
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
func shrink(run []guard.Step, budget int, fails func([]guard.Step) bool) []guard.Step {
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

// fresh returns a new detector under test.
func (e *env) fresh() guard.Detector {
	var d guard.Detector
	protect("newDetector", func() { d = e.newDet() })
	if d == nil {
		e.fail("newDetector returned nil")
	}
	return d
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

// newGuard returns a guard of the detectors, with the configured options.
func (e *env) newGuard(dets ...guard.Detector) *guard.Guard {
	var g *guard.Guard
	var err error
	protect("guard.New", func() { g, err = e.guardOpts.New(dets...) })
	if err != nil {
		e.fail("guard.New rejected the detector: %v", err)
	}
	return g
}

// relay hands a detector to a second guard once the first that holds it is
// no longer used. It forwards the methods of the Detector interface only, so
// the new guard does not see the detector's guard.Owned marker.
type relay struct{ guard.Detector }

// restore returns a guard restored from a snapshot into a fresh detector.
func (e *env) restore(snap []byte, what string) (*guard.Guard, guard.Detector) {
	d := e.fresh()
	var g *guard.Guard
	var err error
	protect("Restore", func() { g, err = e.guardOpts.Restore(snap, d) })
	if err != nil {
		e.fail("Restore rejected %s: %v\nsnapshot: %s", what, err, showBytes(snap))
	}
	return g, d
}

func check(g *guard.Guard, s guard.Step, i int) (v guard.Verdict) {
	protect(fmt.Sprintf("Check of step %d", i), func() { v = g.Check(s) })
	return v
}

func preflight(g *guard.Guard, calls []guard.ToolCall, i int) (d guard.Decision) {
	protect(fmt.Sprintf("Preflight before step %d", i), func() { d = g.Preflight(calls...) })
	return d
}

// The snapshot options the properties use: full keeps previews and tool
// names as given, redact is the default, which keeps neither.
var (
	full   = guard.SnapshotOptions{Previews: true}
	redact = guard.SnapshotOptions{}
)

// snap returns the detector's own snapshot.
func (e *env) snap(d guard.Detector, o guard.SnapshotOptions, when string) []byte {
	var b []byte
	var err error
	protect("Snapshot "+when, func() { b, err = d.Snapshot(o) })
	if err != nil {
		e.fail("Snapshot failed %s: %v", when, err)
	}
	return b
}

// guardSnap returns the guard's snapshot.
func (e *env) guardSnap(g *guard.Guard, o guard.SnapshotOptions, when string) []byte {
	var b []byte
	var err error
	protect("Snapshot "+when, func() { b, err = g.Snapshot(o) })
	if err != nil {
		e.fail("Snapshot failed %s: %v", when, err)
	}
	return b
}

func name(d guard.Detector) (n string) {
	protect("Name", func() { n = d.Name() })
	return n
}

func priority(d guard.Detector) (p int) {
	protect("Priority", func() { p = d.Priority() })
	return p
}

func reset(d guard.Detector) {
	protect("Reset", d.Reset)
}

// stepsText says "after N steps".
func after(n int) string {
	if n == 1 {
		return "after 1 step"
	}
	return fmt.Sprintf("after %d steps", n)
}
