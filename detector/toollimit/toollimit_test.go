package toollimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// with returns the configuration of the tests' guards with only r.
func with(r rule.Rule) guard.Config {
	return guard.Config{Ignore: []string{"think"}, Rules: []rule.Rule{r}}
}

// newState returns a fresh state of d, with all its optional interfaces.
func newState(t testing.TB, d *toollimit.Rule) interface {
	rule.Saver
	rule.Summarizer
} {
	t.Helper()
	st, ok := d.NewState().(interface {
		rule.Saver
		rule.Summarizer
	})
	if !ok {
		t.Fatal("a state is not a Saver and a Summarizer")
	}
	return st
}

func newDetector(t testing.TB, caps map[string]int) *toollimit.Rule {
	t.Helper()
	d, err := toollimit.New(toollimit.Options{MaxCalls: caps})
	if err != nil {
		t.Fatalf("New(%v): %v", caps, err)
	}
	return d
}

func newGuard(t testing.TB, caps map[string]int) *guard.Guard {
	t.Helper()
	g, err := guard.New(with(newDetector(t, caps)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func tc(name string, args ...any) guard.ToolCall {
	var a any
	if len(args) > 0 {
		a = args[0]
	}
	return guard.ToolCall{Name: name, Args: a, Result: "ok"}
}

func step(names ...string) guard.Step {
	s := guard.Step{}
	for i, n := range names {
		s.ToolCalls = append(s.ToolCalls, tc(n, map[string]any{"i": i}))
	}
	return s
}

func stop(tool string, calls, limit int, phase guard.Phase) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: toollimit.ReasonToolLimit, Code: toollimit.Code,
		Evidence: toollimit.Evidence{Tool: tool, Calls: calls, Limit: limit}, Detector: toollimit.Name}
	if phase == guard.PhasePreflight {
		v.Detail = fmt.Sprintf("call %d of %q would go over its cap of %d", calls, tool, limit)
	} else {
		v.Detail = fmt.Sprintf("call %d of %q went over its cap of %d", calls, tool, limit)
	}
	v.Feedback = v.Evidence.(toollimit.Evidence).Feedback(phase)
	return v
}

func refuse(tool string, calls, limit int) guard.Decision {
	v := stop(tool, calls, limit, guard.PhasePreflight)
	return guard.Decision{Reason: v.Reason, Code: v.Code, Detail: v.Detail, Evidence: v.Evidence,
		Feedback: v.Feedback, Detector: v.Detector}
}

// at returns d with the index of the refused call among those judged.
func at(d guard.Decision, index int) guard.Decision {
	d.CallIndex = index
	return d
}

var goOn = guard.Verdict{}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		caps  map[string]int
		steps []guard.Step
		want  []guard.Verdict // one per step
	}{
		{
			name:  "no caps",
			steps: []guard.Step{step("a", "a", "a"), step("a")},
			want:  []guard.Verdict{goOn, goOn},
		},
		{
			name:  "cap 3 allows three calls, the fourth stops",
			caps:  map[string]int{"search": 3},
			steps: []guard.Step{step("search"), step("search"), step("search"), step("search")},
			want:  []guard.Verdict{goOn, goOn, goOn, stop("search", 4, 3, guard.PhaseCheck)},
		},
		{
			name:  "cap 1",
			caps:  map[string]int{"search": 1},
			steps: []guard.Step{step("search"), step("search")},
			want:  []guard.Verdict{goOn, stop("search", 2, 1, guard.PhaseCheck)},
		},
		{
			name:  "cap 0 forbids the tool",
			caps:  map[string]int{"rm": 0},
			steps: []guard.Step{step("ls"), step("rm")},
			want:  []guard.Verdict{goOn, stop("rm", 1, 0, guard.PhaseCheck)},
		},
		{
			name:  "every call counts, whatever the arguments or results",
			caps:  map[string]int{"search": 2},
			steps: []guard.Step{{ToolCalls: []guard.ToolCall{tc("search", 1)}}, {ToolCalls: []guard.ToolCall{{Name: "search", Err: errors.New("boom")}}}, {ToolCalls: []guard.ToolCall{tc("search", 1)}}},
			want:  []guard.Verdict{goOn, goOn, stop("search", 3, 2, guard.PhaseCheck)},
		},
		{
			name:  "parallel calls: the first over the cap is reported",
			caps:  map[string]int{"a": 1, "b": 1},
			steps: []guard.Step{step("b", "a", "a", "b", "a")},
			want:  []guard.Verdict{stop("a", 2, 1, guard.PhaseCheck)},
		},
		{
			name:  "parallel calls within the cap",
			caps:  map[string]int{"a": 3},
			steps: []guard.Step{step("a", "a", "a"), step("b")},
			want:  []guard.Verdict{goOn, goOn},
		},
		{
			name: "keeps stopping on later steps that call the tool, and only those",
			caps: map[string]int{"a": 1, "b": 5},
			steps: []guard.Step{step("a"), step("a"), step("b"), {Text: "thinking"}, step("b", "a"),
				step("a", "a")},
			want: []guard.Verdict{goOn, stop("a", 2, 1, guard.PhaseCheck), goOn, goOn, stop("a", 3, 1, guard.PhaseCheck),
				stop("a", 4, 1, guard.PhaseCheck)},
		},
		{
			name:  "names are case-sensitive",
			caps:  map[string]int{"Search": 0},
			steps: []guard.Step{step("search", "SEARCH")},
			want:  []guard.Verdict{goOn},
		},
		{
			name:  "ignored tools are never counted",
			caps:  map[string]int{"think": 0, "a": 1},
			steps: []guard.Step{step("think", "think", "a"), step("think")},
			want:  []guard.Verdict{goOn, goOn},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.caps)
			for i, s := range tt.steps {
				got := ruletest.Check(t, g, s)
				if diff := cmp.Diff(tt.want[i], got); diff != "" {
					t.Errorf("step %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestPreflight(t *testing.T) {
	allow := guard.Decision{Allow: true}
	tests := []struct {
		name     string
		caps     map[string]int
		recorded []guard.Step
		calls    []guard.ToolCall
		want     guard.Decision
	}{
		{name: "no caps", calls: []guard.ToolCall{tc("a")}, want: allow},
		{name: "no calls", caps: map[string]int{"a": 0}, want: allow},
		{name: "forbidden tool", caps: map[string]int{"rm": 0}, calls: []guard.ToolCall{tc("ls"), tc("rm")}, want: at(refuse("rm", 1, 0), 1)},
		{name: "the last allowed call", caps: map[string]int{"a": 3}, recorded: []guard.Step{step("a", "a")},
			calls: []guard.ToolCall{tc("a")}, want: allow},
		{name: "the call after the Nth", caps: map[string]int{"a": 3}, recorded: []guard.Step{step("a", "a"), step("a")},
			calls: []guard.ToolCall{tc("a")}, want: refuse("a", 4, 3)},
		{name: "parallel calls counted in order", caps: map[string]int{"a": 3, "b": 1}, recorded: []guard.Step{step("a")},
			calls: []guard.ToolCall{tc("a"), tc("b"), tc("a"), tc("b"), tc("a")}, want: at(refuse("b", 2, 1), 3)},
		{name: "parallel calls within the cap", caps: map[string]int{"a": 3}, recorded: []guard.Step{step("a")},
			calls: []guard.ToolCall{tc("a"), tc("a")}, want: allow},
		{name: "parallel calls one over", caps: map[string]int{"a": 3}, recorded: []guard.Step{step("a")},
			calls: []guard.ToolCall{tc("a"), tc("a"), tc("a")}, want: at(refuse("a", 4, 3), 2)},
		{name: "ignored tool", caps: map[string]int{"think": 0}, calls: []guard.ToolCall{tc("think")}, want: allow},
		{name: "a tool already over its cap", caps: map[string]int{"a": 0}, recorded: []guard.Step{step("a")},
			calls: []guard.ToolCall{tc("b"), tc("a")}, want: at(refuse("a", 2, 0), 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.caps)
			for _, s := range tt.recorded {
				ruletest.Check(t, g, s)
			}
			before := testutil.Snapshot(t, g, guard.SnapshotOptions{})
			for range 2 { // asking twice gives the same answer
				got := ruletest.Preflight(t, g, tt.calls...)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Preflight (-want +got):\n%s", diff)
				}
			}
			after := testutil.Snapshot(t, g, guard.SnapshotOptions{})
			if string(before) != string(after) {
				t.Errorf("Preflight changed the state:\n%s\n%s", before, after)
			}
			// The refused calls, once run, give the same evidence.
			if !tt.want.Allow {
				got := ruletest.Check(t, g, guard.Step{ToolCalls: tt.calls})
				if diff := cmp.Diff(tt.want.Evidence, got.Evidence); diff != "" {
					t.Errorf("Check of the refused calls: evidence (-preflight +check):\n%s", diff)
				}
			}
		})
	}
}

func TestSummary(t *testing.T) {
	g := newGuard(t, map[string]int{"a": 2, "b": 0})
	ruletest.Check(t, g, step("a", "c", "a", "a"))
	want := map[string]toollimit.Count{"a": {Calls: 3, Limit: 2}, "b": {Calls: 0, Limit: 0}}
	if diff := cmp.Diff(want, testutil.Summary(t, g).Detectors[toollimit.Name]); diff != "" {
		t.Errorf("Summary (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(testutil.Summary(t, g).Detectors[toollimit.Name])
	if got, want := string(b), `{"a":{"calls":3,"limit":2},"b":{"calls":0,"limit":0}}`; got != want {
		t.Errorf("Summary JSON = %s, want %s", got, want)
	}
	if got := newState(t, newDetector(t, nil)).Summary(); got != nil {
		t.Errorf("Summary without caps = %v, want nil", got)
	}
}

func TestNew(t *testing.T) {
	long := strings.Repeat("x", toollimit.MaxToolNameLen)
	if _, err := toollimit.New(toollimit.Options{MaxCalls: map[string]int{long: 1, "": 0}}); err != nil {
		t.Errorf("New with a %d-byte name and an empty one: %v", len(long), err)
	}
	_, err := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"a": -1, "b": 2, long + "y": 1, "c\xff": 1}})
	if !errors.Is(err, guard.ErrInvalidOption) {
		t.Fatalf("New with bad caps = %v, want ErrInvalidOption", err)
	}
	fields := testutil.OptionFields(t, err, toollimit.Name)
	want := []string{`MaxCalls["a"]`, `MaxCalls["c\xff"]`, `MaxCalls["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."]`}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s", diff)
	}
}

