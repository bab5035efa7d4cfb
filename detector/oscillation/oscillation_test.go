package oscillation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

func call(tool, args string) guard.ToolCall {
	return guard.ToolCall{Name: tool, Args: json.RawMessage(args)}
}

func withResult(c guard.ToolCall, result string) guard.ToolCall {
	c.Result = json.RawMessage(result)
	return c
}

func step(calls ...guard.ToolCall) guard.Step { return guard.Step{ToolCalls: calls} }

// steps returns one step per call.
func steps(calls ...guard.ToolCall) []guard.Step {
	out := make([]guard.Step, len(calls))
	for i, c := range calls {
		out[i] = step(c)
	}
	return out
}

var (
	a     = call("search", `{"q":"a"}`)
	b     = call("read", `{"path":"/x"}`)
	c     = call("search", `{"q":"c"}`)
	think = call("think", `{}`)
)

const (
	sa = `search({"q":"a"})`
	sb = `read({"path":"/x"})`
	sc = `search({"q":"c"})`
)

func ev(period, repeats, threshold int, cycle ...string) oscillation.Evidence {
	e := oscillation.Evidence{Period: period, Repeats: repeats, Threshold: threshold, Cycle: cycle}
	for _, s := range cycle {
		e.Tools = append(e.Tools, s[:strings.IndexByte(s, '(')])
	}
	return e
}

func stop(e oscillation.Evidence, phase guard.Phase) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: oscillation.ReasonOscillation, Code: oscillation.Code, Evidence: e}
	v.Feedback = e.Feedback(phase)
	v.Detector = oscillation.Name
	return v
}

var ignoreDetail = cmpopts.IgnoreFields(guard.Verdict{}, "Detail")

type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newRule(t tb, o oscillation.Options) *oscillation.Rule {
	return ruletest.Rule(t, oscillation.New, o)
}

// newState returns a fresh state of the rule with these options.
func newState(t tb, o oscillation.Options) ruletest.State { return ruletest.NewState(t, newRule(t, o)) }

// newGuard returns a guard with options g and the rule with options o.
func newGuard(t tb, o oscillation.Options, g guard.Config) *guard.Guard {
	return ruletest.New(t, g, newRule(t, o))
}

// summary is testutil.Summary for a tb (rapid's T too).
func summary(t tb, g *guard.Guard) guard.Summary {
	t.Helper()
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	return s
}

// snap is g.Snapshot with a background context.
func snap(g *guard.Guard, o guard.SnapshotOptions) ([]byte, error) {
	return g.Snapshot(context.Background(), o)
}

// stateOf returns the state of the oscillation rule in g's snapshot.
func stateOf(t *testing.T, g *guard.Guard, o guard.SnapshotOptions) []byte {
	t.Helper()
	return []byte(ruletest.StateOf(t, g, oscillation.Name, o))
}

func run(t tb, g *guard.Guard, steps []guard.Step) []guard.Verdict {
	t.Helper()
	out := make([]guard.Verdict, len(steps))
	for i, s := range steps {
		out[i] = ruletest.Check(t, g, s)
	}
	return out
}

func goOn(n int) []guard.Verdict { return make([]guard.Verdict, n) }

func cat(vs ...[]guard.Verdict) []guard.Verdict {
	var out []guard.Verdict
	for _, v := range vs {
		out = append(out, v...)
	}
	return out
}

func one(v guard.Verdict) []guard.Verdict { return []guard.Verdict{v} }

