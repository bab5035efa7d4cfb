package dbos_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	lgdbos "github.com/loopguard/loopguard/adapters/dbos"
	"github.com/loopguard/loopguard/guard"
)

// The agent of the tests: a DBOS workflow that asks a model step for a
// reply, runs the tool steps the reply asks for, hands their outputs back
// and asks again, until the model answers. It is written as a user would
// write it, with lgdbos.Model and lgdbos.Tool where it would call
// dbos.RunAsStep.

// Reply is what the model step returns.
type Reply struct {
	Text         string `json:"text"`
	Calls        []Call `json:"calls"`
	FinishReason string `json:"finishReason"`
	InputTokens  int64  `json:"inputTokens"`
	OutputTokens int64  `json:"outputTokens"`
}

// Call is a tool call the model asks for.
type Call struct {
	Tool  string `json:"tool"`
	Query string `json:"query"`
}

// Input is the agent workflow's input: the task, and the name of the
// model's script.
type Input struct {
	Task   string `json:"task"`
	Script string `json:"script"`
}

// Result is what the agent workflow returns: the answer, the codes of the
// stops it met, the refusals it was answered with, the tools' outputs and
// the guard's summary.
type Result struct {
	Answer   string   `json:"answer"`
	Stops    []string `json:"stops"`
	Refusals []string `json:"refusals"`
	Outputs  []string `json:"outputs"`
	Steps    int      `json:"steps"`
	Calls    int      `json:"calls"`
	Failed   int      `json:"failed"`
}

// step reads a Reply for the guard.
func step(r Reply) guard.Step {
	return guard.Step{Text: r.Text, FinishReason: r.FinishReason,
		Usage: guard.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}}
}

// scripts are the models of the tests, by name: each returns the reply of
// a turn.
var scripts = map[string]func(turn int) Reply{
	// stubborn asks for the same search every turn.
	"stubborn": func(turn int) Reply {
		return Reply{Text: fmt.Sprintf("Let me search (try %d).", turn+1), Calls: []Call{{Tool: "Search", Query: "loop guard"}},
			FinishReason: "tool-calls", InputTokens: 100, OutputTokens: 10}
	},
	// learner asks two different searches and a fetch that fails, then
	// answers.
	"learner": func(turn int) Reply {
		switch turn {
		case 0:
			return Reply{Text: "First.", Calls: []Call{{Tool: "Search", Query: "a"}}, FinishReason: "tool-calls"}
		case 1:
			return Reply{Text: "Second.", Calls: []Call{{Tool: "Search", Query: "b"}, {Tool: "Fetch", Query: "http://x"}}, FinishReason: "tool-calls"}
		}
		return Reply{Text: "Done.", FinishReason: "stop"}
	},
}

// App is one worker's agent: its guard, and the model and tools, which
// note each run of their bodies in a ledger (a file that the worker
// processes of a test share, or memory).
type App struct {
	Guard *lgdbos.Guard
	// Ledger, when set, is the file each body run is appended to, as
	// "<pid> <step> <turn>".
	Ledger string
	// Hang, when set, is the ledger line ("Search 1") whose body, after
	// noting itself, prints "HANG" on standard output and blocks: the
	// worker is to be killed there.
	Hang string

	mu   sync.Mutex
	runs []string
}

// note records a run of a body.
func (a *App) note(name string, turn int) {
	line := fmt.Sprintf("%s %d", name, turn)
	a.mu.Lock()
	a.runs = append(a.runs, line)
	a.mu.Unlock()
	if a.Ledger != "" {
		f, err := os.OpenFile(a.Ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %s\n", os.Getpid(), line)
			f.Close()
		}
	}
	if a.Hang == line {
		fmt.Println("HANG")
		select {} // until the test kills this process
	}
}

// ran returns the body runs of this process, in order.
func (a *App) ran() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.runs...)
}

// Agent is the workflow.
func (a *App) Agent(ctx dbos.Context, in Input) (Result, error) {
	var res Result
	run, err := a.Guard.Start(ctx)
	if err != nil {
		return res, err
	}
	script := scripts[in.Script]
	if script == nil {
		return res, fmt.Errorf("no script %q", in.Script)
	}
	var stop *guard.StopError
	for turn := 0; ; turn++ {
		reply, err := lgdbos.Model(run, "Chat", step, func(context.Context) (Reply, error) {
			a.note("Chat", turn)
			return script(turn), nil
		})
		if errors.As(err, &stop) {
			break
		}
		if err != nil {
			return res, err
		}
		if len(reply.Calls) == 0 {
			res.Answer = reply.Text
			break
		}
		for _, c := range reply.Calls {
			out, err := lgdbos.Tool(run, c.Tool, c.Query, func(context.Context) (string, error) {
				a.note(c.Tool, turn)
				if c.Tool == "Fetch" {
					return "", fmt.Errorf("fetch %s: connection refused", c.Query)
				}
				return "results for " + c.Query, nil
			})
			var refused *guard.RefusedError
			switch {
			case errors.As(err, &refused):
				out = refused.Error() // the guard's feedback: the model's answer
				res.Refusals = append(res.Refusals, out)
			case errors.As(err, &stop):
			case err != nil:
				out = "Error: " + err.Error()
			}
			if stop != nil {
				break
			}
			res.Outputs = append(res.Outputs, out)
		}
		if stop != nil {
			break
		}
	}
	if stop == nil {
		if _, err := run.End(); err != nil && !errors.As(err, &stop) {
			return res, err
		}
	}
	if stop != nil {
		res.Stops = append(res.Stops, stop.Verdict.Code)
	}
	s, err := run.Summary()
	if err != nil {
		return res, err
	}
	res.Steps, res.Calls, res.Failed = s.Steps, s.ToolCalls, s.FailedToolCalls
	return res, nil
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
