package guardtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/guard"
)

// properties are the rules of the contract, in the order Run checks them.
var properties = []*property{
	{name: "PreflightKeepsState", fn: preflightKeepsState},
	{name: "ObserveKeepsStep", fn: observeKeepsStep},
	{name: "SnapshotRestore", fn: snapshotRestore},
	{name: "SnapshotBytes", fn: snapshotBytes},
	{name: "ResetIsFresh", fn: resetIsFresh},
	{name: "OddSteps", div: 25, fn: oddStepsProp},
	{name: "Fingerprint", div: 10, fn: fingerprint},
	{name: "FingerprintDiffers", div: 100, skip: noOther, fn: fingerprintDiffers},
	{name: "Name", div: 10, fn: nameStable},
	{name: "NotShared", div: 5, fn: notShared},
}

// questions returns the calls Preflight is asked before step i: none, the
// step's calls (as calls that have not run), its first call three times, and
// a call of an earlier step.
func questions(run []guard.Step, i int) [][]guard.ToolCall {
	qs := [][]guard.ToolCall{nil}
	if i >= len(run) {
		return qs
	}
	var calls []guard.ToolCall
	for _, c := range run[i].ToolCalls {
		calls = append(calls, guard.ToolCall{Name: c.Name, Args: c.Args})
	}
	if len(calls) > 0 {
		qs = append(qs, calls, []guard.ToolCall{calls[0], calls[0], calls[0]})
	}
	for j := i / 2; j >= 0 && j < i; j++ {
		if cs := run[j].ToolCalls; len(cs) > 0 {
			qs = append(qs, []guard.ToolCall{{Name: cs[0].Name, Args: cs[0].Args}})
			break
		}
	}
	return qs
}

// preflightKeepsState: Preflight leaves the snapshot byte-identical, does not
// modify its calls, answers the same question the same way, and leaves the
// later verdicts as they would have been.
func preflightKeepsState(e *env, run []guard.Step) {
	det, twin := e.fresh(), e.fresh()
	g, gt := e.newGuard(det), e.newGuard(twin)
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
			e.fail("Preflight changed state that Snapshot does not show: at step %d, the detector that was asked Preflight gives\n  %s\nand a twin that was never asked gives\n  %s",
				i, showVerdict(v), showVerdict(vt))
		}
	}
}

// spy is a detector that runs after every other and checks that the step and
// the facts it reads are those a guard without the detector under test sees.
type spy struct {
	name string
	want *guard.Step
	f    *guard.Facts // of the current Check only
	seen factsView
	bad  string
}

