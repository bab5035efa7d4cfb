package toollimit_test

import (
	"fmt"

	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
)

func Example() {
	d, err := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"search": 2, "rm": 0}})
	if err != nil {
		panic(err)
	}
	g, err := guard.New(d)
	if err != nil {
		panic(err)
	}
	search := guard.ToolCall{Name: "search", Args: map[string]any{"q": "go"}}

	fmt.Println(g.Check(guard.Step{ToolCalls: []guard.ToolCall{search, search}}).Stop)

	// Ask before running a third search: it would go over the cap.
	dec := g.Preflight(search)
	fmt.Println(dec.Allow, dec.Code, dec.Evidence)

	// rm is forbidden outright.
	fmt.Println(g.Preflight(guard.ToolCall{Name: "rm"}).Allow)
	// Output:
	// false
	// false TOOL_CALL_CAP {search 3 2}
	// false
}