func TestCheck(t *testing.T) {
	check := guard.PhaseCheck
	tests := []struct {
		name  string
		opts  oscillation.Options
		gopts guard.Config
		steps []guard.Step
		want  []guard.Verdict
	}{
		{
			name:  "two and a half cycles go on",
			steps: steps(a, b, a, b, a),
			want:  goOn(5),
		},
		{
			name:  "three cycles of two stop",
			steps: steps(a, b, a, b, a, b),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "a cycle that goes on stops again with more cycles",
			steps: steps(a, b, a, b, a, b, a, b),
			want: cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check)),
				one(stop(ev(2, 3, 3, sb, sa), check)), one(stop(ev(2, 4, 3, sa, sb), check))),
		},
		{
			name:  "one distinct call is no oscillation",
			steps: steps(a, a, a, a, a, a, a),
			want:  goOn(7),
		},
		{
			name:  "three cycles of three stop",
			steps: steps(a, b, c, a, b, c, a, b, c),
			want:  cat(goOn(8), one(stop(ev(3, 3, 3, sa, sb, sc), check))),
		},
		{
			name:  "a cycle may repeat a call",
			steps: steps(a, a, b, a, a, b, a, a, b),
			want:  cat(goOn(8), one(stop(ev(3, 3, 3, sa, sa, sb), check))),
		},
		{
			name:  "periods above MaxPeriod are not looked for",
			opts:  oscillation.Options{MaxPeriod: 2},
			steps: steps(a, b, c, a, b, c, a, b, c),
			want:  goOn(9),
		},
		{
			name:  "MaxPeriod 4",
			opts:  oscillation.Options{MaxPeriod: 4, Repeats: 2},
			steps: steps(a, b, c, think, a, b, c, think),
			want:  cat(goOn(7), one(stop(ev(4, 2, 2, sa, sb, sc, `think({})`), check))),
		},
		{
			name:  "Repeats 2: one and a half cycles go on, two stop",
			opts:  oscillation.Options{Repeats: 2},
			steps: steps(a, b, a, b),
			want:  cat(goOn(3), one(stop(ev(2, 2, 2, sa, sb), check))),
		},
		{
			name:  "Repeats 4: three and a half cycles go on, four stop",
			opts:  oscillation.Options{Repeats: 4},
			steps: steps(a, b, a, b, a, b, a, b),
			want:  cat(goOn(7), one(stop(ev(2, 4, 4, sa, sb), check))),
		},
		{
			name:  "the smallest period is reported",
			opts:  oscillation.Options{MaxPeriod: 4, Repeats: 2},
			steps: []guard.Step{step(a, b, a, b, a, b, a, b)},
			want:  one(stop(ev(2, 4, 2, sa, sb), check)),
		},
		{
			name:  "parallel calls count one by one",
			steps: []guard.Step{step(a, b), step(a, b, a), step(b)},
			want:  cat(goOn(2), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "the tail is judged at the end of the step",
			steps: []guard.Step{step(a, b, a, b), step(a, b, c), step(a, b)},
			want:  goOn(3),
		},
		{
			name:  "a break ends the cycle",
			steps: steps(a, b, a, b, c, a, b, a, b),
			want:  goOn(9),
		},
		{
			name:  "results are not considered",
			steps: steps(withResult(a, `1`), withResult(b, `2`), withResult(a, `3`), withResult(b, `4`), withResult(a, `5`), withResult(b, `6`)),
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check))),
		},
		{
			name:  "steps without calls neither break a cycle nor fire again",
			steps: []guard.Step{step(a), step(b), {}, step(a), step(b), {Text: "x"}, step(a), step(b), {}},
			want:  cat(goOn(7), one(stop(ev(2, 3, 3, sa, sb), check)), goOn(1)),
		},
		{
			name:  "ignored calls neither break a cycle nor fire again",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step(a, think), step(b), step(think, a, think), step(b), step(a), step(think, b), step(think)},
			want:  cat(goOn(5), one(stop(ev(2, 3, 3, sa, sb), check)), goOn(1)),
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

func TestDetail(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	v := run(t, g, steps(a, b, a, b, a, b))[5]
	want := `a cycle of 2 calls repeated 3 times in a row (threshold 3): search({"q":"a"}) -> read({"path":"/x"})`
	if v.Detail != want {
		t.Errorf("detail = %q, want %q", v.Detail, want)
	}
	if v.Feedback == "" {
		t.Error("no feedback")
	}
}

func TestPreflight(t *testing.T) {
	pre := guard.PhasePreflight
	tests := []struct {
		name  string
		opts  oscillation.Options
		gopts guard.Config
		steps []guard.Step
		calls []guard.ToolCall
		want  guard.Verdict
	}{
		{name: "nothing recorded", calls: []guard.ToolCall{a, b}},
		{name: "no calls", steps: steps(a, b, a, b, a)},
		{
			name:  "the call that completes the cycle is refused",
			steps: steps(a, b, a, b, a),
			calls: []guard.ToolCall{b},
			want:  stop(ev(2, 3, 3, sa, sb), pre),
		},
		{
			name:  "another call is allowed",
			steps: steps(a, b, a, b, a),
			calls: []guard.ToolCall{c},
		},
		{
			name:  "parallel calls are judged at the end",
			steps: steps(a, b, a, b, a),
			calls: []guard.ToolCall{b, c},
		},
		{
			name:  "parallel calls that complete a cycle",
			steps: steps(a, b, a),
			calls: []guard.ToolCall{b, a, b},
			want:  stop(ev(2, 3, 3, sa, sb), pre),
		},
		{
			name:  "a cycle entirely in the proposal",
			calls: []guard.ToolCall{c, a, b, a, b, a, b},
			want:  stop(ev(2, 3, 3, sa, sb), pre),
		},
		{
			name:  "a cycle that goes on is refused with its count",
			steps: steps(a, b, a, b, a, b, a),
			calls: []guard.ToolCall{b},
			want:  stop(ev(2, 4, 3, sa, sb), pre),
		},
		{
			name:  "a longer period, reaching back past the proposal",
			opts:  oscillation.Options{MaxPeriod: 3, Repeats: 2},
			steps: steps(a, b, c, a),
			calls: []guard.ToolCall{b, c},
			want:  stop(ev(3, 2, 2, sa, sb, sc), pre),
		},
		{
			name:  "ignored calls are skipped",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: []guard.Step{step(a, think), step(b), step(a, b), step(a)},
			calls: []guard.ToolCall{think, b, think},
			want:  stop(ev(2, 3, 3, sa, sb), pre),
		},
		{
			name:  "only ignored calls",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: steps(a, b, a, b, a, b),
			calls: []guard.ToolCall{think},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, tt.gopts)
			run(t, g, tt.steps)
			before, _ := snap(g, guard.SnapshotOptions{})
			got := ruletest.Preflight(t, g, tt.calls...)
			if diff := cmp.Diff(tt.want, got.Verdict(), ignoreDetail); diff != "" {
				t.Errorf("preflight (-want +got):\n%s", diff)
			}
			after, _ := snap(g, guard.SnapshotOptions{})
			if diff := cmp.Diff(string(before), string(after)); diff != "" {
				t.Errorf("preflight changed the state (-before +after):\n%s", diff)
			}
		})
	}
}

