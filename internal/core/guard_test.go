package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/repeat"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// probe is a rule for tests: its states record the facts they see and stop
// when told to. A probe serves one guard at a time: last is the state it
// made last, for the test to read.
type probe struct {
	name     string
	prio     int
	opts     any
	stopWhen func(f *guard.Facts) bool
	warn     bool
	refuse   bool
	last     *probeState
}

// probeState is a probe's state of one run.
type probeState struct {
	p       *probe
	seen    []seenFacts
	verdict guard.Verdict
	count   int
}

var (
	_ guard.Rule = (*probe)(nil)
	_ rule.Saver = (*probeState)(nil)
	_ rule.State = (*probeState)(nil)
)

// st returns the probe's last state.
func (p *probe) st() *probeState { return p.last }

// seenFacts is what a probe copies out of the facts it is given.
type seenFacts struct {
	Phase       guard.Phase
	Index       int
	Steps       int
	Tools       []string
	Keys        []canonical.Sum
	Outcomes    []canonical.Sum
	Failed      []bool
	Ignored     []bool
	Previews    []string
	TextHash    canonical.Sum
	HasText     bool
	Text        string
	Finish      string
	RawFinish   string
	NewInput    bool
	Usage       guard.Usage
	Totals      guard.Totals
	StepPresent bool
}

func copyFacts(f *guard.Facts) seenFacts {
	s := seenFacts{Phase: f.Phase, Index: f.Index, Steps: f.Steps, TextHash: f.TextHash, HasText: f.HasText,
		Text: f.Text(), Finish: f.FinishReason, RawFinish: f.RawFinishReason, NewInput: f.NewInput,
		Usage: f.Usage, Totals: f.Totals, StepPresent: f.Step() != nil}
	for i := range f.Calls {
		c := &f.Calls[i]
		s.Tools = append(s.Tools, c.Tool)
		s.Keys = append(s.Keys, c.Key)
		s.Outcomes = append(s.Outcomes, c.Outcome)
		s.Failed = append(s.Failed, c.Failed)
		s.Ignored = append(s.Ignored, c.Ignored)
		s.Previews = append(s.Previews, c.Preview())
	}
	return s
}

