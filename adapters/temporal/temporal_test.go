package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	commonpb "go.temporal.io/api/common/v1"

	lgtemporal "github.com/loopguard/loopguard/adapters/temporal"
	"github.com/loopguard/loopguard/guard"
)

// The feedback of the third identical search, as the repeat rule words it.
const refusedSearch = "That call was not run: it would have been the 3rd call in a row to `Search` with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know."

// options are the interceptor's options in the tests: the Chat activity is
// the model; every other activity is a tool.
func options() lgtemporal.Options {
	return lgtemporal.Options{Models: map[string]lgtemporal.ModelFunc{"Chat": lgtemporal.Model(step)}}
}

// env returns a test environment whose worker has the interceptor, with the
// agent and the activities registered.
func env(t *testing.T, o lgtemporal.Options, acts *Activities) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	itc, err := lgtemporal.NewInterceptor(o)
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(testHandler{t})))
	e := s.NewTestWorkflowEnvironment()
	e.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{itc}})
	e.RegisterWorkflow(Agent)
	e.RegisterActivity(acts)
	return e
}

// testHandler writes the SDK's warnings and errors to the test's log.
type testHandler struct{ t *testing.T }

func (h testHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h testHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.t.Log(b.String())
	return nil
}
func (h testHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h testHandler) WithGroup(string) slog.Handler      { return h }

