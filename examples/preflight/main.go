// Command preflight shows a guard refusing tool calls before they run.
//
// Some calls cannot be taken back: an email sent is sent. Here the options
// cap send_email at two calls per run, and the default rules refuse a third
// identical search. Before running each call the model asks for, the loop
// asks g.Preflight; a refused call is not run, and the refusal's feedback
// goes back to the model as the call's result. Preflight changes nothing:
// only the calls that ran are recorded, with g.Check.
//
//	go run ./examples/preflight
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// options caps send_email; everything else keeps its default.
const options = `{"tools": {"send_email": {"maxCalls": 2}}}`

// wanted is what the simulated model asks for, one call per turn.
var wanted = []guard.ToolCall{
	{Name: "search", Args: json.RawMessage(`{"query": "team offsite date"}`)},
	{Name: "send_email", Args: json.RawMessage(`{"to": "ana@example.com", "subject": "Offsite"}`)},
	{Name: "send_email", Args: json.RawMessage(`{"to": "bo@example.com", "subject": "Offsite"}`)},
	{Name: "send_email", Args: json.RawMessage(`{"to": "cy@example.com", "subject": "Offsite"}`)},
	{Name: "search", Args: json.RawMessage(`{"query": "offsite venue"}`)},
	{Name: "search", Args: json.RawMessage(`{"query": "offsite venue"}`)},
	{Name: "search", Args: json.RawMessage(`{"query": "offsite venue"}`)},
}

// runTool stands for the real tools.
func runTool(c guard.ToolCall) string {
	if c.Name == "send_email" {
		return "sent"
	}
	return "3 results"
}

func run(out io.Writer) error {
	ctx := context.Background()
	cfg, err := detector.FromJSON([]byte(options))
	if err != nil {
		return err
	}
	g, err := guard.New(cfg)
	if err != nil {
		return err
	}
	for _, c := range wanted {
		fmt.Fprintf(out, "the model asks for %s %s\n", c.Name, c.Args)
		d, err := g.Preflight(ctx, c)
		if err != nil {
			return err
		}
		if !d.Allow {
			// Not run, not recorded: the model gets the reason instead
			// of a result, and may change course.
			fmt.Fprintf(out, "  refused (%s): %s\n", d.Code, d.Feedback)
			continue
		}
		c.Result = runTool(c)
		fmt.Fprintf(out, "  ran it: %v\n", c.Result)
		v, err := g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{c}})
		if err != nil {
			return err
		}
		if v.Stop {
			fmt.Fprintf(out, "  stop: %s\n", guard.Explain(v))
			return nil
		}
	}
	s, err := g.Summary(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d steps recorded, %d calls run\n", s.Steps, s.ToolCalls)
	return nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "preflight:", err)
		os.Exit(1)
	}
}
