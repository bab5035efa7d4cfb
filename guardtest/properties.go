package guardtest

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// properties are the rules of the contract, in the order Run checks them.
var properties = []*property{
	{name: "PreflightKeepsState", fn: preflightKeepsState},
	{name: "ObserveKeepsStep", fn: observeKeepsStep},
	{name: "SnapshotRestore", fn: snapshotRestore},
	{name: "SnapshotBytes", fn: snapshotBytes},
	{name: "RestoreNullIsFresh", skip: notSaver, fn: restoreNullIsFresh},
	{name: "OddSteps", div: 25, fn: oddStepsProp},
	{name: "Fingerprint", div: 10, fn: fingerprint},
	{name: "FingerprintDiffers", div: 100, skip: noOther, fn: fingerprintDiffers},
	{name: "Name", div: 10, fn: nameStable},
	{name: "IndependentStates", div: 5, fn: independentStates},
}

// questions returns the calls Preflight is asked before step i: none, the
// step's calls (as calls that have not run), its first call three times, and
// a call of an earlier step.
func questions(run []rule.Step, i int) [][]rule.ToolCall {
	qs := [][]rule.ToolCall{nil}
	if i >= len(run) {
		return qs
	}
	var calls []rule.ToolCall
	for _, c := range run[i].ToolCalls {
		calls = append(calls, rule.ToolCall{Name: c.Name, Args: c.Args})
	}
	if len(calls) > 0 {
		qs = append(qs, calls, []rule.ToolCall{calls[0], calls[0], calls[0]})
	}
	for j := i / 2; j >= 0 && j < i; j++ {
		if cs := run[j].ToolCalls; len(cs) > 0 {
			qs = append(qs, []rule.ToolCall{{Name: cs[0].Name, Args: cs[0].Args}})
			break
		}
	}
	return qs
}

// preflightKeepsState: Preflight leaves the snapshot byte-identical, does not
// modify its calls, answers the same question the same way, and leaves the
// later verdicts as they would have been.
func preflightKeepsState(e *env, run []rule.Step) {
	r := e.fresh()
	g, det := e.newGuard(r)
	gt, _ := e.newGuard(r)
	for i, s := range run {
		for _, calls := range questions(run, i) {
			when := "before step " + strconv.Itoa(i)
			saved := cloneCalls(calls)
			before := bytes.Clone(e.snap(det, full, when)) // a copy: SnapshotBytes checks sharing
			d1 := preflight(g, calls, i)
			if path, ok := equalValues(saved, calls); !ok {
				e.fail("Preflight modified the calls it was given, %s, at %s:\nbefore: %s\nafter:  %s",
					when, path, showCalls(saved), showCalls(calls))
			}
			// A snapshot that is not deterministic differs in its bytes
			// only; SnapshotBytes reports that.
			after := e.snap(det, full, when)
			if !sameJSON(before, after) {
				e.fail("Preflight changed the snapshot %s (calls %s):\nbefore: %s\nafter:  %s",
					when, showCalls(calls), showBytes(before), showBytes(after))
			}
			if d2 := preflight(g, calls, i); !sameDecision(d1, d2) {
				e.fail("Preflight gave two answers to the same question %s (calls %s):\nfirst:  %s\nsecond: %s",
					when, showCalls(calls), showDecision(d1), showDecision(d2))
			}
		}
		v, vt := check(g, s, i), check(gt, s, i)
		if !sameVerdict(v, vt) {
			e.fail("Preflight changed state that Snapshot does not show: at step %d, the state that was asked Preflight gives\n  %s\nand a twin that was never asked gives\n  %s",
				i, showVerdict(v), showVerdict(vt))
		}
	}
}

// spy is a rule, and its own state, that runs after every other and checks
// that the step and the facts it reads are those a guard without the rule
// under test sees. It keeps nothing that a snapshot must hold.
type spy struct {
	name string
	want *rule.Step
	f    *rule.Facts // of the current Check only
	seen factsView
	bad  string
}

