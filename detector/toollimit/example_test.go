package toollimit_test

import (
	"context"
	"fmt"

	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

func Example() {
	d, err := toollimit.New(toollimit.Options{MaxCalls: map[string]int{"search": 2, "rm": 0}})
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	search := guard.ToolCall{Name: "search", Args: map[string]any{"q": "go"}}

	v, _ := g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{search, search}})
	fmt.Println(v.Stop)

	// Ask before running a third search: it would go over the cap.
	dec, _ := g.Preflight(ctx, search)
	fmt.Println(dec.Allow, dec.Code, dec.Evidence)

	// rm is forbidden outright.
	dec, _ = g.Preflight(ctx, guard.ToolCall{Name: "rm"})
	fmt.Println(dec.Allow)
	// Output:
	// false
	// false TOOL_CALL_CAP {search 3 2}
	// false
}
