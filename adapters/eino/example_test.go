package eino_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	lgeino "github.com/loopguard/loopguard/adapters/eino"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// stubborn is a chat model that asks for the same forecast every time.
type stubborn struct{}

func (stubborn) Generate(context.Context, []*schema.Message, ...model.Option) (*schema.Message, error) {
	return schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function",
		Function: schema.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}), nil
}

func (m stubborn) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{msg}), err
}

func (m stubborn) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// A stubborn model asks for the same forecast on every turn. The guard
// refuses the third call before it runs (the model reads the guard's
// feedback as the tool's result), and stops the agent when the model keeps
// asking.
func Example() {
	ctx := context.Background()
	weather, err := utils.InferTool("get_weather", "The weather in a city.",
		func(_ context.Context, in struct{ City string }) (string, error) {
			fmt.Println("get_weather ran for", in.City)
			return "18 °C, sunny", nil
		})
	if err != nil {
		log.Fatal(err)
	}
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}

	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "weather", Description: "Answers weather questions.", Model: stubborn{},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{weather}}},
		Middlewares: []adk.AgentMiddleware{lgeino.New(g).AgentMiddleware()},
	})
	if err != nil {
		log.Fatal(err)
	}
	iter := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, "What is the weather in Paris?")
	for event, ok := iter.Next(); ok; event, ok = iter.Next() {
		var stop *guard.StopError
		if errors.As(event.Err, &stop) {
			fmt.Println("stopped:", stop.Verdict.Reason)
		}
	}
	// Output:
	// get_weather ran for Paris
	// get_weather ran for Paris
	// stopped: repeated-refusal
}

// The same stubborn model in eino's ReAct graph agent (flow/agent/react):
// the model goes in wrapped, the tools run through the guard's tool
// middleware, and the guard's stop ends the run as Generate's error,
// before the model is called again.
func ExampleMiddleware_ChatModel() {
	ctx := context.Background()
	weather, err := utils.InferTool("get_weather", "The weather in a city.",
		func(_ context.Context, in struct{ City string }) (string, error) {
			fmt.Println("get_weather ran for", in.City)
			return "18 °C, sunny", nil
		})
	if err != nil {
		log.Fatal(err)
	}
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}

	lg := lgeino.New(g)
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: lg.ChatModel(stubborn{}),
		ToolsConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{weather},
			ToolCallMiddlewares: []compose.ToolMiddleware{lg.ToolMiddleware()}},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = agent.Generate(ctx, []*schema.Message{schema.UserMessage("What is the weather in Paris?")})
	var stop *guard.StopError
	if errors.As(err, &stop) {
		fmt.Println("stopped:", stop.Verdict.Reason)
	}
	// Output:
	// get_weather ran for Paris
	// get_weather ran for Paris
	// stopped: repeated-refusal
}