// pool is the calls the property tests draw from: few keys, so that cycles
// happen, and one tool that the guard ignores.
var pool = []guard.ToolCall{a, b, c, withResult(a, `1`), withResult(a, `2`), withResult(b, `1`), withResult(c, `1`), think, call(strings.Repeat("é", 200), `[1]`)}

// model is a plain implementation of the rule over the whole sequence.
type model struct {
	maxPeriod, repeats int
	sameResults        int      // SameResults, Repeats when off
	longPeriod         int      // LongPeriod in effect: MaxPeriod when off
	identical          bool     // RequireIdenticalResults
	keys               []string // tool + canonical args, as the test knows them
	sigs               []string // what cycles compare: keys, or keys and results
	outs               []string // keys and results, "" for a call without one
	calls              []guard.ToolCall
	fresh              int // calls since the last step with input
}

func outOf(c guard.ToolCall) string {
	if c.Result == nil {
		return ""
	}
	return keyOf(c) + "\x00" + string(c.Result.(json.RawMessage))
}

// sameRun returns the number of consecutive calls at the end of outs whose
// outcome is that of the call p places back, both with a result.
func sameRun(outs []string, p int) int {
	run := 0
	for i := len(outs) - 1; i-p >= 0 && outs[i] != "" && outs[i] == outs[i-p]; i-- {
		run++
	}
	return run
}

// oneTool reports whether the last p calls are of one tool.
func oneTool(calls []guard.ToolCall, p int) bool {
	n := len(calls)
	for j := 2; j <= p; j++ {
		if calls[n-j].Name != calls[n-1].Name {
			return false
		}
	}
	return true
}

func keyOf(c guard.ToolCall) string { return c.Name + "\x00" + string(c.Args.(json.RawMessage)) }

func (m *model) sigOf(c guard.ToolCall) string {
	if !m.identical || c.Result == nil {
		return keyOf(c)
	}
	return keyOf(c) + "\x00" + string(c.Result.(json.RawMessage))
}

// judge returns the evidence of a stop after the given calls (of a step
// with input, or not), or nil. In preflight (no results known), only Repeats
// counts.
func (m *model) judge(calls []guard.ToolCall, input, preflight bool) *oscillation.Evidence {
	keys := append([]string(nil), m.keys...)
	sigs := append([]string(nil), m.sigs...)
	outs := append([]string(nil), m.outs...)
	all := append([]guard.ToolCall(nil), m.calls...)
	fresh := m.fresh
	if input {
		fresh = 0
	}
	step := 0 // the step's calls: rounds of repeated results reach back before them
	for _, c := range calls {
		if c.Name == "think" {
			continue
		}
		keys, sigs, outs, all = append(keys, keyOf(c)), append(sigs, m.sigOf(c)), append(outs, outOf(c)), append(all, c)
		fresh++
		step++
	}
	if step == 0 {
		return nil
	}
	n := len(keys)
	for p := 2; p <= m.maxPeriod; p++ {
		run := 0
		for i := n - 1; i-p >= 0 && sigs[i] == sigs[i-p]; i-- {
			run++
		}
		cycles := (run + p) / p
		threshold, same := m.repeats, false
		if cycles < m.repeats && !preflight && m.sameResults < m.repeats && n >= p && oneTool(all, p) && fresh >= m.sameResults*p {
			if run = sameRun(outs, p); run+p > step {
				cycles, threshold, same = (run+p)/p, m.sameResults, true
			}
		}
		if cycles < threshold {
			continue
		}
		distinct := false
		for j := 2; j <= p; j++ {
			distinct = distinct || keys[n-j] != keys[n-1]
		}
		if !distinct {
			continue
		}
		return evidence(all, &oscillation.Evidence{Period: p, Repeats: cycles, Threshold: threshold, SameResults: same})
	}
	// Cycles beyond MaxPeriod count only with results, after a step.
	for p := m.maxPeriod + 1; p <= m.longPeriod && p <= n && !preflight; p++ {
		run := sameRun(outs, p)
		if cycles := (run + p) / p; cycles >= m.sameResults && fresh >= m.sameResults*p && run+p > step && distinctKeys(keys, p) && !shortPeriodKeys(keys, p, m.maxPeriod) {
			return evidence(all, &oscillation.Evidence{Period: p, Repeats: cycles, Threshold: m.sameResults, Long: true})
		}
	}
	return nil
}

