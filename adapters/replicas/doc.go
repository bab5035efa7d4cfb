// Package replicas holds no code: its tests run several workers of one run
// in this process, sharing the run through a real redis-server, and check
// that its calls are refused the same whichever worker serves them: replicas
// of an MCP server (the official Go SDK's and mcp-go's) on loopback HTTP, and
// workers of an eino agent and of a langchaingo executor, each an unchanged
// adapter over the run's guard from its own snapshot.Runs. It is a module of
// its own so that the adapters' modules need neither Redis nor the Go
// version go-redis requires.
package replicas
