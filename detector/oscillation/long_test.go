package oscillation_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// tour returns the calls of an ALFWorld-like tour of n places, each with the
// same observation every time round: go to place i, answered "On place i,
// you see nothing."
func tour(n int) []guard.ToolCall {
	out := make([]guard.ToolCall, n)
	for i := range out {
		tool := "go_to"
		if i%3 == 2 {
			tool = "open" // tools differ within the tour
		}
		out[i] = withResult(call(tool, fmt.Sprintf(`{"place":"shelf %d"}`, i+1)), fmt.Sprintf(`"On shelf %d, you see nothing."`, i+1))
	}
	return out
}

// tourCycle is the evidence's cycle of the last p calls of calls.
func tourCycle(calls []guard.ToolCall, p int) (cycle []string) {
	for _, c := range calls[len(calls)-p:] {
		cycle = append(cycle, c.Name+"("+string(c.Args.(json.RawMessage))+")")
	}
	return cycle
}

// longStop is the stop of a long cycle of the last p calls of calls,
// repeated rounds times (threshold SameResults 2).
func longStop(calls []guard.ToolCall, p, rounds int) guard.Verdict {
	e := ev(p, rounds, 2, tourCycle(calls, p)...)
	e.Long = true
	return stop(e, guard.PhaseCheck)
}

// rounds returns the calls of n rounds of the tour t, then extra of its
// calls.
func rounds(t []guard.ToolCall, n, extra int) []guard.ToolCall {
	var out []guard.ToolCall
	for range n {
		out = append(out, t...)
	}
	return append(out, t[:extra]...)
}

