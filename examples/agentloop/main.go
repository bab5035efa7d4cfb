// Command agentloop runs a simulated agent that gets stuck, and shows the
// guard stopping it and the feedback going back to the model.
//
// The "model" is a small script, so the program runs offline: asked about
// the weather on a made-up island, it searches, finds nothing and searches
// again with the same query. After the third identical search the guard
// stops the run; the loop hands the guard's feedback to the model in place
// of another turn with tools, and the model answers with what it knows.
//
//	go run ./examples/agentloop
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A message is one entry of the conversation the model sees.
type message struct {
	role, text string
}

// A turn is what the model answers: text, and the calls it wants run.
type turn struct {
	text   string
	calls  []guard.ToolCall
	finish string
}

// model is the simulated model. It searches for as long as it may use
// tools, and then answers with what it has.
func model(conversation []message, toolsAllowed bool) turn {
	if !toolsAllowed {
		return turn{text: "I could not find a weather report for Atlantis: searches for it return nothing.", finish: "stop"}
	}
	return turn{
		text:   "Let me search for the weather.",
		calls:  []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"query": "weather in Atlantis today"}`)}},
		finish: "tool-calls",
	}
}

// search is the tool. It never finds anything.
func search(args json.RawMessage) string {
	return "no results"
}

// run is the agent loop: ask the model, run its calls, record the step,
// and stop when the guard says so.
func run(out io.Writer) error {
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		return err
	}
	conversation := []message{{"user", "What is the weather in Atlantis today?"}}
	for i := 0; ; i++ {
		t := model(conversation, true)
		step := guard.Step{Text: t.text, FinishReason: t.finish}
		for _, c := range t.calls {
			c.Result = search(c.Args.(json.RawMessage))
			fmt.Fprintf(out, "step %d: the model calls %s %s -> %v\n", i, c.Name, c.Args, c.Result)
			step.ToolCalls = append(step.ToolCalls, c)
			conversation = append(conversation, message{"tool", c.Result.(string)})
		}
		v := g.Check(step)
		fmt.Fprintf(out, "        guard: %s\n", guard.Explain(v))
		if !v.Stop {
			continue
		}
		if !guard.IsFault(v) {
			fmt.Fprintf(out, "the model finished: %s\n", t.text)
			return nil
		}
		// Tell the model why, in words that never repeat arguments or
		// results, and let it answer without tools.
		fmt.Fprintf(out, "feedback to the model: %s\n", v.Feedback)
		conversation = append(conversation, message{"user", v.Feedback})
		final := model(conversation, false)
		fmt.Fprintf(out, "the model answers: %s\n", final.text)
		return nil
	}
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}
