package goopenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/loopguard/loopguard/adapters/goopenai"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A reply is one scripted completion: tool calls, or else a final text.
type reply struct {
	calls []call
	text  string
}

// A call is one scripted tool call.
type call struct{ id, city string }

// model is a scripted chat completions server: it answers the i-th request
// with the i-th reply (the last one again once the script runs out) and
// keeps the requests.
type model struct {
	mu       sync.Mutex
	script   []reply
	requests []openai.ChatCompletionRequest
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || r.URL.Path != "/chat/completions" {
		http.Error(w, fmt.Sprintf("bad request to %s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	rp := m.script[min(len(m.requests), len(m.script))-1]
	m.mu.Unlock()
	msg := map[string]any{"role": "assistant", "content": rp.text}
	finish := "stop"
	if len(rp.calls) > 0 {
		var calls []map[string]any
		for _, c := range rp.calls {
			calls = append(calls, map[string]any{"id": c.id, "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": fmt.Sprintf(`{"city":%q}`, c.city)}})
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100},
	})
}

// forecast is the tool: it counts its runs per city.
type forecast struct {
	mu   sync.Mutex
	runs map[string]int
}

func (f *forecast) run(args string) string {
	var in struct{ City string }
	json.Unmarshal([]byte(args), &in)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[string]int)
	}
	f.runs[in.City]++
	return "18 °C, sunny in " + in.City
}

// runLoop runs the loop of the package documentation against the script,
// the allowed calls of a turn in parallel, and returns the loop's error.
func runLoop(t *testing.T, g *guard.Guard, m *model, tool *forecast) error {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()
	req := openai.ChatCompletionRequest{
		Model:    openai.GPT4o,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Weather in Paris?"}},
	}
	for range 10 {
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			return err
		}
		turn := goopenai.Preflight(ctx, g, resp)
		var wg sync.WaitGroup
		for _, c := range turn.Allowed() {
			wg.Go(func() { turn.SetResult(c.ID, tool.run(c.Function.Arguments), nil) })
		}
		wg.Wait()
		v, err := turn.End(ctx)
		if err != nil {
			return err
		}
		if v.Stop {
			return nil
		}
		req.Messages = append(req.Messages, turn.Messages()...)
	}
	t.Fatal("the loop did not end")
	return nil
}

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{History: 32, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// refusals returns, per recorded step, the IDs of the refused calls.
func refusals(g *guard.Guard) [][]string {
	var out [][]string
	for _, s := range g.History() {
		var ids []string
		for _, c := range s.Refused {
			ids = append(ids, c.ID)
		}
		out = append(out, ids)
	}
	return out
}

// toolMessage returns the content of the tool message answering id in req.
func toolMessage(t *testing.T, req openai.ChatCompletionRequest, id string) string {
	t.Helper()
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no tool message answers %s", id)
	return ""
}

// A model that asks for the same forecast on every turn: the third call is
// refused and the tool runs twice; the model is told so with the guard's
// feedback, and when it keeps asking the guard stops the loop with a
// *guard.StopError.
func TestStubbornModel(t *testing.T) {
	var script []reply
	for i := 1; i <= 6; i++ {
		script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
	}
	m := &model{script: script}
	tool := new(forecast)
	g := newGuard(t)
	err := runLoop(t, g, m, tool)
	var stop *guard.StopError
	if !errors.As(err, &stop) {
		t.Fatalf("the loop ended with %v, want a *guard.StopError", err)
	}
	if stop.Verdict.Code != "REPEATED_REFUSAL" || len(m.requests) != 5 {
		t.Fatalf("stopped by %s after %d requests, want REPEATED_REFUSAL after 5", stop.Verdict.Code, len(m.requests))
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2}, tool.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, {"call_4"}, {"call_5"}}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	feedback := toolMessage(t, m.requests[3], "call_3")
	if !strings.HasPrefix(feedback, "That call was not run") || strings.Contains(feedback, "Paris") {
		t.Errorf("the model was told %q, want the guard's feedback without the arguments", feedback)
	}
	if got := toolMessage(t, m.requests[2], "call_2"); got != "18 °C, sunny in Paris" {
		t.Errorf("the second call was answered with %q", got)
	}
}

