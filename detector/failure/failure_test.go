package failure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newRule(t tb, o failure.Options) *failure.Rule { return ruletest.Rule(t, failure.New, o) }

// newState returns a fresh state of the rule with these options.
func newState(t tb, o failure.Options) ruletest.State { return ruletest.NewState(t, newRule(t, o)) }

// newGuard returns a guard with options g and the rule with options o.
func newGuard(t tb, o failure.Options, g guard.Config) *guard.Guard {
	return ruletest.New(t, g, newRule(t, o))
}

// edit is a call of an edit tool whose old text was not found: the failure
// echoes the old text, which changes from call to call.
func edit(old string) guard.ToolCall {
	args, _ := json.Marshal(map[string]string{"path": "/repo/app.py", "old_str": old, "new_str": "pass"})
	return guard.ToolCall{Name: "str_replace", Args: json.RawMessage(args),
		Result: fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in /repo/app.py.", old),
		Err:    errors.New("error observation")}
}

// opEdit is an edit whose arguments name their operation.
func opEdit(old string) guard.ToolCall {
	c := edit(old)
	args, _ := json.Marshal(map[string]string{"command": "str_replace", "path": "/repo/app.py", "old_str": old, "new_str": "pass"})
	c.Args = json.RawMessage(args)
	return c
}

// build is a build command that fails with a syntax error on line n.
func build(flags string, line int) guard.ToolCall {
	return guard.ToolCall{Name: "bash", Args: map[string]string{"command": "go build " + flags},
		Result: fmt.Sprintf("./main.go:%d:7: syntax error: unexpected newline", line), Err: errors.New("exit code 1")}
}

func ok(name, arg string) guard.ToolCall {
	return guard.ToolCall{Name: name, Args: map[string]string{"q": arg}, Result: "fine " + arg}
}

func steps(calls ...guard.ToolCall) []guard.Step {
	out := make([]guard.Step, len(calls))
	for i, c := range calls {
		out[i] = guard.Step{ToolCalls: []guard.ToolCall{c}}
	}
	return out
}

func run(t tb, g *guard.Guard, ss []guard.Step) []guard.Verdict {
	t.Helper()
	out := make([]guard.Verdict, len(ss))
	for i, s := range ss {
		out[i] = ruletest.Check(t, g, s)
	}
	return out
}

