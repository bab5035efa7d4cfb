package langchaingo_test

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
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/tools"

	lglangchaingo "github.com/loopguard/loopguard/adapters/langchaingo"
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

// A message is what the tests read of a request's messages.
type message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
}

// model is a scripted chat completions server: it answers the i-th request
// with the i-th reply (the last one again once the script runs out) and
// keeps the requests' messages.
type model struct {
	mu       sync.Mutex
	script   []reply
	requests [][]message
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Messages []message }
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || r.URL.Path != "/chat/completions" {
		http.Error(w, fmt.Sprintf("bad request to %s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req.Messages)
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

func (f *forecast) Name() string        { return "get_weather" }
func (f *forecast) Description() string { return "The weather in a city." }

func (f *forecast) Call(_ context.Context, input string) (string, error) {
	var in struct{ City string }
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		in.City = input // a text agent's input
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[string]int)
	}
	f.runs[in.City]++
	return "18 °C, sunny in " + in.City, nil
}

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{History: 32, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// run runs langchaingo's executor with a function-calling agent, wrapped,
// on its model wrapped for usage, against the script, and returns what the
// executor returned.
func run(t *testing.T, g *guard.Guard, m *model, tool *forecast) (string, error) {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("sk-test"), openai.WithModel("gpt-4o"))
	if err != nil {
		t.Fatal(err)
	}
	agent := agents.NewOpenAIFunctionsAgent(lglangchaingo.Model(llm), []tools.Tool{tool})
	executor := agents.NewExecutor(lglangchaingo.Wrap(g, agent), agents.WithMaxIterations(10))
	return chains.Run(context.Background(), executor, "What is the weather in Paris?")
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

// toolMessage returns the content of the tool message answering id.
func toolMessage(t *testing.T, msgs []message, id string) string {
	t.Helper()
	for _, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no tool message answers %s", id)
	return ""
}

// A model that asks for the same forecast on every turn: the third call is
// refused and the tool runs twice; the model is told so with the guard's
// feedback, and when it keeps asking the guard stops the executor with a
// *guard.StopError.
func TestStubbornModel(t *testing.T) {
	var script []reply
	for i := 1; i <= 6; i++ {
		script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
	}
	m := &model{script: script}
	tool := new(forecast)
	g := newGuard(t)
	_, err := run(t, g, m, tool)
	var stop *guard.StopError
	if !errors.As(err, &stop) {
		t.Fatalf("the executor ended with %v, want a *guard.StopError", err)
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

// A model that takes the refusal and answers: the executor returns the
// answer without an error.
func TestModelRecovers(t *testing.T) {
	m := &model{script: []reply{
		{calls: []call{{"call_1", "Paris"}}},
		{calls: []call{{"call_2", "Paris"}}},
		{calls: []call{{"call_3", "Paris"}}},
		{text: "It is 18 °C and sunny in Paris."},
	}}
	tool := new(forecast)
	g := newGuard(t)
	answer, err := run(t, g, m, tool)
	if err != nil || answer != "It is 18 °C and sunny in Paris." {
		t.Fatalf("the executor returned %q, %v; want the answer and no error", answer, err)
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

// Identical parallel calls of one reply are judged together: of three in a
// row the third is refused, and the call for another city after them runs.
func TestParallelCalls(t *testing.T) {
	m := &model{script: []reply{
		{calls: []call{{"call_1", "Paris"}, {"call_2", "Paris"}, {"call_3", "Paris"}, {"call_4", "Berlin"}}},
		{text: "Sunny in both."},
	}}
	tool := new(forecast)
	g := newGuard(t)
	if _, err := run(t, g, m, tool); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2, "Berlin": 1}, tool.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"call_3"}, nil}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	second := m.requests[1]
	for _, id := range []string{"call_1", "call_2", "call_4"} {
		if got := toolMessage(t, second, id); !strings.HasPrefix(got, "18 °C") {
			t.Errorf("%s was answered with %q", id, got)
		}
	}
	if got := toolMessage(t, second, "call_3"); !strings.HasPrefix(got, "That call was not run") || strings.Contains(got, "Paris") {
		t.Errorf("call_3 was answered with %q", got)
	}
	// The step holds the calls that ran, by their IDs, with their outcomes.
	var ran []string
	for _, c := range g.History()[0].ToolCalls {
		ran = append(ran, fmt.Sprintf("%s %s %v", c.ID, c.Args, c.Result))
	}
	want := []string{
		`call_1 {"city":"Paris"} 18 °C, sunny in Paris`,
		`call_2 {"city":"Paris"} 18 °C, sunny in Paris`,
		`call_4 {"city":"Berlin"} 18 °C, sunny in Berlin`,
	}
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("calls recorded (-want +got):\n%s", diff)
	}
}

// A text (MRKL) agent on langchaingo's fake model, whose tool names the
// executor matches ignoring case and whose inputs are plain text: the third
// identical call is refused. When the executor gives up at its iteration
// limit, End records the last plan's calls.
func TestTextAgentAndEnd(t *testing.T) {
	const out = "Thought: I need the weather.\nAction: GET_WEATHER\nAction Input: Paris"
	llm := fake.NewFakeLLM([]string{out})
	tool := new(forecast)
	g := newGuard(t)
	ctx := context.Background()
	agent := lglangchaingo.Wrap(g, agents.NewOneShotAgent(llm, []tools.Tool{tool}))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(3))
	if _, err := chains.Run(ctx, executor, "Weather in Paris?"); !errors.Is(err, agents.ErrNotFinished) {
		t.Fatalf("the executor ended with %v, want agents.ErrNotFinished", err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2}, tool.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if got := len(g.History()); got != 2 {
		t.Fatalf("%d steps recorded before End, want 2", got)
	}
	v, err := agent.End(ctx)
	if err != nil || v.Stop {
		t.Errorf("End: %+v, %v; want the run to go on", v, err)
	}
	h := g.History()
	want := guard.Step{FinishReason: "tool_calls", Refused: []guard.ToolCall{{Name: "get_weather", Args: "Paris"}}}
	if diff := cmp.Diff(want, h[len(h)-1]); diff != "" {
		t.Errorf("the last step (-want +got):\n%s", diff)
	}
	if _, err := agent.End(ctx); err != nil || len(g.History()) != 3 {
		t.Errorf("a second End recorded a step or failed: %v", err)
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
