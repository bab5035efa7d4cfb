package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// Two workers share one run through a store: whichever of them records a
// step, the third identical call is refused.
func Example() {
	ctx := context.Background()
	cfg, err := detector.FromJSON([]byte(`{}`)) // the guards' configuration, once
	if err != nil {
		panic(err)
	}
	store := snapshot.NewMemory(nil) // or stores/redis, shared by processes
	workerA, _ := snapshot.New(store, cfg, snapshot.Options{})
	workerB, _ := snapshot.New(store, cfg, snapshot.Options{})

	call := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q": "loopguard"}`)}
	step := guard.Step{ToolCalls: []guard.ToolCall{{Name: call.Name, Args: call.Args, Result: "no results"}}}
	workerA.Guard("run-42").Check(ctx, step)
	workerB.Guard("run-42").Check(ctx, step)

	d, err := workerA.Guard("run-42").Preflight(ctx, call)
	fmt.Println(d.Allow, d.Code, err)
	// Output: false REPEATED_TOOL_CALL <nil>
}