func (s *spy) Name() string                       { return s.name }
func (s *spy) Priority() int                      { return math.MaxInt }
func (s *spy) Options() any                       { return nil }
func (s *spy) NewState() rule.State               { return s }
func (s *spy) Observe(f *rule.Facts)              { s.f = f }
func (s *spy) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// Verdict runs after the Observe and Verdict of every other detector.
func (s *spy) Verdict() rule.Verdict {
	f := s.f
	s.f = nil
	s.seen = viewFacts(f)
	if s.want == nil {
		return rule.Verdict{}
	}
	if got := f.Step(); got == nil {
		s.bad = "Facts.Step() is nil"
	} else if path, ok := equalValues(*s.want, *got); !ok {
		s.bad = "the guard's copy of the step, which later rules read (Facts.Step), was modified at " + path +
			":\nbefore: " + showStep(*s.want) + "\nafter:  " + showStep(*got)
	}
	for i := range f.Calls {
		tc := f.Calls[i].ToolCall()
		if i >= len(s.want.ToolCalls) || tc == nil {
			break
		}
		if path, ok := equalValues(s.want.ToolCalls[i], *tc); !ok && s.bad == "" {
			s.bad = "a call that later rules read (Call.ToolCall) was modified at " + path
		}
	}
	return rule.Verdict{}
}

// factsView is what the spy compares of the facts: every exported field.
type factsView struct {
	Phase           rule.Phase
	Index           int
	Calls           []callView
	TextHash        canonical.Sum
	HasText         bool
	Text            string
	FinishReason    string
	RawFinishReason string
	NewInput        bool
	Usage           rule.Usage
	Steps           int
	Totals          rule.Totals
}

type callView struct {
	Tool                       string
	Args, Key, Outcome         canonical.Sum
	HasResult, Failed, Ignored bool
}

func viewFacts(f *rule.Facts) factsView {
	v := factsView{Phase: f.Phase, Index: f.Index, TextHash: f.TextHash, HasText: f.HasText, Text: f.Text(),
		FinishReason: f.FinishReason, RawFinishReason: f.RawFinishReason, NewInput: f.NewInput,
		Usage: f.Usage, Steps: f.Steps, Totals: f.Totals}
	for _, c := range f.Calls {
		v.Calls = append(v.Calls, callView{c.Tool, c.Args, c.Key, c.Outcome, c.HasResult, c.Failed, c.Ignored})
	}
	return v
}

// observeKeepsStep: Observe and Verdict modify neither the caller's step nor
// what later rules read.
func observeKeepsStep(e *env, run []rule.Step) {
	r := e.fresh()
	sp := &spy{name: spyName(r)}
	g, _ := e.newGuard(r, sp)
	ref := &spy{name: sp.name}
	gr := e.plainGuard(ref)
	for i, s := range run {
		want := cloneStep(s)
		sp.want, sp.bad = &want, ""
		check(g, s, i)
		if path, ok := equalValues(want, s); !ok {
			e.fail("step %d: Observe or Verdict modified the step given to Check, at %s:\nbefore: %s\nafter:  %s",
				i, path, showStep(want), showStep(s))
		}
		if sp.bad != "" {
			e.fail("step %d: Observe or Verdict modified what later rules read: %s", i, sp.bad)
		}
		check(gr, s, i)
		if path, ok := equalValues(ref.seen, sp.seen); !ok {
			e.fail("step %d: Observe or Verdict modified the facts that later rules read, at %s:\nwithout the rule: %s\nwith it:          %s",
				i, path, showJSON(ref.seen), showJSON(sp.seen))
		}
	}
}

// spyName returns a name for the spy that differs from the rule's.
func spyName(r rule.Rule) string {
	if name(r) == "guardtest.spy" {
		return "guardtest.spy2"
	}
	return "guardtest.spy"
}

// splitPoints returns where to snapshot a run of n steps: everywhere in a
// short run, a dozen evenly spread points in a long one.
func splitPoints(n int) []int {
	if n <= 12 {
		pts := make([]int, n+1)
		for i := range pts {
			pts[i] = i
		}
		return pts
	}
	var pts []int
	for i := range 12 {
		pts = append(pts, i*n/11)
	}
	return slices.Compact(pts)
}