// result returns the workflow's result, failing the test on an error.
func result(t *testing.T, e *testsuite.TestWorkflowEnvironment) Result {
	t.Helper()
	if !e.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var r Result
	if err := e.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// summary queries the guard's summary.
func summary(t *testing.T, e *testsuite.TestWorkflowEnvironment) guard.Summary {
	t.Helper()
	v, err := e.QueryWorkflow(lgtemporal.QuerySummary)
	if err != nil {
		t.Fatal(err)
	}
	var s guard.Summary
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRepeatRefusedAtThirdCall: a model that asks for the same search every
// turn gets it twice; the third is refused and not scheduled, and the
// workflow is answered with the feedback. The refusals go on until the
// refusal rule stops the run at the model call after the third refusal, and
// the workflow gets the stop.
func TestRepeatRefusedAtThirdCall(t *testing.T) {
	acts := &Activities{Script: stubborn}
	e := env(t, options(), acts)
	e.ExecuteWorkflow(Agent, Input{})
	got := result(t, e)
	want := Result{Stops: []string{"REPEATED_REFUSAL"}, Refusals: []string{refusedSearch, refusedSearch, refusedSearch}, Runs: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"Search": 2}, acts.ran()); diff != "" {
		t.Errorf("tool bodies run (-want +got):\n%s", diff)
	}
	s := summary(t, e)
	// Five steps: two calls that ran, three refused. The sixth model call
	// was not made.
	if s.Steps != 5 || s.ToolCalls != 2 || s.Totals.InputTokens != 500 || s.Totals.OutputTokens != 50 {
		t.Errorf("summary: %d steps, %d calls, totals %+v; want 5, 2, 500 in and 50 out", s.Steps, s.ToolCalls, s.Totals)
	}
	if s.LastVerdict == nil || s.LastVerdict.Code != "REPEATED_REFUSAL" {
		t.Errorf("last verdict %+v, want the refusal rule's stop", s.LastVerdict)
	}
}

// TestThirdCallBoundary: with a threshold of 4, the third identical call
// runs and the fourth is refused (K-1 goes on, K stops).
func TestThirdCallBoundary(t *testing.T) {
	acts := &Activities{Script: stubborn}
	o := options()
	o.Config = []byte(`{"repeatedToolCall": {"threshold": 4}}`)
	e := env(t, o, acts)
	e.ExecuteWorkflow(Agent, Input{})
	got := result(t, e)
	if diff := cmp.Diff(map[string]int{"Search": 3}, acts.ran()); diff != "" {
		t.Errorf("tool bodies run (-want +got):\n%s", diff)
	}
	if len(got.Refusals) == 0 || !strings.Contains(got.Refusals[0], "the 4th call in a row") {
		t.Errorf("refusals %q, want the fourth call refused", got.Refusals)
	}
}

// TestAnswerGoesOn: a model that searches for new things and answers is
// never refused, and its steps are all recorded, the last one when the
// workflow returns.
func TestAnswerGoesOn(t *testing.T) {
	acts := &Activities{Script: learner}
	e := env(t, options(), acts)
	e.ExecuteWorkflow(Agent, Input{})
	got := result(t, e)
	if diff := cmp.Diff(Result{Answer: "Done: 2", Runs: 1}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	s := summary(t, e)
	if s.Steps != 3 || s.ToolCalls != 2 {
		t.Errorf("summary: %d steps, %d calls; want 3 and 2", s.Steps, s.ToolCalls)
	}
	if s.LastVerdict == nil || !s.LastVerdict.Stop || guard.IsFault(*s.LastVerdict) {
		t.Errorf("last verdict %+v, want the normal finish", s.LastVerdict)
	}
}

// TestParallelTools: three identical calls of one reply, each scheduled
// from a coroutine of its own, are judged as one step: two run, the third is
// refused. Run under the race detector, it also shows that the guard's
// locks are safe in a workflow.
func TestParallelTools(t *testing.T) {
	for _, coroutines := range []bool{false, true} {
		acts := &Activities{Script: func(turn int, _ []string) Reply {
			if turn > 0 {
				return Reply{Text: "Done.", FinishReason: "stop"}
			}
			c := Call{Tool: "Search", Query: "same"}
			return Reply{Calls: []Call{c, c, c}, FinishReason: "tool-calls"}
		}}
		e := env(t, options(), acts)
		e.ExecuteWorkflow(Agent, Input{Coroutines: coroutines})
		got := result(t, e)
		if len(got.Refusals) != 1 || acts.ran()["Search"] != 2 {
			t.Errorf("coroutines %v: %d refusals and %d runs, want 1 and 2", coroutines, len(got.Refusals), acts.ran()["Search"])
		}
		if s := summary(t, e); s.Steps != 2 || s.ToolCalls != 2 {
			t.Errorf("coroutines %v: summary %d steps, %d calls; want 2 and 2", coroutines, s.Steps, s.ToolCalls)
		}
	}
}

// TestFailureRecorded: a tool that fails is recorded as a failed call, with
// its error's message.
func TestFailureRecorded(t *testing.T) {
	acts := &Activities{Script: func(turn int, history []string) Reply {
		if turn > 0 {
			return Reply{Text: history[0], FinishReason: "stop"}
		}
		return Reply{Calls: []Call{{Tool: "Fetch", Query: "http://example.test"}}, FinishReason: "tool-calls"}
	}}
	e := env(t, options(), acts)
	e.ExecuteWorkflow(Agent, Input{})
	got := result(t, e)
	if !strings.HasPrefix(got.Answer, "Error: ") {
		t.Errorf("answer %q, want the tool's error", got.Answer)
	}
	if s := summary(t, e); s.ToolCalls != 1 || s.FailedToolCalls != 1 {
		t.Errorf("summary: %d calls, %d failed; want 1 and 1", s.ToolCalls, s.FailedToolCalls)
	}
}

// TestToolsList: an activity type that is neither a model nor a listed
// tool passes untouched.
func TestToolsList(t *testing.T) {
	acts := &Activities{Script: stubborn}
	o := options()
	o.Tools = []string{"Fetch"}
	e := env(t, o, acts)
	e.ExecuteWorkflow(Agent, Input{ContinueEvery: 5})
	var cont *workflow.ContinueAsNewError
	if err := e.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("workflow error %v, want it to continue as new", err)
	}
	if n := acts.ran()["Search"]; n != 5 {
		t.Errorf("Search ran %d times, want 5 (it is not a tool of the guard)", n)
	}
}

// TestLocalActivities: tools run as local activities are guarded too.
func TestLocalActivities(t *testing.T) {
	acts := &Activities{Script: stubborn}
	e := env(t, options(), acts)
	e.ExecuteWorkflow(Agent, Input{Local: true})
	got := result(t, e)
	if len(got.Stops) != 1 || len(got.Refusals) != 3 || acts.ran()["Search"] != 2 {
		t.Errorf("result %+v with Search run %d times; want 3 refusals, a stop and 2 runs", got, acts.ran()["Search"])
	}
}

// TestWorkflowsList: a workflow type that is not listed is not guarded.
func TestWorkflowsList(t *testing.T) {
	for _, tt := range []struct {
		workflows []string
		runs      int
	}{{[]string{"Other"}, 5}, {[]string{"Other", "Agent"}, 2}} {
		acts := &Activities{Script: stubborn}
		o := options()
		o.Workflows = tt.workflows
		e := env(t, o, acts)
		e.ExecuteWorkflow(Agent, Input{ContinueEvery: 5})
		if n := acts.ran()["Search"]; n != tt.runs {
			t.Errorf("workflows %q: Search ran %d times, want %d", tt.workflows, n, tt.runs)
		}
	}
}

// continued runs the agent until it continues as new, and returns the
// continue-as-new error.
func continued(t *testing.T, e *testsuite.TestWorkflowEnvironment, in Input) *workflow.ContinueAsNewError {
	t.Helper()
	e.ExecuteWorkflow(Agent, in)
	var cont *workflow.ContinueAsNewError
	if err := e.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("workflow error %v, want it to continue as new", err)
	}
	return cont
}