func TestLongCycleBoundaries(t *testing.T) {
	six := tour(6)
	two := rounds(six, 2, 0)
	changed := append(rounds(six, 1, 5), withResult(six[5], `"On shelf 6, you see a mug."`))
	plain := make([]guard.ToolCall, 12)
	for i := range plain {
		plain[i] = call(six[i%6].Name, string(six[i%6].Args.(json.RawMessage)))
	}
	tests := []struct {
		name  string
		opts  oscillation.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "a tour of 6 calls: 11 calls go on, the 12th stops",
			steps: steps(two...),
			want:  cat(goOn(11), one(longStop(two, 6, 2))),
		},
		{
			name:  "it stops again on each later call, with a growing count",
			steps: steps(rounds(six, 3, 0)...),
			want: cat(goOn(11), one(longStop(two, 6, 2)), func() (vs []guard.Verdict) {
				all := rounds(six, 3, 0)
				for n := 13; n <= 18; n++ {
					vs = append(vs, longStop(all[:n], 6, (n-6)/6+1))
				}
				return vs
			}()),
		},
		{
			name:  "a result that changed in the second round goes on",
			steps: steps(append(changed, rounds(six, 1, 5)...)...),
			want:  goOn(23),
		},
		{
			name:  "calls without results never stop so",
			steps: steps(plain...),
			want:  goOn(12),
		},
		{
			name:  "new input in the second round: two rounds after it, reported as the three there are",
			steps: append(append(steps(six...), withInput(step(six[0]))), steps(rounds(six, 2, 0)[1:]...)...),
			want:  cat(goOn(17), one(longStop(rounds(six, 3, 0), 6, 3))),
		},
		{
			name:  "both rounds in one step go on: they were asked for before any result came back",
			steps: []guard.Step{step(two...)},
			want:  goOn(1),
		},
		{
			name:  "after both rounds in one step, the next step's call stops",
			steps: []guard.Step{step(two...), step(two[0])},
			want:  cat(goOn(1), one(longStop(append(slices.Clone(two), two[0]), 6, 2))),
		},
		{
			name:  "rounds that reach back one call before the step stop",
			steps: []guard.Step{step(two[0]), step(two[1:]...)},
			want:  cat(goOn(1), one(longStop(two, 6, 2))),
		},
		{
			name:  "period 4, the shortest long one: the 8th call stops",
			steps: steps(rounds(tour(4), 2, 0)...),
			want:  cat(goOn(7), one(longStop(rounds(tour(4), 2, 0), 4, 2))),
		},
		{
			name:  "period 16, the longest: the 32nd call stops",
			steps: steps(rounds(tour(16), 2, 0)...),
			want:  cat(goOn(31), one(longStop(rounds(tour(16), 2, 0), 16, 2))),
		},
		{
			name:  "period 17 is beyond LongPeriod",
			steps: steps(rounds(tour(17), 2, 0)...),
			want:  goOn(34),
		},
		{
			name:  "LongPeriod 5 misses a tour of 6",
			opts:  oscillation.Options{LongPeriod: 5},
			steps: steps(two...),
			want:  goOn(12),
		},
		{
			name:  "LongPeriod 6 catches it",
			opts:  oscillation.Options{LongPeriod: 6},
			steps: steps(two...),
			want:  cat(goOn(11), one(longStop(two, 6, 2))),
		},
		{
			name:  "LongPeriod at MaxPeriod looks for none",
			opts:  oscillation.Options{LongPeriod: oscillation.DefaultMaxPeriod},
			steps: steps(two...),
			want:  goOn(12),
		},
		{
			name:  "a larger MaxPeriod leaves the periods up to it to Repeats",
			opts:  oscillation.Options{MaxPeriod: 6},
			steps: steps(rounds(six, 3, 0)...),
			want:  cat(goOn(17), one(stop(ev(6, 3, 3, tourCycle(six, 6)...), guard.PhaseCheck))),
		},
		{
			name:  "the reference's reading: none",
			opts:  reference,
			steps: steps(two...),
			want:  goOn(12),
		},
		{
			name:  "SameResults 3 under Repeats 4: three rounds",
			opts:  oscillation.Options{Repeats: 4, SameResults: 3},
			steps: steps(rounds(six, 3, 0)...),
			want: cat(goOn(17), one(func() guard.Verdict {
				v := longStop(rounds(six, 3, 0), 6, 3)
				e := v.Evidence.(oscillation.Evidence)
				e.Threshold = 3
				v.Evidence, v.Feedback = e, e.Feedback(guard.PhaseCheck)
				return v
			}())),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{})
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLongCycleHardNegatives: long routines that healthy runs go through
// more than once, each time with something new, go on.
func TestLongCycleHardNegatives(t *testing.T) {
	// A routine of checks after each edit: the edit is new each time, and
	// so is the test run's result.
	var routine []guard.Step
	for i := range 5 {
		routine = append(routine, steps(
			withResult(call("edit", fmt.Sprintf(`{"file":"a.go","patch":"fix %d"}`, i)), `"ok"`),
			withResult(call("bash", `{"cmd":"go vet ./..."}`), `""`),
			withResult(call("bash", `{"cmd":"git diff --stat"}`), `" a.go | 2 +-"`),
			withResult(call("bash", `{"cmd":"go test ./..."}`), fmt.Sprintf(`"FAIL: %d tests"`, 5-i)),
		)...)
	}
	// A support agent that looks the same things up after each reply of the
	// user.
	var support []guard.Step
	for i := range 3 {
		support = append(support, steps(
			withResult(call("get_user", `{"id":"u1"}`), `{"name":"Ann"}`),
			withResult(call("get_order", `{"id":"o1"}`), `{"status":"shipped"}`),
			withResult(call("get_refunds", `{"id":"o1"}`), `[]`),
			withResult(call("get_tickets", `{"id":"u1"}`), `[]`),
		)...)
		support = append(support, guard.Step{Text: "Anything else?"}, withInput(guard.Step{Text: fmt.Sprintf("reply %d", i)}))
	}
	// A sweep over places that each show something else.
	var sweep []guard.Step
	for i := range 20 {
		sweep = append(sweep, step(withResult(call("go_to", fmt.Sprintf(`{"place":"drawer %d"}`, i)), `"The drawer is closed."`)))
	}
	for name, ss := range map[string][]guard.Step{"checks after each edit": routine, "lookups after each reply": support, "a sweep": sweep} {
		t.Run(name, func(t *testing.T) {
			g := newGuard(t, oscillation.Options{}, guard.Config{})
			if diff := cmp.Diff(goOn(len(ss)), run(t, g, ss), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLongCycleWarn(t *testing.T) {
	six := tour(6)
	g := newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
	got := run(t, g, steps(rounds(six, 2, 0)...))
	const detail = `a cycle of 6 calls (open -> go_to -> go_to -> open -> go_to -> go_to) with the same results is one call short of repeating 2 times in a row`
	want := cat(goOn(10), one(warning(11, detail)), one(longStop(rounds(six, 2, 0), 6, 2)))
	if diff := cmp.Diff(want, got, ignoreDetail); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if w := got[10].Warnings; len(w) != 1 || w[0].Detail != detail {
		t.Errorf("warnings %+v", w)
	}
	// The call the next one would follow had no result, or new input came
	// with the 11th call: no warning.
	noResult := rounds(six, 2, 0)
	noResult[5] = call(six[5].Name, string(six[5].Args.(json.RawMessage)))
	input := steps(rounds(six, 2, 0)...)
	input[10] = withInput(input[10])
	for name, ss := range map[string][]guard.Step{"no result to repeat": steps(noResult[:11]...), "new input": input[:11]} {
		g := newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
		if diff := cmp.Diff(goOn(11), run(t, g, ss), ignoreDetail); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestLongCyclePreflight: a call not yet run has no result, so preflight
// refuses none of a long cycle's calls.
func TestLongCyclePreflight(t *testing.T) {
	six := tour(6)
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(rounds(six, 3, 5)...))
	if d := ruletest.Preflight(t, g, six[5]); !d.Allow {
		t.Errorf("preflight refused a call of a long cycle: %+v", d)
	}
}

// TestLongCycleFeedback: the model-facing text names the tools and the
// length of the cycle, and holds no argument or result.
func TestLongCycleFeedback(t *testing.T) {
	six := tour(6)
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	vs := run(t, g, steps(rounds(six, 2, 0)...))
	fb := vs[11].Feedback
	if !strings.Contains(fb, "the same 6 calls") || !strings.Contains(fb, "go_to") {
		t.Errorf("feedback %q does not say the cycle", fb)
	}
	for _, secret := range []string{"shelf", "nothing", "place"} {
		if strings.Contains(fb, secret) {
			t.Errorf("feedback %q holds %q", fb, secret)
		}
	}
}

// TestLongCycleSnapshot: a run saved in the middle of its second round
// stops at the same call once restored, with or without previews; a state
// saved by the release before long cycles (three calls, no long counters)
// restores under the defaults and counts them from there.
func TestLongCycleSnapshot(t *testing.T) {
	six := tour(6)
	all := rounds(six, 2, 0)
	for _, previews := range []bool{true, false} {
		g := newGuard(t, oscillation.Options{}, guard.Config{})
		run(t, g, steps(all[:9]...))
		data, err := snap(g, guard.SnapshotOptions{Previews: previews})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"long":{"6":3}`) {
			t.Errorf("snapshot holds no long counter of 3 for period 6: %s", data)
		}
		r, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newRule(t, oscillation.Options{})}})
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, r, steps(all[9:]...))
		if !got[2].Stop || got[2].Evidence.(oscillation.Evidence).Period != 6 || !got[2].Evidence.(oscillation.Evidence).Long {
			t.Errorf("previews %v: restored run %+v, want a long stop at its 12th call", previews, got)
		}
	}

	// A state of three calls without long counters is what the release
	// before long cycles wrote under its defaults (which fingerprint as
	// these): it restores, and the tour stops at its 12th call.
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(all[:3]...))
	data, err := snap(g, guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := stateOf(t, g, guard.SnapshotOptions{}); strings.Contains(string(st), "long") {
		t.Fatalf("state of three calls holds long counters: %s", st)
	}
	r, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newRule(t, oscillation.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	got := run(t, r, steps(all[3:]...))
	if diff := cmp.Diff(cat(goOn(8), one(longStop(all, 6, 2))), got, ignoreDetail); diff != "" {
		t.Errorf("after the restore (-want +got):\n%s", diff)
	}
}

func TestLongCycleRestoreRejects(t *testing.T) {
	six := tour(6)
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(rounds(six, 1, 3)...))
	good := stateOf(t, g, guard.SnapshotOptions{Previews: true}) // long: {"6":3}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(good, &s); err != nil {
		t.Fatal(err)
	}
	with := func(key, value string) []byte {
		m := map[string]json.RawMessage{}
		for k, v := range s {
			m[k] = v
		}
		if value == "" {
			delete(m, key)
		} else {
			m[key] = json.RawMessage(value)
		}
		b, _ := json.Marshal(m)
		return b
	}
	for name, data := range map[string][]byte{
		"a period beyond LongPeriod": with("long", `{"6":3,"17":1}`),
		"a period of MaxPeriod":      with("long", `{"3":1}`),
		"a counter of 0":             with("long", `{"6":0}`),
		"a counter that disagrees":   with("long", `{"6":2}`),
		"a counter too high":         with("long", `{"6":4}`),
		"no calls since the input":   with("fresh", ""),
	} {
		d := newState(t, oscillation.Options{})
		if err := d.Restore(data); err == nil || !strings.HasPrefix(err.Error(), "oscillation: ") {
			t.Errorf("%s: Restore(%s) = %v, want the rule's error", name, data, err)
		}
	}
	// Long counters under options that look for none.
	d := newState(t, oscillation.Options{LongPeriod: 3})
	if err := d.Restore(good); err == nil {
		t.Errorf("Restore(%s) with LongPeriod 3 succeeded", good)
	}
}

// TestLongCycleCheckBounds: a long counter that spans more calls than the
// guard recorded is refused, one that spans them all is not. A tour with
// new input every 11th call keeps its counter growing beyond the tail.
func TestLongCycleCheckBounds(t *testing.T) {
	six := tour(6)
	ss := steps(rounds(six, 7, 0)...) // 42 calls
	for i := 0; i < len(ss); i += 11 {
		ss[i] = withInput(ss[i])
	}
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	if got := run(t, g, ss); slices.ContainsFunc(got, func(v guard.Verdict) bool { return v.Stop }) {
		t.Fatalf("the tour stopped: %+v", got)
	}
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	if !strings.Contains(string(data), `"6":36}`) || !strings.Contains(string(data), `"toolCalls":42`) {
		t.Fatalf("snapshot without a long counter of 36: %s", data)
	}
	cfg := guard.Config{Rules: []rule.Rule{newRule(t, oscillation.Options{})}}
	// 36 positions matching the call 6 back span 42 calls: all of them.
	for calls, ok := range map[int]bool{42: true, 41: false} {
		edited := strings.Replace(strings.Replace(string(data), `"toolCalls":42`, fmt.Sprintf(`"toolCalls":%d`, calls), 1),
			`"steps":42`, fmt.Sprintf(`"steps":%d`, calls), 1)
		_, err := guard.Restore([]byte(edited), cfg)
		if (err == nil) != ok || !ok && !errors.Is(err, guard.ErrInvalidState) {
			t.Errorf("restore with %d calls recorded: %v, want ok %v", calls, err, ok)
		}
	}
}

func TestLongPeriodOptions(t *testing.T) {
	for _, tt := range []struct {
		o    oscillation.Options
		want string
	}{
		{oscillation.Options{LongPeriod: 1}, "must be 0 (the default, 16) or from 2 to 256, not 1"},
		{oscillation.Options{LongPeriod: -1}, "must be 0 (the default, 16) or from 2 to 256, not -1"},
		{oscillation.Options{LongPeriod: oscillation.MaxMaxPeriod + 1}, "must be 0 (the default, 16) or from 2 to 256, not 257"},
		{oscillation.Options{LongPeriod: 8, SameResults: 3}, "8 looks for cycles that stop at SameResults rounds, but SameResults is Repeats (3): set SameResults below Repeats, or LongPeriod to 0"},
		{oscillation.Options{LongPeriod: 8, Repeats: 2}, "8 looks for cycles that stop at SameResults rounds, but SameResults is Repeats (2): set SameResults below Repeats, or LongPeriod to 0"},
	} {
		_, err := oscillation.New(tt.o)
		var oe *rule.OptionError
		if !errors.As(err, &oe) || oe.Field != "LongPeriod" || oe.Err.Error() != tt.want {
			t.Errorf("New(%+v) = %v; want LongPeriod: %s", tt.o, err, tt.want)
		}
	}
	for _, o := range []oscillation.Options{{LongPeriod: 2}, {LongPeriod: 3, SameResults: 3}, {LongPeriod: 256}, {MaxPeriod: 20}} {
		if _, err := oscillation.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
}

// TestLongCyclePoll: a poll of three jobs and a wait whose answers do not
// change stops at its second round; with LongPeriod 3 it goes on, as it did
// before the rule looked for long cycles.
func TestLongCyclePoll(t *testing.T) {
	status := func(job string) guard.ToolCall {
		return withResult(call("job_status", fmt.Sprintf(`{"job":%q}`, job)), `"running"`)
	}
	wait := withResult(call("wait", `{"seconds":30}`), `"waited 30 s"`)
	poll := rounds([]guard.ToolCall{status("a"), status("b"), status("c"), wait}, 3, 0)
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	if got := run(t, g, steps(poll[:8]...)); !got[7].Stop || !got[7].Evidence.(oscillation.Evidence).Long || got[6].Stop {
		t.Errorf("poll of four calls: %+v, want a long stop at the 8th call", got)
	}
	g = newGuard(t, oscillation.Options{LongPeriod: 3}, guard.Config{})
	if diff := cmp.Diff(goOn(len(poll)), run(t, g, steps(poll...)), ignoreDetail); diff != "" {
		t.Errorf("poll under LongPeriod 3 (-want +got):\n%s", diff)
	}
}

// TestLongCycleReviewFindings holds the cases a review found: each failed
// before its fix.
func TestLongCycleReviewFindings(t *testing.T) {
	// A state of the release before long cycles, its tail full (3 calls)
	// and its counter spanning more calls than the tail holds, restores,
	// goes on for a call, and its new state restores too.
	t.Run("a resumed earlier state saves and restores", func(t *testing.T) {
		key := func(s string) string { b, _ := json.Marshal(canonical.HashString(s)); return string(b) } // as keyed hashes them
		old := `{"calls":[{"key":` + key("a") + `,"tool":"search"},{"key":` + key("b") + `,"tool":"search"},{"key":` + key("a") + `,"tool":"search"}],"runs":[7,0],"same":[0,0],"fresh":9}`
		d := newState(t, oscillation.Options{})
		if err := d.Restore([]byte(old)); err != nil {
			t.Fatalf("Restore(%s): %v", old, err)
		}
		d.Observe(keyed(10, "b"))
		data, err := d.Snapshot(rule.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := newState(t, oscillation.Options{}).Restore(data); err != nil {
			t.Errorf("Restore(%s) of the resumed run: %v", data, err)
		}
	})
	// New input within the first round: the counter reaches two rounds
	// before the calls since the input do; the warning comes one call
	// before the stop all the same.
	t.Run("a warning after new input in the first round", func(t *testing.T) {
		four := tour(4)
		ss := steps(rounds(four, 3, 0)...)
		ss[4] = withInput(ss[4])
		g := newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
		got := run(t, g, ss)
		const detail = `a cycle of 4 calls (go_to -> go_to -> go_to -> open) with the same results is one call short of repeating 2 times in a row`
		want := cat(goOn(10), one(warning(11, detail)), one(longStop(rounds(four, 3, 0), 4, 3)))
		if diff := cmp.Diff(want, got, ignoreDetail); diff != "" {
			t.Errorf("verdicts (-want +got):\n%s", diff)
		}
	})
	t.Run("a warning of a ping-pong after new input, under Repeats 4", func(t *testing.T) {
		x, y := sameResultsAssert, sameResultsPrint
		ss := steps(x, y, x, y, x, y)
		ss[2] = withInput(ss[2])
		g := newGuard(t, oscillation.Options{Warn: true, Repeats: 4}, guard.Config{})
		got := run(t, g, ss)
		if len(got[4].Warnings) != 1 || !got[5].Stop {
			t.Errorf("verdicts %+v: want a warning at the 5th call and a stop at the 6th", got)
		}
	})
	// A ping-pong of two tools is a short cycle at any Repeats: its double
	// is no long cycle.
	t.Run("a handoff ping-pong under Repeats 5", func(t *testing.T) {
		hx := withResult(call("transfer_to_x", `{}`), `"Transferred to x"`)
		hy := withResult(call("transfer_to_y", `{}`), `"Transferred to y"`)
		g := newGuard(t, oscillation.Options{Repeats: 5, Warn: true}, guard.Config{})
		got := run(t, g, steps(rounds([]guard.ToolCall{hx, hy}, 5, 0)...))
		for i, v := range got {
			if v.Stop != (i == 9) {
				t.Fatalf("call %d: stop %v (%+v)", i+1, v.Stop, v.Evidence)
			}
		}
		if e := got[9].Evidence.(oscillation.Evidence); e.Period != 2 || e.Long || e.Repeats != 5 {
			t.Errorf("evidence %+v, want period 2, 5 rounds", e)
		}
	})
}