// stops returns, for each step, "" or the stop's code and count.
func stops(vs []guard.Verdict) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if v.Stop {
			out[i] = fmt.Sprintf("%s %d", v.Code, v.Evidence.(failure.Evidence).Count)
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	const stop3, stop4 = "REPEATED_FAILURE 3", "REPEATED_FAILURE 4"
	tests := []struct {
		name  string
		opts  failure.Options
		gopts guard.Config
		steps []guard.Step
		want  []string
	}{
		{
			name:  "two edits that fail the same way go on, the third stops",
			steps: steps(edit("def f(x):"), edit("def f(x) :"), edit("def  f(x):")),
			want:  []string{"", "", stop3},
		},
		{
			name:  "a syntax error whose line moves is the same failure",
			steps: steps(build("", 12), build("-v", 14), build("./...", 15)),
			want:  []string{"", "", stop3},
		},
		{
			name:  "successful calls between them stay in the window",
			steps: steps(edit("a1"), ok("read", "x"), edit("a2"), ok("read", "y"), edit("a3")),
			want:  []string{"", "", "", "", stop3},
		},
		{
			name: "a failure that left the window does not count",
			steps: steps(edit("a1"), ok("r", "1"), ok("r", "2"), ok("r", "3"), ok("r", "4"), ok("r", "5"),
				ok("r", "6"), ok("r", "7"), ok("r", "8"), edit("a2"), edit("a3")),
			want: []string{"", "", "", "", "", "", "", "", "", "", ""},
		},
		{
			name: "the oldest failure still in the window counts",
			steps: steps(edit("a1"), ok("r", "1"), ok("r", "2"), ok("r", "3"), ok("r", "4"), ok("r", "5"),
				ok("r", "6"), ok("r", "7"), edit("a2"), edit("a3")),
			want: []string{"", "", "", "", "", "", "", "", "", stop3},
		},
		{
			name: "a success of the same tool ends the streak",
			steps: steps(edit("a1"), edit("a2"),
				guard.ToolCall{Name: "str_replace", Args: map[string]string{"old_str": "x"}, Result: "ok"}, edit("a3"), edit("a4")),
			want: []string{"", "", "", "", ""},
		},
		{
			name: "a success of another operation of the same tool does not",
			steps: steps(edit("a1"),
				guard.ToolCall{Name: "str_replace", Args: map[string]string{"command": "view", "path": "/repo/app.py"}, Result: "1 x = 1"},
				edit("a2"),
				guard.ToolCall{Name: "str_replace", Args: json.RawMessage(`{"command":"view","path":"/repo/app.py"}`), Result: "1 x = 1"},
				edit("a3")),
			want: []string{"", "", "", "", stop3},
		},
		{
			name: "a success of the same operation does",
			steps: steps(opEdit("a1"), opEdit("a2"),
				guard.ToolCall{Name: "str_replace", Args: json.RawMessage(`{"command":"str_replace","old_str":"b"}`), Result: "ok"},
				opEdit("a3"), opEdit("a4")),
			want: []string{"", "", "", "", ""},
		},
		{
			name: "a success before any failure ends nothing that follows",
			steps: steps(guard.ToolCall{Name: "str_replace", Args: map[string]string{"old_str": "x"}, Result: "ok"},
				ok("read", "1"), edit("a1"), edit("a2"), edit("a3")),
			want: []string{"", "", "", "", stop3},
		},
		{
			name: "a success of another tool does not",
			steps: steps(edit("a1"), edit("a2"),
				guard.ToolCall{Name: "bash", Args: map[string]string{"command": "ls"}, Result: "ok"}, edit("a3")),
			want: []string{"", "", "", stop3},
		},
		{
			name: "calls of one step that fail the same way count once",
			steps: []guard.Step{{ToolCalls: []guard.ToolCall{edit("a1"), edit("a2"), edit("a3")}},
				{ToolCalls: []guard.ToolCall{edit("a4")}}, {ToolCalls: []guard.ToolCall{edit("a5")}}},
			want: []string{"", "", stop3},
		},
		{
			name:  "other failures do not add up",
			steps: steps(edit("a1"), build("", 1), edit("a2"), build("", 2), ok("r", "1")),
			want:  []string{"", "", "", "", ""},
		},
		{
			name:  "a ping-pong of two calls that each fail the same way",
			steps: steps(edit("a1"), build("", 1), edit("a2"), build("", 2), edit("a3")),
			want:  []string{"", "", "", "", stop3},
		},
		{
			name:  "a failure that goes on stops again with its count",
			steps: steps(edit("a1"), edit("a2"), edit("a3"), edit("a4")),
			want:  []string{"", "", stop3, stop4},
		},
		{
			name:  "threshold 4: three go on",
			opts:  failure.Options{Threshold: 4},
			steps: steps(edit("a1"), edit("a2"), edit("a3"), edit("a4")),
			want:  []string{"", "", "", stop4},
		},
		{
			name:  "window 3: the fourth call pushes the first out",
			opts:  failure.Options{Window: 3, Threshold: 2},
			steps: steps(edit("a1"), ok("r", "1"), ok("r", "2"), edit("a2"), edit("a3")),
			want:  []string{"", "", "", "", "REPEATED_FAILURE 2"},
		},
		{
			name:  "ignored tools are not in the window",
			gopts: guard.Config{Ignore: []string{"think"}},
			steps: steps(edit("a1"), ok("think", "1"), ok("think", "2"), ok("think", "3"), ok("think", "4"),
				ok("think", "5"), ok("think", "6"), ok("think", "7"), ok("think", "8"), ok("think", "9"), edit("a2"), edit("a3")),
			want: []string{"", "", "", "", "", "", "", "", "", "", "", stop3},
		},
		{
			name:  "results marked by FailWhen are failures",
			gopts: guard.Config{FailWhen: []string{`^ERROR:`}},
			steps: steps(guard.ToolCall{Name: "api", Args: map[string]int{"page": 1}, Result: "ERROR: rate limited for 30s"},
				guard.ToolCall{Name: "api", Args: map[string]int{"page": 2}, Result: "ERROR: rate limited for 12s"},
				guard.ToolCall{Name: "api", Args: map[string]int{"page": 3}, Result: "ERROR: rate limited for 5s"}),
			want: []string{"", "", stop3},
		},
		{
			name:  "the same results without FailWhen are not failures",
			steps: steps(guard.ToolCall{Name: "api", Result: "ERROR: x"}, guard.ToolCall{Name: "api", Result: "ERROR: x"}, guard.ToolCall{Name: "api", Result: "ERROR: x"}),
			want:  []string{"", "", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts == (failure.Options{}) {
				tt.opts.Threshold = 3 // small runs read better; the default is tested below
			}
			got := stops(run(t, newGuard(t, tt.opts, tt.gopts), tt.steps))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultThreshold(t *testing.T) {
	g := newGuard(t, failure.Options{}, guard.Config{})
	got := stops(run(t, g, steps(edit("a1"), edit("a2"), edit("a3"), edit("a4"), edit("a5"))))
	if diff := cmp.Diff([]string{"", "", "", "", "REPEATED_FAILURE 5"}, got); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
}

// TestRequestIDs: a tool that fails five times with "service unavailable"
// and another request id each time stops at the fifth, under the defaults,
// whatever the provider's id format (issue 22: UUIDs and req_ ids were not
// normalised, so such a run was never caught).
func TestRequestIDs(t *testing.T) {
	ids := map[string][]string{
		"uuid v4": {"93d088a6-a044-4964-8b25-fab487a6859a", "ebbb2373-ab4b-484d-9bfa-9bef286759a5",
			"8966d0fb-0628-45fb-9593-f629717be3ca", "1860658e-f681-4bf2-b84f-0adb1f93acf3", "3ccccc99-b27d-4340-bd10-df796324268f"},
		"openai": {"req_1332ed8a813a4caaa2f0f3c55a6a68cb", "req_5c0e0b7a9d3f4e21b8a6c4d2e1f09a7b",
			"req_0a1b2c3d4e5f60718293a4b5c6d7e8f9", "req_ffee00112233445566778899aabbccdd", "req_9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"},
		"anthropic": {"req_011CZAZuCr9hV42toiCdnnKB", "req_011CZCiainzQT1m7qR2Nvz2D", "req_011CZAYwiDg6Eqv7HiBNWoE5",
			"req_011CZAY8xEUqbHSEE3BdFtMh", "req_01RCc7MbLyQNtGKzBTv8VCep"},
	}
	for name, ids := range ids {
		t.Run(name, func(t *testing.T) {
			var ss []guard.Step
			for i, id := range ids {
				ss = append(ss, guard.Step{ToolCalls: []guard.ToolCall{{Name: "fetch", Args: map[string]int{"page": i},
					Err: errors.New("service unavailable (request " + id + ")")}}})
			}
			got := stops(run(t, newGuard(t, failure.Options{}, guard.Config{}), ss))
			if diff := cmp.Diff([]string{"", "", "", "", "REPEATED_FAILURE 5"}, got); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
}

// reindent is an edit whose new text fails to parse; only its indentation
// changes from call to call, and the error names another line each time.
func reindent(indent string, line int) guard.ToolCall {
	code := "def f(x):\n" + indent + "return x\n"
	args, _ := json.Marshal(map[string]string{"command": "python -c", "code": code})
	return guard.ToolCall{Name: "python", Args: json.RawMessage(args), Err: errors.New("exit code 1"),
		Result: fmt.Sprintf("  File \"<string>\", line %d\nIndentationError: expected an indented block", line)}
}

// TestSameCall: the same failure of the same call (up to white space in its
// arguments) stops at Options.SameCall, sooner than Threshold, and only
// when the arguments are the same.
func TestSameCall(t *testing.T) {
	const stop3 = "REPEATED_FAILURE 3"
	track := func(id string) guard.ToolCall {
		return guard.ToolCall{Name: "track", Args: map[string]string{"id": id}, Err: errors.New("400 Bad Request")}
	}
	// probe fails another way for each s: no streak of its own, and no new
	// result.
	probe := func(s string) guard.ToolCall {
		return guard.ToolCall{Name: "probe", Args: s, Err: errors.New("missing " + s)}
	}
	tests := []struct {
		name  string
		steps []guard.Step
		want  []string
	}{
		{"two go on, the third stops (default SameCall 3)",
			steps(track("ABC456"), track("ABC456"), track("ABC456")), []string{"", "", stop3}},
		{"an edit only re-indented is the same call, its moving line the same failure",
			steps(reindent("", 2), reindent(" ", 2), reindent("\t", 1)), []string{"", "", stop3}},
		{"a short ping-pong of calls that each fail the same way",
			steps(track("ABC456"), build("", 1), track("ABC456"), build("", 2), track("ABC456")), []string{"", "", "", "", stop3}},
		{"two calls in turn, each failing the same way: three go on, the fourth stops",
			steps(track("A1"), track("B2"), track("A1"), track("B2")), []string{"", "", "", "REPEATED_FAILURE 4"}},
		{"three calls are no ping-pong",
			steps(track("A1"), track("B2"), track("C3"), track("A1"), track("B2")), []string{"", "", "", "", "REPEATED_FAILURE 5"}},
		{"other arguments wait for the threshold",
			steps(track("A1"), track("B2"), track("C3"), track("D4"), track("E5")), []string{"", "", "", "", "REPEATED_FAILURE 5"}},
		{"a success of the tool ends the streak",
			steps(track("ABC456"), track("ABC456"), guard.ToolCall{Name: "track", Args: map[string]string{"id": "X"}, Result: "ok"},
				track("ABC456"), track("ABC456")), []string{"", "", "", "", ""}},
		{"the same call failing another way is another failure",
			steps(track("ABC456"), guard.ToolCall{Name: "track", Args: map[string]string{"id": "ABC456"}, Err: errors.New("timeout")},
				track("ABC456")), []string{"", "", ""}},
		{"several calls of one step count once",
			[]guard.Step{{ToolCalls: []guard.ToolCall{track("ABC456"), track("ABC456")}}, {ToolCalls: []guard.ToolCall{track("ABC456")}}},
			[]string{"", ""}},
		{"a new result of another tool starts the count again: a test run again after a change",
			steps(track("ABC456"), ok("cp", "1"), track("ABC456"), ok("mv", "2"), track("ABC456")), []string{"", "", "", "", ""}},
		{"after the new result, two go on and the third stops",
			steps(track("ABC456"), ok("cp", "1"), track("ABC456"), track("ABC456"), track("ABC456")), []string{"", "", "", "", stop3}},
		{"a result that comes back later was new when it first came",
			steps(track("ABC456"), ok("cp", "1"), track("ABC456"), ok("mv", "1"), track("ABC456")), []string{"", "", "", "", ""}},
		{"a result of another tool that the window had does not start it again",
			steps(ok("r", "1"), track("ABC456"), ok("r", "1"), track("ABC456"), track("ABC456")), []string{"", "", "", "", stop3}},
		{"a result the same as that of another tool's older call does not either",
			steps(ok("r", "1"), track("ABC456"), guard.ToolCall{Name: "s", Args: 1, Result: "fine 1"}, track("ABC456"), track("ABC456")),
			[]string{"", "", "", "", stop3}},
		{"a thought logged as a call, answered alike each time, does not either",
			steps(track("ABC456"), guard.ToolCall{Name: "think", Args: map[string]string{"thought": "a"}, Result: "logged"}, track("ABC456"),
				guard.ToolCall{Name: "think", Args: map[string]string{"thought": "b"}, Result: "logged"}, track("ABC456"), track("ABC456")),
			[]string{"", "", "", "", "", stop3}},
		{"a success without a result does not either",
			steps(track("ABC456"), guard.ToolCall{Name: "log", Args: 1}, track("ABC456"), track("ABC456")), []string{"", "", "", stop3}},
		{"a result that left the window is new again",
			steps(ok("r", "1"), probe("a"), probe("b"), probe("c"), probe("d"), probe("e"), probe("f"), track("ABC456"),
				ok("r", "1"), track("ABC456"), track("ABC456")), []string{"", "", "", "", "", "", "", "", "", "", ""}},
		{"a result of the oldest call of the window is not new",
			steps(ok("r", "1"), probe("a"), probe("b"), probe("c"), probe("d"), probe("e"), track("ABC456"),
				ok("r", "1"), track("ABC456"), track("ABC456")), []string{"", "", "", "", "", "", "", "", "", stop3}},
		{"two calls in turn still stop at the fourth across new results",
			steps(track("A1"), ok("cp", "1"), track("B2"), ok("mv", "2"), track("A1"), track("B2")), []string{"", "", "", "", "", "REPEATED_FAILURE 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stops(run(t, newGuard(t, failure.Options{}, guard.Config{}), tt.steps))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("evidence", func(t *testing.T) {
		vs := run(t, newGuard(t, failure.Options{}, guard.Config{}), steps(ok("r", "1"), track("ABC456"), ok("r", "1"), track("ABC456"), track("ABC456")))
		want := failure.Evidence{Tool: "track", Count: 3, Threshold: 3, Window: 10, StepIndexes: []int{1, 3, 4},
			ArgsPreview: `{"id":"ABC456"}`, Calls: 1}
		if diff := cmp.Diff(want, vs[4].Evidence); diff != "" {
			t.Errorf("evidence (-want +got):\n%s", diff)
		}
		if fb := vs[4].Feedback; strings.Contains(fb, "ABC456") || strings.Contains(fb, "Bad Request") {
			t.Errorf("feedback holds the arguments or the error: %q", fb)
		}
	})
	t.Run("SameCall equal to Threshold adds nothing", func(t *testing.T) {
		got := stops(run(t, newGuard(t, failure.Options{Threshold: 4, SameCall: 4}, guard.Config{}),
			steps(track("A"), track("A"), track("A"), track("A"))))
		if diff := cmp.Diff([]string{"", "", "", "REPEATED_FAILURE 4"}, got); diff != "" {
			t.Errorf("stops (-want +got):\n%s", diff)
		}
	})
	t.Run("warns one step before", func(t *testing.T) {
		vs := run(t, newGuard(t, failure.Options{Warn: true}, guard.Config{}), steps(track("A"), track("A"), track("A")))
		want := []guard.Warning{{Code: failure.WarningCode, Tool: "track", Value: 2, Limit: 3, Ratio: 2.0 / 3, Detector: failure.Name}}
		want[0].Feedback = failure.WarningFeedback(want[0])
		if len(vs[0].Warnings) != 0 {
			t.Errorf("first failure warned: %v", vs[0].Warnings)
		}
		if diff := cmp.Diff(want, vs[1].Warnings, cmpopts.IgnoreFields(guard.Warning{}, "Detail")); diff != "" {
			t.Errorf("warning one short of SameCall (-want +got):\n%s", diff)
		}
		if !vs[2].Stop {
			t.Errorf("third failure: %v, want a stop", vs[2])
		}
		// A A B: the third failure is B's first, one short of two calls
		// in turn.
		vs = run(t, newGuard(t, failure.Options{Warn: true}, guard.Config{}), steps(track("A"), track("A"), track("B"), track("B")))
		want = []guard.Warning{{Code: failure.WarningCode, Tool: "track", Value: 3, Limit: 4, Ratio: 3.0 / 4, Detector: failure.Name}}
		want[0].Feedback = failure.WarningFeedback(want[0])
		if diff := cmp.Diff(want, vs[2].Warnings, cmpopts.IgnoreFields(guard.Warning{}, "Detail")); diff != "" {
			t.Errorf("warning one short of two calls in turn (-want +got):\n%s", diff)
		}
		if !vs[3].Stop {
			t.Errorf("fourth failure of two calls: %v, want a stop", vs[3])
		}
	})
}

// TestRestoreWithoutRetries: a state written before the rule compared calls
// (no "retries") restores, and its failures count for Threshold only.
func TestRestoreWithoutRetries(t *testing.T) {
	track := guard.ToolCall{Name: "track", Args: map[string]string{"id": "A"}, Err: errors.New("400 Bad Request")}
	r := newRule(t, failure.Options{})
	orig := testutil.New(t, r)
	run(t, orig, steps(track, track))
	data := testutil.Snapshot(t, orig, guard.SnapshotOptions{})
	state := []byte(ruletest.StateOf(t, orig, failure.Name, guard.SnapshotOptions{}))
	var st map[string]json.RawMessage
	if err := json.Unmarshal(state, &st); err != nil || st["retries"] == nil {
		t.Fatalf("state %s: want retries (%v)", state, err)
	}
	delete(st, "retries")
	old, _ := json.Marshal(st)
	g, err := guard.Restore([]byte(strings.Replace(string(data), string(state), string(old), 1)), guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		t.Fatalf("Restore with state %s: %v", old, err)
	}
	// With their retries the first new failure would stop (the third same
	// call); without, the restored failures count only towards Threshold.
	if got := stops(run(t, g, steps(track, track, track))); !cmp.Equal(got, []string{"", "", "REPEATED_FAILURE 5"}) {
		t.Errorf("after restoring %s: stops %q, want the fifth failure to stop", old, got)
	}
	g, err = guard.Restore(data, guard.Config{Rules: []rule.Rule{r}})
	if err != nil || !testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{track}}).Stop {
		t.Errorf("restoring %s with its retries: %v, or the third same call went on", state, err)
	}
}

func TestWithinAStep(t *testing.T) {
	g := newGuard(t, failure.Options{Threshold: 3}, guard.Config{})
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{edit("a1")}})
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{ok("r", "1"), edit("a2")}})
	v := testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{edit("a3"), build("", 1), edit("a4")}})
	want := guard.Verdict{Stop: true, Reason: failure.ReasonRepeatedFailure, Code: failure.Code, Detector: failure.Name,
		Evidence: failure.Evidence{Tool: "str_replace", Count: 3, Threshold: 3, Window: 10, StepIndexes: []int{0, 1, 2},
			ArgsPreview: `{"new_str":"pass","old_str":"a3","path":"/repo/app.py"}`}}
	want.Feedback = want.Evidence.(failure.Evidence).Feedback()
	if diff := cmp.Diff(want, v, cmpopts.IgnoreFields(guard.Verdict{}, "Detail")); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
	if wantDetail := `tool "str_replace" failed the same way 3 times within the last 10 calls, the last with arguments {"new_str":"pass","old_str":"a3","path":"/repo/app.py"} (threshold 3)`; v.Detail != wantDetail {
		t.Errorf("detail = %q, want %q", v.Detail, wantDetail)
	}
	for _, secret := range []string{"a3", "did not appear", "/repo"} {
		if strings.Contains(v.Feedback, secret) {
			t.Errorf("feedback %q repeats %q", v.Feedback, secret)
		}
	}
}