func (p *probe) Name() string  { return p.name }
func (p *probe) Priority() int { return p.prio }
func (p *probe) Options() any  { return p.opts }
func (p *probe) NewState() guard.State {
	p.last = &probeState{p: p}
	return p.last
}
func (s *probeState) Observe(f *guard.Facts) {
	p := s
	p.seen = append(p.seen, copyFacts(f))
	p.count++
	p.verdict = guard.Verdict{}
	if p.p.stopWhen != nil && p.p.stopWhen(f) {
		p.verdict = guard.Verdict{Stop: true, Detail: p.p.name + " stops", Evidence: map[string]any{"count": p.count}}
	}
	if p.p.warn {
		p.verdict.Warnings = []guard.Warning{{Code: "PROBE_WARNING", Detail: p.p.name}}
	}
}
func (s *probeState) Verdict() guard.Verdict { return s.verdict }
func (s *probeState) Preflight(f *guard.Facts) guard.Verdict {
	s.seen = append(s.seen, copyFacts(f))
	if s.p.refuse {
		return guard.Verdict{Stop: true, Reason: "probe", Code: "PROBE", Detail: s.p.name}
	}
	return guard.Verdict{}
}
func (s *probeState) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	return json.Marshal(map[string]int{"count": s.count})
}
func (p *probeState) Restore(state []byte) error {
	var s *struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(state, &s); err != nil {
		return err
	}
	if s == nil {
		p.count = 0
		return nil
	}
	if s.Count < 0 {
		return errors.New("negative count")
	}
	p.count = s.Count
	return nil
}
func mustNew(t *testing.T, o guard.Config, rs ...guard.Rule) *guard.Guard {
	t.Helper()
	g, err := guard.New(withRules(o, rs...))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// withRules returns cfg with the rules rs.
func withRules(cfg guard.Config, rs ...guard.Rule) guard.Config {
	cfg.Rules = rs
	return cfg
}

// startCall is g.StartCall; it fails t on an error.
func startCall(t testing.TB, ctx context.Context, g *guard.Guard, call guard.ToolCall) (*guard.Running, guard.Decision) {
	t.Helper()
	r, d, err := g.StartCall(ctx, call)
	if err != nil {
		t.Fatalf("StartCall: %v", err)
	}
	return r, d
}

// finishCall is r.Finish; it fails t on an error.
func finishCall(t testing.TB, ctx context.Context, r *guard.Running, result any, callErr error) guard.Verdict {
	t.Helper()
	v, err := r.Finish(ctx, result, callErr)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return v
}

// fataler is what the helpers of property tests need of a *rapid.T (which
// is no testing.TB) or a *testing.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// rcheck is g.Check for property tests; it fails t on an error.
func rcheck(t fataler, g *guard.Guard, s guard.Step) guard.Verdict {
	t.Helper()
	v, err := g.Check(context.Background(), s)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return v
}

// rpreflight is g.Preflight for property tests; it fails t on an error.
func rpreflight(t fataler, g *guard.Guard, calls ...guard.ToolCall) guard.Decision {
	t.Helper()
	d, err := g.Preflight(context.Background(), calls...)
	if err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	return d
}

// rsummary is g.Summary for property tests; it fails t on an error.
func rsummary(t fataler, g *guard.Guard) guard.Summary {
	t.Helper()
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	return s
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestNewRejectsBadDetectors(t *testing.T) {
	tests := []struct {
		name string
		ds   []guard.Rule
		want []error
	}{
		{"nil", []guard.Rule{nil}, []error{guard.ErrNilDetector}},
		{"empty name", []guard.Rule{&probe{name: ""}}, []error{guard.ErrInvalidName}},
		{"digit first", []guard.Rule{&probe{name: "1abc"}}, []error{guard.ErrInvalidName}},
		{"space", []guard.Rule{&probe{name: "a b"}}, []error{guard.ErrInvalidName}},
		{"too long", []guard.Rule{&probe{name: strings.Repeat("a", 65)}}, []error{guard.ErrInvalidName}},
		{"duplicate", []guard.Rule{&probe{name: "a"}, &probe{name: "a"}}, []error{guard.ErrDuplicateName}},
		{"all at once", []guard.Rule{nil, &probe{name: "-x"}, &probe{name: "a"}, &probe{name: "a"}},
			[]error{guard.ErrNilDetector, guard.ErrInvalidName, guard.ErrDuplicateName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := guard.New(guard.Config{Rules: tt.ds})
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("error %q is not %v", err, w)
				}
			}
			var de *guard.DetectorError
			if !errors.As(err, &de) {
				t.Errorf("error %q is no *DetectorError", err)
			}
		})
	}
	if _, err := guard.New(guard.Config{History: -1}); !errors.Is(err, guard.ErrInvalidOption) || !strings.Contains(err.Error(), "History") {
		t.Errorf("History -1: got %v, want an invalid-option error naming History", err)
	}
	for _, name := range []string{"a", "Z", "repeat", "my-rule_2.v1/x", strings.Repeat("a", 64)} {
		if !guard.ValidName(name) {
			t.Errorf("ValidName(%q) = false", name)
		}
	}
}