func TestOptions(t *testing.T) {
	caps := map[string]int{"a": 1, "b": 0}
	d := newDetector(t, caps)
	caps["a"] = 7 // New copied the map
	if diff := cmp.Diff(toollimit.Options{MaxCalls: map[string]int{"a": 1, "b": 0}}, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	d.Options().(toollimit.Options).MaxCalls["a"] = 9 // Options returns a copy
	b, _ := json.Marshal(d.Options())
	if got, want := string(b), `{"maxCalls":{"a":1,"b":0}}`; got != want {
		t.Errorf("Options JSON = %s, want %s", got, want)
	}
	fp := func(m map[string]int) string { return rule.Fingerprint(newDetector(t, m)).String() }
	if fp(nil) != fp(map[string]int{}) {
		t.Error("nil and empty caps have different fingerprints")
	}
	if fp(map[string]int{"a": 1, "b": 2}) != fp(map[string]int{"b": 2, "a": 1}) {
		t.Error("the same caps have different fingerprints")
	}
	seen := map[string]bool{}
	for _, m := range []map[string]int{nil, {"a": 0}, {"a": 1}, {"b": 1}, {"a": 1, "b": 1}} {
		f := fp(m)
		if seen[f] {
			t.Errorf("caps %v share a fingerprint with others", m)
		}
		seen[f] = true
	}
}

func TestSnapshotRestore(t *testing.T) {
	caps := map[string]int{"a": 2, "b": 3, "rm": 0, `q"<>`: 1}
	steps := []guard.Step{step("a", "c"), step(`q"<>`, "b"), {Text: "x"}, step("a", "b"), step("a"), step("b", "b", "rm"), step("b"), step("a", "c")}
	for cut := 0; cut <= len(steps); cut++ {
		g := newGuard(t, caps)
		for _, s := range steps[:cut] {
			ruletest.Check(t, g, s)
		}
		data := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: cut%2 != 0})
		g2, err := guard.Restore(data, with(newDetector(t, caps)))
		if err != nil {
			t.Fatalf("cut %d: Restore: %v", cut, err)
		}
		for i, s := range steps[cut:] {
			want, got := ruletest.Check(t, g, s), ruletest.Check(t, g2, s)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cut %d, step %d (-saved +restored):\n%s", cut, cut+i, diff)
			}
		}
		if diff := cmp.Diff(testutil.Summary(t, g).Detectors, testutil.Summary(t, g2).Detectors); diff != "" {
			t.Errorf("cut %d: summaries (-saved +restored):\n%s", cut, diff)
		}
	}
}