func TestWarn(t *testing.T) {
	g := newGuard(t, failure.Options{Threshold: 3, Warn: true}, guard.Config{})
	vs := run(t, g, steps(edit("a1"), edit("a2"), edit("a3")))
	if len(vs[0].Warnings) != 0 {
		t.Errorf("first failure warned: %v", vs[0].Warnings)
	}
	want := []guard.Warning{{Code: failure.WarningCode, Tool: "str_replace", Value: 2, Limit: 3, Ratio: 2.0 / 3,
		Detector: failure.Name}}
	want[0].Feedback = failure.WarningFeedback(want[0])
	if diff := cmp.Diff(want, vs[1].Warnings, cmpopts.IgnoreFields(guard.Warning{}, "Detail")); diff != "" {
		t.Errorf("warning one short of the threshold (-want +got):\n%s", diff)
	}
	if !vs[2].Stop || len(vs[2].Warnings) != 0 {
		t.Errorf("third failure: %v, want a stop without warnings", vs[2])
	}
	// Threshold 2 gives no warnings: a single failure never warns.
	g = newGuard(t, failure.Options{Threshold: 2, Warn: true}, guard.Config{})
	if vs := run(t, g, steps(edit("a1"), edit("a2"))); len(vs[0].Warnings) != 0 || !vs[1].Stop {
		t.Errorf("threshold 2: %v", vs)
	}
}

