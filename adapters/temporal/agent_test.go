package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	lgtemporal "github.com/loopguard/loopguard/adapters/temporal"
	"github.com/loopguard/loopguard/guard"
)

// The agent of the tests: a workflow that asks a model activity for a reply,
// runs the tool activities the reply asks for, hands their outputs back and
// asks again, until the model answers. It is written as a user would write
// it; the guard is not mentioned but for the two errors it handles.

// Reply is what the model activity returns.
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

// Input is the agent workflow's input. Continued counts the runs before
// this one; ContinueEvery > 0 continues as new after that many model calls.
// WaitOnStop makes a stopped agent wait (up to an hour) for an operator to
// lift the stop. Coroutines runs each tool call in a coroutine of its own.
type Input struct {
	History       []string `json:"history"`
	ContinueEvery int      `json:"continueEvery"`
	Continued     int      `json:"continued"`
	WaitOnStop    bool     `json:"waitOnStop"`
	Coroutines    bool     `json:"coroutines"`
	// Think is how long the agent sleeps before each model call.
	Think time.Duration `json:"think"`
	// Local runs the tools as local activities.
	Local bool `json:"local"`
}

// Result is what the agent workflow returns: the answer, the codes of the
// stops it met, and the refusals it was answered with.
type Result struct {
	Answer   string   `json:"answer"`
	Stops    []string `json:"stops"`
	Refusals []string `json:"refusals"`
	Runs     int      `json:"runs"` // this run and those it continues
}

// step reads a Reply for the guard.
func step(r Reply) guard.Step {
	return guard.Step{Text: r.Text, FinishReason: r.FinishReason,
		Usage: guard.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}}
}

// Agent is the workflow.
func Agent(ctx workflow.Context, in Input) (Result, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: 1},
	})
	res := Result{Runs: in.Continued + 1}
	// stopped reports whether err is the guard's stop, and if so whether
	// the agent may go on (an operator lifted the stop).
	stopped := func(err error) (stop, goOn bool) {
		var s *guard.StopError
		if !errors.As(err, &s) {
			return false, false
		}
		res.Stops = append(res.Stops, s.Verdict.Code)
		if !in.WaitOnStop {
			return true, false
		}
		ok, _ := workflow.AwaitWithTimeout(ctx, time.Hour, func() bool { return lgtemporal.Stopped(ctx) == nil })
		return true, ok
	}
	for i := 0; ; i++ {
		if in.ContinueEvery > 0 && i == in.ContinueEvery {
			in.Continued++
			return res, workflow.NewContinueAsNewError(ctx, Agent, in)
		}
		if in.Think > 0 {
			if err := workflow.Sleep(ctx, in.Think); err != nil {
				return res, err
			}
		}
		var reply Reply
		if err := workflow.ExecuteActivity(ctx, "Chat", in.History).Get(ctx, &reply); err != nil {
			if stop, goOn := stopped(err); stop && goOn {
				continue
			} else if stop {
				return res, nil
			}
			return res, err
		}
		if len(reply.Calls) == 0 {
			res.Answer = reply.Text
			return res, nil
		}
		// The calls of a reply run in parallel, as models ask for them.
		outs := make([]string, len(reply.Calls))
		errs := make([]error, len(reply.Calls))
		if in.Coroutines {
			wg := workflow.NewWaitGroup(ctx)
			for j, c := range reply.Calls {
				wg.Add(1)
				workflow.Go(ctx, func(ctx workflow.Context) {
					defer wg.Done()
					errs[j] = workflow.ExecuteActivity(ctx, c.Tool, c.Query).Get(ctx, &outs[j])
				})
			}
			wg.Wait(ctx)
		} else {
			futures := make([]workflow.Future, len(reply.Calls))
			for j, c := range reply.Calls {
				if in.Local {
					lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
					futures[j] = workflow.ExecuteLocalActivity(lctx, c.Tool, c.Query)
				} else {
					futures[j] = workflow.ExecuteActivity(ctx, c.Tool, c.Query)
				}
			}
			for j, f := range futures {
				errs[j] = f.Get(ctx, &outs[j])
			}
		}
		for j, err := range errs {
			var app *sdktemporal.ApplicationError
			var refused *guard.RefusedError
			switch {
			case err == nil:
			case errors.As(err, &app) && app.Type() == lgtemporal.ErrorTypeRefused && errors.As(err, &refused):
				outs[j] = app.Message() // the guard's feedback
				res.Refusals = append(res.Refusals, outs[j])
			default:
				if stop, _ := stopped(err); stop {
					return res, nil
				}
				outs[j] = "Error: " + err.Error()
			}
		}
		in.History = append(in.History, outs...)
	}
}

// Activities are the model and the tools of the tests. The model follows a
// script; the tools count how often their bodies run.
type Activities struct {
	Script func(turn int, history []string) Reply

	mu    sync.Mutex
	turns int
	runs  map[string]int
}

// Chat is the model activity.
func (a *Activities) Chat(_ context.Context, history []string) (Reply, error) {
	a.mu.Lock()
	turn := a.turns
	a.turns++
	a.mu.Unlock()
	return a.Script(turn, history), nil
}

// Search is a tool activity.
func (a *Activities) Search(_ context.Context, query string) (string, error) {
	a.count("Search")
	return "results for " + query, nil
}

// Fetch is a tool activity that fails.
func (a *Activities) Fetch(_ context.Context, url string) (string, error) {
	a.count("Fetch")
	return "", fmt.Errorf("fetch %s: connection refused", url)
}

func (a *Activities) count(tool string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runs == nil {
		a.runs = make(map[string]int)
	}
	a.runs[tool]++
}

// ran returns how often each tool's body ran.
func (a *Activities) ran() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.runs))
	for k, v := range a.runs {
		out[k] = v
	}
	return out
}

// stubborn is a model that asks for the same search every turn.
func stubborn(turn int, history []string) Reply {
	return Reply{Text: fmt.Sprintf("Let me search (try %d).", turn+1), Calls: []Call{{Tool: "Search", Query: "loop guard"}},
		FinishReason: "tool-calls", InputTokens: 100, OutputTokens: 10}
}

// learner asks two different searches, then answers.
func learner(turn int, history []string) Reply {
	switch turn {
	case 0:
		return Reply{Text: "First.", Calls: []Call{{Tool: "Search", Query: "a"}}, FinishReason: "tool-calls"}
	case 1:
		return Reply{Text: "Second.", Calls: []Call{{Tool: "Search", Query: "b"}}, FinishReason: "tool-calls"}
	}
	return Reply{Text: "Done: " + fmt.Sprint(len(history)), FinishReason: "stop"}
}