func TestSnapshotBytes(t *testing.T) {
	d := newDetector(t, map[string]int{"b": 1, "a": 5, "z": 0, `q"`: 1})
	if b, _ := newState(t, d).Snapshot(guard.SnapshotOptions{}); string(b) != "null" {
		t.Errorf("fresh Snapshot = %s, want null", b)
	}
	g := testutil.New(t, d)
	ruletest.Check(t, g, step("b", "a", `q"`, "a", "c"))
	b := ruletest.StateOf(t, g, toollimit.Name, guard.SnapshotOptions{Previews: true})
	if got, want := b, `{"a":2,"b":1,"q\"":1}`; got != want {
		t.Errorf("Snapshot = %s, want %s", got, want)
	}
	// Without previews, a name that is no identifier is hashed, and
	// restores to the same count.
	b = ruletest.StateOf(t, g, toollimit.Name, guard.SnapshotOptions{})
	if got, want := b, `{"a":2,"b":1,"`+rule.HashName(`q"`)+`":1}`; got != want {
		t.Errorf("Snapshot without previews = %s, want %s", got, want)
	}
	r := newState(t, newDetector(t, map[string]int{"b": 1, "a": 5, "z": 0, `q"`: 1}))
	if err := r.Restore([]byte(b)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testutil.Summary(t, g).Detectors[toollimit.Name], r.Summary()); diff != "" {
		t.Errorf("restored without previews (-want +got):\n%s", diff)
	}
	// A capped name that looks like a hash is hashed even with previews,
	// so that it is never taken for another name's hash.
	lookalike := rule.HashName(`q"`)
	l := newDetector(t, map[string]int{lookalike: 3, `q"`: 3})
	gl := testutil.New(t, l)
	ruletest.Check(t, gl, step(lookalike, lookalike, `q"`))
	b = ruletest.StateOf(t, gl, toollimit.Name, guard.SnapshotOptions{Previews: true})
	r = newState(t, newDetector(t, map[string]int{lookalike: 3, `q"`: 3}))
	if err := r.Restore([]byte(b)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testutil.Summary(t, gl).Detectors[toollimit.Name], r.Summary()); diff != "" {
		t.Errorf("restored %s (-want +got):\n%s", b, diff)
	}
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := ruletest.StateOf(t, g, toollimit.Name, guard.SnapshotOptions{}); b != "null" {
		t.Errorf("Snapshot after Reset = %s, want null", b)
	}
}