func TestPreflightJudgesNothing(t *testing.T) {
	g := newGuard(t, failure.Options{Threshold: 2}, guard.Config{})
	run(t, g, steps(edit("a1")))
	if d := testutil.Preflight(t, g, edit("a1"), edit("a2")); !d.Allow {
		t.Errorf("preflight refused: %v", d.Verdict())
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		opts   failure.Options
		fields []string
	}{
		{failure.Options{Threshold: 1}, []string{"Threshold"}},
		{failure.Options{Threshold: -1, Window: 1}, []string{"Window", "Threshold"}},
		{failure.Options{Window: failure.MaxWindow + 1}, []string{"Window"}},
		{failure.Options{Window: 4, Threshold: 5}, []string{"Threshold"}},
		{failure.Options{Window: 4}, []string{"Threshold"}}, // the default threshold is over it
		{failure.Options{SameCall: 1}, []string{"SameCall"}},
		{failure.Options{SameCall: 6}, []string{"SameCall"}}, // over the default threshold
		{failure.Options{Threshold: 4, SameCall: 5}, []string{"SameCall"}},
	} {
		d, err := failure.New(tt.opts)
		if d != nil || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, %v; want an invalid option", tt.opts, d, err)
			continue
		}
		if diff := cmp.Diff(tt.fields, testutil.OptionFields(t, err, failure.Name)); diff != "" {
			t.Errorf("New(%+v) fields (-want +got):\n%s", tt.opts, diff)
		}
	}
	for _, o := range []failure.Options{{Window: 2, Threshold: 2}, {Window: 5}, {Window: failure.MaxWindow}, {Threshold: 10},
		{SameCall: 2}, {SameCall: 5}, {Threshold: 2}} {
		if _, err := failure.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	d := newRule(t, failure.Options{})
	if diff := cmp.Diff(failure.Options{Threshold: 5, Window: 10, SameCall: 3}, d.Options()); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	if d.Name() != "failure" || d.Priority() != 425 {
		t.Errorf("Name, Priority = %q, %d", d.Name(), d.Priority())
	}
}