// TestContinueAsNew: the guard's state crosses continue-as-new in the
// header: the stubborn model's search ran twice in the first run, and the
// next run refuses the third at once. The snapshot in the header is
// redacted.
func TestContinueAsNew(t *testing.T) {
	acts := &Activities{Script: stubborn}
	cont := continued(t, env(t, options(), acts), Input{ContinueEvery: 2})
	if n := acts.ran()["Search"]; n != 2 {
		t.Fatalf("first run: Search ran %d times, want 2", n)
	}
	p := cont.Header.GetFields()[lgtemporal.HeaderSnapshot]
	if p == nil {
		t.Fatalf("no %s header in %v", lgtemporal.HeaderSnapshot, cont.Header)
	}
	if strings.Contains(string(p.GetData()), "loop guard") {
		t.Errorf("the carried snapshot quotes the arguments: %s", p.GetData())
	}
	var in Input
	if err := converter.GetDefaultDataConverter().FromPayloads(cont.Input, &in); err != nil {
		t.Fatal(err)
	}

	in.ContinueEvery = 0
	e := env(t, options(), acts)
	e.SetHeader(cont.Header)
	e.ExecuteWorkflow(Agent, in)
	got := result(t, e)
	if n := acts.ran()["Search"]; n != 2 {
		t.Errorf("Search ran %d times in all, want 2: the next run forgot the first", n)
	}
	want := Result{Stops: []string{"REPEATED_REFUSAL"}, Refusals: []string{refusedSearch, refusedSearch, refusedSearch}, Runs: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second run (-want +got):\n%s", diff)
	}
	if s := summary(t, e); s.Steps != 5 {
		t.Errorf("summary: %d steps, want 5 (2 carried, 3 new)", s.Steps)
	}

	// Without the header, the next run starts afresh: the proof that the
	// header carried the state.
	acts2 := &Activities{Script: stubborn}
	e = env(t, options(), acts2)
	e.ExecuteWorkflow(Agent, in)
	result(t, e)
	if n := acts2.ran()["Search"]; n != 2 {
		t.Errorf("without the header, Search ran %d times, want 2", n)
	}
}

// TestContinueAsNewStopped: a stop found when the last step is checked
// before continuing as new is returned instead of the continue-as-new
// error, and the workflow fails with it.
func TestContinueAsNewStopped(t *testing.T) {
	acts := &Activities{Script: stubborn}
	o := options()
	o.Config = []byte(`{"maxSteps": 2}`)
	e := env(t, o, acts)
	e.ExecuteWorkflow(Agent, Input{ContinueEvery: 2})
	var app *sdktemporal.ApplicationError
	if err := e.GetWorkflowError(); !errors.As(err, &app) || app.Type() != lgtemporal.ErrorTypeStop || !app.NonRetryable() {
		t.Fatalf("workflow error %v, want a non-retryable %s", err, lgtemporal.ErrorTypeStop)
	}
	// Across the workflow's boundary the cause, a *guard.StopError in the
	// workflow, is an application error with its text.
	var cause *sdktemporal.ApplicationError
	if want := "loopguard: run stopped: max-steps (MAX_STEPS)"; !errors.As(errors.Unwrap(app), &cause) || cause.Message() != want {
		t.Errorf("cause %v, want %q", errors.Unwrap(app), want)
	}
}

