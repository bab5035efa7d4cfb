package mcp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	lgmcp "github.com/loopguard/loopguard/adapters/mcp"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A server whose tools/call requests go through a guard per client session.
// The client, connected in memory, repeats the same call: the third is
// refused before the tool runs.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1.0.0"}, nil)
	runs := 0
	type in struct {
		City string `json:"city"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "forecast", Description: "the weather in a city"},
		func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			runs++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	sessions := lgmcp.PerSession(func(*mcp.ServerSession) (*guard.Guard, error) {
		return guard.New(guard.Config{Rules: detector.Defaults()})
	})
	server.AddReceivingMiddleware(sessions.Middleware())

	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1.0.0"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for i := 1; i <= 3; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("call %d: error=%v, tool runs so far: %d\n", i, res.IsError, runs)
	}
	// Output:
	// call 1: error=false, tool runs so far: 1
	// call 2: error=false, tool runs so far: 2
	// call 3: error=true, tool runs so far: 2
}