// TestSnapshotRestoreContinues cuts random runs at random points, restores
// and checks that the restored guard gives the same verdicts.
func TestSnapshotRestoreContinues(t *testing.T) {
	pool := []guard.ToolCall{edit("a"), edit("b"), build("", 1), build("x", 2), ok("r", "1"), ok("think", "1"), ok("cp", "c"), ok("mv", "m"),
		{Name: "log", Args: 1}}
	rapid.Check(t, func(t *rapid.T) {
		w := rapid.IntRange(2, 6).Draw(t, "window")
		opts := failure.Options{Window: w, Threshold: rapid.IntRange(2, w).Draw(t, "threshold"), Warn: rapid.Bool().Draw(t, "warn")}
		opts.SameCall = rapid.IntRange(2, opts.Threshold).Draw(t, "sameCall")
		gopts := guard.Config{Ignore: []string{"think"}, Rules: []rule.Rule{newRule(t, opts)}}
		ss := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) guard.Step {
			return guard.Step{ToolCalls: rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3).Draw(t, "calls")}
		}), 1, 30).Draw(t, "steps")
		cut := rapid.IntRange(0, len(ss)).Draw(t, "cut")
		orig, err := guard.New(gopts)
		if err != nil {
			t.Fatal(err)
		}
		run(t, orig, ss[:cut])
		data, err := orig.Snapshot(context.Background(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restored, err := guard.Restore(data, gopts)
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, data)
		}
		if diff := cmp.Diff(run(t, orig, ss[cut:]), run(t, restored, ss[cut:])); diff != "" {
			t.Fatalf("verdicts after restore (-orig +restored):\n%s", diff)
		}
	})
}