// TestCarriedSnapshotUnusable: a header whose snapshot does not restore
// under the worker's options is dropped, and the run starts afresh.
func TestCarriedSnapshotUnusable(t *testing.T) {
	acts := &Activities{Script: stubborn}
	cont := continued(t, env(t, options(), acts), Input{ContinueEvery: 2})
	var in Input
	if err := converter.GetDefaultDataConverter().FromPayloads(cont.Input, &in); err != nil {
		t.Fatal(err)
	}
	in.ContinueEvery = 0
	o := options()
	o.Config = []byte(`{"repeatedToolCall": {"threshold": 5}}`)
	acts2 := &Activities{Script: stubborn}
	e := env(t, o, acts2)
	e.SetHeader(cont.Header)
	e.ExecuteWorkflow(Agent, in)
	result(t, e)
	if n := acts2.ran()["Search"]; n != 4 {
		t.Errorf("Search ran %d times, want 4 (a fresh guard with threshold 5)", n)
	}

	bad := &commonpb.Header{Fields: map[string]*commonpb.Payload{lgtemporal.HeaderSnapshot: {Data: []byte("{")}}}
	acts3 := &Activities{Script: stubborn}
	e = env(t, options(), acts3)
	e.SetHeader(bad)
	e.ExecuteWorkflow(Agent, in)
	result(t, e)
	if n := acts3.ran()["Search"]; n != 2 {
		t.Errorf("after an unreadable header, Search ran %d times, want 2", n)
	}
}

// signal sends a control signal after d of workflow time.
func signal(e *testsuite.TestWorkflowEnvironment, d time.Duration, c lgtemporal.Control) {
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(lgtemporal.SignalControl, c) }, d)
}

// varied searches for something new every turn and answers at turn 6.
func varied(turn int, _ []string) Reply {
	if turn == 6 {
		return Reply{Text: "Done.", FinishReason: "stop"}
	}
	q := string(rune('a' + turn))
	return Reply{Text: "Searching " + q, Calls: []Call{{Tool: "Search", Query: q}}, FinishReason: "tool-calls"}
}

// TestControlSignal: a signal raises a limit and lifts the stop it caused,
// resets the run, or is refused when it changes more than limits.
func TestControlSignal(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		script  func(int, []string) Reply
		control lgtemporal.Control
		want    Result
		runs    int
	}{
		{
			name: "raise maxSteps", config: `{"maxSteps": 3}`, script: varied,
			control: lgtemporal.Control{Limits: json.RawMessage(`{"maxSteps": 20}`)},
			want:    Result{Answer: "Done.", Stops: []string{"MAX_STEPS"}, Runs: 1},
			runs:    6,
		},
		{
			name: "a limit too low again", config: `{"maxSteps": 3}`, script: varied,
			control: lgtemporal.Control{Limits: json.RawMessage(`{"maxSteps": 4}`)},
			want:    Result{Stops: []string{"MAX_STEPS", "MAX_STEPS"}, Runs: 1},
			runs:    4,
		},
		{
			name: "raising a limit does not lift a repeat stop", config: `{}`, script: stubborn,
			control: lgtemporal.Control{Limits: json.RawMessage(`{"maxSteps": 500}`)},
			want:    Result{Stops: []string{"REPEATED_REFUSAL"}, Refusals: []string{refusedSearch, refusedSearch, refusedSearch}, Runs: 1},
			runs:    2,
		},
		{
			name: "reset", config: `{}`, script: stubborn,
			control: lgtemporal.Control{Reset: true},
			want: Result{Stops: []string{"REPEATED_REFUSAL", "REPEATED_REFUSAL"},
				Refusals: []string{refusedSearch, refusedSearch, refusedSearch, refusedSearch, refusedSearch, refusedSearch}, Runs: 1},
			runs: 4,
		},
		{
			name: "a change of a rule is refused", config: `{}`, script: stubborn,
			control: lgtemporal.Control{Limits: json.RawMessage(`{"repeatedToolCall": {"threshold": 10}}`)},
			want:    Result{Stops: []string{"REPEATED_REFUSAL"}, Refusals: []string{refusedSearch, refusedSearch, refusedSearch}, Runs: 1},
			runs:    2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts := &Activities{Script: tt.script}
			o := options()
			o.Config = []byte(tt.config)
			e := env(t, o, acts)
			signal(e, time.Minute, tt.control) // the agent is stopped and waits by then
			e.ExecuteWorkflow(Agent, Input{WaitOnStop: true})
			got := result(t, e)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if n := acts.ran()["Search"]; n != tt.runs {
				t.Errorf("Search ran %d times, want %d", n, tt.runs)
			}
		})
	}
}