// notSaverHint is what a failure of a state that is not a Saver adds: such
// a state is saved as null, so it must keep nothing between steps.
func notSaverHint(p *tap) string {
	if _, ok := p.state.(rule.Saver); ok {
		return ""
	}
	return "\n(the state is not a rule.Saver, so it is saved as null: a state that keeps something between steps must implement rule.Saver)"
}

// snapshotRestore: Snapshot, then Restore into a new state, gives the same
// state, and the same verdicts and preflight answers on the rest of the run;
// a redacted snapshot gives the same stop decisions. A state that is not a
// Saver is saved as null.
func snapshotRestore(e *env, run []rule.Step) {
	r := e.fresh()
	g, det := e.newGuard(r)
	n := len(run)
	snaps, redacted, states, bare := make([][]byte, n+1), make([][]byte, n+1), make([][]byte, n+1), make([][]byte, n+1)
	decisions := make([][]guard.Decision, n+1)
	verdicts := make([]rule.Verdict, n)
	for k := 0; k <= n; k++ {
		when := after(k)
		snaps[k] = e.guardSnap(g, full, when)
		redacted[k] = e.guardSnap(g, redact, when)
		states[k] = bytes.Clone(e.snap(det, full, when))
		bare[k] = bytes.Clone(e.snap(det, redact, when))
		for _, q := range questions(run, k) {
			decisions[k] = append(decisions[k], preflight(g, q, k))
		}
		if k < n {
			verdicts[k] = check(g, run[k], k)
		}
	}
	for _, k := range splitPoints(n) {
		g2, d2 := e.restore(r, snaps[k], "the guard's own snapshot, taken "+after(k))
		if st := e.snap(d2, full, "after Restore"); !sameJSON(st, states[k]) {
			e.fail("Snapshot %s, then Restore into a new state, then Snapshot gives another state:\nsaved:    %s\nrestored: %s",
				after(k), showBytes(states[k]), showBytes(st))
		}
		for j, q := range questions(run, k) {
			if d := preflight(g2, q, k); !sameDecision(d, decisions[k][j]) {
				e.fail("restored from a snapshot taken %s, the state answers Preflight(%s) otherwise:\noriginal: %s\nrestored: %s\nsnapshot: %s%s",
					after(k), showCalls(q), showDecision(decisions[k][j]), showDecision(d), showBytes(states[k]), notSaverHint(det))
			}
		}
		for i := k; i < n; i++ {
			if v := check(g2, run[i], i); !sameVerdict(v, verdicts[i]) {
				e.fail("restored from a snapshot taken %s, the state gives another verdict at step %d:\noriginal: %s\nrestored: %s\nsnapshot: %s%s",
					after(k), i, showVerdict(verdicts[i]), showVerdict(v), showBytes(states[k]), notSaverHint(det))
			}
		}
		g3, d3 := e.restore(r, redacted[k], "the guard's own snapshot without previews, taken "+after(k))
		if st := e.snap(d3, redact, "after Restore"); !sameJSON(st, bare[k]) {
			e.fail("Snapshot without previews %s, then Restore into a new state, then Snapshot without previews gives another state:\nsaved:    %s\nrestored: %s",
				after(k), showBytes(bare[k]), showBytes(st))
		}
		for i := k; i < n; i++ {
			if v := check(g3, run[i], i); !sameStop(v, verdicts[i]) {
				e.fail("restored from a snapshot without previews taken %s, the state decides otherwise at step %d (stop decisions must not depend on previews or tool names):\noriginal: %s\nrestored: %s\nsnapshot: %s%s",
					after(k), i, showVerdict(verdicts[i]), showVerdict(v), showBytes(redacted[k]), notSaverHint(det))
			}
		}
	}
}

