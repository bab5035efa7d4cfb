package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
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

// Check records each finished step and says when to stop: here at the third
// identical call.
func ExampleGuard_Check() {
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 5 {
		v := g.Check(search())
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

// Preflight asks, before calls run, whether running them would trip a rule,
// and changes nothing. Ask about all the calls of a step at once: three
// identical calls made in parallel are refused together, where asking about
// each alone would let every one through.
func ExampleGuard_Preflight() {
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		log.Fatal(err)
	}
	call := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"query": "loopguard"}`)}

	one := g.Preflight(call)
	three := g.Preflight(call, call, call)
	fmt.Println("one call:", one.Allow)
	fmt.Println("three at once:", three.Allow, three.Code)
	fmt.Println("to the model:", three.Feedback)
	// Output:
	// one call: true
	// three at once: false REPEATED_TOOL_CALL
	// to the model: That call was not run: it would have been the 3rd call in a row to `search` with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.
}

// A Turn asks about each call before it runs and records it after: a
// refused call never runs, its feedback goes back to the model in place of a
// result, and the turn records the refusal, so that a model that keeps asking
// for the call is stopped. Calls may run in goroutines.
func ExampleGuard_Begin() {
	ctx := context.Background()
	g, err := guard.New(detector.Defaults()...)
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

// Snapshot saves a run (counters, totals, each detector's state, never raw
// arguments, results or text); Restore rebuilds a guard, from fresh
// detectors with the same options, that answers as the saved one would.
func ExampleRestore() {
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		log.Fatal(err)
	}
	g.Check(search())
	g.Check(search())
	data, err := g.Snapshot(guard.SnapshotOptions{}) // no arguments, results or text in it
	if err != nil {
		log.Fatal(err)
	}

	// Later, perhaps in another process.
	restored, err := guard.Restore(data, detector.Defaults()...)
	if err != nil {
		log.Fatal(err)
	}
	v := restored.Check(search())
	evidence, _ := json.Marshal(v.Evidence)
	fmt.Println(v.Code, string(evidence))
	fmt.Println("the snapshot holds the arguments:", bytes.Contains(data, []byte("loopguard")))
	// Output:
	// REPEATED_TOOL_CALL {"tool":"search","argsPreview":"{\"query\":\"loopguard\"}","count":3,"threshold":3,"stepIndexes":[0,1,2],"identicalResults":false}
	// the snapshot holds the arguments: false
}

// textLimit is a detector of one's own: it stops a run when the model
// writes more than max characters in a step. It implements guard.Detector as
// the built-in detectors do, so it is ordered, fingerprinted and saved in
// snapshots like them.
type textLimit struct {
	max  int
	over int // the length of the last step's text, when over max
}

func (d *textLimit) Name() string                                   { return "textlimit" }
func (d *textLimit) Priority() int                                  { return guard.PriorityCustom }
func (d *textLimit) Options() any                                   { return map[string]int{"maxTextChars": d.max} }
func (d *textLimit) Preflight(*guard.Facts) guard.Verdict           { return guard.Verdict{} }
func (d *textLimit) Snapshot(guard.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (d *textLimit) Restore([]byte) error                           { return nil }
func (d *textLimit) Reset()                                         { d.over = 0 }

func (d *textLimit) Observe(f *guard.Facts) {
	d.over = 0
	if n := len([]rune(f.Text())); n > d.max {
		d.over = n
	}
}

func (d *textLimit) Verdict() guard.Verdict {
	if d.over == 0 {
		return guard.Verdict{}
	}
	return guard.Verdict{Stop: true, Reason: "text-limit", Code: "TEXT_TOO_LONG",
		Detail: fmt.Sprintf("the step wrote %d characters, more than %d", d.over, d.max)}
}

// A detector of one's own runs beside the built-in ones, after them.
func ExampleDetector() {
	g, err := guard.New(append(detector.Defaults(), &textLimit{max: 20})...)
	if err != nil {
		log.Fatal(err)
	}
	v := g.Check(guard.Step{Text: "Let me think about this at some length.", FinishReason: "tool-calls"})
	fmt.Println(guard.Explain(v))
	// Output:
	// stop: text-limit (TEXT_TOO_LONG): the step wrote 39 characters, more than 20
}
