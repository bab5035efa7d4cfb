package goopenai_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	openai "github.com/sashabaranov/go-openai"

	"github.com/loopguard/loopguard/adapters/goopenai"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A stubborn model, played by a local server, asks for the same forecast on
// every turn. The guard refuses the third call before it runs, and stops the
// run when the model keeps asking.
func Example() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "gpt-4o",
			"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
				"tool_calls": [{"id": "call_1", "type": "function",
					"function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
			"usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100}}`)
	}))
	defer server.Close()
	cfg := openai.DefaultConfig("sk-example")
	cfg.BaseURL = server.URL
	client := openai.NewClientWithConfig(cfg)

	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	req := openai.ChatCompletionRequest{
		Model:    openai.GPT4o,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Weather in Paris?"}},
	}
	for turnNo := 1; ; turnNo++ {
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		turn := goopenai.Preflight(ctx, g, resp)
		for _, call := range turn.Allowed() {
			turn.SetResult(call.ID, "18 °C, sunny", nil) // run the tool here
		}
		fmt.Printf("turn %d: %d call(s) ran\n", turnNo, len(turn.Allowed()))
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
		req.Messages = append(req.Messages, turn.Messages()...)
		if turnNo == 3 {
			// What the model reads in place of the forecast: the tool's
			// name, never its arguments.
			fmt.Println("the model is told:", req.Messages[len(req.Messages)-1].Content)
		}
	}
	// Output:
	// turn 1: 1 call(s) ran
	// turn 2: 1 call(s) ran
	// turn 3: 0 call(s) ran
	// the model is told: That call was not run: it would have been the 3rd call in a row to `get_weather` with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.
	// turn 4: 0 call(s) ran
	// turn 5: 0 call(s) ran
	// stopped: repeated-refusal
}
