package bedrock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	lgbedrock "github.com/loopguard/loopguard/adapters/bedrock"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A stubborn model, played by a local server, asks for the same forecast on
// every turn. The guard refuses the third call before it runs, and stops the
// run at the third refusal, when the model keeps asking.
func Example() {
	turnNo := 0
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		turnNo++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"output": {"message": {"role": "assistant", "content": [
			{"toolUse": {"toolUseId": "tooluse_%d", "name": "get_weather", "input": {"city": "Paris"}}}]}},
			"stopReason": "tool_use", "usage": {"inputTokens": 80, "outputTokens": 20, "totalTokens": 100}}`, turnNo)
	}))
	defer server.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	client := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { o.BaseEndpoint = aws.String(server.URL) })

	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	input := &bedrockruntime.ConverseInput{
		ModelId: aws.String("anthropic.claude-sonnet-4-5-v1:0"),
		Messages: []types.Message{{Role: types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Weather in Paris?"}}}},
	}
	for {
		out, err := client.Converse(ctx, input)
		if err != nil {
			log.Fatal(err)
		}
		turn := lgbedrock.Preflight(ctx, g, out)
		for _, call := range turn.Allowed() {
			turn.SetResult(aws.ToString(call.ToolUseId), "18 °C, sunny", nil) // run the tool here
		}
		fmt.Printf("turn %d: %d call(s) ran, %d refused\n", turnNo, len(turn.Allowed()), len(turn.Refusals()))
		if r := turn.Refusals(); turnNo == 3 {
			// What the model reads in place of the forecast: the tool's
			// name, never its arguments.
			result := r[0].(*types.ContentBlockMemberToolResult).Value
			fmt.Println("the model is told:", result.Content[0].(*types.ToolResultContentBlockMemberText).Value)
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
		input.Messages = append(input.Messages, turn.Messages()...)
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
