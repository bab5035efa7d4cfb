package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/tools"

	lglangchaingo "github.com/loopguard/loopguard/adapters/langchaingo"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// Each step holds the token usage of its model call, as the OpenAI model
// of langchaingo reports it (80 prompt, 20 completion, 100 in all), the
// final answer's step too.
func TestStepUsage(t *testing.T) {
	m := &model{script: []reply{
		{calls: []call{{"call_1", "Paris"}}},
		{text: "It is 18 °C and sunny in Paris."},
	}}
	g := newGuard(t)
	if _, err := run(t, g, m, new(forecast)); err != nil {
		t.Fatal(err)
	}
	var got []guard.Usage
	for _, s := range g.History() {
		got = append(got, s.Usage)
	}
	want := []guard.Usage{{InputTokens: 80, OutputTokens: 20, TotalTokens: 100}, {InputTokens: 80, OutputTokens: 20, TotalTokens: 100}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per step (-want +got):\n%s", diff)
	}
}

// A token budget stops the executor at the step whose usage reaches it
// (100 tokens a reply, a new city each time so that no other rule stops
// it): with 300 tokens, after the third request; with 301, one step later.
func TestTokenBudget(t *testing.T) {
	for _, tc := range []struct {
		limit    int
		requests int
	}{{300, 3}, {301, 4}, {299, 3}, {201, 3}, {200, 2}} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			var script []reply
			for i, city := range []string{"Paris", "Berlin", "Rome", "Oslo", "Lima", "Kyiv"} {
				script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i+1), city}}})
			}
			m := &model{script: script}
			cfg, err := detector.FromJSON(fmt.Appendf(nil, `{"budget": {"maxTotalTokens": %d}}`, tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			g, err := guard.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, g, m, new(forecast))
			var stop *guard.StopError
			if !errors.As(err, &stop) {
				t.Fatalf("the executor ended with %v, want a *guard.StopError", err)
			}
			if stop.Verdict.Code != "BUDGET_TOTAL_TOKENS" || len(m.requests) != tc.requests {
				t.Errorf("stopped by %s after %d requests, want BUDGET_TOTAL_TOKENS after %d", stop.Verdict.Code, len(m.requests), tc.requests)
			}
		})
	}
}

// The keys langchaingo's providers put usage under (v0.1.14): OpenAI,
// Google AI and Ollama, Anthropic (one choice per content block, each with
// the response's usage), Bedrock; and what is not usage.
func TestUsageFromResponse(t *testing.T) {
	choice := func(info map[string]any) *llms.ContentChoice { return &llms.ContentChoice{GenerationInfo: info} }
	for _, tc := range []struct {
		name string
		resp *llms.ContentResponse
		want guard.Usage
	}{
		{"openai", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{
			"CompletionTokens": 20, "PromptTokens": 80, "TotalTokens": 100, "ReasoningTokens": 5})}},
			guard.Usage{InputTokens: 80, OutputTokens: 20, TotalTokens: 100}},
		{"googleai", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{
			"PromptTokens": int32(7), "CompletionTokens": int32(3), "TotalTokens": int32(10)})}},
			guard.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}},
		{"anthropic, two blocks", &llms.ContentResponse{Choices: []*llms.ContentChoice{
			choice(map[string]any{"InputTokens": 80, "OutputTokens": 20, "CacheReadInputTokens": 0}),
			choice(map[string]any{"InputTokens": 80, "OutputTokens": 20}),
		}}, guard.Usage{InputTokens: 80, OutputTokens: 20}},
		{"bedrock", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{
			"input_tokens": int64(12), "output_tokens": float64(4)})}},
			guard.Usage{InputTokens: 12, OutputTokens: 4}},
		{"first choice without usage", &llms.ContentResponse{Choices: []*llms.ContentChoice{
			nil, choice(nil), choice(map[string]any{"PromptTokens": 1, "CompletionTokens": 2})}},
			guard.Usage{InputTokens: 1, OutputTokens: 2}},
		{"not counts", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{
			"PromptTokens": "80", "CompletionTokens": -3, "TotalTokens": 1.5})}}, guard.Usage{}},
		{"no choices", &llms.ContentResponse{}, guard.Usage{}},
		{"nil", nil, guard.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lglangchaingo.UsageFromResponse(tc.resp)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// The Anthropic model of langchaingo does not call the callbacks hook of
// its responses, but its usage reaches the guard through Model: a run on
// a scripted Messages API server, whose tool call's and answer's steps
// hold their input and output tokens.
func TestAnthropicUsage(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/messages" {
			http.Error(w, "bad path "+r.URL.Path, http.StatusNotFound)
			return
		}
		requests++
		content := []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}}}
		stop, in := "tool_use", 80
		if requests > 1 {
			content, stop, in = []any{map[string]any{"type": "text", "text": "Sunny in Paris."}}, "end_turn", 120
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("msg_%d", requests), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": in, "output_tokens": 20},
		})
	}))
	t.Cleanup(srv.Close)
	llm, err := anthropic.New(anthropic.WithBaseURL(srv.URL), anthropic.WithToken("sk-ant-test"), anthropic.WithModel("claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t)
	tool := new(forecast)
	agent := agents.NewOpenAIFunctionsAgent(lglangchaingo.Model(llm), []tools.Tool{tool})
	executor := agents.NewExecutor(lglangchaingo.Wrap(g, agent), agents.WithMaxIterations(5))
	answer, err := chains.Run(context.Background(), executor, "What is the weather in Paris?")
	if err != nil || answer != "Sunny in Paris." {
		t.Fatalf("the executor returned %q, %v", answer, err)
	}
	var got []guard.Usage
	for _, s := range g.History() {
		got = append(got, s.Usage)
	}
	want := []guard.Usage{{InputTokens: 80, OutputTokens: 20}, {InputTokens: 120, OutputTokens: 20}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage per step (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 1}, tool.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
}
