package genkit_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	lggenkit "github.com/loopguard/loopguard/adapters/genkit"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// place is the weather tool's input.
type place struct {
	City string `json:"city"`
}

// A stubborn model asks for the same forecast on every turn. The guard
// refuses the third call before it runs (the model reads the guard's
// feedback as the tool's output), and stops Generate when the model keeps
// asking.
func Example() {
	ctx := context.Background()
	gk := genkit.Init(ctx)
	model := genkit.DefineModel(gk, "example/stubborn", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(context.Context, *ai.ModelRequest, ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			req := &ai.ToolRequest{Name: "get_weather", Input: map[string]any{"city": "Paris"}}
			return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(req)), FinishReason: ai.FinishReasonStop}, nil
		})
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}

	weather := lggenkit.DefineTool(gk, "get_weather", "The weather in a city.",
		func(_ *ai.ToolContext, in place) (string, error) {
			fmt.Println("get_weather ran for", in.City)
			return "18 °C, sunny", nil
		})
	_, err = lggenkit.Generate(ctx, gk, g, ai.WithModel(model), ai.WithPrompt("What is the weather in Paris?"),
		ai.WithTools(weather))

	var stop *guard.StopError
	if errors.As(err, &stop) {
		fmt.Println("stopped:", stop.Verdict.Reason)
	}
	// Output:
	// get_weather ran for Paris
	// get_weather ran for Paris
	// stopped: repeated-refusal
}