func TestRestoreRejects(t *testing.T) {
	d := newState(t, newDetector(t, map[string]int{"a": 2, "b": 0}))
	for _, bad := range []string{
		`[]`, `1`, `"a"`, `{`, `{"a":1`, `{"a":1}x`, `{"a":1}{}`, `{"c":1}`, `{"a":-1}`, `{"a":1.5}`, `{"a":1e2}`,
		`{"a":"1"}`, `{"a":null}`, `{"a":{}}`, `{"a":[1]}`, `{"a":1,"a":1}`, `{"a":99999999999999999999999}`,
		`{"b":true}`, `{1:2}`,
		// Snapshot writes neither an empty object nor a count of 0.
		` {} `, `{"a":0,"b":1}`,
	} {
		if err := d.Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%s): no error", bad)
		}
	}
	// A failed restore leaves the state as it was.
	if err := d.Restore([]byte(`{"a":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.Restore([]byte(`{"a":1,"c":1}`)); err == nil {
		t.Fatal("no error")
	}
	want := map[string]toollimit.Count{"a": {Calls: 2, Limit: 2}, "b": {Calls: 0, Limit: 0}}
	if diff := cmp.Diff(want, d.Summary()); diff != "" {
		t.Errorf("Summary after a failed Restore (-want +got):\n%s", diff)
	}
	// Counts over the cap are a state a run can reach.
	for _, ok := range []string{`null`, ``, `{"b":7}`, `{"a":1,"b":1}`} {
		if err := d.Restore([]byte(ok)); err != nil {
			t.Errorf("Restore(%s): %v", ok, err)
		}
	}
	// Through the guard, a bad state is ErrInvalidState.
	g := testutil.New(t, newDetector(t, map[string]int{"a": 2}))
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	data = []byte(strings.Replace(string(data), `"state":null`, `"state":{"a":-3}`, 1))
	if _, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newDetector(t, map[string]int{"a": 2})}}); !errors.Is(err, guard.ErrInvalidState) {
		t.Errorf("guard.Restore with a negative count = %v, want ErrInvalidState", err)
	}
	// Under other caps, the guard refuses the snapshot.
	if _, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newDetector(t, map[string]int{"a": 3})}}); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("guard.Restore under other caps = %v, want ErrOptionsChanged", err)
	}
}

func TestResetEqualsFresh(t *testing.T) {
	caps := map[string]int{"a": 1}
	g := newGuard(t, caps)
	ruletest.Check(t, g, step("a", "a"))
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := newGuard(t, caps)
	for i, s := range []guard.Step{step("a"), step("a"), step("b")} {
		if diff := cmp.Diff(ruletest.Check(t, fresh, s), ruletest.Check(t, g, s)); diff != "" {
			t.Errorf("step %d after Reset (-fresh +reset):\n%s", i, diff)
		}
	}
}

// TestGuardsOfOneRuleAreIndependent runs two guards of one Rule, steps
// interleaved: each counts its own calls, so each stops at its own third
// call of a tool capped at 2, and not before.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	cfg := with(newDetector(t, map[string]int{"a": 2}))
	g1, g2 := ruletest.Pair(t, cfg)
	var got1, got2 []bool
	for range 2 {
		got1 = append(got1, ruletest.Check(t, g1, step("a")).Stop)
		got2 = append(got2, ruletest.Check(t, g2, step("a")).Stop)
	}
	if d := ruletest.Preflight(t, g2, tc("a")); d.Allow {
		t.Error("the second guard's preflight of a third call allowed it")
	}
	got1 = append(got1, ruletest.Check(t, g1, step("a")).Stop)
	got2 = append(got2, ruletest.Check(t, g2, step("b")).Stop)
	if diff := cmp.Diff([]bool{false, false, true}, got1); diff != "" {
		t.Errorf("first guard's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, false}, got2); diff != "" {
		t.Errorf("second guard's stops (-want +got):\n%s", diff)
	}
}

func facts(names ...string) *rule.Facts {
	f := &rule.Facts{}
	for _, n := range names {
		f.Calls = append(f.Calls, rule.Call{Tool: n})
	}
	return f
}

func TestSteadyStateAllocs(t *testing.T) {
	d := newDetector(t, map[string]int{"search": 1 << 40, "read": 3}).NewState()
	f := facts("search", "write", "search")
	if n := testing.AllocsPerRun(100, func() { d.Observe(f); _ = d.Verdict() }); n != 0 {
		t.Errorf("Observe+Verdict: %v allocations, want 0", n)
	}
	_ = d.Preflight(f) // grow the scratch once
	if n := testing.AllocsPerRun(100, func() { _ = d.Preflight(f) }); n != 0 {
		t.Errorf("Preflight: %v allocations, want 0", n)
	}
}

func BenchmarkObserveVerdict(b *testing.B) {
	d := newDetector(b, map[string]int{"search": 1 << 40, "read": 3, "rm": 0}).NewState()
	f := facts("search", "write", "search")
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		if d.Verdict().Stop {
			b.Fatal("stop")
		}
	}
}

func BenchmarkObserveVerdictNoCaps(b *testing.B) {
	d := newDetector(b, nil).NewState()
	f := facts("search", "write", "search")
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		_ = d.Verdict()
	}
}

func BenchmarkPreflight(b *testing.B) {
	d := newDetector(b, map[string]int{"search": 1 << 40, "read": 3, "rm": 0}).NewState()
	f := facts("search", "write", "search")
	b.ReportAllocs()
	for b.Loop() {
		if d.Preflight(f).Stop {
			b.Fatal("stop")
		}
	}
}
