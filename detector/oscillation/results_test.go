package oscillation_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// identical are the options that compare results.
var identical = oscillation.Options{RequireIdenticalResults: true}

// reference is the reference's reading: no sooner stop for a ping-pong
// whose results repeat.
var reference = oscillation.Options{SameResults: 3}

func TestIdenticalResults(t *testing.T) {
	check := guard.PhaseCheck
	a1, a2 := withResult(a, `"page 1"`), withResult(a, `"page 2"`)
	b1, b2 := withResult(b, `"v1"`), withResult(b, `"v2"`)
	tests := []struct {
		name  string
		opts  oscillation.Options
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "a cycle whose results repeat stops like any cycle",
			opts:  identical,
			steps: steps(a1, b1, a1, b1, a1, b1),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "a cycle whose results change goes on",
			opts:  identical,
			steps: steps(a1, b1, a2, b1, a1, b2, a2, b2),
			want:  goOn(8),
		},
		{
			name:  "the count starts when the results start repeating",
			opts:  identical,
			steps: steps(a1, b1, a2, b2, a2, b2, a2, b2),
			want:  cat(goOn(7), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "without the option, changing results are the same cycle",
			steps: steps(a1, b1, a2, b1, a1, b2),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "calls without results compare by their arguments",
			opts:  identical,
			steps: steps(a, b, a, b, a, b),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "one call with alternating results is no cycle",
			opts:  identical,
			steps: steps(a1, a2, a1, a2, a1, a2),
			want:  goOn(6),
		},
		{
			name:  "errors are outcomes",
			opts:  identical,
			steps: steps(a1, failedCall(b, "503"), a1, failedCall(b, "503"), a1, failedCall(b, "504")),
			want:  goOn(6),
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

func failedCall(c guard.ToolCall, msg string) guard.ToolCall {
	c.Err = fmt.Errorf("%s", msg)
	return c
}

// TestIdenticalResultsPreflight: results are unknown before a call runs, so
// the option never refuses, even the call that Check then stops on.
func TestIdenticalResultsPreflight(t *testing.T) {
	a1, b1 := withResult(a, `1`), withResult(b, `1`)
	g := newGuard(t, identical, guard.Config{})
	run(t, g, steps(a1, b1, a1, b1, a1))
	if d := ruletest.Preflight(t, g, b); !d.Allow {
		t.Errorf("preflight refused: %v", d.Verdict())
	}
	if v := ruletest.Check(t, g, step(b1)); !v.Stop {
		t.Errorf("check went on: %v", v)
	}
}

func TestIdenticalResultsSnapshot(t *testing.T) {
	a1, b1 := withResult(a, `1`), withResult(b, `1`)
	r := newRule(t, identical)
	g := testutil.New(t, r)
	run(t, g, steps(a1, b, a1))
	snapshot := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	data := stateOf(t, g, guard.SnapshotOptions{})
	var s struct {
		Calls []struct {
			Key     string
			Outcome *string
		}
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Calls) != 3 || s.Calls[0].Outcome == nil || s.Calls[1].Outcome != nil || *s.Calls[0].Outcome == s.Calls[0].Key {
		t.Fatalf("state %s: want an outcome for the calls with a result only", data)
	}
	// The outcomes are what the cycle compares: restored, a1 b1 goes on
	// (b had no result before), a1 b then a1 stops.
	g2, err := guard.Restore(snapshot, guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		t.Fatal(err)
	}
	got := []bool{}
	for _, v := range run(t, g2, steps(b1, a1, b1, a1, b1, a1)) {
		got = append(got, v.Stop)
	}
	if diff := cmp.Diff([]bool{false, false, false, false, true, true}, got); diff != "" {
		t.Errorf("stops after restore (-want +got):\n%s", diff)
	}
	// Options that do not compare outcomes refuse such a state.
	plain := newState(t, reference)
	if err := plain.Restore(data); err == nil {
		t.Error("a state with outcomes restored under options that do not compare them")
	}
	// An outcome equal to its key is no outcome, and counters must agree
	// with the outcomes, not the keys.
	k := s.Calls[0].Key
	for _, bad := range []string{
		`{"calls":[{"key":"` + k + `","outcome":"` + k + `","tool":"search"}],"runs":[0,0]}`,
		`{"calls":[{"key":"` + k + `","outcome":"` + strings.Repeat("1", 32) + `","tool":"search"},{"key":"` + strings.Repeat("2", 32) + `","tool":"read"},{"key":"` + k + `","tool":"search"}],"runs":[1,0]}`,
		`{"calls":[{"key":"` + k + `","outcome":"nope","tool":"search"}],"runs":[0,0]}`,
	} {
		d3 := newState(t, identical)
		if err := d3.Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%s) succeeded", bad)
		}
	}
}

func warning(calls int, cycle string) guard.Verdict {
	w := guard.Warning{Code: oscillation.WarningCode, Metric: "cycleCalls", Value: float64(calls), Limit: float64(calls + 1),
		Ratio: float64(calls) / float64(calls+1), Detail: cycle}
	w.Feedback = oscillation.WarningFeedback(w)
	w.Detector = oscillation.Name
	return guard.Verdict{Warnings: []guard.Warning{w}}
}

func TestWarn(t *testing.T) {
	check := guard.PhaseCheck
	warn := oscillation.Options{Warn: true}
	tests := []struct {
		name  string
		opts  oscillation.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "a b a b a warns, a b a b a b stops",
			opts:  warn,
			steps: steps(a, b, a, b, a, b),
			want: cat(goOn(4), one(warning(5, `a cycle of 2 calls (read -> search) is one call short of repeating 3 times in a row`)),
				one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "no warning without Warn",
			steps: steps(a, b, a, b, a),
			want:  goOn(5),
		},
		{
			name:  "a step that leaves the cycle has no warning",
			opts:  warn,
			steps: steps(a, b, a, b, a, c),
			want:  cat(goOn(4), one(warning(5, `a cycle of 2 calls (read -> search) is one call short of repeating 3 times in a row`)), goOn(1)),
		},
		{
			name:  "a step without calls changes nothing, and warns nothing",
			opts:  warn,
			steps: []guard.Step{step(a), step(b), step(a), step(b), step(a), {Text: "hm"}},
			want:  cat(goOn(4), one(warning(5, `a cycle of 2 calls (read -> search) is one call short of repeating 3 times in a row`)), goOn(1)),
		},
		{
			name:  "period 3 with 2 repeats",
			opts:  oscillation.Options{Repeats: 2, Warn: true},
			steps: steps(a, b, c, a, b, c),
			want: cat(goOn(4), one(warning(5, `a cycle of 3 calls (search -> search -> read) is one call short of repeating 2 times in a row`)),
				one(stop(ev(3, 2, 2, sa, sb, sc), check))),
		},
		{
			name:  "one distinct call never warns",
			opts:  warn,
			steps: steps(a, a, a, a, a, a),
			want:  goOn(6),
		},
		{
			name:  "with identical results, a change of result takes the warning back",
			opts:  oscillation.Options{RequireIdenticalResults: true, Warn: true},
			steps: steps(withResult(a, `1`), b, withResult(a, `1`), b, withResult(a, `2`)),
			want:  goOn(5),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, tt.gopts)
			if diff := cmp.Diff(tt.want, run(t, g, tt.steps), ignoreDetail); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWarnChangesNoStop runs random runs with and without warnings and
// checks that the stops are the same.
func TestWarnChangesNoStop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := oscillation.Options{MaxPeriod: rapid.IntRange(2, 4).Draw(t, "maxPeriod"), Repeats: rapid.IntRange(2, 3).Draw(t, "repeats"),
			RequireIdenticalResults: rapid.Bool().Draw(t, "identical")}
		plain := newGuard(t, opts, guard.Config{Ignore: []string{"think"}})
		opts.Warn = true
		warned := newGuard(t, opts, guard.Config{Ignore: []string{"think"}})
		for i, calls := range rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3), 1, 30).Draw(t, "steps") {
			p, w := ruletest.Check(t, plain, step(calls...)), ruletest.Check(t, warned, step(calls...))
			w.Warnings = nil
			if diff := cmp.Diff(p, w); diff != "" {
				t.Fatalf("step %d: warnings changed the verdict (-without +with):\n%s", i, diff)
			}
		}
	})
}

