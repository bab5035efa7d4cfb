// Package langchaingo connects a loopguard guard to the agents of
// github.com/tmc/langchaingo.
//
// [Wrap] decorates an agent: each plan it returns is a step of the guard,
// and its tools run through the guard; [Model] wraps the agent's model so
// that the steps hold its token usage. An executor built on the wrapped
// agent runs as before:
//
//	agent := agents.NewOpenAIFunctionsAgent(lglangchaingo.Model(llm), tools)
//	executor := agents.NewExecutor(lglangchaingo.Wrap(g, agent))
//	answer, err := chains.Run(ctx, executor, "What is the weather in Paris?")
//	var stop *guard.StopError
//	if errors.As(err, &stop) {
//		log.Print(guard.Explain(stop.Verdict)) // the guard stopped the run
//	}
//
// When the agent plans tool calls, the guard decides them at once, in
// order, each with the allowed calls before it (so parallel calls of one
// reply see each other). A refused call does not run: the executor gets the
// guard's feedback as the tool's observation, which names the tool and never
// quotes the arguments, and hands it to the model as it would a result (a
// tool error would end the executor's run). The calls and their outcomes are
// recorded as one step when the agent is asked for its next plan, and a stop
// of the guard is then the error of Plan, which ends the executor's run: a
// [*guard.StopError]. A plan that finishes is recorded at once with finish
// reason "stop"; a normal finish is not an error.
//
// The agent's plan is all the hook sees of the model's reply: a step holds
// the final answer as its text, and no text beside tool calls. Tools match
// the plan's calls by tool and input, as the executor does not tell a tool
// which action it runs; the steps keep the actions' tool IDs.
//
// Token usage reaches the guard through [Model]: each step holds the usage
// of the model calls its plan made, and token budgets stop the run at the
// step that reaches them, before the model is asked again. Without it,
// steps have no usage, and token budgets never stop the run.
//
// The package name matches the framework's module; import it under another
// name:
//
//	import lglangchaingo "github.com/loopguard/loopguard/adapters/langchaingo"
package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// An Agent is an agent whose plans and tools go through a guard. Create it
// with [Wrap]. It is safe for concurrent use, but one guard watches one run:
// give each concurrent run its own guard and Agent.
type Agent struct {
	cur   *hook.Current // the plan whose tools run now
	agent agents.Agent
	tools []tools.Tool
}

var _ agents.Agent = (*Agent)(nil)

// Wrap returns agent guarded by g; neither may be nil. The agent's tools
// are decorated once, here: [Agent.GetTools] returns them.
func Wrap(g *guard.Guard, agent agents.Agent) *Agent {
	a := &Agent{cur: hook.NewCurrent(g), agent: agent}
	for _, t := range agent.GetTools() {
		a.tools = append(a.tools, &guardedTool{Tool: t, a: a})
	}
	return a
}

// Guard returns the agent's guard.
func (a *Agent) Guard() *guard.Guard { return a.cur.Guard() }

// Plan first records the previous plan's step, if it asked for tools: the
// calls that ran with their outcomes, and in [guard.Step.Refused] the calls
// the guard refused. If the guard stops the run there, Plan returns a
// [*guard.StopError] and does not ask the agent. Otherwise it asks the
// wrapped agent for its plan. Tool calls are decided by the guard before
// the executor runs them; a finish is recorded at once, and a stop then (as
// for a budget) is returned as a [*guard.StopError] in place of the finish.
// Errors of the wrapped agent are returned as they are.
func (a *Agent) Plan(ctx context.Context, intermediateSteps []schema.AgentStep, inputs map[string]string, options ...chains.ChainCallOption) ([]schema.AgentAction, *schema.AgentFinish, error) {
	if _, err := a.End(ctx); err != nil {
		return nil, nil, err
	}
	pu := new(planUsage)
	actions, finish, err := a.agent.Plan(context.WithValue(ctx, usageKey{}, pu), intermediateSteps, inputs, options...)
	if err != nil {
		return actions, finish, err
	}
	usage := pu.get()
	if finish != nil {
		text, _ := finish.ReturnValues["output"].(string)
		if text == "" {
			text = finish.Log
		}
		if _, _, err := a.cur.Reply(ctx, guard.Step{Text: text, FinishReason: "stop", Usage: usage}, nil); err != nil {
			return nil, nil, err
		}
		return actions, finish, nil
	}
	calls := make([]guard.ToolCall, len(actions))
	for i, act := range actions {
		calls[i] = guard.ToolCall{ID: act.ToolID, Name: a.toolName(act.Tool), Args: args(toolInput(act.ToolInput))}
	}
	if _, _, err := a.cur.Reply(ctx, guard.Step{FinishReason: "tool_calls", Usage: usage}, calls); err != nil {
		return nil, nil, err // ctx ended before the calls were decided
	}
	return actions, nil, nil
}

// End records the step of the last plan that asked for tools, if it has not
// been recorded yet, and returns the verdict; the error is a
// [*guard.StopError] when the guard stops the run for a fault. Plan calls
// it; call it yourself after the executor has given up (as on
// agents.ErrNotFinished) to record the last plan's calls. Without such a
// plan it records nothing and returns a zero verdict.
func (a *Agent) End(ctx context.Context) (guard.Verdict, error) { return a.cur.End(ctx) }

// toolName returns the name of the agent's tool that the executor runs for
// an action's tool name (it ignores case), or name itself.
func (a *Agent) toolName(name string) string {
	for _, t := range a.tools {
		if strings.EqualFold(t.Name(), name) {
			return t.Name()
		}
	}
	return name
}

// toolInput is the input the executor gives a tool for an action.
func toolInput(s string) string { return strings.TrimSuffix(s, "\nObservation:") }

// args returns a tool input as call arguments: JSON text for an object or
// an array (as function-calling agents give), the string itself otherwise.
func args(input string) any {
	trimmed := strings.TrimSpace(input)
	if trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	return input
}

// GetInputKeys returns the wrapped agent's input keys.
func (a *Agent) GetInputKeys() []string { return a.agent.GetInputKeys() }

// GetOutputKeys returns the wrapped agent's output keys.
func (a *Agent) GetOutputKeys() []string { return a.agent.GetOutputKeys() }

// GetTools returns the wrapped agent's tools, decorated: a call the guard
// refuses does not run, and its observation is the guard's feedback.
func (a *Agent) GetTools() []tools.Tool { return a.tools }

// guardedTool is a tool of an Agent.
type guardedTool struct {
	tools.Tool
	a *Agent
}

// Call runs the call through the current plan's turn, which decided it when
// the agent planned it (for a tool called without a plan, a new turn that
// the next Plan or End records). A refusal comes back as the observation, with a nil
// error, so that the executor hands it to the model and goes on.
func (t *guardedTool) Call(ctx context.Context, input string) (string, error) {
	call := guard.ToolCall{Name: t.Name(), Args: args(input)}
	out, err := t.a.cur.Run(ctx, call, func(ctx context.Context) (any, error) {
		return t.Tool.Call(ctx, input)
	})
	var refused *guard.RefusedError
	if errors.As(err, &refused) {
		return refused.Error(), nil
	}
	s, _ := out.(string)
	return s, err
}
