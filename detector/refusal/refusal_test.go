package refusal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newRule(t tb, o refusal.Options) *refusal.Rule { return ruletest.Rule(t, refusal.New, o) }

// newState returns a fresh state of the rule with these options.
func newState(t tb, o refusal.Options) ruletest.State { return ruletest.NewState(t, newRule(t, o)) }

// newGuard is testutil.New for a tb (rapid's T too).
func newGuard(t tb, r rule.Rule) *guard.Guard { return ruletest.New(t, guard.Config{}, r) }

func search(q string) guard.ToolCall {
	return guard.ToolCall{Name: "search", Args: map[string]string{"q": q}}
}

func fetch(q string) guard.ToolCall {
	return guard.ToolCall{Name: "fetch", Args: map[string]string{"url": q}}
}

// refused is a step whose only call was refused.
func refused(calls ...guard.ToolCall) guard.Step { return guard.Step{Refused: calls} }

func run(t tb, g *guard.Guard, ss ...guard.Step) []string {
	t.Helper()
	out := make([]string, len(ss))
	for i, s := range ss {
		if v := ruletest.Check(t, g, s); v.Stop {
			ev := v.Evidence.(refusal.Evidence)
			out[i] = strings.TrimSpace(fmt.Sprintf("%s %d %s", v.Code, ev.Count, ev.Scope))
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	a, b := search("a"), fetch("b")
	ran := guard.Step{ToolCalls: []guard.ToolCall{search("c")}}
	ranFetch := guard.Step{ToolCalls: []guard.ToolCall{fetch("c")}}
	s := func(i int) guard.ToolCall { return search(fmt.Sprint(i)) }
	tests := []struct {
		name  string
		opts  refusal.Options
		steps []guard.Step
		want  []string
	}{
		{"two refusals go on, the third stops", refusal.Options{},
			[]guard.Step{refused(a), refused(a), refused(a)}, []string{"", "", "REPEATED_REFUSAL 3"}},
		{"other steps in between do not reset the count", refusal.Options{},
			[]guard.Step{refused(a), ran, ran, refused(a), ran, refused(a)}, []string{"", "", "", "", "", "REPEATED_REFUSAL 3"}},
		{"other calls are counted apart", refusal.Options{},
			[]guard.Step{refused(a), refused(b), refused(a), refused(b), ran}, []string{"", "", "", "", ""}},
		{"two refusals in one step count twice", refusal.Options{},
			[]guard.Step{refused(a), refused(a, a)}, []string{"", "REPEATED_REFUSAL 3"}},
		{"it stops again on a later refusal", refusal.Options{},
			[]guard.Step{refused(a), refused(a), refused(a), ran, refused(a)}, []string{"", "", "REPEATED_REFUSAL 3", "", "REPEATED_REFUSAL 4"}},
		{"a tool refused with new arguments: two steps go on, the third stops", refusal.Options{},
			[]guard.Step{refused(s(1)), refused(s(2)), refused(s(3))}, []string{"", "", "REPEATED_REFUSAL 3 tool"}},
		{"a step in which the tool ran starts its count again", refusal.Options{},
			[]guard.Step{refused(s(1)), refused(s(2)), ran, refused(s(3)), refused(s(4)), refused(s(5))},
			[]string{"", "", "", "", "", "REPEATED_REFUSAL 3 tool"}},
		{"a step in which the tool ran beside a refusal of it counts one", refusal.Options{},
			[]guard.Step{refused(s(1)), refused(s(2)), {ToolCalls: []guard.ToolCall{search("c")}, Refused: []guard.ToolCall{s(3)}},
				refused(s(4)), refused(s(5))},
			[]string{"", "", "", "", "REPEATED_REFUSAL 3 tool"}},
		{"another tool that ran does not start the count again", refusal.Options{},
			[]guard.Step{refused(s(1)), refused(s(2)), ranFetch, refused(s(3))}, []string{"", "", "", "REPEATED_REFUSAL 3 tool"}},
		{"refusals of a tool in one step count once", refusal.Options{},
			[]guard.Step{refused(s(1), s(2), s(3)), refused(s(4), s(5)), refused(s(6))}, []string{"", "", "REPEATED_REFUSAL 3 tool"}},
		{"the same call refused stops as that call", refusal.Options{},
			[]guard.Step{refused(s(1)), refused(s(1)), refused(s(1))}, []string{"", "", "REPEATED_REFUSAL 3"}},
		{"the tool's count goes on after a stop", refusal.Options{},
			[]guard.Step{refused(s(1)), refused(s(2)), refused(s(3)), refused(s(4))}, []string{"", "", "REPEATED_REFUSAL 3 tool", "REPEATED_REFUSAL 4 tool"}},
		{"tool threshold 4", refusal.Options{Threshold: 4},
			[]guard.Step{refused(s(1)), refused(s(2)), refused(s(3)), refused(s(4))}, []string{"", "", "", "REPEATED_REFUSAL 4 tool"}},
		{"threshold 5", refusal.Options{Threshold: 5},
			[]guard.Step{refused(a), refused(a), refused(a), refused(a), refused(a)}, []string{"", "", "", "", "REPEATED_REFUSAL 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := testutil.New(t, newRule(t, tt.opts))
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps...)); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOnlyTheNewestCallsAreRemembered(t *testing.T) {
	// Each call of its own tool, so that calls and tools are counted alike.
	call := func(name string) guard.ToolCall { return guard.ToolCall{Name: name, Args: map[string]int{"n": 1}} }
	g := testutil.New(t, newRule(t, refusal.Options{Threshold: 2}))
	testutil.Check(t, g, refused(call("first")))
	for i := range refusal.MaxCalls - 1 {
		testutil.Check(t, g, refused(call(fmt.Sprint(i))))
	}
	if v := testutil.Check(t, g, refused(call("first"))); !v.Stop {
		t.Errorf("the oldest of %d calls was forgotten", refusal.MaxCalls)
	}
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.Check(t, g, refused(call("first")))
	for i := range refusal.MaxCalls {
		testutil.Check(t, g, refused(call(fmt.Sprint(i))))
	}
	if v := testutil.Check(t, g, refused(call("first"))); v.Stop {
		t.Errorf("a call older than the newest %d was remembered: %v", refusal.MaxCalls, v)
	}
}

// TestToolStopAndWarning: a tool refused with new arguments in two steps
// warns, and in the third stops, with evidence and feedback that name the
// tool and hold no argument.
func TestToolStopAndWarning(t *testing.T) {
	g := testutil.New(t, newRule(t, refusal.Options{Warn: true}))
	secret := func(i int) guard.ToolCall {
		return guard.ToolCall{Name: "delete_db", Args: map[string]string{"password": fmt.Sprint("hunter", i)}}
	}
	vs := []guard.Verdict{testutil.Check(t, g, refused(secret(1))), testutil.Check(t, g, refused(secret(2))), testutil.Check(t, g, refused(secret(3)))}
	if vs[0].Stop || len(vs[0].Warnings) != 0 {
		t.Errorf("first refusal: %v", vs[0])
	}
	if w := vs[1].Warnings; vs[1].Stop || len(w) != 1 || w[0].Code != refusal.WarningCode || w[0].Value != 2 || w[0].Tool != "delete_db" ||
		strings.Contains(w[0].Feedback+w[0].Detail, "hunter") {
		t.Errorf("second refusal: %v, want a warning without arguments", vs[1])
	}
	v := vs[2]
	want := refusal.Evidence{Tool: "delete_db", Count: 3, Threshold: 3, Scope: refusal.ScopeTool}
	if diff := cmp.Diff(want, v.Evidence); diff != "" || v.Code != refusal.Code || v.Reason != refusal.ReasonRepeatedRefusal {
		t.Errorf("stop %v (-want +got evidence):\n%s", v, diff)
	}
	if v.Feedback != v.Evidence.(refusal.Evidence).Feedback() || !strings.Contains(v.Feedback, "delete_db") ||
		strings.Contains(v.Feedback+v.Detail, "hunter") {
		t.Errorf("feedback %q, detail %q", v.Feedback, v.Detail)
	}
}

func TestVerdict(t *testing.T) {
	g := testutil.New(t, newRule(t, refusal.Options{Warn: true}))
	a := guard.ToolCall{Name: "delete_db", Args: map[string]string{"password": "hunter2"}}
	vs := []guard.Verdict{testutil.Check(t, g, refused(a)), testutil.Check(t, g, refused(a)), testutil.Check(t, g, refused(a))}
	if vs[0].Stop || len(vs[0].Warnings) != 0 {
		t.Errorf("first refusal: %v", vs[0])
	}
	if len(vs[1].Warnings) != 1 || vs[1].Warnings[0].Code != refusal.WarningCode || vs[1].Warnings[0].Value != 2 {
		t.Errorf("second refusal: %v, want a warning", vs[1])
	}
	v := vs[2]
	want := refusal.Evidence{Tool: "delete_db", ArgsPreview: `{"password":"hunter2"}`, Count: 3, Threshold: 3}
	if diff := cmp.Diff(want, v.Evidence); diff != "" || v.Reason != refusal.ReasonRepeatedRefusal || !guard.IsFault(v) {
		t.Errorf("stop %v (-want +got evidence):\n%s", v, diff)
	}
	if v.Feedback != v.Evidence.(refusal.Evidence).Feedback() || v.Feedback == "" || strings.Contains(v.Feedback, "hunter2") {
		t.Errorf("feedback = %q", v.Feedback)
	}
	if !strings.Contains(v.Detail, "refused 3 times") {
		t.Errorf("detail = %q", v.Detail)
	}
}

// TestWithRepeat runs the rule beside the repeat rule that refuses calls, as
// a hand-written loop does: preflight, run what is allowed, record the
// refused calls. A model that asks for the same call forever is stopped.
func TestWithRepeat(t *testing.T) {
	rep, _ := repeat.New(repeat.Options{})
	g := testutil.New(t, rep, newRule(t, refusal.Options{}))
	call := search("same")
	var stop guard.Verdict
	for i := 1; i <= 10 && !stop.Stop; i++ {
		s := guard.Step{}
		if d := testutil.Preflight(t, g, call); d.Allow {
			c := call
			c.Result = "nothing new"
			s.ToolCalls = []guard.ToolCall{c}
		} else {
			s.Refused = []guard.ToolCall{call}
		}
		stop = testutil.Check(t, g, s)
		if stop.Stop && i != 5 {
			t.Fatalf("stopped at step %d (%v), want 5: two calls ran, three were refused", i, stop)
		}
	}
	if stop.Code != refusal.Code {
		t.Errorf("final verdict %v, want %s", stop, refusal.Code)
	}
}

func TestOptionsAndRestore(t *testing.T) {
	if _, err := refusal.New(refusal.Options{Threshold: 1}); !errors.Is(err, guard.ErrInvalidOption) {
		t.Errorf("threshold 1: %v", err)
	} else if diff := cmp.Diff([]string{"Threshold"}, testutil.OptionFields(t, err, refusal.Name)); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	r := newRule(t, refusal.Options{})
	if diff := cmp.Diff(refusal.Options{Threshold: 3}, r.Options()); diff != "" || r.Name() != "refusal" || r.Priority() != 350 {
		t.Errorf("Options %v, Name %q, Priority %d", r.Options(), r.Name(), r.Priority())
	}
	const k = `"0123456789abcdef0123456789abcdef"`
	a := &rule.Facts{Refused: []rule.Call{{Tool: "search", Key: canonical.HashString("a")}}}
	for _, s := range []string{``, `{}`, `{"keys":[],"counts":[]}`, `{"keys":[` + k + `],"counts":[]}`,
		`{"keys":[` + k + `],"counts":[0]}`, `{"keys":[` + k + `,` + k + `],"counts":[1,1]}`,
		`{"keys":[` + k + `],"counts":[1073741825]}`} {
		d := newState(t, refusal.Options{})
		d.Observe(a)
		d.Observe(a)
		if err := d.Restore([]byte(s)); err == nil {
			t.Errorf("Restore(%s) succeeded", s)
		}
		if d.Observe(a); !d.Verdict().Stop {
			t.Errorf("after Restore(%s) failed, the state was lost", s)
		}
	}
	for _, s := range []string{`{"keys":[` + k + `],"counts":[1],"tools":[],"toolCounts":[]}`,
		`{"keys":[` + k + `],"counts":[1],"toolCounts":[1]}`, `{"keys":[` + k + `],"counts":[1],"tools":[` + k + `]}`,
		`{"keys":[` + k + `],"counts":[1],"tools":[` + k + `,` + k + `],"toolCounts":[1,1]}`,
		`{"keys":[` + k + `],"counts":[1],"tools":[` + k + `],"toolCounts":[0]}`} {
		if err := newState(t, refusal.Options{}).Restore([]byte(s)); err == nil {
			t.Errorf("Restore(%s) succeeded", s)
		}
	}
	// A state of the first version, without tools, restores.
	d := newState(t, refusal.Options{})
	for _, good := range []string{`{"keys":[` + k + `],"counts":[2]}`, `{"keys":[` + k + `],"counts":[2],"tools":[` + k + `],"toolCounts":[2]}`} {
		if err := d.Restore([]byte(good)); err != nil {
			t.Fatal(err)
		}
		if got, _ := d.Snapshot(guard.SnapshotOptions{}); string(got) != good {
			t.Errorf("snapshot after restore = %s", got)
		}
	}
	// A tool counts at most one refusal per step: the state above needs
	// two steps.
	if err := d.CheckBounds(rule.Counters{Steps: 1}); err == nil {
		t.Error("a tool refused in 2 steps of 1 passed the bounds")
	}
	if err := d.CheckBounds(rule.Counters{Steps: 2}); err != nil {
		t.Errorf("bounds of 2 steps: %v", err)
	}
}

func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.ToolCall{search("a"), search("b"), search("c"), fetch("a")}
	rapid.Check(t, func(t *rapid.T) {
		opts := refusal.Options{Threshold: rapid.IntRange(2, 4).Draw(t, "threshold"), Warn: rapid.Bool().Draw(t, "warn")}
		ss := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) guard.Step {
			return guard.Step{Refused: rapid.SliceOfN(rapid.SampledFrom(pool), 0, 2).Draw(t, "refused"),
				ToolCalls: rapid.SliceOfN(rapid.SampledFrom([]guard.ToolCall{search("d"), fetch("d")}), 0, 1).Draw(t, "ran")}
		}), 1, 20).Draw(t, "steps")
		cut := rapid.IntRange(0, len(ss)).Draw(t, "cut")
		r := newRule(t, opts)
		orig := newGuard(t, r)
		run(t, orig, ss[:cut]...)
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restored, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{r}})
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		if diff := cmp.Diff(run(t, orig, ss[cut:]...), run(t, restored, ss[cut:]...)); diff != "" {
			t.Fatalf("after restore (-orig +restored):\n%s", diff)
		}
	})
}