// snapshotBytes: snapshots are valid JSON, deterministic, equal for equal
// states, and share no memory with the state.
func snapshotBytes(e *env, run []rule.Step) {
	r := e.fresh()
	ga, a := e.newGuard(r)
	gb, b := e.newGuard(r)
	var held, heldCopy []byte
	heldAt := 0
	for i := 0; i <= len(run); i++ {
		when := after(i)
		for _, o := range []rule.SnapshotOptions{full, redact} {
			kind := "Snapshot"
			if !o.Previews {
				kind = "Snapshot (without previews)"
			}
			s1 := e.snap(a, o, when)
			c1 := bytes.Clone(s1)
			if held != nil && !bytes.Equal(held, heldCopy) {
				e.fail("a snapshot taken %s changed when the run had gone on and Snapshot was called again %s (Snapshot must return bytes that share no memory with the state):\nwas: %s\nnow: %s",
					after(heldAt), when, showBytes(heldCopy), showBytes(held))
			}
			if !json.Valid(s1) {
				e.fail("%s returned invalid JSON %s: %s", kind, when, showBytes(s1))
			}
			s2 := e.snap(a, o, when)
			if !bytes.Equal(s1, c1) {
				e.fail("%s %s changed the bytes it had returned before (they must share no memory with the state):\nfirst:        %s\nfirst, later: %s",
					kind, when, showBytes(c1), showBytes(s1))
			}
			if !bytes.Equal(s2, c1) {
				e.fail("%s is not deterministic: taken twice %s, it gave\n  %s\nthen\n  %s", kind, when, showBytes(c1), showBytes(s2))
			}
			if sb := e.snap(b, o, when); !bytes.Equal(sb, c1) {
				e.fail("two states given the same steps have different snapshots %s (equal states must give equal bytes):\n  %s\n  %s",
					when, showBytes(c1), showBytes(sb))
			}
			scribble(s1)
			scribble(s2)
			if s3 := e.snap(a, o, when); !sameJSON(s3, c1) {
				e.fail("after the bytes %s returned %s were overwritten, it returns another state (they must share no memory with the state):\nbefore: %s\nafter:  %s",
					kind, when, showBytes(c1), showBytes(s3))
			}
		}
		held = e.snap(a, full, when)
		heldCopy, heldAt = bytes.Clone(held), i
		if i < len(run) {
			va, vb := check(ga, run[i], i), check(gb, run[i], i)
			if !sameVerdict(va, vb) {
				e.fail("at step %d, the state whose snapshots were overwritten gives\n  %s\nand a twin gives\n  %s\n(the bytes Snapshot returns must share no memory with the state)",
					i, showVerdict(va), showVerdict(vb))
			}
		}
	}
}

func scribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

// notSaver skips RestoreNullIsFresh for a rule whose state is not a Saver:
// the guard restores such a state only from null, and never calls it.
func notSaver(e *env) string {
	var why string
	if v := try(func() {
		if _, ok := e.fresh().NewState().(rule.Saver); !ok {
			why = "the rule's state is not a rule.Saver: it is saved as null and restores only from null"
		}
	}); v != nil {
		return "" // the property reports the panic
	}
	return why
}

// restoreNullIsFresh: after Restore(null), a Saver is a fresh state.
func restoreNullIsFresh(e *env, run []rule.Step) {
	r := e.fresh()
	for _, k := range slices.Compact([]int{len(run) / 2, len(run)}) {
		g, d := e.newGuard(r)
		for i, s := range run[:k] {
			check(g, s, i)
		}
		sv, ok := d.state.(rule.Saver)
		if !ok {
			e.fail("the state is not a rule.Saver") // a rule whose NewState gives both kinds
		}
		var err error
		protect("Restore(null)", func() { err = sv.Restore([]byte("null")) })
		if err != nil {
			e.fail("Restore(null) %s failed: %v (null is the state of a fresh run)", after(k), err)
		}
		gf, f := e.newGuard(r)
		for _, o := range []rule.SnapshotOptions{full, redact} {
			got, want := e.snap(d, o, "after Restore(null)"), e.snap(f, o, "of a fresh state")
			if !bytes.Equal(got, want) {
				e.fail("Restore(null) %s gives another snapshot than a fresh state's:\nafter Restore(null): %s\nfresh:               %s",
					after(k), showBytes(got), showBytes(want))
			}
		}
		// The restored state goes on in a new guard, whose counts start
		// again like the fresh one's.
		g, _ = e.newGuard(reuse{r, d.state})
		for i, s := range run {
			if got, want := preflight(g, nil, i), preflight(gf, nil, i); !sameDecision(got, want) {
				e.fail("after Restore(null) %s, Preflight() before step %d of a new run answers otherwise than a fresh state:\nafter Restore(null): %s\nfresh:               %s",
					after(k), i, showDecision(got), showDecision(want))
			}
			if got, want := check(g, s, i), check(gf, s, i); !sameVerdict(got, want) {
				e.fail("after Restore(null) %s, step %d of a new run gives another verdict than a fresh state:\nafter Restore(null): %s\nfresh:               %s",
					after(k), i, showVerdict(got), showVerdict(want))
			}
		}
	}
}

