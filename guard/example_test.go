package guard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// search is the step of an agent that searches for the same thing again.
func search() guard.Step {
	return guard.Step{
		Text:         "Let me search for that.",
		ToolCalls:    []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"query": "loopguard"}`), Result: "no results"}},
		FinishReason: "tool-calls",
		Usage:        guard.Usage{InputTokens: 1200, OutputTokens: 40},
	}
}

// A Config holds the rules and options; it is shared and read-only, and
// every guard built from it watches a run of its own.
func ExampleNew() {
	cfg := guard.Config{Rules: detector.Defaults(), Ignore: []string{"think"}}
	first, err := guard.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	second, err := guard.New(cfg) // the same rules, another run
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := first.Check(ctx, search()); err != nil {
			log.Fatal(err)
		}
	}
	a, _ := first.Summary(ctx)
	b, _ := second.Summary(ctx)
	fmt.Println("rules:", len(first.Rules()))
	fmt.Println("steps of the first run:", a.Steps, "of the second:", b.Steps)
	// Output:
	// rules: 10
	// steps of the first run: 2 of the second: 0
}

// Check records each finished step and says when to stop: here at the third
// identical call.
func ExampleGuard_Check() {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		v, err := g.Check(ctx, search())
		if err != nil {
			log.Fatal(err)
		}
		if v.Stop {
			fmt.Printf("step %d: %s\n", i, guard.Explain(v))
			fmt.Println("to the model:", v.Feedback)
			break
		}
		fmt.Printf("step %d: go on\n", i)
	}
	// Output:
	// step 0: go on
	// step 1: go on
	// step 2: stop: repeated-tool-call (REPEATED_TOOL_CALL): tool "search" called 3 times in a row with the same arguments {"query":"loopguard"} (threshold 3); hint: the agent repeats the same call; its result will not change
	// to the model: You have called `search` 3 times in a row with exactly the same arguments, and another identical call will not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.
}

// A Turn asks about each call before it runs and records it after: a
// refused call never runs, its feedback goes back to the model in place of a
// result, and the turn records the refusal, so that a model that keeps asking
// for the call is stopped. Calls may run in goroutines.
func ExampleGuard_Begin() {
	ctx := context.Background()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	call := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"query": "loopguard"}`)}
	runs := 0
	runSearch := func(context.Context) (any, error) { runs++; return "no results", nil }

	for i := range 6 {
		turn := g.Begin()
		result, err := turn.Run(ctx, call, runSearch)
		if err != nil {
			result = err.Error() // a *guard.RefusedError: the feedback for the model, never the arguments
		}
		v, err := turn.End(ctx, guard.Step{Text: fmt.Sprintf("Searching, try %d.", i+1), FinishReason: "tool-calls"})
		fmt.Printf("turn %d: tool runs %d, stop %v, for the model: %.40s\n", i, runs, v.Stop, result)
		var stop *guard.StopError
		if errors.As(err, &stop) {
			fmt.Println(stop) // the model kept asking for the refused call
			break
		}
	}
	// Output:
	// turn 0: tool runs 1, stop false, for the model: no results
	// turn 1: tool runs 2, stop false, for the model: no results
	// turn 2: tool runs 2, stop false, for the model: That call was not run: it would have bee
	// turn 3: tool runs 2, stop false, for the model: That call was not run: it would have bee
	// turn 4: tool runs 2, stop true, for the model: That call was not run: it would have bee
	// loopguard: run stopped: repeated-refusal (REPEATED_REFUSAL)
}

// A tool server (MCP) sees one call at a time: StartCall judges it before it
// runs and Finish records its outcome as a step of its own. A refused call
// is not run; its feedback is the answer to send back.
func ExampleGuard_StartCall() {
	ctx := context.Background()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	call := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"query": "loopguard"}`)}
	for i := range 4 {
		running, d, err := g.StartCall(ctx, call)
		if err != nil {
			log.Fatal(err)
		}
		if !d.Allow {
			fmt.Printf("call %d: refused (%s): %.40s\n", i, d.Code, d.Feedback)
			continue
		}
		if _, err := running.Finish(ctx, "no results", nil); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("call %d: ran\n", i)
	}
	// Output:
	// call 0: ran
	// call 1: ran
	// call 2: refused (REPEATED_TOOL_CALL): That call was not run: it would have bee
	// call 3: refused (REPEATED_TOOL_CALL): That call was not run: it would have bee
}

// Snapshot saves a run (counters, totals, each rule's state, never raw
// arguments, results or text); Restore rebuilds a guard from the same
// Config that answers as the saved one would.
func ExampleRestore() {
	ctx := context.Background()
	cfg := guard.Config{Rules: detector.Defaults()}
	g, err := guard.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		if _, err := g.Check(ctx, search()); err != nil {
			log.Fatal(err)
		}
	}
	data, err := g.Snapshot(ctx, guard.SnapshotOptions{}) // no arguments, results or text in it
	if err != nil {
		log.Fatal(err)
	}

	// Later, perhaps in another process.
	restored, err := guard.Restore(data, cfg)
	if err != nil {
		log.Fatal(err)
	}
	v, err := restored.Check(ctx, search())
	if err != nil {
		log.Fatal(err)
	}
	evidence, _ := json.Marshal(v.Evidence)
	fmt.Println(v.Code, string(evidence))
	fmt.Println("the snapshot holds the arguments:", bytes.Contains(data, []byte("loopguard")))
	// Output:
	// REPEATED_TOOL_CALL {"tool":"search","argsPreview":"{\"query\":\"loopguard\"}","count":3,"threshold":3,"stepIndexes":[0,1,2],"identicalResults":false}
	// the snapshot holds the arguments: false
}
