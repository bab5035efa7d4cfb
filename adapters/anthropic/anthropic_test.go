package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
	"github.com/google/go-cmp/cmp"

	lganthropic "github.com/loopguard/loopguard/adapters/anthropic"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
)

// replay is a fake Messages API that answers each request with the next
// recorded message of a run, and keeps the request bodies.
type replay struct {
	t         *testing.T
	mu        sync.Mutex
	responses []json.RawMessage
	requests  []string
}

func newReplay(t *testing.T, file string) (*replay, sdk.Client) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	r := &replay{t: t}
	if err := json.Unmarshal(data, &r.responses); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
	return r, client
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.Path != "/v1/messages" {
		r.t.Errorf("unexpected request %s %s", req.Method, req.URL.Path)
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	r.requests = append(r.requests, string(body))
	if len(r.requests) > len(r.responses) {
		r.t.Errorf("request %d: the recorded run has only %d messages", len(r.requests), len(r.responses))
		http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no more messages"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(r.responses[len(r.requests)-1])
}

// toolResults returns the tool results of the last user message of the
// i-th request (0-based): "id: text" for each, "!" before an error.
func (r *replay) toolResults(i int) []string {
	r.t.Helper()
	r.mu.Lock()
	body := r.requests[i]
	r.mu.Unlock()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		r.t.Fatal(err)
	}
	last := req.Messages[len(req.Messages)-1]
	var blocks []struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		IsError   bool   `json:"is_error"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if last.Role != "user" || json.Unmarshal(last.Content, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		var text []string
		for _, c := range b.Content {
			text = append(text, c.Text)
		}
		mark := ""
		if b.IsError {
			mark = "!"
		}
		out = append(out, mark+b.ToolUseID+": "+strings.Join(text, ""))
	}
	return out
}

func (r *replay) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

type weatherIn struct {
	City string `json:"city"`
	Unit string `json:"unit"`
}

// newWeather returns the get_weather tool; it counts its runs.
func newWeather(t *testing.T, runs *int, mu *sync.Mutex) sdk.BetaTool {
	t.Helper()
	tool, err := toolrunner.NewBetaToolFromJSONSchema("get_weather", "Current weather in a city.",
		func(_ context.Context, in weatherIn) (sdk.BetaToolResultBlockParamContentUnion, error) {
			mu.Lock()
			*runs++
			mu.Unlock()
			text := "18 °C, sunny"
			if in.City == "Oslo" {
				text = "4 °C, rain"
			}
			return sdk.BetaToolResultBlockParamContentUnion{OfText: &sdk.BetaTextBlockParam{Text: text}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{History: 32, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func runnerParams() sdk.BetaToolRunnerParams {
	return sdk.BetaToolRunnerParams{BetaMessageNewParams: sdk.BetaMessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []sdk.BetaMessageParam{sdk.NewBetaUserMessage(sdk.NewBetaTextBlock("What is the weather in Paris?"))},
	}}
}

// refusalFeedback returns the feedback on a third identical get_weather
// call, from a twin guard.
func refusalFeedback(t *testing.T) string {
	t.Helper()
	twin := newGuard(t)
	c := guard.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","unit":"celsius"}`)}
	for range 2 {
		if _, err := twin.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{c}, FinishReason: "tool-calls"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := twin.Preflight(context.Background(), c)
	if err != nil || d.Allow {
		t.Fatal("the twin guard allowed the third call")
	}
	return d.Feedback
}

