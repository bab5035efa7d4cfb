// Command agentloop runs a simulated agent that gets stuck, and shows the
// guard stopping it and the feedback going back to the model.
//
// The "model" is a small script, so the program runs offline: asked about
// the weather on a made-up island, it searches, finds nothing and keeps
// searching with the same query. The loop is written with guard.Turn, which
// asks the guard before each call runs and records it after (refused calls
// too, in Step.Refused):
//
//   - the third identical search is refused before it runs, and the refusal's
//     feedback goes back to the model in place of the tool's result;
//
//   - the model insists, in other words each time; after the third refusal
//     of the same call the refusal rule stops the run: Turn.End returns a
//     *guard.StopError (a normal final answer would come with no error);
//
//   - the loop hands that feedback to the model, which answers without tools.
//
//     go run ./examples/agentloop
package main

import (
	"context"
	"encoding/json"
	"errors"
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

// A reply is what the model answers: text, and the calls it wants run.
type reply struct {
	text   string
	calls  []guard.ToolCall
	finish string
}

// model is the simulated model. It searches for as long as it may use
// tools, whatever it is told, in other words each time, and then answers
// with what it has.
func model(conversation []message, toolsAllowed bool) reply {
	if !toolsAllowed {
		return reply{text: "I could not find a weather report for Atlantis: searches for it return nothing.", finish: "stop"}
	}
	texts := []string{"Let me search for the weather.", "Let me try that search again.",
		"The search must work this time.", "One more search.", "Searching again."}
	return reply{
		text:   texts[(len(conversation)-1)%len(texts)],
		calls:  []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"query": "weather in Atlantis today"}`)}},
		finish: "tool-calls",
	}
}

// search is the tool. It never finds anything.
func search(context.Context) (any, error) {
	return "no results", nil
}

// run is the agent loop: ask the model, run its calls through the turn, end
// the turn, and stop when the guard says so.
func run(out io.Writer) error {
	ctx := context.Background()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		return err
	}
	conversation := []message{{"user", "What is the weather in Atlantis today?"}}
	for i := 0; ; i++ {
		r := model(conversation, true)
		turn := g.Begin()
		for _, c := range r.calls {
			result, err := turn.Run(ctx, c, search)
			var refused *guard.RefusedError
			switch {
			case errors.As(err, &refused):
				// The call did not run: the model gets the refusal
				// instead. Its text is the guard's feedback, which never
				// quotes the call's arguments.
				fmt.Fprintf(out, "step %d: the model calls %s %s -> refused: %s\n", i, c.Name, c.Args, err)
				conversation = append(conversation, message{"tool", err.Error()})
			case err != nil:
				conversation = append(conversation, message{"tool", "error: " + err.Error()})
			default:
				fmt.Fprintf(out, "step %d: the model calls %s %s -> %v\n", i, c.Name, c.Args, result)
				conversation = append(conversation, message{"tool", result.(string)})
			}
		}
		v, err := turn.End(ctx, guard.Step{Text: r.text, FinishReason: r.finish})
		fmt.Fprintf(out, "        guard: %s\n", guard.Explain(v))
		var stop *guard.StopError
		switch {
		case errors.As(err, &stop):
			// Tell the model why, in words that never repeat arguments
			// or results, and let it answer without tools.
			fmt.Fprintf(out, "feedback to the model: %s\n", stop.Verdict.Feedback)
			conversation = append(conversation, message{"user", stop.Verdict.Feedback})
			final := model(conversation, false)
			fmt.Fprintf(out, "the model answers: %s\n", final.text)
			return nil
		case err != nil:
			return err
		case v.Stop:
			// A normal finish is not an error: the model answered.
			fmt.Fprintf(out, "the model finished: %s\n", r.text)
			return nil
		}
	}
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}