// TestGuardsOfOneRuleAreIndependent runs two guards made from one rule: the
// first stops at its k-th refusal of a call, the second has counted none of
// them and stops at exactly its own k-th, and the first's count went on.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	s := func(i int) guard.ToolCall { return search(fmt.Sprint(i)) }
	tests := []struct {
		name  string
		opts  refusal.Options
		steps func(i int) guard.Step // the i-th step, from 1
		k     int
		scope string
	}{
		{"a call, threshold 2", refusal.Options{Threshold: 2}, func(int) guard.Step { return refused(search("a")) }, 2, ""},
		{"a call, the default", refusal.Options{}, func(int) guard.Step { return refused(search("a")) }, 3, ""},
		{"a call, threshold 5", refusal.Options{Threshold: 5, Warn: true}, func(int) guard.Step { return refused(search("a")) }, 5, ""},
		{"a tool", refusal.Options{Threshold: 4}, func(i int) guard.Step { return refused(s(i)) }, 4, refusal.ScopeTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRule(t, tt.opts)
			g1, g2 := testutil.New(t, r), testutil.New(t, r)
			var want []string
			for i := 1; i <= tt.k; i++ {
				want = append(want, "")
			}
			want[tt.k-1] = strings.TrimSpace(fmt.Sprintf("%s %d %s", refusal.Code, tt.k, tt.scope))
			for n, g := range []*guard.Guard{g1, g2} {
				var steps []guard.Step
				for i := 1; i <= tt.k; i++ {
					steps = append(steps, tt.steps(i))
				}
				if diff := cmp.Diff(want, run(t, g, steps...)); diff != "" {
					t.Errorf("guard %d: stops (-want +got):\n%s", n+1, diff)
				}
			}
			next := strings.TrimSpace(fmt.Sprintf("%s %d %s", refusal.Code, tt.k+1, tt.scope))
			if diff := cmp.Diff([]string{next}, run(t, g1, tt.steps(tt.k+1))); diff != "" {
				t.Errorf("guard 1 after guard 2's run (-want +got):\n%s", diff)
			}
		})
	}
}
