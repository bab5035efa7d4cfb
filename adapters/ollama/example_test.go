package ollama_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/ollama/ollama/api"

	lgollama "github.com/loopguard/loopguard/adapters/ollama"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A stubborn model, played by a local server, asks for the same forecast on
// every turn, with the "stop" that Ollama reports on tool calls. The guard
// refuses the third call before it runs, and stops the run at the third
// refusal, when the model keeps asking.
func Example() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// One JSON object a line, as Ollama writes its replies.
		fmt.Fprintln(w, `{"model": "llama3.2", "message": {"role": "assistant", "content": "", "tool_calls": [`+
			`{"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}]}, `+
			`"done": true, "done_reason": "stop", "prompt_eval_count": 80, "eval_count": 20}`)
	}))
	defer server.Close()
	base, err := url.Parse(server.URL)
	if err != nil {
		log.Fatal(err)
	}
	client := api.NewClient(base, http.DefaultClient)

	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	req := &api.ChatRequest{Model: "llama3.2", Messages: []api.Message{{Role: "user", Content: "Weather in Paris?"}}}
	for turnNo := 1; ; turnNo++ {
		var resp api.ChatResponse
		if err := client.Chat(ctx, req, lgollama.Collect(&resp)); err != nil {
			log.Fatal(err)
		}
		turn := lgollama.Preflight(ctx, g, resp)
		for _, call := range turn.Allowed() {
			turn.SetResult(call.ID, "18 °C, sunny", nil) // run the tool here
		}
		fmt.Printf("turn %d: %d call(s) ran, %d refused\n", turnNo, len(turn.Allowed()), len(turn.Refusals()))
		if r := turn.Refusals(); turnNo == 3 {
			// What the model reads in place of the forecast: the tool's
			// name, never its arguments.
			fmt.Println("the model is told:", r[0].Content)
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
		req.Messages = append(req.Messages, turn.Messages()...)
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