// A model that asks for the same forecast on every turn, in the same words,
// run by the SDK's tool runner: the third call is refused before it runs, the
// model is told why, and the run is stopped at the third refusal
// (REPEATED_REFUSAL). Its words repeat, but a step with a refused call is the
// refusal rule's: the repeated-text rule does not end the run in the step of
// the first refusal, before the model could act on it.
func TestToolRunnerStubbornLoop(t *testing.T) {
	rp, client := newReplay(t, "messages_stubborn.json")
	g := newGuard(t)
	lg := lganthropic.NewRunner(g)
	var mu sync.Mutex
	runs := 0
	runner := client.Beta.Messages.NewToolRunner(lg.Tools(newWeather(t, &runs, &mu)), runnerParams())

	ctx := context.Background()
	messages := 0
	var v guard.Verdict
	var stopErr error
	for msg, err := range runner.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		messages++
		v, err = lg.Check(ctx, msg)
		if (err != nil) != v.Stop {
			t.Fatalf("message %d: verdict %v with error %v", messages, v, err)
		}
		if err != nil {
			stopErr = err
			break
		}
	}
	if v.Code != "REPEATED_REFUSAL" || v.Feedback == "" {
		t.Errorf("verdict %+v, want a repeated-refusal stop with feedback", v)
	}
	var stop *guard.StopError
	if !errors.As(stopErr, &stop) || stop.Verdict.Code != "REPEATED_REFUSAL" {
		t.Errorf("Check's error %v, want a *guard.StopError carrying the stop", stopErr)
	}
	// The fifth turn's step is recorded when the sixth message arrives.
	if messages != 6 || rp.count() != 6 {
		t.Errorf("%d messages, %d requests; want 6 and 6", messages, rp.count())
	}
	if runs != 2 {
		t.Errorf("the tool ran %d times, want 2", runs)
	}
	refusal := "Error: " + refusalFeedback(t)
	want := [][]string{
		nil,
		{"toolu_01Wx1: 18 °C, sunny"},
		{"toolu_01Wx2: 18 °C, sunny"},
		{"!toolu_01Wx3: " + refusal},
		{"!toolu_01Wx4: " + refusal},
		{"!toolu_01Wx5: " + refusal},
	}
	var got [][]string
	for i := range rp.count() {
		got = append(got, rp.toolResults(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool results sent (-want +got):\n%s", diff)
	}
	sum := summary(t, g)
	if sum.Steps != 5 || sum.ToolCalls != 2 || sum.Totals.InputTokens != 490+580+670+760+850 {
		t.Errorf("summary: %+v", sum)
	}
	// The refusals are recorded as such, with their tool_use IDs.
	var refused []string
	for _, s := range g.History() {
		for _, c := range s.Refused {
			refused = append(refused, c.ID)
		}
	}
	if diff := cmp.Diff([]string{"toolu_01Wx3", "toolu_01Wx4", "toolu_01Wx5"}, refused); diff != "" {
		t.Errorf("refusals recorded (-want +got):\n%s", diff)
	}
	if strings.Contains(refusalFeedback(t), "Paris") {
		t.Error("the refusal quotes the arguments")
	}
}

// The tools of one turn run in parallel; they see each other: of three
// identical calls in a row one is refused, and the call for Oslo after them
// runs. Execute is not told which tool_use block it answers, so which of the
// identical calls gets the refusal is up to the scheduler; they are
// identical, so it does not matter which.
func TestToolRunnerParallelCalls(t *testing.T) {
	rp, client := newReplay(t, "messages_parallel.json")
	g := newGuard(t)
	lg := lganthropic.NewRunner(g)
	var mu sync.Mutex
	runs := 0
	runner := client.Beta.Messages.NewToolRunner(lg.Tools(newWeather(t, &runs, &mu)), runnerParams())

	var verdicts []guard.Verdict
	for msg, err := range runner.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		v, err := lg.Check(context.Background(), msg)
		if err != nil {
			t.Errorf("Check: %v (a normal finish is not an error)", err)
		}
		verdicts = append(verdicts, v)
	}
	if len(verdicts) != 2 || verdicts[0].Stop || verdicts[1].Reason != finish.ReasonFinishReason || guard.IsFault(verdicts[1]) {
		t.Errorf("verdicts %+v, want go on, then a normal finish", verdicts)
	}
	if runs != 3 {
		t.Errorf("the tool ran %d times, want 3", runs)
	}
	refusal := "!toolu_01P?: Error: " + refusalFeedback(t)
	want := []string{refusal, "toolu_01P?: 18 °C, sunny", "toolu_01P?: 18 °C, sunny", "toolu_01P4: 4 °C, rain"}
	var got []string
	for _, r := range rp.toolResults(1) {
		if !strings.Contains(r, "toolu_01P4") {
			r = strings.Replace(r, r[strings.Index(r, "toolu_01P"):][:len("toolu_01P1")], "toolu_01P?", 1)
		}
		got = append(got, r)
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool results, IDs of identical calls as ? (-want +got):\n%s", diff)
	}
	if sum := summary(t, g); sum.Steps != 2 || sum.ToolCalls != 3 {
		t.Errorf("summary: %d steps, %d calls; want 2, 3", sum.Steps, sum.ToolCalls)
	}
}

