package temporal_test

import (
	"fmt"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	lgtemporal "github.com/loopguard/loopguard/adapters/temporal"
	"github.com/loopguard/loopguard/guard"
)

// The interceptor goes in the worker's options. The activity type "Chat" is
// the model call; its result, a Reply, gives each step's text, finish
// reason and usage. Every other activity is a tool call.
func ExampleNewInterceptor() {
	itc, err := lgtemporal.NewInterceptor(lgtemporal.Options{
		Models: map[string]lgtemporal.ModelFunc{"Chat": lgtemporal.Model(func(r Reply) guard.Step {
			return guard.Step{Text: r.Text, FinishReason: r.FinishReason,
				Usage: guard.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}}
		})},
		Config: []byte(`{"maxSteps": 60, "budget": {"maxTotalTokens": 200000}}`),
	})
	if err != nil {
		panic(err)
	}
	// w := worker.New(client, "agents", opts), then register the workflow
	// and the activities.
	opts := worker.Options{Interceptors: []interceptor.WorkerInterceptor{itc}}
	fmt.Println(len(opts.Interceptors))
	// Output: 1
}