// reuse is the rule under test that hands out one state it was given: to
// go on with a state in a new guard.
type reuse struct {
	rule.Rule
	st rule.State
}

func (r reuse) NewState() rule.State { return r.st }

// oddStepsProp: no panic on odd steps, and snapshots after them are still
// taken and restored; rules of separate guards do not disturb one another
// when run in parallel.
func oddStepsProp(e *env, run []rule.Step) {
	r := e.fresh()
	half := len(run) / 2
	for _, odd := range oddSteps() {
		g, _ := e.newGuard(r)
		for i, s := range run[:half] {
			check(g, s, i)
		}
		protect("Check of "+odd.what, func() { g.Check(context.Background(), odd.step) })
		protect("Preflight of the calls of "+odd.what, func() { g.Preflight(context.Background(), odd.step.ToolCalls...) })
		snap := e.guardSnap(g, full, "after "+odd.what)
		e.guardSnap(g, redact, "after "+odd.what)
		g2, _ := e.restore(r, snap, "the guard's own snapshot, taken after "+odd.what)
		for i, s := range run[half:] {
			check(g, s, half+1+i)
			check(g2, s, half+1+i)
		}
	}

	// Guards of rules from the factory, run in parallel goroutines, must not
	// share state (such as package-level variables). The states of one rule
	// are checked apart in one goroutine (IndependentStates): run in
	// parallel, states that share memory would be a data race.
	const parallel = 4
	var want []rule.Verdict
	g := e.plainGuard(e.fresh())
	for i, s := range run {
		want = append(want, check(g, s, i))
	}
	guards := make([]*guard.Guard, parallel)
	for j := range guards {
		guards[j] = e.plainGuard(e.fresh())
	}
	got := make([][]rule.Verdict, parallel)
	errs := make([]*violation, parallel)
	var wg sync.WaitGroup
	for j := range parallel {
		wg.Go(func() {
			errs[j] = try(func() {
				for i, s := range run {
					got[j] = append(got[j], check(guards[j], s, i))
				}
			})
		})
	}
	wg.Wait()
	for j := range parallel {
		if errs[j] != nil {
			e.fail("in one of %d guards running in parallel: %v", parallel, errs[j].err)
		}
		for i := range run {
			if !sameVerdict(got[j][i], want[i]) {
				e.fail("rules of %d guards running in parallel disturb one another (shared state?): at step %d, one gives\n  %s\nwhere alone it gives\n  %s",
					parallel, i, showVerdict(got[j][i]), showVerdict(want[i]))
			}
		}
	}
}

// fingerprintOf returns the rule's fingerprint, and checks that its options
// are JSON-able.
func (e *env) fingerprintOf(r rule.Rule, which string) (canonical.Sum, string) {
	var opts any
	protect("Options", func() { opts = r.Options() })
	if _, err := json.Marshal(opts); err != nil {
		e.fail("Options() of %s is not JSON-able data: %v", which, err)
	}
	var fp canonical.Sum
	protect("rule.Fingerprint", func() { fp = rule.Fingerprint(r) })
	return fp, showJSON(opts)
}