// Without Check, each call is judged alone with the calls still running and
// recorded as a step of its own: of three identical parallel calls, two run
// whatever the order, and the refusal is a step of its own.
func TestToolRunnerWithoutCheck(t *testing.T) {
	_, client := newReplay(t, "messages_parallel_same.json")
	g := newGuard(t)
	lg := lganthropic.NewRunner(g)
	var mu sync.Mutex
	runs := 0
	runner := client.Beta.Messages.NewToolRunner(lg.Tools(newWeather(t, &runs, &mu)), runnerParams())
	if _, err := runner.RunToCompletion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Errorf("the tool ran %d times, want 2", runs)
	}
	if sum := summary(t, g); sum.Steps != 3 || sum.ToolCalls != 2 {
		t.Errorf("summary: %d steps, %d calls; want 3 (2 calls and a refusal), 2", sum.Steps, sum.ToolCalls)
	}
}

// A decorated tool refuses with guard's RefusedError, whose text is the
// feedback; the helpers hand their context to the observer.
func TestRefusalAndContext(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	g, err := guard.New(guard.Config{Rules: detector.Defaults(), Observer: func(ctx context.Context, e guard.Event) {
		mu.Lock()
		defer mu.Unlock()
		v, _ := ctx.Value(ctxKey{}).(string)
		seen = append(seen, e.Phase.String()+":"+v)
	}})
	if err != nil {
		t.Fatal(err)
	}
	lg := lganthropic.NewRunner(g)
	var tmu sync.Mutex
	runs := 0
	tool := lg.Tool(newWeather(t, &runs, &tmu))
	var m sdk.BetaMessage
	if err := json.Unmarshal([]byte(`{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
		"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
		"stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}`), &m); err != nil {
		t.Fatal(err)
	}
	var errs []error
	for i := range 3 {
		ctx := context.WithValue(context.Background(), ctxKey{}, fmt.Sprint(i))
		if _, err := lg.Check(ctx, &m); err != nil {
			t.Fatalf("Check %d: %v", i, err)
		}
		_, err := tool.Execute(ctx, json.RawMessage(`{"city": "Paris"}`))
		errs = append(errs, err)
	}
	var refused *guard.RefusedError
	if errs[0] != nil || errs[1] != nil || !errors.As(errs[2], &refused) {
		t.Fatalf("errors %v; want the third call refused", errs)
	}
	if msg := errs[2].Error(); msg != refused.Decision.Feedback || strings.Contains(msg, "Paris") || refused.Decision.CallID != "toolu_1" {
		t.Errorf("refusal %q (%+v); want the feedback, without arguments, for toolu_1", msg, refused.Decision)
	}
	if runs != 2 {
		t.Errorf("the tool ran %d times, want 2", runs)
	}
	want := []string{"preflight:0", "check:1", "preflight:1", "check:2", "preflight:2"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("observer events (-want +got):\n%s", diff)
	}
}

type ctxKey struct{}

func TestStepFromMessage(t *testing.T) {
	var m sdk.Message
	err := json.Unmarshal([]byte(`{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": [
			{"type": "text", "text": "Checking."},
			{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "go"}},
			{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "go"}},
			{"type": "text", "text": "And more."},
			{"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}}
		],
		"stop_reason": "tool_use", "stop_sequence": null,
		"usage": {"input_tokens": 100, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 30, "output_tokens": 40}}`), &m)
	if err != nil {
		t.Fatal(err)
	}
	want := guard.Step{
		Text: "Checking.\nAnd more.",
		ToolCalls: []guard.ToolCall{
			{ID: "toolu_1", Name: "search", Args: json.RawMessage(`{"q": "go"}`)},
			{ID: "toolu_2", Name: "now", Args: json.RawMessage(`{}`)},
		},
		FinishReason: "tool-calls",
		Usage:        guard.Usage{InputTokens: 150, OutputTokens: 40},
	}
	if diff := cmp.Diff(want, lganthropic.StepFromMessage(&m)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	var bm sdk.BetaMessage
	if err := json.Unmarshal([]byte(m.RawJSON()), &bm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, lganthropic.StepFromBetaMessage(&bm)); diff != "" {
		t.Errorf("beta step (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(guard.Step{}, lganthropic.StepFromMessage(nil)); diff != "" {
		t.Errorf("step of nil (-want +got):\n%s", diff)
	}
}

func TestFinishReason(t *testing.T) {
	tests := map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls",
		"max_tokens": "length", "model_context_window_exceeded": "length",
		"refusal": "content-filter", "pause_turn": "", "compaction": "",
		"": "", "something_new": "something_new",
	}
	for in, want := range tests {
		if got := lganthropic.FinishReason(in); got != want {
			t.Errorf("FinishReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// summary returns g's summary.
func summary(t *testing.T, g *guard.Guard) guard.Summary {
	t.Helper()
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
