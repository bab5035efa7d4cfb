package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"

	lganthropic "github.com/loopguard/loopguard/adapters/anthropic"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A stubborn model, played by a local server, asks for the same forecast on
// every turn. The SDK's tool runner runs the decorated tool twice; the guard
// refuses the next calls before they run and stops the run. With the
// runner's Option, the stop comes before the request that would follow it:
// five model calls, as in a loop of your own.
func Example() {
	calls := 0
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
			"stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 400, "output_tokens": 60}}`)
	}))
	defer model.Close()
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("sk-ant-example"))

	runs := 0
	weather, err := toolrunner.NewBetaToolFromJSONSchema("get_weather", "Current weather in a city.",
		func(context.Context, struct {
			City string `json:"city"`
		}) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			runs++
			return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: "18 °C, sunny"}}, nil
		})
	if err != nil {
		log.Fatal(err)
	}

	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	lg := lganthropic.NewRunner(g)
	runner := client.Beta.Messages.NewToolRunner(lg.Tools(weather), anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     "claude-sonnet-4-5",
			MaxTokens: 1024,
			Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Weather in Paris?"))},
		},
	}, lg.Option())
	ctx := context.Background()
	for msg, err := range runner.All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		v, err := lg.Check(ctx, msg)
		var stop *guard.StopError
		if errors.As(err, &stop) {
			fmt.Println("stopped:", stop.Verdict.Reason)
			break
		}
		if v.Stop {
			fmt.Println("the model answered") // a normal finish: no error
			break
		}
	}
	fmt.Println("tool runs:", runs)
	fmt.Println("model calls:", calls)
	// Output:
	// stopped: repeated-refusal
	// tool runs: 2
	// model calls: 5
}