// TestWorkflowClock: the duration budget reads the workflow's clock, which
// the test environment moves on at each sleep while hardly any wall-clock
// time passes. With an hour's budget and 20 minutes before each model call,
// the budget is reached at the third model call (60 minutes: K stops); with
// 19 minutes, at the fourth (57 minutes go on).
func TestWorkflowClock(t *testing.T) {
	for _, tt := range []struct {
		think time.Duration
		runs  int
	}{{20 * time.Minute, 2}, {19 * time.Minute, 3}} {
		acts := &Activities{Script: varied}
		o := options()
		o.Config = []byte(`{"budget": {"maxDurationMs": 3600000}}`)
		e := env(t, o, acts)
		e.ExecuteWorkflow(Agent, Input{Think: tt.think})
		got := result(t, e)
		if diff := cmp.Diff(Result{Stops: []string{"BUDGET_DURATION_MS"}, Runs: 1}, got); diff != "" {
			t.Errorf("think %v: result (-want +got):\n%s", tt.think, diff)
		}
		if n := acts.ran()["Search"]; n != tt.runs {
			t.Errorf("think %v: Search ran %d times, want %d", tt.think, n, tt.runs)
		}
	}
}

// TestObserver: the observer is told of each decision and verdict, with
// the workflow's step indexes.
func TestObserver(t *testing.T) {
	var mu sync.Mutex
	var got []string
	o := options()
	o.Observer = func(_ context.Context, e guard.Event) {
		mu.Lock()
		defer mu.Unlock()
		s := e.Phase.String()
		if e.Verdict.Stop {
			s += " " + e.Verdict.Code
		}
		got = append(got, s)
	}
	e := env(t, o, &Activities{Script: learner})
	e.ExecuteWorkflow(Agent, Input{})
	result(t, e)
	want := []string{"preflight", "check", "preflight", "check", "check FINISH_TERMINAL"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestNewInterceptorErrors: each invalid option is named.
func TestNewInterceptorErrors(t *testing.T) {
	m := lgtemporal.Model(step)
	tests := []struct {
		name string
		o    lgtemporal.Options
		want []string // the fields named
	}{
		{"no models", lgtemporal.Options{}, []string{"Models"}},
		{"nil model", lgtemporal.Options{Models: map[string]lgtemporal.ModelFunc{"Chat": nil}}, []string{"Models[Chat]"}},
		{"model and tool", lgtemporal.Options{Models: map[string]lgtemporal.ModelFunc{"Chat": m}, Tools: []string{"Search", "Chat"}}, []string{"Tools"}},
		{"bad config", lgtemporal.Options{Models: map[string]lgtemporal.ModelFunc{"Chat": m}, Config: []byte(`{"maxStep": 3}`)}, []string{"Config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lgtemporal.NewInterceptor(tt.o)
			if !errors.Is(err, guard.ErrInvalidOption) {
				t.Fatalf("error %v, want an invalid option", err)
			}
			var fields []string
			for _, e := range unjoin(err) {
				var oe *guard.OptionError
				if errors.As(e, &oe) {
					fields = append(fields, oe.Field)
				}
			}
			if diff := cmp.Diff(tt.want, fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := lgtemporal.NewInterceptor(options()); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