func TestDetectorsOrderedByPriorityThenName(t *testing.T) {
	g := mustNew(t, guard.Config{},
		&probe{name: "zeta", prio: 100}, &probe{name: "custom", prio: 1000},
		&probe{name: "beta", prio: 400}, &probe{name: "alpha", prio: 400})
	var got []string
	for _, d := range g.Rules() {
		got = append(got, d.Name())
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "beta", "custom"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestFirstStopByPriorityWinsAndAllObserve(t *testing.T) {
	always := func(*guard.Facts) bool { return true }
	late := &probe{name: "late", prio: 500, stopWhen: always, warn: true}
	early := &probe{name: "early", prio: 100, stopWhen: always}
	quiet := &probe{name: "quiet", prio: 50, warn: true}
	g := mustNew(t, guard.Config{}, late, early, quiet)
	v := testutil.Check(t, g, guard.Step{Text: "x"})
	want := guard.Verdict{
		Stop: true, Reason: guard.ReasonCustom, Code: guard.CodeCustom, Detail: "early stops",
		Evidence: map[string]any{"count": 1}, Detector: "early",
		Warnings: []guard.Warning{{Code: "PROBE_WARNING", Detail: "quiet", Detector: "quiet"}, {Code: "PROBE_WARNING", Detail: "late", Detector: "late"}},
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	for _, p := range []*probe{late, early, quiet} {
		if len(p.st().seen) != 1 {
			t.Errorf("%s observed %d steps, want 1", p.name, len(p.st().seen))
		}
	}
}

func TestFactsOfAStep(t *testing.T) {
	p := &probe{name: "p"}
	g := mustNew(t, guard.Config{Ignore: []string{"think"}}, p)
	long := `{"q":"` + strings.Repeat("é", 100) + `"}`
	testutil.Check(t, g, guard.Step{
		Text: "  Hello\t\n  WORLD  ",
		ToolCalls: []guard.ToolCall{
			{Name: "search", Args: raw(`{ "b": 2.0, "a": 1 }`), Result: "r1"},
			{Name: "search", Args: map[string]any{"a": 1, "b": 2}, Err: errors.New("boom")},
			{Name: "think", Args: raw(long)},
		},
		FinishReason: " Tool_Calls ",
		Usage:        guard.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: math.NaN(), Duration: -time.Second},
		Input:        "user said hi",
	})

	testutil.Check(t, g, guard.Step{Text: "hello world", Usage: guard.Usage{InputTokens: -3, OutputTokens: 1, TotalTokens: 100, CostUSD: 0.5, Duration: 1500 * time.Millisecond}})
	s0, s1 := p.st().seen[0], p.st().seen[1]

	if s0.Keys[0] != s0.Keys[1] {
		t.Error("the same arguments written two ways give different keys")
	}
	if s0.Outcomes[0] == s0.Outcomes[1] || s0.Outcomes[0] == s0.Keys[0] || s0.Outcomes[2] != s0.Keys[2] {
		t.Error("outcomes: a result and an error must differ from each other and from the key; no result means outcome == key")
	}
	if diff := cmp.Diff([]bool{false, true, false}, s0.Failed); diff != "" {
		t.Errorf("failed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, true}, s0.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if s0.Previews[0] != `{"a":1,"b":2}` {
		t.Errorf("preview = %q", s0.Previews[0])
	}
	if n := len([]rune(s0.Previews[2])); n != guard.PreviewLen || !strings.HasSuffix(s0.Previews[2], "...") {
		t.Errorf("long preview has %d characters (%q), want %d ending in ...", n, s0.Previews[2], guard.PreviewLen)
	}
	if s0.Text != "hello world" || !s0.HasText || s0.TextHash != s1.TextHash {
		t.Errorf("text normalised to %q (hasText %v); equal texts must hash alike", s0.Text, s0.HasText)
	}
	if s0.Finish != "tool-calls" || s0.RawFinish != " Tool_Calls " {
		t.Errorf("finish = %q (raw %q)", s0.Finish, s0.RawFinish)
	}
	if !s0.NewInput || s1.NewInput {
		t.Error("NewInput must follow Step.Input")
	}
	wantU0 := guard.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	if diff := cmp.Diff(wantU0, s0.Usage); diff != "" {
		t.Errorf("usage 0 (-want +got):\n%s", diff)
	}
	wantT1 := guard.Totals{InputTokens: 10, OutputTokens: 6, TotalTokens: 115, CostUSD: 0.5, Duration: 1500 * time.Millisecond}
	if diff := cmp.Diff(wantT1, s1.Totals); diff != "" {
		t.Errorf("totals after step 1 (-want +got):\n%s", diff)
	}
	if s0.Index != 0 || s1.Index != 1 || s1.Steps != 2 || !s1.StepPresent {
		t.Errorf("indexes %d, %d, steps %d", s0.Index, s1.Index, s1.Steps)
	}
	sum := testutil.Summary(t, g)
	if sum.Steps != 2 || sum.ToolCalls != 3 || sum.FailedToolCalls != 1 || sum.LastVerdict == nil {
		t.Errorf("summary = %+v", sum)
	}
}

func TestEmptyTextIsNoText(t *testing.T) {
	p := &probe{name: "p"}
	g := mustNew(t, guard.Config{}, p)
	testutil.Check(t, g, guard.Step{Text: " \n\t "})
	testutil.Check(t, g, guard.Step{})
	if p.st().seen[0].HasText || p.st().seen[0].TextHash != p.st().seen[1].TextHash {
		t.Error("blank text must be no text, and hash like the empty text")
	}
}

func TestPreflightChangesNothing(t *testing.T) {
	p := &probe{name: "p", refuse: true}
	g := mustNew(t, guard.Config{History: 4}, p)
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "a", Args: raw(`{}`), Result: "x"}}, Usage: guard.Usage{TotalTokens: 5}})
	before, _ := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	sumBefore := testutil.Summary(t, g)
	d := testutil.Preflight(t, g, guard.ToolCall{Name: "a", Args: raw(`{}`), Result: "ignored in preflight"})
	want := guard.Decision{Reason: "probe", Code: "PROBE", Detail: "p", Detector: "p"}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	after, _ := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if string(before) != string(after) {
		t.Errorf("snapshot changed:\n%s\n%s", before, after)
	}
	if diff := cmp.Diff(sumBefore, testutil.Summary(t, g)); diff != "" {
		t.Errorf("summary changed (-before +after):\n%s", diff)
	}
	pf := p.st().seen[len(p.st().seen)-1]
	if pf.Phase != guard.PhasePreflight || pf.Index != 1 || pf.Steps != 1 || pf.StepPresent || pf.Outcomes[0] != pf.Keys[0] {
		t.Errorf("preflight facts = %+v", pf)
	}
}