// failed returns the facts of step i with one call that failed, the same
// way each time.
func failed(i int) *rule.Facts {
	return &rule.Facts{Index: i, Steps: i + 1, Calls: []rule.Call{{Tool: "str_replace", Key: canonical.HashString("key"),
		Failed: true, Failure: canonical.HashString("failure"), Retry: canonical.HashString("retry")}}}
}

func TestRestoreRejects(t *testing.T) {
	const k = `"0123456789abcdef0123456789abcdef"`
	for _, s := range []string{
		``, `[]`, `{`, `{"failures":[]}`, `{}`, `{"failures":null,"steps":[]}`,
		`{"failures":[` + k + `],"steps":[]}`,
		`{"failures":[` + k + `],"steps":[0]}`, // no tools
		`{"tools":[],"failures":[` + k + `],"steps":[0]}`,
		`{"tools":[` + k + `],"failures":[` + k + `],"steps":[0]}`,              // no ops
		`{"tools":[` + k + `],"ops":[null],"failures":[` + k + `],"steps":[0]}`, // a failure needs its operation
		`{"failures":[` + k + `,null],"steps":[2,1]}`,
		`{"failures":[` + k + `],"steps":[-1]}`,
		`{"failures":["00000000000000000000000000000000"],"steps":[0]}`,
		`{"failures":[null,null,null,null],"steps":[0,0,0,0]}`, // more than the window
		`{"failures":[7],"steps":[0]}`,
		`{"tools":[null],"ops":[null],"failures":[null],"results":[null],"steps":[0]}`,
		`{"tools":[null],"ops":[null],"failures":[null],"results":[` + k + `,` + k + `],"steps":[0]}`,
		`{"tools":[null],"ops":[null],"failures":[null],"results":["00000000000000000000000000000000"],"steps":[0]}`,
		`{"tools":[` + k + `],"ops":[` + k + `],"failures":[` + k + `],"results":[` + k + `],"steps":[0]}`,
	} {
		d := newState(t, failure.Options{Window: 3, Threshold: 2})
		d.Observe(failed(0))
		if err := d.Restore([]byte(s)); err == nil {
			t.Errorf("Restore(%s) succeeded", s)
		}
		if d.Observe(failed(1)); !d.Verdict().Stop {
			t.Errorf("after Restore(%s) failed, the state was lost", s)
		}
	}
	for _, s := range []string{`{"tools":[` + k + `],"ops":[` + k + `],"failures":[` + k + `],"steps":[0]}`,
		`{"tools":[` + k + `,` + k + `,` + k + `],"ops":[null,` + k + `,` + k + `],"failures":[null,` + k + `,null],"steps":[0,0,3]}`,
		`{"tools":[null,` + k + `],"ops":[null,` + k + `],"failures":[null,` + k + `],"results":[` + k + `,null],"steps":[0,1]}`} {
		d := newState(t, failure.Options{Window: 3, Threshold: 2})
		if err := d.Restore([]byte(s)); err != nil {
			t.Errorf("Restore(%s): %v", s, err)
		}
		if got, _ := d.Snapshot(guard.SnapshotOptions{}); string(got) != s {
			t.Errorf("snapshot after restore = %s, want %s", got, s)
		}
	}
}

