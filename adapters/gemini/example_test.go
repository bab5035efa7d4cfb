package gemini_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"google.golang.org/genai"

	lggemini "github.com/loopguard/loopguard/adapters/gemini"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A stubborn model, played by a local server, asks for the same forecast on
// every turn, with the STOP that Gemini reports on function calls. The guard
// refuses the third call before it runs, and stops the run at the third
// refusal, when the model keeps asking.
func Example() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"candidates": [{"content": {"role": "model", "parts": [
			{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
			"finishReason": "STOP", "index": 0}],
			"usageMetadata": {"promptTokenCount": 80, "candidatesTokenCount": 20, "totalTokenCount": 100}}`)
	}))
	defer server.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey: "example-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: server.URL},
	})
	if err != nil {
		log.Fatal(err)
	}

	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	contents := []*genai.Content{genai.NewContentFromText("Weather in Paris?", genai.RoleUser)}
	for turnNo := 1; ; turnNo++ {
		resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, nil)
		if err != nil {
			log.Fatal(err)
		}
		turn := lggemini.Preflight(ctx, g, resp)
		for _, call := range turn.Allowed() {
			turn.SetResult(call.ID, "18 °C, sunny", nil) // run the tool here
		}
		fmt.Printf("turn %d: %d call(s) ran, %d refused\n", turnNo, len(turn.Allowed()), len(turn.Refusals()))
		if r := turn.Refusals(); turnNo == 3 {
			// What the model reads in place of the forecast: the tool's
			// name, never its arguments.
			fmt.Println("the model is told:", r[0].FunctionResponse.Response["error"])
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
		contents = append(contents, turn.Contents()...)
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