// fingerprint: equal for equal options, and not changed by runs.
func fingerprint(e *env, run []rule.Step) {
	a, b := e.fresh(), e.fresh()
	fa, oa := e.fingerprintOf(a, "a rule from the factory")
	if fb, ob := e.fingerprintOf(b, "a rule from the factory"); fa != fb {
		e.fail("two rules from the factory have different fingerprints, %s and %s: their options are %s and %s (a snapshot could never be restored)",
			fa, fb, oa, ob)
	}
	g, _ := e.newGuard(a)
	for i, s := range run {
		check(g, s, i)
		if f, o := e.fingerprintOf(a, "the rule"); f != fa {
			e.fail("the fingerprint changed %s, from %s to %s: Options() was %s and is %s (options must not depend on the run)",
				after(i+1), fa, f, oa, o)
		}
	}
	protect("Reset", func() { g.Reset(context.Background()) })
	if f, o := e.fingerprintOf(a, "the rule"); f != fa {
		e.fail("the fingerprint changed when a guard of the rule was reset, from %s to %s: Options() was %s and is %s", fa, f, oa, o)
	}
}

func noOther(e *env) string {
	if e.other == nil {
		return "no rule with other options: pass guardtest.WithOtherOptions to check that other options give another fingerprint"
	}
	return ""
}

// fingerprintDiffers: a rule with other options has another fingerprint.
func fingerprintDiffers(e *env, _ []rule.Step) {
	a := e.fresh()
	var o rule.Rule
	protect("the WithOtherOptions factory", func() { o = e.other(e.t) })
	if o == nil {
		e.fail("the WithOtherOptions factory returned nil")
	}
	if na, no := name(a), name(o); na != no {
		e.fail("the WithOtherOptions factory made a rule named %q; it must have the name of the rule under test, %q", no, na)
	}
	fa, oa := e.fingerprintOf(a, "the rule under test")
	fo, oo := e.fingerprintOf(o, "the rule with other options")
	if fa == fo {
		e.fail("a rule with other options has the same fingerprint, %s: Options() gives %s and %s (a snapshot would be restored under the wrong options)",
			fa, oa, oo)
	}
}

// nameStable: the name is valid and stable; so is the priority.
func nameStable(e *env, run []rule.Step) {
	a := e.fresh()
	n, p := name(a), priority(a)
	if !rule.ValidName(n) {
		e.fail("Name() = %q is not a valid rule name (rule.ValidName: 1 to 64 ASCII letters, digits, '_', '-', '.' and '/', starting with a letter)", n)
	}
	for range 3 {
		if m := name(a); m != n {
			e.fail("Name() changed from %q to %q between two calls", n, m)
		}
		if q := priority(a); q != p {
			e.fail("Priority() changed from %d to %d between two calls", p, q)
		}
	}
	b := e.fresh()
	if m := name(b); m != n {
		e.fail("two rules from the factory are named %q and %q (the name keys snapshots and fingerprints)", n, m)
	}
	if q := priority(b); q != p {
		e.fail("two rules from the factory have priorities %d and %d", p, q)
	}
	g, _ := e.newGuard(a)
	for i, s := range run {
		check(g, s, i)
		if m := name(a); m != n {
			e.fail("Name() changed %s, from %q to %q", after(i+1), n, m)
		}
		if q := priority(a); q != p {
			e.fail("Priority() changed %s, from %d to %d", after(i+1), p, q)
		}
	}
}