func TestFeedbackOptionAppliesToFaultsOnly(t *testing.T) {
	var phases []guard.Phase
	o := guard.Config{Feedback: func(v guard.Verdict, p guard.Phase) string {
		phases = append(phases, p)
		return "custom text for " + v.Code
	}}
	g := mustNew(t, o, &probe{name: "p", refuse: true, stopWhen: func(*guard.Facts) bool { return true }})
	if v := testutil.Check(t, g, guard.Step{}); v.Feedback != "custom text for CUSTOM" {
		t.Errorf("check feedback = %q", v.Feedback)
	}
	if d := testutil.Preflight(t, g, guard.ToolCall{Name: "x"}); d.Feedback != "custom text for PROBE" {
		t.Errorf("preflight feedback = %q", d.Feedback)
	}
	if diff := cmp.Diff([]guard.Phase{guard.PhaseCheck, guard.PhasePreflight}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}

func TestIsFault(t *testing.T) {
	type normal struct{ n bool }
	tests := []struct {
		v    guard.Verdict
		want bool
	}{
		{guard.Verdict{}, false},
		{guard.Verdict{Stop: true, Reason: repeat.ReasonRepeatedToolCall}, true},
		{guard.Verdict{Stop: true, Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL", Evidence: map[string]any{"normalized": "stop"}}, false},
		{guard.Verdict{Stop: true, Reason: finish.ReasonFinishReason, Code: "FINISH_OTHER", Evidence: map[string]any{"normalized": "stop"}}, true},
		{guard.Verdict{Stop: true, Reason: finish.ReasonFinishReason, Evidence: map[string]any{"normalized": "length"}}, true},
		{guard.Verdict{Stop: true, Reason: finish.ReasonFinishReason}, true},
	}
	for i, tt := range tests {
		if got := guard.IsFault(tt.v); got != tt.want {
			t.Errorf("%d: IsFault(%+v) = %v, want %v", i, tt.v, got, tt.want)
		}
	}
}

func TestHistoryIsBounded(t *testing.T) {
	g := mustNew(t, guard.Config{History: 3})
	for i := range 10 {
		testutil.Check(t, g, guard.Step{Text: fmt.Sprint(i)})
	}
	var got []string
	for _, s := range g.History() {
		got = append(got, s.Text)
	}
	if diff := cmp.Diff([]string{"7", "8", "9"}, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	g.Reset(t.Context())
	if len(g.History()) != 0 || testutil.Summary(t, g).Steps != 0 {
		t.Error("Reset kept the run")
	}
	if h := mustNew(t, guard.Config{}).History(); len(h) != 0 {
		t.Error("history kept without being asked")
	}
}

func TestStepUnmarshalJSON(t *testing.T) {
	errText := func(e error) string {
		if e == nil {
			return "<nil>"
		}
		return e.Error()
	}
	opt := cmp.Comparer(func(a, b error) bool { return errText(a) == errText(b) })
	tests := []struct {
		line string
		want guard.Step
	}{
		{`{}`, guard.Step{}},
		{`{"text": "hi", "finishReason": "stop", "input": "x"}`, guard.Step{Text: "hi", FinishReason: "stop", Input: "x"}},
		{`{"text": 5, "finishReason": ["x"], "toolCalls": "nope", "usage": 7}`, guard.Step{}},
		{`{"userReply": "sure"}`, guard.Step{Input: "sure"}},
		{`{"toolCalls": [{"name": "a", "args": {"q": 1}, "result": null, "error": null}, 5, {"name": 7}, {"args": {}}, {"name": "b", "error": "bad"}, {"name": "c", "error": {"code": 1}}]}`,
			guard.Step{ToolCalls: []guard.ToolCall{
				{Name: "a", Args: raw(`{"q": 1}`)},
				{Name: "b", Err: errors.New("bad")},
				{Name: "c", Err: errors.New(`{"code": 1}`)},
			}}},
		{`{"usage": {"inputTokens": 1, "outputTokens": -2, "totalTokens": 1.5, "costUsd": "x", "durationMs": 1200.5}}`,
			guard.Step{Usage: guard.Usage{InputTokens: 1, Duration: 1200500 * time.Microsecond}}},
		{`{"usage": {"inputTokens": 1e300, "costUsd": 0.25}}`, guard.Step{Usage: guard.Usage{CostUSD: 0.25}}},
	}
	for _, tt := range tests {
		var s guard.Step
		if err := json.Unmarshal([]byte(tt.line), &s); err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.want, s, opt); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.line, diff)
		}
	}
	for _, bad := range []string{`[]`, `"x"`, `5`, `{`, ``, `null`} {
		var s guard.Step
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestStepJSONRoundTrip(t *testing.T) {
	in := guard.Step{Text: "t", FinishReason: "stop", Input: "u",
		ToolCalls: []guard.ToolCall{{Name: "a", Args: raw(`{"q":1}`), Result: "r", Err: errors.New("e")}},
		Usage:     guard.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, CostUSD: 0.5, Duration: 2 * time.Millisecond}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out guard.Step
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if b, err := json.Marshal(guard.Step{Usage: guard.Usage{CostUSD: math.NaN(), InputTokens: 1}}); err != nil || string(b) != `{"text":"","toolCalls":[],"usage":{"inputTokens":1}}` {
		t.Errorf("a NaN cost: %s, %v", b, err)
	}
	g1, g2 := &probe{name: "p"}, &probe{name: "p"}
	testutil.Check(t, mustNew(t, guard.Config{}, g1), in)
	testutil.Check(t, mustNew(t, guard.Config{}, g2), out)
	if diff := cmp.Diff(g1.st().seen, g2.st().seen); diff != "" {
		t.Errorf("facts differ after a JSON round trip (-in +out):\n%s", diff)
	}
}

func TestVerdictJSON(t *testing.T) {
	b, _ := json.Marshal(guard.Verdict{Code: "ignored when going on"})
	if string(b) != `{"stop":false}` {
		t.Errorf("go-on verdict = %s", b)
	}
	b, _ = json.Marshal(guard.Decision{Allow: true, Warnings: []guard.Warning{{Code: "W", Detail: "d"}}})
	if string(b) != `{"allow":true,"warnings":[{"code":"W","value":0,"limit":0,"ratio":0,"detail":"d"}]}` {
		t.Errorf("allowed decision = %s", b)
	}
	b, _ = json.Marshal(guard.Verdict{Stop: true, Reason: budget.ReasonBudget, Code: "BUDGET_COST_USD", Detail: "d", Evidence: map[string]any{"metric": "costUsd"}, Feedback: "f"})
	if string(b) != `{"stop":true,"reason":"budget","code":"BUDGET_COST_USD","detail":"d","evidence":{"metric":"costUsd"},"feedback":"f"}` {
		t.Errorf("stop verdict = %s", b)
	}
}

func TestSnapshotRestore(t *testing.T) {
	newProbe := func() *probe { return &probe{name: "p", opts: map[string]int{"n": 1}} }
	g := mustNew(t, guard.Config{Ignore: []string{"think"}}, newProbe())
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "a", Err: errors.New("x")}}, Usage: guard.Usage{TotalTokens: 7, Duration: time.Millisecond}})
	testutil.Check(t, g, guard.Step{})
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := newProbe()
	r, err := guard.Restore(data, guard.Config{Ignore: []string{"think", "think"}, Rules: []guard.Rule{p}})
	if err != nil {
		t.Fatal(err)
	}
	if p.st().count != 2 {
		t.Errorf("restored probe count = %d, want 2", p.st().count)
	}
	want := guard.Summary{Steps: 2, ToolCalls: 1, FailedToolCalls: 1, Totals: guard.Totals{TotalTokens: 7, Duration: time.Millisecond}}
	if diff := cmp.Diff(want, testutil.Summary(t, r)); diff != "" {
		t.Errorf("restored summary (-want +got):\n%s", diff)
	}
	testutil.Check(t, r, guard.Step{})
	if p.st().seen[0].Index != 2 {
		t.Errorf("step index after restore = %d, want 2", p.st().seen[0].Index)
	}

	other := &probe{name: "p", opts: map[string]int{"n": 2}}
	_, err = guard.Restore(data, guard.Config{Ignore: []string{"think"}, Rules: []guard.Rule{other, &probe{name: "q"}}})
	var fe *guard.FingerprintError
	if !errors.As(err, &fe) || !errors.Is(err, guard.ErrOptionsChanged) {
		t.Fatalf("restore under other options: %v", err)
	}
	if diff := cmp.Diff(&guard.FingerprintError{Changed: []string{"p"}, Extra: []string{"q"}}, fe); diff != "" {
		t.Errorf("fingerprint error (-want +got):\n%s", diff)
	}
	_, err = guard.Restore(data, guard.Config{})
	if !errors.As(err, &fe) || fmt.Sprint(fe.Changed, fe.Missing) != "[guard] [p]" {
		t.Errorf("restore without the ignore option and the detector: %v", err)
	}
}

func TestRestoreRejectsBadSnapshots(t *testing.T) {
	g := mustNew(t, guard.Config{}, &probe{name: "p"})
	testutil.Check(t, g, guard.Step{})
	good, _ := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	replace := func(old, new string) string {
		s := strings.Replace(string(good), old, new, 1)
		if s == string(good) {
			t.Fatalf("%q not in %s", old, good)
		}
		return s
	}
	bad := map[string]string{
		"empty":         ``,
		"not an object": `[1]`,
		"truncated":     string(good[:len(good)/2]),
		"version 2":     replace(`"version":1`, `"version":2`),
		"version text":  replace(`"version":1`, `"version":"1"`),
		"negative":      replace(`"steps":1`, `"steps":-1`),
		"fraction":      replace(`"steps":1`, `"steps":1.5`),
		"NaN-ish total": replace(`"costUsd":0`, `"costUsd":-1`),
		"short hash":    replace(`"fingerprint":"`, `"fingerprint":"ab`),
		"state":         replace(`{"count":1}`, `{"count":-4}`),
		"state type":    replace(`{"count":1}`, `"x"`),
		"no detectors":  replace(`"detectors":[`, `"detectorz":[`),
		"deep":          strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
		"too many fail": replace(`"failedToolCalls":0`, `"failedToolCalls":3`),
		"upper case":    replace(`"steps":1`, `"STEPS":1`),
		"null counter":  replace(`"steps":1`, `"steps":null`),
		"no state":      replace(`,"state":{"count":1}`, ``),
		"null guard":    replace(`"guard":"`, `"guard":null,"x":"`),
	}
	for name, data := range bad {
		if _, err := guard.Restore([]byte(data), guard.Config{Rules: []guard.Rule{&probe{name: "p"}}}); err == nil {
			t.Errorf("%s: restored %s", name, data)
		}
	}
	if _, err := guard.Restore([]byte(replace(`"version":1`, `"version":1,"extra":{"a":[1]}`)), guard.Config{Rules: []guard.Rule{&probe{name: "p"}}}); err != nil {
		t.Errorf("unknown keys must be ignored: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	g := mustNew(t, guard.Config{History: 2}, &probe{name: "p", stopWhen: func(f *guard.Facts) bool { return f.Index%7 == 0 }})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				call := guard.ToolCall{Name: "t", Args: map[string]int{"w": w, "i": i}}
				testutil.Preflight(t, g, call)
				testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{call}})
				_ = testutil.Summary(t, g)
			}
		}()
	}
	wg.Wait()
	if s := testutil.Summary(t, g); s.Steps != 1600 || s.ToolCalls != 1600 {
		t.Errorf("summary after concurrent use = %+v", s)
	}
}
