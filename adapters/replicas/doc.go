// Package replicas holds no code: its tests run several replicas of an MCP
// server (the official Go SDK's and mcp-go's), in this process on loopback
// HTTP, sharing their runs through a real redis-server, and check that a
// run's calls are refused the same whichever replica serves them. It is a
// module of its own so that the adapters' modules need neither Redis nor the
// Go version go-redis requires.
package replicas