func TestOptionsBeyond(t *testing.T) {
	fp := func(o oscillation.Options) string {
		d, err := oscillation.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return rule.Fingerprint(d).String()
	}
	base := fp(oscillation.Options{})
	if fp(identical) == base || fp(oscillation.Options{Warn: true}) == base || fp(identical) == fp(oscillation.Options{Warn: true}) {
		t.Error("the new options do not change the fingerprint")
	}
	// The reference's reading (SameResults at Repeats, and so no long
	// cycle) reads as the defaults did before the rule compared results,
	// so that snapshots taken then restore under it; the defaults now read
	// otherwise.
	d, _ := oscillation.New(reference)
	if b, _ := json.Marshal(d.Options()); string(b) != `{"maxPeriod":3,"repeats":3}` {
		t.Errorf("the reference's options read %s: old snapshots would no longer restore", b)
	}
	// LongPeriod at its default reads 0, so that the defaults fingerprint
	// as before the rule looked for long cycles; every value that looks
	// for none reads alike.
	if fp(oscillation.Options{}) != fp(oscillation.Options{LongPeriod: oscillation.DefaultLongPeriod}) {
		t.Error("LongPeriod at its default fingerprints otherwise than when left out")
	}
	if fp(oscillation.Options{LongPeriod: 2}) != fp(oscillation.Options{LongPeriod: 3}) || fp(oscillation.Options{LongPeriod: 3}) == base || fp(oscillation.Options{LongPeriod: 8}) == base {
		t.Error("LongPeriod off fingerprints otherwise than at MaxPeriod, or a LongPeriod other than the default as the default")
	}
	for _, tc := range []struct {
		o     oscillation.Options
		prior string
	}{
		{oscillation.Options{}, `{"maxPeriod":3,"repeats":3}`},
		{oscillation.Options{LongPeriod: 3}, `{"maxPeriod":3,"repeats":3,"sameResults":2}`},
		{oscillation.Options{LongPeriod: 8}, `{"maxPeriod":3,"repeats":3,"sameResults":2}`},
		{oscillation.Options{MaxPeriod: 20}, `{"maxPeriod":20,"repeats":3}`}, // no long cycle, as at LongPeriod 0
	} {
		d, _ := oscillation.New(tc.o)
		if b, _ := json.Marshal(d.PriorOptions()); string(b) != tc.prior {
			t.Errorf("%+v: prior options %s, want %s", tc.o, b, tc.prior)
		}
	}
	for _, o := range []oscillation.Options{{SameResults: 2}, {}} {
		if fp(o) == fp(reference) {
			t.Errorf("%+v fingerprints as the reference's reading", o)
		}
	}
	if fp(oscillation.Options{}) != fp(oscillation.Options{SameResults: 2}) || fp(oscillation.Options{Repeats: 2}) != fp(oscillation.Options{Repeats: 2, SameResults: 2}) {
		t.Error("SameResults at its default, or at Repeats, fingerprints otherwise than when left out")
	}
}

// TestLongToolNames checks that a cycle of a tool whose name is longer than
// a snapshot keeps is reported alike before and after a restore: cut.
func TestLongToolNames(t *testing.T) {
	long := call(strings.Repeat("t", 300), `{}`)
	g := newGuard(t, oscillation.Options{Warn: true}, guard.Config{})
	run(t, g, steps(long, b, long, b))
	data, err := snap(g, guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restored, err := guard.Restore(data, guard.Config{Rules: []rule.Rule{newRule(t, oscillation.Options{Warn: true})}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps(long, b) {
		want, got := ruletest.Check(t, g, s), ruletest.Check(t, restored, s)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("restored guard (-original +restored):\n%s", diff)
		}
		if want.Stop {
			if tool := want.Evidence.(oscillation.Evidence).Tools[0]; len(tool) != oscillation.MaxToolNameLen {
				t.Errorf("evidence names a tool of %d bytes, want %d", len(tool), oscillation.MaxToolNameLen)
			}
		}
	}
}
