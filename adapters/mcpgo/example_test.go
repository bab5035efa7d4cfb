package mcpgo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/loopguard/loopguard/adapters/mcpgo"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A server whose tool calls go through one guard. An in-process client
// repeats the same call: the third is refused before the tool runs.
func Example() {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	s := server.NewMCPServer("weather", "1.0.0", server.WithToolHandlerMiddleware(mcpgo.Middleware(g)))
	runs := 0
	s.AddTool(mcp.NewTool("forecast", mcp.WithString("city", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs++
			return mcp.NewToolResultText("sunny in " + req.GetString("city", "")), nil
		})

	ctx := context.Background()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}

	for i := 1; i <= 3; i++ {
		var req mcp.CallToolRequest
		req.Params.Name = "forecast"
		req.Params.Arguments = map[string]any{"city": "Oslo"}
		res, err := c.CallTool(ctx, req)
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