// independentStates: two guards of one rule give the verdicts that guards
// of rules of their own give, whether their steps alternate or one guard's
// step comes between the Observe and the Verdict of the other's (as when
// they run at the same time); and a state made after others have run, by
// a guard's Reset or a new guard, is fresh.
func independentStates(e *env, run []rule.Step) {
	e.apart(e.fresh(), run)

	// A state made after others have run, by Reset or by a new guard, is
	// fresh: it answers as a state of a rule that never ran.
	r := e.fresh()
	g1, p := e.newGuard(r)
	half := len(run) / 2
	for i, s := range run[:half] {
		check(g1, s, i)
	}
	protect("Reset", func() { g1.Reset(context.Background()) })
	g2, _ := e.newGuard(r)
	gf, f := e.newGuard(e.fresh())
	for _, o := range []rule.SnapshotOptions{full, redact} {
		got, want := e.snap(p, o, "after Reset"), e.snap(f, o, "of a fresh state")
		if !bytes.Equal(got, want) {
			e.fail("after a guard of the rule ran %s and was reset, NewState gives another snapshot than a fresh state's:\nafter Reset: %s\nfresh:       %s",
				after(half), showBytes(got), showBytes(want))
		}
	}
	for i, s := range run {
		for _, q := range questions(run, i) {
			want := preflight(gf, q, i)
			for _, g := range []*guard.Guard{g1, g2} {
				if got := preflight(g, q, i); !sameDecision(got, want) {
					e.fail("after a guard of the rule ran %s, a new state answers Preflight(%s) before step %d otherwise than a fresh state:\nnew:   %s\nfresh: %s",
						after(half), showCalls(q), i, showDecision(got), showDecision(want))
				}
			}
		}
		want := check(gf, s, i)
		for _, g := range []*guard.Guard{g1, g2} {
			if got := check(g, s, i); !sameVerdict(got, want) {
				e.fail("after a guard of the rule ran %s, a new state gives another verdict at step %d than a fresh state:\nnew:   %s\nfresh: %s",
					after(half), i, showVerdict(got), showVerdict(want))
			}
		}
	}
}

// apart checks that two guards of r give the verdicts that guards of rules
// of their own give, whether their steps alternate or one guard's step
// comes between the Observe and the Verdict of the other's. It runs in one
// goroutine: run in parallel, states that share memory would be a data race
// rather than a failure.
func (e *env) apart(r rule.Rule, run []rule.Step) {
	// Alternate steps: any state one run leaves shows in the other's.
	g1, _ := e.newGuard(r)
	g2, _ := e.newGuard(r)
	ref1, ref2 := e.plainGuard(e.fresh()), e.plainGuard(e.fresh())
	for i := range run {
		v1, w1 := check(g1, run[i], i), check(ref1, run[i], i)
		v2, w2 := check(g2, run[i], i), check(ref2, run[i], i)
		e.sameWhenShared(i, v1, v2, w1, w2)
	}

	// Interleave within a step: the second guard checks a step of another
	// run between the Observe and the Verdict of the first guard's step.
	var inner func()
	in := &interloper{name: spyName(r), hook: func() { inner() }}
	g1, _ = e.newGuard(r, in)
	g2, _ = e.newGuard(r)
	ref1, ref2 = e.plainGuard(e.fresh()), e.plainGuard(e.fresh())
	n := len(run)
	for i := range run {
		var v2 rule.Verdict
		inner = func() { v2 = check(g2, run[n-1-i], i) }
		v1 := check(g1, run[i], i)
		w1, w2 := check(ref1, run[i], i), check(ref2, run[n-1-i], i)
		e.sameWhenShared(i, v1, v2, w1, w2)
	}
}

func (e *env) sameWhenShared(i int, v1, v2, w1, w2 rule.Verdict) {
	if !sameVerdict(v1, w1) || !sameVerdict(v2, w2) {
		e.fail("the states of one rule are not independent: two guards of the rule see each other's steps, at step %d:\none rule: %s\n          %s\nits own:  %s\n          %s\n(NewState must return a new state that shares nothing it changes with other states or the rule)",
			i, showVerdict(v1), showVerdict(v2), showVerdict(w1), showVerdict(w2))
	}
}

// interloper is a rule, and its own state, that runs after every other and
// calls hook when it observes a step: between the Observe and the Verdict
// of the others.
type interloper struct {
	name string
	hook func()
}

func (s *interloper) Name() string                       { return s.name }
func (s *interloper) Priority() int                      { return math.MaxInt }
func (s *interloper) Options() any                       { return nil }
func (s *interloper) NewState() rule.State               { return s }
func (s *interloper) Observe(*rule.Facts)                { s.hook() }
func (s *interloper) Verdict() rule.Verdict              { return rule.Verdict{} }
func (s *interloper) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }
