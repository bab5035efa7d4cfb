package finish_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

func newGuard(t testing.TB, o finish.Options) *guard.Guard {
	t.Helper()
	d, err := finish.New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	g, err := guard.New(withIgnore(d))
	if err != nil {
		t.Fatalf("guard.New: %v", err)
	}
	return g
}

// withIgnore returns the guard options of these tests, with r.
func withIgnore(r rule.Rule) guard.Config {
	return guard.Config{Ignore: []string{"think"}, Rules: []rule.Rule{r}}
}

// stop builds the stop verdict the guard should return.
func stop(code string, ev finish.Evidence, detail string) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: finish.ReasonFinishReason, Code: code, Detail: detail,
		Evidence: ev, Detector: finish.Name}
	v.Feedback = ev.Feedback(code)
	return v
}

var call = guard.ToolCall{Name: "search", Args: map[string]any{"q": "x"}}

func TestVerdicts(t *testing.T) {
	defaultPolicy := finish.StopIfTextOnly
	tests := []struct {
		name string
		opts finish.Options
		step guard.Step
		want guard.Verdict
	}{
		{
			name: "stop with text is a terminal stop",
			step: guard.Step{Text: "done", FinishReason: "stop"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "stop", Normalized: "stop",
				Policy: defaultPolicy, HasText: true, Terminal: true}, `finish reason "stop" is terminal`),
		},
		{
			name: "terminal stops even with tool calls",
			step: guard.Step{ToolCalls: []guard.ToolCall{call, call}, FinishReason: "length"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "length", Normalized: "length",
				Policy: defaultPolicy, ToolCallCount: 2, Terminal: true}, `finish reason "length" is terminal`),
		},
		{
			name: "reasons are normalised, the raw one is kept",
			step: guard.Step{Text: "x", FinishReason: " Content_Filter\n"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: ` Content_Filter\n` /* escaped */, Normalized: "content-filter",
				Policy: defaultPolicy, HasText: true, Terminal: true}, `finish reason "content-filter" is terminal`),
		},
		{
			name: "error is terminal by default",
			step: guard.Step{FinishReason: "ERROR"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "ERROR", Normalized: "error",
				Policy: defaultPolicy, Terminal: true}, `finish reason "error" is terminal`),
		},
		{
			name: "tool-calls goes on",
			step: guard.Step{Text: "let me look", FinishReason: "TOOL_CALLS"},
		},
		{
			name: "tool-calls goes on without calls and with text",
			step: guard.Step{Text: "hm", FinishReason: "tool-calls"},
		},
		{
			name: "a missing reason says nothing",
			step: guard.Step{Text: "answer"},
		},
		{
			name: "a blank reason says nothing",
			step: guard.Step{Text: "answer", FinishReason: "  \t"},
		},
		{
			name: "other reason, text only, stops by default",
			step: guard.Step{Text: "The answer is 4.", FinishReason: "other"},
			want: stop(finish.CodeOtherTextOnly, finish.Evidence{FinishReason: "other", Normalized: "other",
				Policy: defaultPolicy, HasText: true},
				`finish reason "other" on a step with text and no tool calls (policy "stop-if-text-only")`),
		},
		{
			name: "other reason with a tool call goes on by default",
			step: guard.Step{Text: "x", ToolCalls: []guard.ToolCall{call}, FinishReason: "other"},
		},
		{
			name: "other reason with an ignored tool call is not text only",
			step: guard.Step{Text: "x", ToolCalls: []guard.ToolCall{{Name: "think"}}, FinishReason: "unknown"},
		},
		{
			name: "other reason with blank text goes on by default",
			step: guard.Step{Text: " \n\t", FinishReason: "unknown"},
		},
		{
			name: "stop policy stops other reasons with tool calls",
			opts: finish.Options{OtherPolicy: finish.Stop},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "unknown"},
			want: stop(finish.CodeOther, finish.Evidence{FinishReason: "unknown", Normalized: "unknown",
				Policy: finish.Stop, ToolCallCount: 1},
				`finish reason "unknown" is not terminal and policy "stop" stops on it`),
		},
		{
			name: "stop policy still lets tool-calls go on",
			opts: finish.Options{OtherPolicy: finish.Stop},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"},
		},
		{
			name: "stop policy says nothing on a missing reason",
			opts: finish.Options{OtherPolicy: finish.Stop},
			step: guard.Step{Text: "x"},
		},
		{
			name: "continue policy goes on with text only",
			opts: finish.Options{OtherPolicy: finish.Continue},
			step: guard.Step{Text: "The answer is 4.", FinishReason: "other"},
		},
		{
			name: "continue policy keeps terminal reasons",
			opts: finish.Options{OtherPolicy: finish.Continue},
			step: guard.Step{Text: "x", FinishReason: "length"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "length", Normalized: "length",
				Policy: finish.Continue, HasText: true, Terminal: true}, `finish reason "length" is terminal`),
		},
		{
			name: "an empty terminal list makes stop an other reason",
			opts: finish.Options{Terminal: []string{}},
			step: guard.Step{Text: "done", FinishReason: "stop"},
			want: stop(finish.CodeOtherTextOnly, finish.Evidence{FinishReason: "stop", Normalized: "stop",
				Policy: defaultPolicy, HasText: true},
				`finish reason "stop" on a step with text and no tool calls (policy "stop-if-text-only")`),
		},
		{
			name: "an empty terminal list lets length with calls go on",
			opts: finish.Options{Terminal: []string{}},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "length"},
		},
		{
			name: "custom terminal entries are normalised",
			opts: finish.Options{Terminal: []string{" MY_REASON "}},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "my-reason"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "my-reason", Normalized: "my-reason",
				Policy: defaultPolicy, ToolCallCount: 1, Terminal: true}, `finish reason "my-reason" is terminal`),
		},
		{
			name: "a terminal list may name a provider's spelling",
			opts: finish.Options{Terminal: []string{"end_turn", "max_tokens"}},
			step: guard.Step{Text: "done", FinishReason: "STOP"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "STOP", Normalized: "stop",
				Policy: defaultPolicy, HasText: true, Terminal: true}, `finish reason "stop" is terminal`),
		},
		{
			name: "a provider's spelling matches the terminal list",
			opts: finish.Options{Terminal: []string{"end_turn", "max_tokens"}},
			step: guard.Step{Text: "cut", FinishReason: "length"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "length", Normalized: "length",
				Policy: defaultPolicy, HasText: true, Terminal: true}, `finish reason "length" is terminal`),
		},
		{
			name: "a normal stop on a step with tool calls goes on",
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "STOP"},
		},
		{
			name: "a normal stop on a step whose calls were all refused goes on",
			step: guard.Step{Refused: []guard.ToolCall{call}, FinishReason: "STOP"},
		},
		{
			name: "end_turn on a step with tool calls goes on",
			step: guard.Step{Text: "let me look", ToolCalls: []guard.ToolCall{call}, FinishReason: "end_turn"},
		},
		{
			name: "the reference's reading stops on stop with tool calls",
			opts: finish.Options{StopWithToolCalls: finish.Stop},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "STOP"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "STOP", Normalized: "stop",
				Policy: defaultPolicy, ToolCallCount: 1, Terminal: true}, `finish reason "stop" is terminal`),
		},
		{
			name: "continue is the default for stop with tool calls",
			opts: finish.Options{StopWithToolCalls: finish.Continue},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "stop"},
		},
		{
			name: "a withheld turn with tool calls still stops",
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "SAFETY"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "SAFETY", Normalized: "content-filter",
				Policy: defaultPolicy, ToolCallCount: 1, Terminal: true}, `finish reason "content-filter" is terminal`),
		},
		{
			name: "a truncated turn with tool calls still stops",
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "max_tokens"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "max_tokens", Normalized: "length",
				Policy: defaultPolicy, ToolCallCount: 1, Terminal: true}, `finish reason "length" is terminal`),
		},
		{
			name: "a malformed call is an error",
			step: guard.Step{Text: "x", FinishReason: "MALFORMED_FUNCTION_CALL"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "MALFORMED_FUNCTION_CALL", Normalized: "error",
				Policy: defaultPolicy, HasText: true, Terminal: true}, `finish reason "error" is terminal`),
		},
		{
			name: "pause_turn is no reason, even under the stop policy",
			opts: finish.Options{OtherPolicy: finish.Stop},
			step: guard.Step{Text: "working on it", FinishReason: "pause_turn"},
		},
		{
			name: "a custom list replaces the default",
			opts: finish.Options{Terminal: []string{"end-turn"}},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "length"},
		},
		{
			name: "tool-calls in the terminal list stops",
			opts: finish.Options{Terminal: []string{"tool-calls"}},
			step: guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool_calls"},
			want: stop(finish.CodeTerminal, finish.Evidence{FinishReason: "tool_calls", Normalized: "tool-calls",
				Policy: defaultPolicy, ToolCallCount: 1, Terminal: true}, `finish reason "tool-calls" is terminal`),
		},
		{
			name: "invalid UTF-8 in the reason does not panic",
			step: guard.Step{Text: "x", FinishReason: "\xff\xfe"},
			want: stop(finish.CodeOtherTextOnly, finish.Evidence{FinishReason: `\xff\xfe` /* escaped */, Normalized: "\ufffd\ufffd",
				Policy: defaultPolicy, HasText: true},
				"finish reason \"\ufffd\ufffd\" on a step with text and no tool calls (policy \"stop-if-text-only\")"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts)
			got := testutil.Check(t, g, tt.step)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%+v) (-want +got):\n%s", tt.step, diff)
			}
			// The next step of the run is judged on its own.
			if got := testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{call}}); got.Stop {
				t.Errorf("the step after: got a stop %v", got)
			}
		})
	}
}

func TestNormalFinishAndFeedback(t *testing.T) {
	tests := []struct {
		opts      finish.Options
		step      guard.Step
		fault     bool
		nFeedback bool // whether feedback is expected
	}{
		{step: guard.Step{Text: "done", FinishReason: "stop"}, fault: false},
		{step: guard.Step{Text: "done", FinishReason: " STOP "}, fault: false},
		{step: guard.Step{Text: "done", FinishReason: "length"}, fault: true, nFeedback: true},
		{step: guard.Step{Text: "done", FinishReason: "other"}, fault: true, nFeedback: true},
		{opts: finish.Options{Terminal: []string{}}, step: guard.Step{Text: "done", FinishReason: "stop"}, fault: true, nFeedback: true},
		{opts: finish.Options{OtherPolicy: finish.Stop, Terminal: []string{"length"}}, step: guard.Step{FinishReason: "stop"}, fault: true, nFeedback: true},
	}
	for _, tt := range tests {
		v := testutil.Check(t, newGuard(t, tt.opts), tt.step)
		if !v.Stop {
			t.Fatalf("%+v with %+v: want a stop, got %v", tt.step, tt.opts, v)
		}
		if got := guard.IsFault(v); got != tt.fault {
			t.Errorf("%+v with %+v: IsFault = %v, want %v", tt.step, tt.opts, got, tt.fault)
		}
		ev := v.Evidence.(finish.Evidence)
		if got := ev.NormalFinish(); got == tt.fault {
			t.Errorf("%+v with %+v: NormalFinish = %v, want %v", tt.step, tt.opts, got, !tt.fault)
		}
		if got := v.Feedback != ""; got != tt.nFeedback {
			t.Errorf("%+v with %+v: feedback %q, want some: %v", tt.step, tt.opts, v.Feedback, tt.nFeedback)
		}
	}
}

func TestEvidenceJSON(t *testing.T) {
	v := testutil.Check(t, newGuard(t, finish.Options{}), guard.Step{Text: "x", FinishReason: "Length"})
	b, err := json.Marshal(v.Evidence)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"finishReason":"Length","normalized":"length","policy":"stop-if-text-only","hasText":true,"toolCallCount":0}`
	if string(b) != want {
		t.Errorf("evidence JSON = %s, want %s", b, want)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		opts   finish.Options
		fields []string // the invalid fields, nil when valid
	}{
		{opts: finish.Options{}},
		{opts: finish.Options{OtherPolicy: finish.Continue, Terminal: []string{}}},
		{opts: finish.Options{OtherPolicy: "Stop"}, fields: []string{"OtherPolicy"}},
		{opts: finish.Options{OtherPolicy: "never"}, fields: []string{"OtherPolicy"}},
		{opts: finish.Options{Terminal: []string{"stop", " "}}, fields: []string{"Terminal[1]"}},
		{opts: finish.Options{Terminal: []string{""}, OtherPolicy: "x"}, fields: []string{"OtherPolicy", "Terminal[0]"}},
	}
	for _, tt := range tests {
		d, err := finish.New(tt.opts)
		if tt.fields == nil {
			if err != nil || d == nil {
				t.Errorf("New(%+v) = %v, %v; want a detector", tt.opts, d, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("New(%+v): no error, want one for %v", tt.opts, tt.fields)
			continue
		}
		if !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, not ErrInvalidOption", tt.opts, err)
		}
		got := testutil.OptionFields(t, err, finish.Name)
		if diff := cmp.Diff(tt.fields, got); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
}

func fingerprint(t *testing.T, o finish.Options) string {
	t.Helper()
	d, err := finish.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return rule.Fingerprint(d).String()
}

func TestOptions(t *testing.T) {
	def := fingerprint(t, finish.Options{})
	same := []finish.Options{
		{Terminal: finish.DefaultTerminal(), OtherPolicy: finish.StopIfTextOnly},
		{Terminal: []string{"ERROR", "stop", "length", "Content_Filter", "stop"}},
		{StopWithToolCalls: finish.Continue}, // the default, spelt out
	}
	for _, o := range same {
		if got := fingerprint(t, o); got != def {
			t.Errorf("fingerprint of %+v differs from the default's", o)
		}
	}
	different := []finish.Options{
		{Terminal: []string{}},
		{Terminal: []string{"stop"}},
		{OtherPolicy: finish.Stop},
		{OtherPolicy: finish.Continue},
		{StopWithToolCalls: finish.Stop}, // the reference's reading: a restore must not mix the two
	}
	seen := map[string]finish.Options{def: {}}
	for _, o := range different {
		fp := fingerprint(t, o)
		if prev, dup := seen[fp]; dup {
			t.Errorf("options %+v and %+v have the same fingerprint", o, prev)
		}
		seen[fp] = o
	}

	d, _ := finish.New(finish.Options{})
	want := finish.Options{Terminal: []string{"content-filter", "error", "length", "stop"}, OtherPolicy: finish.StopIfTextOnly}
	if diff := cmp.Diff(want, d.Options()); diff != "" {
		t.Errorf("Options() (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(d.Options())
	if got, want := string(b), `{"terminal":["content-filter","error","length","stop"],"otherPolicy":"stop-if-text-only"}`; got != want {
		t.Errorf("Options() JSON = %s, want %s", got, want)
	}
	// The returned value is a copy.
	d.Options().(finish.Options).Terminal[0] = "x"
	if diff := cmp.Diff(want, d.Options()); diff != "" {
		t.Errorf("Options() after changing a copy (-want +got):\n%s", diff)
	}
	terms := []string{"a"}
	d, _ = finish.New(finish.Options{Terminal: terms})
	terms[0] = "stop"
	if got := testutil.Check(t, testutil.New(t, d), guard.Step{Text: "x", FinishReason: "a"}); !got.Stop {
		t.Errorf("New kept the caller's slice: a is no longer terminal")
	}
}

func TestPreflightAllows(t *testing.T) {
	g := newGuard(t, finish.Options{OtherPolicy: finish.Stop})
	if got := testutil.Preflight(t, g, call, call); !got.Allow {
		t.Errorf("Preflight = %+v, want allow", got)
	}
	testutil.Check(t, g, guard.Step{Text: "x", FinishReason: "stop"})
	if got := testutil.Preflight(t, g, call); !got.Allow {
		t.Errorf("Preflight after a stop = %+v, want allow", got)
	}
}

func TestSnapshotRestore(t *testing.T) {
	d, _ := finish.New(finish.Options{})
	if _, ok := d.NewState().(rule.Saver); ok {
		t.Error("the state is a rule.Saver: the rule keeps nothing between steps")
	}
	g := newGuard(t, finish.Options{})
	testutil.Check(t, g, guard.Step{Text: "x", FinishReason: "stop"})
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	const null = `"name":"finish","fingerprint":"` // then the fingerprint and the state
	i := strings.Index(string(data), null)
	if i < 0 || !strings.Contains(string(data[i:]), `"state":null}`) {
		t.Fatalf("the snapshot holds no null state for finish: %s", data)
	}
	g2, err := guard.Restore(data, withIgnore(d))
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for _, s := range []guard.Step{{Text: "x", FinishReason: "other"}, {FinishReason: "length"}, {}} {
		if diff := cmp.Diff(testutil.Check(t, g, s), testutil.Check(t, g2, s)); diff != "" {
			t.Errorf("restored guard differs on %+v (-saved +restored):\n%s", s, diff)
		}
	}
	// Only null restores: the rule keeps no state.
	for _, bad := range []string{`{}`, `[]`, `0`, `"x"`, `{"a":1}`} {
		data := []byte(strings.Replace(string(data), `"state":null}`, `"state":`+bad+`}`, 1))
		if _, err := guard.Restore(data, withIgnore(d)); !errors.Is(err, guard.ErrInvalidState) {
			t.Errorf("Restore with state %s = %v, want ErrInvalidState", bad, err)
		}
	}
}

func TestNewStateForgets(t *testing.T) {
	d, _ := finish.New(finish.Options{})
	st := d.NewState()
	st.Observe(&rule.Facts{FinishReason: "stop", RawFinishReason: "stop", HasText: true})
	if !st.Verdict().Stop {
		t.Fatal("want a stop")
	}
	if diff := cmp.Diff(guard.Verdict{}, d.NewState().Verdict()); diff != "" {
		t.Errorf("Verdict of a new state (-want +got):\n%s", diff)
	}
	if !st.Verdict().Stop {
		t.Error("a new state of the rule changed the first one's verdict")
	}
}

// TestGuardsOfOneRuleAreIndependent runs two guards made from one rule: the
// first stops on a terminal reason, the second still goes on (the rule's
// verdict is its own run's) and stops at exactly its own k-th step.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	toolStep := guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool_calls"}
	tests := []struct {
		name string
		opts finish.Options
		last guard.Step // the k-th step; the k-1 before it are toolStep
		k    int
		code string
	}{
		{"terminal", finish.Options{}, guard.Step{Text: "x", FinishReason: "length"}, 3, finish.CodeTerminal},
		{"other", finish.Options{OtherPolicy: finish.Stop}, guard.Step{FinishReason: "mine"}, 2, finish.CodeOther},
		{"text only", finish.Options{}, guard.Step{Text: "x", FinishReason: "mine"}, 1, finish.CodeOtherTextOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := finish.New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			g1, g2 := testutil.New(t, r), testutil.New(t, r)
			for n, g := range []*guard.Guard{g1, g2} {
				for i := 1; i < tt.k; i++ {
					if v := testutil.Check(t, g, toolStep); v.Stop {
						t.Fatalf("guard %d stopped at step %d of %d: %v", n+1, i, tt.k, v)
					}
				}
				if v := testutil.Check(t, g, tt.last); v.Code != tt.code {
					t.Errorf("guard %d, step %d: code %q, want %q", n+1, tt.k, v.Code, tt.code)
				}
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"stop": "stop", " Tool_Calls\n": "tool-calls", "CONTENT_FILTER": "content-filter",
		"end_turn": "stop", "STOP": "stop", "stop_sequence": "stop", "COMPLETE": "stop",
		"tool_use": "tool-calls", "function_call": "tool-calls", "TOOL_CALL": "tool-calls",
		"max_tokens": "length", "MAX_TOKENS": "length", "model_length": "length",
		"model_context_window_exceeded": "length", "SAFETY": "content-filter", "RECITATION": "content-filter",
		"PROHIBITED_CONTENT": "content-filter", "refusal": "content-filter", "guardrail_intervened": "content-filter",
		"MALFORMED_FUNCTION_CALL": "error", "pause_turn": "", "FINISH_REASON_UNSPECIFIED": "",
		"OTHER": "other", "Stop": "stop", "Length": "length", "LANGUAGE": "language",
		"": "", "\t ": "", "ÉTÉ": "été", "a\xffb": "a\ufffdb", "\u00a0stop": "\u00a0stop",
	} {
		if got := finish.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
	// The detector agrees with the guard's own normalisation.
	for _, raw := range []string{" Tool_Calls\n", "ÉTÉ", "a\xffb", "\u00a0stop", "END_turn", "Max_Tokens", "SAFETY"} {
		d, err := finish.New(finish.Options{Terminal: []string{raw}})
		if err != nil {
			t.Fatal(err)
		}
		if v := testutil.Check(t, testutil.New(t, d), guard.Step{Text: "x", FinishReason: raw}); v.Code != finish.CodeTerminal {
			t.Errorf("terminal %q does not match the guard's normalisation of the same reason: %v", raw, v)
		}
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	d := newState(t)
	f := &rule.Facts{FinishReason: "tool-calls", RawFinishReason: "tool_calls", Calls: []rule.Call{{Tool: "search"}}}
	allocs := testing.AllocsPerRun(100, func() {
		d.Observe(f)
		_ = d.Verdict()
	})
	if allocs != 0 {
		t.Errorf("Observe+Verdict made %v allocations, want 0", allocs)
	}
}

// newState returns a fresh state of the default rule.
func newState(t testing.TB) rule.State {
	d, err := finish.New(finish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d.NewState()
}

func BenchmarkObserveVerdict(b *testing.B) {
	d := newState(b)
	f := &rule.Facts{FinishReason: "tool-calls", RawFinishReason: "tool_calls", Calls: []rule.Call{{Tool: "search"}}}
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		if d.Verdict().Stop {
			b.Fatal("stop")
		}
	}
}

func BenchmarkObserveVerdictTerminal(b *testing.B) {
	d := newState(b)
	f := &rule.Facts{FinishReason: "length", RawFinishReason: "length", HasText: true}
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(f)
		if !d.Verdict().Stop {
			b.Fatal("no stop")
		}
	}
}
