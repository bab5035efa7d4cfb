package openai_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	lgopenai "github.com/loopguard/loopguard/adapters/openai"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A stubborn model, played by a local server, asks for the same forecast on
// every turn. The guard refuses the third call before it runs, and stops the
// run at the third refusal, when the model keeps asking.
func Example() {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "gpt-4o",
			"choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
				"role": "assistant", "content": null, "refusal": null, "tool_calls": [{"id": "call_1",
				"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
			"usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100}}`)
	}))
	defer model.Close()
	client := openai.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("sk-example"))

	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4o,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
	}
	for turnNo := 1; ; turnNo++ {
		completion, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			log.Fatal(err)
		}
		turn := lgopenai.Preflight(ctx, g, completion)
		for _, call := range turn.Allowed() {
			turn.SetResult(call.ID, "18 °C, sunny", nil) // run the tool here
		}
		fmt.Printf("turn %d: %d call(s) ran, %d refused\n", turnNo, len(turn.Allowed()), len(turn.Refusals()))
		if r := turn.Refusals(); turnNo == 3 {
			// What the model reads in place of the forecast: the tool's
			// name, never its arguments.
			fmt.Println("the model is told:", r[0].OfTool.Content.OfString.Value)
		}
		v, err := turn.End(ctx)
		var stop *guard.StopError
		if errors.As(err, &stop) {
			fmt.Println("stopped:", stop.Verdict.Reason)
			break
		}
		if v.Stop {
			fmt.Println("the model answered") // a normal finish: no error
			break
		}
		params.Messages = append(params.Messages, turn.Messages()...)
	}
	// Output:
	// turn 1: 1 call(s) ran, 0 refused
	// turn 2: 1 call(s) ran, 0 refused
	// turn 3: 0 call(s) ran, 1 refused
	// the model is told: That call was not run: it would have been the 3rd call in a row to `get_weather` with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.
	// turn 4: 0 call(s) ran, 1 refused
	// turn 5: 0 call(s) ran, 1 refused
	// stopped: repeated-refusal
}