// shortPeriodKeys reports whether the last p keys repeat with a period of
// 2 to maxPeriod (below p): a short cycle, not a long one.
func shortPeriodKeys(keys []string, p, maxPeriod int) bool {
	n := len(keys)
	for q := 2; q <= maxPeriod && q < p; q++ {
		periodic := true
		for j := n - p + q; j < n; j++ {
			periodic = periodic && keys[j] == keys[j-q]
		}
		if periodic {
			return true
		}
	}
	return false
}

// distinctKeys reports whether the last p keys hold two distinct ones.
func distinctKeys(keys []string, p int) bool {
	n := len(keys)
	for j := 2; j <= p; j++ {
		if keys[n-j] != keys[n-1] {
			return true
		}
	}
	return false
}

// evidence fills in the cycle of e, the last e.Period calls of all.
func evidence(all []guard.ToolCall, e *oscillation.Evidence) *oscillation.Evidence {
	for _, c := range all[len(all)-e.Period:] {
		args, _ := json.Marshal(c.Args) // the pool's arguments are canonical already
		e.Cycle = append(e.Cycle, c.Name+"("+string(args)+")")
		e.Tools = append(e.Tools, c.Name)
	}
	return e
}

// warning returns the value and limit of the warning due after the calls so
// far, or nil: one more call that follows a cycle would stop the run.
func (m *model) warning() []float64 {
	n := len(m.sigs)
	for p := 2; p <= m.maxPeriod; p++ {
		run := 0
		for i := n - 1; i-p >= 0 && m.sigs[i] == m.sigs[i-p]; i-- {
			run++
		}
		short := (run+1+p)/p >= m.repeats && (run+p)/p < m.repeats
		if !short && m.sameResults < m.repeats && n >= p && oneTool(m.calls, p) && m.fresh+1 >= m.sameResults*p && m.outs[n-p] != "" {
			// (The counter may be there already: new input came
			// within the rounds, and the calls since then are one
			// short.)
			run = sameRun(m.outs, p)
			short = (run+1+p)/p >= m.sameResults
		}
		if !short {
			continue // completing the next call would not reach a threshold
		}
		for j := 2; j <= p; j++ {
			if m.keys[n-j] != m.keys[n-1] {
				return []float64{float64(run + p), float64(run + p + 1)}
			}
		}
	}
	for p := m.maxPeriod + 1; p <= m.longPeriod && p <= n; p++ {
		run := sameRun(m.outs, p)
		short := (run+1+p)/p >= m.sameResults
		if short && m.outs[n-p] != "" && m.fresh+1 >= m.sameResults*p && distinctKeys(m.keys, p) && !shortPeriodKeys(m.keys, p, m.maxPeriod) {
			return []float64{float64(run + p), float64(run + p + 1)}
		}
	}
	return nil
}

func (m *model) add(calls []guard.ToolCall, input bool) {
	if input {
		m.fresh = 0
	}
	for _, c := range calls {
		if c.Name != "think" {
			m.keys, m.sigs, m.outs, m.calls = append(m.keys, keyOf(c)), append(m.sigs, m.sigOf(c)), append(m.outs, outOf(c)), append(m.calls, c)
			m.fresh++
		}
	}
}