func (s *spy) Name() string                                   { return s.name }
func (s *spy) Priority() int                                  { return math.MaxInt }
func (s *spy) Options() any                                   { return nil }
func (s *spy) Observe(f *guard.Facts)                         { s.f = f }
func (s *spy) Preflight(*guard.Facts) guard.Verdict           { return guard.Verdict{} }
func (s *spy) Snapshot(guard.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (s *spy) Restore([]byte) error                           { return nil }
func (s *spy) Reset()                                         {}

// Verdict runs after the Observe and Verdict of every other detector.
func (s *spy) Verdict() guard.Verdict {
	f := s.f
	s.f = nil
	s.seen = viewFacts(f)
	if s.want == nil {
		return guard.Verdict{}
	}
	if got := f.Step(); got == nil {
		s.bad = "Facts.Step() is nil"
	} else if path, ok := equalValues(*s.want, *got); !ok {
		s.bad = "the guard's copy of the step, which later detectors read (Facts.Step), was modified at " + path +
			":\nbefore: " + showStep(*s.want) + "\nafter:  " + showStep(*got)
	}
	for i := range f.Calls {
		tc := f.Calls[i].ToolCall()
		if i >= len(s.want.ToolCalls) || tc == nil {
			break
		}
		if path, ok := equalValues(s.want.ToolCalls[i], *tc); !ok && s.bad == "" {
			s.bad = "a call that later detectors read (Call.ToolCall) was modified at " + path
		}
	}
	return guard.Verdict{}
}

// factsView is what the spy compares of the facts: every exported field.
type factsView struct {
	Phase           guard.Phase
	Index           int
	Calls           []callView
	TextHash        canonical.Sum
	HasText         bool
	Text            string
	FinishReason    string
	RawFinishReason string
	NewInput        bool
	Usage           guard.Usage
	Steps           int
	Totals          guard.Totals
}

type callView struct {
	Tool                       string
	Args, Key, Outcome         canonical.Sum
	HasResult, Failed, Ignored bool
}

func viewFacts(f *guard.Facts) factsView {
	v := factsView{Phase: f.Phase, Index: f.Index, TextHash: f.TextHash, HasText: f.HasText, Text: f.Text(),
		FinishReason: f.FinishReason, RawFinishReason: f.RawFinishReason, NewInput: f.NewInput,
		Usage: f.Usage, Steps: f.Steps, Totals: f.Totals}
	for _, c := range f.Calls {
		v.Calls = append(v.Calls, callView{c.Tool, c.Args, c.Key, c.Outcome, c.HasResult, c.Failed, c.Ignored})
	}
	return v
}

// observeKeepsStep: Observe and Verdict modify neither the caller's step nor
// what later detectors read.
func observeKeepsStep(e *env, run []guard.Step) {
	det := e.fresh()
	sp := &spy{name: spyName(det)}
	g := e.newGuard(det, sp)
	ref := &spy{name: sp.name}
	gr := e.newGuard(ref)
	for i, s := range run {
		want := cloneStep(s)
		sp.want, sp.bad = &want, ""
		check(g, s, i)
		if path, ok := equalValues(want, s); !ok {
			e.fail("step %d: Observe or Verdict modified the step given to Check, at %s:\nbefore: %s\nafter:  %s",
				i, path, showStep(want), showStep(s))
		}
		if sp.bad != "" {
			e.fail("step %d: Observe or Verdict modified what later detectors read: %s", i, sp.bad)
		}
		check(gr, s, i)
		if path, ok := equalValues(ref.seen, sp.seen); !ok {
			e.fail("step %d: Observe or Verdict modified the facts that later detectors read, at %s:\nwithout the detector: %s\nwith it:              %s",
				i, path, showJSON(ref.seen), showJSON(sp.seen))
		}
	}
}

// spyName returns a name for the spy that differs from the detector's.
func spyName(d guard.Detector) string {
	if name(d) == "guardtest.spy" {
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

// snapshotRestore: Snapshot, then Restore into a fresh detector, gives the
// same state, and the same verdicts and preflight answers on the rest of the
// run; a redacted snapshot gives the same stop decisions.
func snapshotRestore(e *env, run []guard.Step) {
	det := e.fresh()
	g := e.newGuard(det)
	n := len(run)
	snaps, redacted, states, bare := make([][]byte, n+1), make([][]byte, n+1), make([][]byte, n+1), make([][]byte, n+1)
	decisions := make([][]guard.Decision, n+1)
	verdicts := make([]guard.Verdict, n)
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
		g2, d2 := e.restore(snaps[k], "the detector's own snapshot, taken "+after(k))
		if st := e.snap(d2, full, "after Restore"); !sameJSON(st, states[k]) {
			e.fail("Snapshot %s, then Restore into a fresh detector, then Snapshot gives another state:\nsaved:    %s\nrestored: %s",
				after(k), showBytes(states[k]), showBytes(st))
		}
		for j, q := range questions(run, k) {
			if d := preflight(g2, q, k); !sameDecision(d, decisions[k][j]) {
				e.fail("restored from a snapshot taken %s, the detector answers Preflight(%s) otherwise:\noriginal: %s\nrestored: %s\nsnapshot: %s",
					after(k), showCalls(q), showDecision(decisions[k][j]), showDecision(d), showBytes(states[k]))
			}
		}
		for i := k; i < n; i++ {
			if v := check(g2, run[i], i); !sameVerdict(v, verdicts[i]) {
				e.fail("restored from a snapshot taken %s, the detector gives another verdict at step %d:\noriginal: %s\nrestored: %s\nsnapshot: %s",
					after(k), i, showVerdict(verdicts[i]), showVerdict(v), showBytes(states[k]))
			}
		}
		g3, d3 := e.restore(redacted[k], "the detector's own snapshot without previews, taken "+after(k))
		if st := e.snap(d3, redact, "after Restore"); !sameJSON(st, bare[k]) {
			e.fail("Snapshot without previews %s, then Restore into a fresh detector, then Snapshot without previews gives another state:\nsaved:    %s\nrestored: %s",
				after(k), showBytes(bare[k]), showBytes(st))
		}
		for i := k; i < n; i++ {
			if v := check(g3, run[i], i); !sameStop(v, verdicts[i]) {
				e.fail("restored from a snapshot without previews taken %s, the detector decides otherwise at step %d (stop decisions must not depend on previews or tool names):\noriginal: %s\nrestored: %s\nsnapshot: %s",
					after(k), i, showVerdict(verdicts[i]), showVerdict(v), showBytes(redacted[k]))
			}
		}
	}
}

// snapshotBytes: snapshots are valid JSON, deterministic, equal for equal
// states, and share no memory with the detector.
func snapshotBytes(e *env, run []guard.Step) {
	a, b := e.fresh(), e.fresh()
	ga, gb := e.newGuard(a), e.newGuard(b)
	var held, heldCopy []byte
	heldAt := 0
	for i := 0; i <= len(run); i++ {
		when := after(i)
		for _, o := range []guard.SnapshotOptions{full, redact} {
			kind := "Snapshot"
			if !o.Previews {
				kind = "Snapshot (without previews)"
			}
			s1 := e.snap(a, o, when)
			c1 := bytes.Clone(s1)
			if held != nil && !bytes.Equal(held, heldCopy) {
				e.fail("a snapshot taken %s changed when the run had gone on and Snapshot was called again %s (Snapshot must return bytes that share no memory with the detector):\nwas: %s\nnow: %s",
					after(heldAt), when, showBytes(heldCopy), showBytes(held))
			}
			if len(s1) > 0 && !json.Valid(s1) {
				e.fail("%s returned invalid JSON %s: %s", kind, when, showBytes(s1))
			}
			s2 := e.snap(a, o, when)
			if !bytes.Equal(s1, c1) {
				e.fail("%s %s changed the bytes it had returned before (they must share no memory with the detector):\nfirst:        %s\nfirst, later: %s",
					kind, when, showBytes(c1), showBytes(s1))
			}
			if !bytes.Equal(s2, c1) {
				e.fail("%s is not deterministic: taken twice %s, it gave\n  %s\nthen\n  %s", kind, when, showBytes(c1), showBytes(s2))
			}
			if sb := e.snap(b, o, when); !bytes.Equal(sb, c1) {
				e.fail("two detectors given the same steps have different snapshots %s (equal states must give equal bytes):\n  %s\n  %s",
					when, showBytes(c1), showBytes(sb))
			}
			scribble(s1)
			scribble(s2)
			if s3 := e.snap(a, o, when); !sameJSON(s3, c1) {
				e.fail("after the bytes %s returned %s were overwritten, it returns another state (they must share no memory with the detector):\nbefore: %s\nafter:  %s",
					kind, when, showBytes(c1), showBytes(s3))
			}
		}
		held = e.snap(a, full, when)
		heldCopy, heldAt = bytes.Clone(held), i
		if i < len(run) {
			va, vb := check(ga, run[i], i), check(gb, run[i], i)
			if !sameVerdict(va, vb) {
				e.fail("at step %d, the detector whose snapshots were overwritten gives\n  %s\nand a twin gives\n  %s\n(the bytes Snapshot returns must share no memory with the detector)",
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

// resetIsFresh: after Reset or Restore(null), the detector is a fresh one.
func resetIsFresh(e *env, run []guard.Step) {
	for _, k := range slices.Compact([]int{len(run) / 2, len(run)}) {
		for _, how := range []string{"Reset", "Restore(null)"} {
			d := e.fresh()
			g := e.newGuard(d)
			for i, s := range run[:k] {
				check(g, s, i)
			}
			if how == "Reset" {
				reset(d)
			} else {
				var err error
				protect("Restore(null)", func() { err = d.Restore([]byte("null")) })
				if err != nil {
					e.fail("Restore(null) %s failed: %v (null is the state of a fresh detector)", after(k), err)
				}
			}
			f := e.fresh()
			for _, o := range []guard.SnapshotOptions{full, redact} {
				got, want := e.snap(d, o, "after "+how), e.snap(f, o, "of a fresh detector")
				if !bytes.Equal(got, want) {
					e.fail("%s %s gives another snapshot than a fresh detector's:\nafter %s: %s\nfresh:       %s",
						how, after(k), how, showBytes(got), showBytes(want))
				}
			}
			// g is no longer used: its detector goes on in a new guard,
			// whose counts start again like the fresh one's.
			g, gf := e.newGuard(relay{d}), e.newGuard(f)
			for i, s := range run {
				qs := questions(run, i)
				if how != "Reset" {
					qs = qs[:1] // Preflight with no calls
				}
				for _, q := range qs {
					if got, want := preflight(g, q, i), preflight(gf, q, i); !sameDecision(got, want) {
						e.fail("after %s %s, Preflight(%s) before step %d of a new run answers otherwise than a fresh detector:\nafter %s: %s\nfresh:    %s",
							how, after(k), showCalls(q), i, how, showDecision(got), showDecision(want))
					}
				}
				if got, want := check(g, s, i), check(gf, s, i); !sameVerdict(got, want) {
					e.fail("after %s %s, step %d of a new run gives another verdict than on a fresh detector:\nafter %s: %s\nfresh:    %s",
						how, after(k), i, how, showVerdict(got), showVerdict(want))
				}
			}
		}
	}
}

// oddStepsProp: no panic on odd steps, and snapshots after them are still
// taken and restored; detectors in separate guards do not disturb one
// another when run in parallel.
func oddStepsProp(e *env, run []guard.Step) {
	half := len(run) / 2
	for _, odd := range oddSteps() {
		d := e.fresh()
		g := e.newGuard(d)
		for i, s := range run[:half] {
			check(g, s, i)
		}
		protect("Check of "+odd.what, func() { g.Check(odd.step) })
		protect("Preflight of the calls of "+odd.what, func() { g.Preflight(odd.step.ToolCalls...) })
		snap := e.guardSnap(g, full, "after "+odd.what)
		e.guardSnap(g, redact, "after "+odd.what)
		g2, _ := e.restore(snap, "the detector's own snapshot, taken after "+odd.what)
		for i, s := range run[half:] {
			check(g, s, half+1+i)
			check(g2, s, half+1+i)
		}
	}

	// Detectors of separate guards, run in parallel goroutines, must not
	// share state (such as package-level variables).
	const parallel = 4
	var want []guard.Verdict
	g := e.newGuard(e.fresh())
	for i, s := range run {
		want = append(want, check(g, s, i))
	}
	guards := make([]*guard.Guard, parallel)
	for j := range guards {
		guards[j] = e.newGuard(e.fresh())
	}
	got := make([][]guard.Verdict, parallel)
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
				e.fail("detectors of %d guards running in parallel disturb one another (shared state?): at step %d, one gives\n  %s\nwhere alone it gives\n  %s",
					parallel, i, showVerdict(got[j][i]), showVerdict(want[i]))
			}
		}
	}
}

// fingerprintOf returns the detector's fingerprint, and checks that its
// options are JSON-able.
func (e *env) fingerprintOf(d guard.Detector, which string) (canonical.Sum, string) {
	var opts any
	protect("Options", func() { opts = d.Options() })
	if _, err := json.Marshal(opts); err != nil {
		e.fail("Options() of %s is not JSON-able data: %v", which, err)
	}
	var fp canonical.Sum
	protect("guard.Fingerprint", func() { fp = guard.Fingerprint(d) })
	return fp, showJSON(opts)
}

// fingerprint: equal for equal options, and not changed by the run.
func fingerprint(e *env, run []guard.Step) {
	a, b := e.fresh(), e.fresh()
	fa, oa := e.fingerprintOf(a, "a fresh detector")
	if fb, ob := e.fingerprintOf(b, "a fresh detector"); fa != fb {
		e.fail("two fresh detectors have different fingerprints, %s and %s: their options are %s and %s (a snapshot could never be restored)",
			fa, fb, oa, ob)
	}
	g := e.newGuard(a)
	for i, s := range run {
		check(g, s, i)
		if f, o := e.fingerprintOf(a, "the detector"); f != fa {
			e.fail("the fingerprint changed %s, from %s to %s: Options() was %s and is %s (options must not depend on the run)",
				after(i+1), fa, f, oa, o)
		}
	}
	reset(a)
	if f, o := e.fingerprintOf(a, "the detector"); f != fa {
		e.fail("the fingerprint changed after Reset, from %s to %s: Options() was %s and is %s", fa, f, oa, o)
	}
}

func noOther(e *env) string {
	if e.other == nil {
		return "no detector with other options: pass guardtest.WithOtherOptions to check that other options give another fingerprint"
	}
	return ""
}

// fingerprintDiffers: a detector with other options has another fingerprint.
func fingerprintDiffers(e *env, _ []guard.Step) {
	a := e.fresh()
	var o guard.Detector
	protect("the WithOtherOptions factory", func() { o = e.other() })
	if o == nil {
		e.fail("the WithOtherOptions factory returned nil")
	}
	if na, no := name(a), name(o); na != no {
		e.fail("the WithOtherOptions factory made a detector named %q; it must have the name of the detector under test, %q", no, na)
	}
	fa, oa := e.fingerprintOf(a, "the detector under test")
	fo, oo := e.fingerprintOf(o, "the detector with other options")
	if fa == fo {
		e.fail("a detector with other options has the same fingerprint, %s: Options() gives %s and %s (a snapshot would be restored under the wrong options)",
			fa, oa, oo)
	}
}

// nameStable: the name is valid and stable; so is the priority.
func nameStable(e *env, run []guard.Step) {
	a := e.fresh()
	n, p := name(a), priority(a)
	if !guard.ValidName(n) {
		e.fail("Name() = %q is not a valid detector name (guard.ValidName: 1 to 64 ASCII letters, digits, '_', '-', '.' and '/', starting with a letter)", n)
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
		e.fail("two fresh detectors are named %q and %q (the name keys snapshots and fingerprints)", n, m)
	}
	if q := priority(b); q != p {
		e.fail("two fresh detectors have priorities %d and %d", p, q)
	}
	g := e.newGuard(a)
	for i, s := range run {
		check(g, s, i)
		if m := name(a); m != n {
			e.fail("Name() changed %s, from %q to %q", after(i+1), n, m)
		}
		if q := priority(a); q != p {
			e.fail("Priority() changed %s, from %d to %d", after(i+1), p, q)
		}
	}
	reset(a)
	if m := name(a); m != n {
		e.fail("Name() changed after Reset, from %q to %q", n, m)
	}
}

// notShared: a detector that a guard holds is refused by a second guard
// (guard.ErrDetectorInUse, naming it), or, when the second guard accepts it,
// sharing it is harmless: two guards that share it give the verdicts that
// detectors of their own give, whether their steps alternate or one guard's
// step comes between the Observe and the Verdict of the other's (as when
// they run at the same time).
func notShared(e *env, run []guard.Step) {
	// Alternate steps: any state one run leaves shows in the other's.
	d := e.fresh()
	g1 := e.newGuard(d)
	g2, refused := e.secondGuard(d, g1)
	if refused {
		return
	}
	ref1, ref2 := e.newGuard(e.fresh()), e.newGuard(e.fresh())
	for i := range run {
		v1, w1 := check(g1, run[i], i), check(ref1, run[i], i)
		v2, w2 := check(g2, run[i], i), check(ref2, run[i], i)
		e.sameWhenShared(i, v1, v2, w1, w2)
	}

	// Interleave within a step: the second guard checks a step of another
	// run between the Observe and the Verdict of the first guard's step.
	d = e.fresh()
	var inner func()
	in := &interloper{name: spyName(d), hook: func() { inner() }}
	g1 = e.newGuard(d, in)
	g2, _ = e.secondGuard(d, g1)
	ref1, ref2 = e.newGuard(e.fresh()), e.newGuard(e.fresh())
	n := len(run)
	for i := range run {
		var v2 guard.Verdict
		inner = func() { v2 = check(g2, run[n-1-i], i) }
		v1 := check(g1, run[i], i)
		w1, w2 := check(ref1, run[i], i), check(ref2, run[n-1-i], i)
		e.sameWhenShared(i, v1, v2, w1, w2)
	}
}

// secondGuard asks for a second guard of d while g1 holds it: refused
// reports that guard.New refused it, as it should, with the right error.
func (e *env) secondGuard(d guard.Detector, g1 *guard.Guard) (g2 *guard.Guard, refused bool) {
	var err error
	protect("guard.New", func() { g2, err = e.guardOpts.New(d) })
	runtime.KeepAlive(g1)
	if err == nil {
		return g2, false
	}
	if !errors.Is(err, guard.ErrDetectorInUse) {
		e.fail("guard.New of a detector that another guard holds failed with %v; want an error that wraps guard.ErrDetectorInUse", err)
	}
	if !strings.Contains(err.Error(), strconv.Quote(name(d))) {
		e.fail("the error of guard.New for a detector that another guard holds does not name it (%q): %v", name(d), err)
	}
	return nil, true
}

func (e *env) sameWhenShared(i int, v1, v2, w1, w2 guard.Verdict) {
	if !sameVerdict(v1, w1) || !sameVerdict(v2, w2) {
		e.fail("the detector is shared silently: guard.New gave it to a second guard while another held it, and at step %d the two guards see each other's steps:\nshared:   %s\n          %s\nits own:  %s\n          %s\n(embed guard.Owned in the detector, so that guard.New refuses it)",
			i, showVerdict(v1), showVerdict(v2), showVerdict(w1), showVerdict(w2))
	}
}

// interloper is a detector that runs after every other and calls hook when
// it observes a step: between the Observe and the Verdict of the others.
type interloper struct {
	name string
	hook func()
}

func (s *interloper) Name() string                                   { return s.name }
func (s *interloper) Priority() int                                  { return math.MaxInt }
func (s *interloper) Options() any                                   { return nil }
func (s *interloper) Observe(*guard.Facts)                           { s.hook() }
func (s *interloper) Verdict() guard.Verdict                         { return guard.Verdict{} }
func (s *interloper) Preflight(*guard.Facts) guard.Verdict           { return guard.Verdict{} }
func (s *interloper) Snapshot(guard.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (s *interloper) Restore([]byte) error                           { return nil }
func (s *interloper) Reset()                                         {}
