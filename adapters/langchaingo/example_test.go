package langchaingo_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
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