// TestAgainstModel runs random sequences through the detector (with a
// snapshot, a redacted one, and a restore at random points) and through the
// plain model, and compares every verdict and every preflight.
func TestAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := oscillation.Options{MaxPeriod: rapid.IntRange(2, 5).Draw(t, "maxPeriod"), Repeats: rapid.IntRange(2, 6).Draw(t, "repeats"),
			RequireIdenticalResults: rapid.Bool().Draw(t, "identical"), Warn: rapid.Bool().Draw(t, "warn")}
		opts.SameResults = rapid.IntRange(2, opts.Repeats).Draw(t, "sameResults")
		// 0 is the default (16), 2 looks for no long cycle.
		opts.LongPeriod = rapid.SampledFrom([]int{0, 2, 4, 6, 8}).Draw(t, "longPeriod")
		if opts.SameResults == opts.Repeats {
			opts.LongPeriod = 0 // none is looked for: results stop nothing sooner
		}
		gopts := guard.Config{Ignore: []string{"think"}}
		g := newGuard(t, opts, gopts)
		long := opts.LongPeriod
		switch {
		case opts.SameResults == opts.Repeats:
			long = opts.MaxPeriod
		case long == 0:
			long = oscillation.DefaultLongPeriod
		}
		m := &model{maxPeriod: opts.MaxPeriod, repeats: opts.Repeats, sameResults: opts.SameResults, longPeriod: max(long, opts.MaxPeriod), identical: opts.RequireIdenticalResults}
		redacted := false // whether previews before a restore read [redacted]
		// Most steps make the calls of the step k steps back, so that
		// the run goes round longer circles too.
		var drawn [][]guard.ToolCall
		back := rapid.IntRange(2, 8).Draw(t, "back")
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			calls := rapid.SliceOfN(rapid.SampledFrom(pool), 0, 4).Draw(t, fmt.Sprintf("calls%d", i))
			if len(drawn) >= back && rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("again%d", i)) > 0 {
				calls = drawn[len(drawn)-back]
			}
			if rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("twice%d", i)) == 0 {
				calls = append(slices.Clone(calls), calls...) // a reply that asks for its calls twice
			}
			drawn = append(drawn, calls)
			input := rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("input%d", i)) == 0
			if rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("restore%d", i)) == 0 {
				redact := rapid.Bool().Draw(t, fmt.Sprintf("redact%d", i))
				data, err := snap(g, guard.SnapshotOptions{Previews: !redact})
				if err != nil {
					t.Fatal(err)
				}
				cfg := gopts
				cfg.Rules = []rule.Rule{newRule(t, opts)}
				if g, err = guard.Restore(data, cfg); err != nil {
					t.Fatalf("restore: %v\n%s", err, data)
				}
				redacted = redacted || redact
			}
			checkEvidence := func(what string, stop bool, got any) {
				want := m.judge(calls, input, what == "preflight")
				if what == "preflight" && opts.RequireIdenticalResults {
					if stop {
						t.Fatalf("step %d: preflight refused, but results cannot be judged before a call runs", i)
					}
					return
				}
				if (want != nil) != stop {
					t.Fatalf("step %d %s: stop = %v, model says %v", i, what, stop, want != nil)
				}
				if want == nil {
					return
				}
				w, e := *want, got.(oscillation.Evidence)
				w.Tools, w.Cycle = append([]string(nil), w.Tools...), append([]string(nil), w.Cycle...)
				for j := range w.Tools {
					// The detector keeps (and reports) tool names cut
					// to 256 bytes, and a redacted snapshot hides the
					// previews of the calls before it.
					if j < len(e.Tools) && len(w.Tools[j]) > 256 && e.Tools[j] == w.Tools[j][:256] {
						w.Cycle[j] = strings.Replace(w.Cycle[j], w.Tools[j], e.Tools[j], 1)
						w.Tools[j] = e.Tools[j]
					}
					// Without previews, a name that is not an
					// identifier is saved as its hash.
					if cut := w.Tools[j][:min(len(w.Tools[j]), 256)]; redacted && j < len(e.Tools) && !rule.PlainName(cut) && e.Tools[j] == rule.HashName(cut) {
						w.Cycle[j] = strings.Replace(w.Cycle[j], w.Tools[j], e.Tools[j], 1)
						w.Tools[j] = e.Tools[j]
					}
					if redacted && j < len(e.Cycle) && e.Cycle[j] == w.Tools[j]+"([redacted])" {
						w.Cycle[j] = e.Cycle[j]
					}
				}
				if diff := cmp.Diff(w, e); diff != "" {
					t.Fatalf("step %d %s evidence (-model +got):\n%s", i, what, diff)
				}
			}
			d := ruletest.Preflight(t, g, calls...)
			checkEvidence("preflight", !d.Allow, d.Evidence)
			st := step(calls...)
			if input {
				st.Input = "a new message"
			}
			v := ruletest.Check(t, g, st)
			checkEvidence("check", v.Stop, v.Evidence)
			m.add(calls, input)
			var wantWarn []float64
			if opts.Warn && !v.Stop && slices.ContainsFunc(calls, func(c guard.ToolCall) bool { return c.Name != "think" }) {
				wantWarn = m.warning()
			}
			var gotWarn []float64
			for _, w := range v.Warnings {
				gotWarn = append(gotWarn, w.Value, w.Limit)
			}
			if diff := cmp.Diff(wantWarn, gotWarn); diff != "" {
				t.Fatalf("step %d warning (-model +got):\n%s", i, diff)
			}
		}
	})
}