// TestGuardsOfOneRuleAreIndependent runs two guards made from one rule: the
// first stops at the k-th same failure of one call, the second has seen none
// of them and stops at exactly its own k-th, and the first's window went on.
func TestGuardsOfOneRuleAreIndependent(t *testing.T) {
	track := guard.ToolCall{Name: "track", Args: map[string]string{"id": "A"}, Err: errors.New("400 Bad Request")}
	for _, tt := range []struct {
		opts failure.Options
		k    int
	}{
		{failure.Options{}, 3},
		{failure.Options{Threshold: 2}, 2},
		{failure.Options{Threshold: 4, SameCall: 4, Warn: true}, 4},
		{failure.Options{Window: 6, Threshold: 6, SameCall: 6}, 6},
	} {
		r := newRule(t, tt.opts)
		g1, g2 := testutil.New(t, r), testutil.New(t, r)
		ss := make([]guard.Step, tt.k)
		for i := range ss {
			ss[i] = guard.Step{ToolCalls: []guard.ToolCall{track}}
		}
		want := make([]string, tt.k)
		want[tt.k-1] = fmt.Sprintf("%s %d", failure.Code, tt.k)
		for n, g := range []*guard.Guard{g1, g2} {
			if diff := cmp.Diff(want, stops(run(t, g, ss))); diff != "" {
				t.Errorf("%+v, guard %d: stops (-want +got):\n%s", tt.opts, n+1, diff)
			}
		}
		window := tt.opts.Window
		if window == 0 {
			window = failure.DefaultWindow
		}
		next := []string{fmt.Sprintf("%s %d", failure.Code, min(tt.k+1, window))}
		if diff := cmp.Diff(next, stops(run(t, g1, ss[:1]))); diff != "" {
			t.Errorf("%+v, guard 1 after guard 2's run (-want +got):\n%s", tt.opts, diff)
		}
	}
}