// A model that takes the refusal and answers: the loop ends without an
// error, on a normal finish.
func TestModelRecovers(t *testing.T) {
	m := &model{script: []reply{
		{calls: []call{{"call_1", "Paris"}}},
		{calls: []call{{"call_2", "Paris"}}},
		{calls: []call{{"call_3", "Paris"}}},
		{text: "It is 18 °C and sunny in Paris."},
	}}
	tool := new(forecast)
	g := newGuard(t)
	if err := runLoop(t, g, m, tool); err != nil {
		t.Fatalf("a normal finish ended the loop with %v", err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2}, tool.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, nil}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	if v := summary(t, g).LastVerdict; v == nil || !v.Stop || guard.IsFault(*v) {
		t.Errorf("last verdict %+v, want a normal finish", v)
	}
}

// Identical parallel calls of one completion are judged together: of three
// in a row the third is refused, and the call for another city after them
// runs.
func TestParallelCalls(t *testing.T) {
	m := &model{script: []reply{
		{calls: []call{{"call_1", "Paris"}, {"call_2", "Paris"}, {"call_3", "Paris"}, {"call_4", "Berlin"}}},
		{text: "Sunny in both."},
	}}
	tool := new(forecast)
	g := newGuard(t)
	if err := runLoop(t, g, m, tool); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2, "Berlin": 1}, tool.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"call_3"}, nil}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	// Every call is answered, in order, the refused one with the feedback.
	second := m.requests[1]
	for _, id := range []string{"call_1", "call_2", "call_4"} {
		if got := toolMessage(t, second, id); !strings.HasPrefix(got, "18 °C") {
			t.Errorf("%s was answered with %q", id, got)
		}
	}
	if got := toolMessage(t, second, "call_3"); !strings.HasPrefix(got, "That call was not run") || strings.Contains(got, "Paris") {
		t.Errorf("call_3 was answered with %q", got)
	}
}

// StepFromResponse reads the text parts, the refusal, the calls, the
// usage, and counts the deprecated "function_call" as "tool_calls".
func TestStepFromResponse(t *testing.T) {
	resp := openai.ChatCompletionResponse{
		Choices: []openai.ChatCompletionChoice{{
			FinishReason: openai.FinishReasonFunctionCall,
			Message: openai.ChatCompletionMessage{
				Role:         openai.ChatMessageRoleAssistant,
				MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "Looking."}, {Type: openai.ChatMessagePartTypeImageURL}},
				Refusal:      "I will not.",
				ToolCalls:    []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}, {ID: "call_2", Function: openai.FunctionCall{Name: "now"}}},
			},
		}},
		Usage: openai.Usage{PromptTokens: 80, CompletionTokens: 20, TotalTokens: 100},
	}
	want := guard.Step{
		Text:         "Looking.\nI will not.",
		FinishReason: "tool_calls",
		ToolCalls:    []guard.ToolCall{{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}, {ID: "call_2", Name: "now"}},
		Usage:        guard.Usage{InputTokens: 80, OutputTokens: 20, TotalTokens: 100},
	}
	if diff := cmp.Diff(want, goopenai.StepFromResponse(resp)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(guard.Step{Usage: guard.Usage{InputTokens: 1}}, goopenai.StepFromResponse(openai.ChatCompletionResponse{Usage: openai.Usage{PromptTokens: 1}})); diff != "" {
		t.Errorf("step without choices (-want +got):\n%s", diff)
	}
	if got := goopenai.Preflight(context.Background(), newGuard(t), openai.ChatCompletionResponse{}).Messages(); got != nil {
		t.Errorf("Messages of a completion without choices: %v", got)
	}
}

// A call that failed is answered with its error when it has no output,
// and recorded as failed; an ID that names no allowed call is ignored.
func TestSetResult(t *testing.T) {
	ctx := context.Background()
	resp := openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{
		FinishReason: openai.FinishReasonToolCalls,
		Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{
			{ID: "a", Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			{ID: "b", Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Rome"}`}},
			{ID: "c", Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		}},
	}}}
	turn := goopenai.Preflight(ctx, newGuard(t), resp)
	if !turn.SetResult("a", "", errors.New("timeout")) || !turn.SetResult("b", "partial", errors.New("cut")) {
		t.Fatal("SetResult refused an allowed call")
	}
	if turn.SetResult("x", "?", nil) {
		t.Error("SetResult took an unknown ID")
	}
	var got []string
	for _, m := range turn.Messages()[1:] {
		got = append(got, m.ToolCallID+": "+m.Content)
	}
	want := []string{"a: Error: timeout", "b: partial", "c: That call was not run."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	step := turn.Step()
	if len(step.ToolCalls) != 2 || step.ToolCalls[0].Err == nil || step.ToolCalls[0].Result != nil || step.ToolCalls[1].Result != "partial" {
		t.Errorf("step calls: %+v", step.ToolCalls)
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