func TestRedact(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, steps(a, b, a, b, a))
	data, err := snap(g, guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `\"q\"`) || strings.Contains(string(data), "/x") {
		t.Errorf("redacted snapshot holds a preview: %s", data)
	}
	g, err = guard.Restore(data, guard.Config{Rules: []rule.Rule{newRule(t, oscillation.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	want := stop(ev(2, 3, 3, `search([redacted])`, sb), guard.PhasePreflight)
	if diff := cmp.Diff(want, ruletest.Preflight(t, g, b).Verdict(), ignoreDetail); diff != "" {
		t.Errorf("preflight after a redacted restore (-want +got):\n%s", diff)
	}
	want = stop(ev(2, 3, 3, `search([redacted])`, sb), guard.PhaseCheck)
	if diff := cmp.Diff(want, ruletest.Check(t, g, step(b)), ignoreDetail); diff != "" {
		t.Errorf("check after a redacted restore (-want +got):\n%s", diff)
	}
	want = stop(ev(2, 3, 3, sb, sa), guard.PhaseCheck)
	if diff := cmp.Diff(want, ruletest.Check(t, g, step(a)), ignoreDetail); diff != "" {
		t.Errorf("next check (-want +got):\n%s", diff)
	}
}

func TestSnapshotState(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	if s := stateOf(t, g, guard.SnapshotOptions{}); string(s) != "null" {
		t.Errorf("fresh state = %s; want null", s)
	}
	long := call(strings.Repeat("x", 300), `{}`)
	run(t, g, steps(long, a, b, a))
	s := stateOf(t, g, guard.SnapshotOptions{Previews: true})
	var got struct {
		Calls []struct{ Key, Tool, Preview string }
		Runs  []int
	}
	if err := json.Unmarshal(s, &got); err != nil {
		t.Fatal(err)
	}
	// Only the second a has a preview: the first had no twin when it came.
	// The tail holds up to 16 calls (the longest cycle looked for).
	type short struct{ Tool, Preview string }
	var calls []short
	for _, c := range got.Calls {
		calls = append(calls, short{c.Tool, c.Preview})
	}
	want := []short{{strings.Repeat("x", 256), ""}, {"search", ""}, {"read", ""}, {"search", `{"q":"a"}`}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls held (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 0}, got.Runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}

	// A long tool name is cut in the snapshot.
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	run(t, g, steps(long, long))
	s = stateOf(t, g, guard.SnapshotOptions{Previews: true})
	if strings.Contains(string(s), strings.Repeat("x", 257)) || !strings.Contains(string(s), strings.Repeat("x", 256)) {
		t.Errorf("snapshot does not cut the tool name to 256 bytes: %s", s)
	}
	// Without previews, the name (no identifier) is hashed, as cut.
	s = stateOf(t, g, guard.SnapshotOptions{})
	if strings.Contains(string(s), "xxx") || !strings.Contains(string(s), rule.HashName(strings.Repeat("x", 256))) {
		t.Errorf("snapshot without previews holds the tool name: %s", s)
	}
}

// keyed returns the facts of step i with one call of key k.
func keyed(i int, k string) *rule.Facts {
	sum := canonical.HashString(k)
	return &rule.Facts{Index: i, Steps: i + 1, Calls: []rule.Call{{Tool: "search", Key: sum, Outcome: sum}}}
}

func TestRestoreRejects(t *testing.T) {
	key := func(s string) string { return fmt.Sprintf("%032x", s) }
	callJSON := func(k, tool, preview string) string {
		b, _ := json.Marshal(struct {
			Key     string `json:"key"`
			Tool    string `json:"tool"`
			Preview string `json:"preview,omitempty"`
		}{key(k), tool, preview})
		return string(b)
	}
	ca, cb := callJSON("a", "search", ""), callJSON("b", "read", "")
	bad := []string{
		``, `[]`, `{`, `"x"`,
		`{"calls":[],"runs":[0,0]}`,
		`{"calls":[` + ca + `],"runs":[0]}`,
		`{"calls":[` + ca + `],"runs":[0,0,0]}`,
		`{"calls":[` + ca + `,` + cb + `,` + ca + `,` + cb + `],"runs":[0,0]}`,
		`{"calls":[` + ca + `],"runs":[-1,0]}`,
		`{"calls":[` + ca + `],"runs":[1,0]}`,                           // no call two places back
		`{"calls":[` + ca + `,` + cb + `,` + ca + `],"runs":[0,0]}`,     // a matches two places back
		`{"calls":[` + ca + `,` + cb + `,` + cb + `],"runs":[1,0]}`,     // b does not
		`{"calls":[` + ca + `,` + cb + `],"runs":[1,0]}`,                // nothing two places back
		`{"calls":[` + ca + `,` + cb + `,` + ca + `],"runs":[1e300,0]}`, // not an int
		`{"calls":[{"key":"zz","tool":"x"}],"runs":[0,0]}`,
		`{"calls":[` + callJSON("a", strings.Repeat("x", 257), "") + `],"runs":[0,0]}`,
		`{"calls":[` + callJSON("a", "x", strings.Repeat("y", 81)) + `],"runs":[0,0]}`,
		`{"calls":[{"key":"` + key("a") + `","tool":"\xff"}],"runs":[0,0]}`,
	}
	for _, s := range bad {
		d := newState(t, oscillation.Options{})
		for i, k := range "ababa" {
			d.Observe(keyed(i, string(k)))
		}
		if err := d.Restore([]byte(s)); err == nil {
			t.Errorf("Restore(%s) succeeded", s)
		}
		if d.Observe(keyed(5, "b")); !d.Verdict().Stop {
			t.Errorf("after Restore(%s) failed, the state was lost", s)
		}
	}
	good := []string{
		`{"calls":[` + ca + `,` + cb + `,` + ca + `],"runs":[1,0]}`,
		// A full tail may stand for a longer sequence.
		`{"calls":[` + ca + `,` + cb + `,` + ca + `],"runs":[7,0]}`,
		`{"calls":[` + callJSON("a", "search", rule.Redacted) + `],"runs":[0,0]}`,
	}
	for _, s := range good {
		d := newState(t, reference)
		if err := d.Restore([]byte(s)); err != nil {
			t.Errorf("Restore(%s): %v", s, err)
		}
		if got, _ := d.Snapshot(rule.SnapshotOptions{}); string(got) != s {
			t.Errorf("snapshot after restore = %s, want %s", got, s)
		}
		// Such states, written before the rule compared results, restore
		// under the defaults too: no same results counted, no call since
		// the last input.
		d = newState(t, oscillation.Options{})
		if err := d.Restore([]byte(s)); err != nil {
			t.Errorf("Restore(%s) under the defaults: %v", s, err)
		}
		want := strings.TrimSuffix(s, "}") + `,"same":[0,0],"fresh":0}`
		if got, _ := d.Snapshot(rule.SnapshotOptions{}); string(got) != want {
			t.Errorf("snapshot after restore under the defaults = %s, want %s", got, want)
		}
	}
}

func TestRestoreNullAndResetAreFresh(t *testing.T) {
	seq := steps(a, b, a, b, a, b, c, a, c, a, c, a)
	fresh := run(t, newGuard(t, oscillation.Options{}, guard.Config{}), seq)

	g := newGuard(t, oscillation.Options{}, guard.Config{})
	run(t, g, seq)
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh, run(t, g, seq)); diff != "" {
		t.Errorf("after Reset (-fresh +got):\n%s", diff)
	}

	// A state restored from null is fresh, facts by facts.
	const keys = "ababab"
	d, want := newState(t, oscillation.Options{}), newState(t, oscillation.Options{})
	for i, k := range keys {
		d.Observe(keyed(i, string(k)))
	}
	if err := d.Restore([]byte("null")); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		d.Observe(keyed(i, string(k)))
		want.Observe(keyed(i, string(k)))
		if diff := cmp.Diff(want.Verdict(), d.Verdict()); diff != "" {
			t.Errorf("step %d after Restore(null) (-fresh +got):\n%s", i, diff)
		}
	}
	if !d.Verdict().Stop {
		t.Error("the steps after Restore(null) never stop: the test proves little")
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		opts   oscillation.Options
		fields []string
	}{
		{oscillation.Options{MaxPeriod: 1}, []string{"MaxPeriod"}},
		{oscillation.Options{MaxPeriod: -2}, []string{"MaxPeriod"}},
		{oscillation.Options{MaxPeriod: oscillation.MaxMaxPeriod + 1}, []string{"MaxPeriod"}},
		{oscillation.Options{Repeats: 1}, []string{"Repeats"}},
		{oscillation.Options{MaxPeriod: 1, Repeats: -1}, []string{"MaxPeriod", "Repeats"}},
	} {
		d, err := oscillation.New(tt.opts)
		if d != nil || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, %v; want an invalid option", tt.opts, d, err)
			continue
		}
		fields := testutil.OptionFields(t, err, oscillation.Name)
		if diff := cmp.Diff(tt.fields, fields); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	for _, o := range []oscillation.Options{{MaxPeriod: 2, Repeats: 2}, {MaxPeriod: oscillation.MaxMaxPeriod}} {
		if _, err := oscillation.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	fp := func(o oscillation.Options) string {
		d, err := oscillation.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return rule.Fingerprint(d).String()
	}
	if fp(oscillation.Options{}) != fp(oscillation.Options{MaxPeriod: 3, Repeats: 3}) {
		t.Error("the zero options and the explicit defaults fingerprint differently")
	}
	if fp(oscillation.Options{MaxPeriod: 4}) == fp(oscillation.Options{Repeats: 4}) {
		t.Error("different options fingerprint alike")
	}
	d, _ := oscillation.New(oscillation.Options{})
	if diff := cmp.Diff(oscillation.Options{MaxPeriod: 3, Repeats: 3, SameResults: 2}, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if d.Name() != "oscillation" || d.Priority() != rule.PriorityOscillation {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
}

func ExampleNew() {
	d, err := oscillation.New(oscillation.Options{}) // cycles of 2 or 3 calls, 3 times
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background() // a guard in memory never returns an error
	search := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q": "flights"}`)}
	open := guard.ToolCall{Name: "open", Args: json.RawMessage(`{"url": "https://example.com"}`)}
	for i := 0; i < 3; i++ {
		g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{search}})
		v, _ := g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{open}})
		if v.Stop {
			ev := v.Evidence.(oscillation.Evidence)
			fmt.Println(v.Code, ev.Period, ev.Repeats, ev.Cycle)
		}
	}
	// Output:
	// OSCILLATION 2 3 [search({"q":"flights"}) open({"url":"https://example.com"})]
}

