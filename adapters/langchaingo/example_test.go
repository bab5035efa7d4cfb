package langchaingo_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/tools"

	lglangchaingo "github.com/loopguard/loopguard/adapters/langchaingo"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// weather is a tool that says when it runs.
type weather struct{}

func (weather) Name() string        { return "get_weather" }
func (weather) Description() string { return "The weather in a city." }
func (weather) Call(_ context.Context, city string) (string, error) {
	fmt.Println("get_weather ran for", city)
	return "18 °C, sunny", nil
}

// A stubborn model asks for the same forecast on every turn. The guard
// refuses the third call before it runs (the model reads the guard's
// feedback as the observation), and stops the executor when the model
// keeps asking.
func Example() {
	llm := fake.NewFakeLLM([]string{"Thought: I need the weather.\nAction: get_weather\nAction Input: Paris"})
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}

	agent := agents.NewOneShotAgent(llm, []tools.Tool{weather{}})
	// langchaingo's own cap is 5 iterations; the guard stops a stubborn model
	// at its third refused call, in the sixth.
	executor := agents.NewExecutor(lglangchaingo.Wrap(g, agent), agents.WithMaxIterations(10))
	_, err = chains.Run(context.Background(), executor, "What is the weather in Paris?")

	var stop *guard.StopError
	if errors.As(err, &stop) {
		fmt.Println("stopped:", stop.Verdict.Reason)
	}
	// Output:
	// get_weather ran for Paris
	// get_weather ran for Paris
	// stopped: repeated-refusal
}

// metered is a model that asks for the forecast every time and reports 100
// tokens a response, under the keys of langchaingo's OpenAI model.
type metered struct{}

func (metered) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content:        "Thought: I need the weather.\nAction: get_weather\nAction Input: Paris",
		GenerationInfo: map[string]any{"PromptTokens": 80, "CompletionTokens": 20, "TotalTokens": 100},
	}}}, nil
}

func (m metered) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// With the agent's model wrapped by Model, each step holds its token
// usage, and a budget of 250 tokens stops the executor at the third step,
// before the model is asked again.
func ExampleModel() {
	cfg, err := detector.FromJSON([]byte(`{"budget": {"maxTotalTokens": 250}}`))
	if err != nil {
		log.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		log.Fatal(err)
	}

	agent := agents.NewOneShotAgent(lglangchaingo.Model(metered{}), []tools.Tool{weather{}})
	executor := agents.NewExecutor(lglangchaingo.Wrap(g, agent), agents.WithMaxIterations(10))
	_, err = chains.Run(context.Background(), executor, "What is the weather in Paris?")

	var stop *guard.StopError
	if errors.As(err, &stop) {
		fmt.Println("stopped:", stop.Verdict.Code)
	}
	// Output:
	// get_weather ran for Paris
	// get_weather ran for Paris
	// stopped: BUDGET_TOTAL_TOKENS
}