// A tool name that is not UTF-8 is kept as a snapshot writes it, so that
// Snapshot, Restore, Snapshot gives the same bytes (found by FuzzCheck).
func TestToolNameNotUTF8RoundTrips(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	ruletest.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "bad\xff\xfe", Args: json.RawMessage(`{}`)}}})
	first := stateOf(t, g, guard.SnapshotOptions{})
	r := newState(t, oscillation.Options{})
	if err := r.Restore(first); err != nil {
		t.Fatal(err)
	}
	second, _ := r.Snapshot(rule.SnapshotOptions{})
	if string(first) != string(second) {
		t.Errorf("snapshot changed across a restore:\n%s\n%s", first, second)
	}
}

// TestSummaryRounds follows the summary through a ping-pong: it counts the
// calls that follow the cycle at the tail, and reaches Repeats rounds at the
// step that stops.
func TestSummaryRounds(t *testing.T) {
	g := newGuard(t, oscillation.Options{}, guard.Config{})
	type row struct {
		summary oscillation.Summary
		stop    bool
	}
	var got []row
	for _, c := range []guard.ToolCall{a, b, a, b, a, b, a, c} {
		v := ruletest.Check(t, g, step(c))
		got = append(got, row{summary(t, g).Detectors[oscillation.Name].(oscillation.Summary), v.Stop})
	}
	want := []row{
		{oscillation.Summary{}, false},
		{oscillation.Summary{}, false},
		{oscillation.Summary{Period: 2, Calls: 3}, false},
		{oscillation.Summary{Period: 2, Calls: 4}, false},
		{oscillation.Summary{Period: 2, Calls: 5}, false},
		{oscillation.Summary{Period: 2, Calls: 6}, true}, // 3 rounds
		{oscillation.Summary{Period: 2, Calls: 7}, true},
		{oscillation.Summary{}, false},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestSummaryAgreesWithStops checks on random runs that the summary's rounds
// reach Repeats exactly when a step that adds calls stops the run: the
// summary is what the rule judges.
func TestSummaryAgreesWithStops(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := oscillation.Options{MaxPeriod: rapid.IntRange(2, 5).Draw(t, "maxPeriod"), Repeats: rapid.IntRange(2, 4).Draw(t, "repeats")}
		g := newGuard(t, opts, guard.Config{Ignore: []string{"think"}})
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			calls := rapid.SliceOfN(rapid.SampledFrom([]guard.ToolCall{a, b, c, think}), 0, 3).Draw(t, fmt.Sprintf("calls%d", i))
			v := ruletest.Check(t, g, step(calls...))
			s := summary(t, g).Detectors[oscillation.Name].(oscillation.Summary)
			added := slices.ContainsFunc(calls, func(c guard.ToolCall) bool { return c.Name != "think" })
			reached := s.Period > 0 && s.Calls >= opts.Repeats*s.Period
			if added && reached != v.Stop {
				t.Fatalf("step %d: stop %v, summary %+v (repeats %d)", i, v.Stop, s, opts.Repeats)
			}
		}
	})
}

// TestGuardsOfOneRuleAreIndependent runs two guards made from one rule: the
// first stops at its k-th identical step (each goes once round a cycle), the
// second has seen none of its calls and stops at exactly its own k-th, and
// the first's cycle went on.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	for _, tt := range []struct {
		opts  oscillation.Options
		calls []guard.ToolCall // one step
		k     int
	}{
		{oscillation.Options{}, []guard.ToolCall{a, b}, 3},
		{oscillation.Options{Repeats: 2, Warn: true}, []guard.ToolCall{a, b}, 2},
		{oscillation.Options{Repeats: 4}, []guard.ToolCall{a, b, c}, 4},
	} {
		r := newRule(t, tt.opts)
		g1, g2 := testutil.New(t, r), testutil.New(t, r)
		ss := make([]guard.Step, tt.k)
		for i := range ss {
			ss[i] = step(tt.calls...)
		}
		for n, g := range []*guard.Guard{g1, g2} {
			vs := run(t, g, ss)
			for i, v := range vs[:tt.k-1] {
				if v.Stop {
					t.Errorf("%+v, guard %d: step %d of %d stops: %v", tt.opts, n+1, i+1, tt.k, v)
				}
			}
			if e, ok := vs[tt.k-1].Evidence.(oscillation.Evidence); !ok || e.Period != len(tt.calls) || e.Repeats != e.Threshold {
				t.Errorf("%+v, guard %d: step %d = %v, want a stop at the threshold", tt.opts, n+1, tt.k, vs[tt.k-1])
			}
		}
		v := ruletest.Check(t, g1, step(tt.calls...))
		if e, ok := v.Evidence.(oscillation.Evidence); !ok || e.Repeats != e.Threshold+1 {
			t.Errorf("%+v: guard 1 after guard 2's run: %v, want a stop one round past the threshold", tt.opts, v)
		}
	}
}
