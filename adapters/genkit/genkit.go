// Package genkit connects a loopguard guard to the generate loop of
// Firebase Genkit for Go (github.com/firebase/genkit/go).
//
// Define the tools the model may call with [DefineTool] (or [NewTool]) in
// place of genkit.DefineTool, once, as usual; then run each generation with
// a guard of its own through [Generate] in place of genkit.Generate:
//
//	weather := lggenkit.DefineTool(gk, "get_weather", "The weather in a city.", getWeather)
//	// for each run:
//	resp, err := lggenkit.Generate(ctx, gk, g, ai.WithPrompt("Weather in Paris?"), ai.WithTools(weather))
//	var stop *guard.StopError
//	if errors.As(err, &stop) {
//		log.Print(guard.Explain(stop.Verdict)) // the guard stopped the run
//	}
//
// After each model response that requests tools, the guard decides the
// requests at once, in order, each with the allowed ones before it (so that
// parallel requests of one response see each other). Genkit then runs the
// tools: a refused call does not run, and its output is the guard's
// feedback, which names the tool and never quotes the arguments (a tool
// error would end the Generate call). The calls and their outcomes are
// recorded as one step before the model is called again, and a stop of the
// guard is then the error of that call, which ends the Generate call with a
// [*guard.StopError]. A response without tool requests is recorded at once;
// a normal finish is not an error.
//
// Genkit looks tools up by name, so they cannot be wrapped, and they are
// defined once for every run: a guarded tool finds its run's guard in its
// context, where Generate (or [Middleware.Context]) puts it, and runs
// unguarded without one. Genkit v1.4.0, the latest the Go module proxy
// serves, has no tool-level middleware (no ai.Middleware with WrapTool, no
// ai.WithUse), so a tool defined with genkit.DefineTool or ai.NewTool
// cannot be guarded: when one answers a request in a guarded run, the
// model middleware ends the run with an error wrapping [ErrUnguardedTool]
// that names it, before the model is called again, rather than let it run
// unguarded, unnoticed. To guard a prompt's execution, or another door to
// Genkit's generate loop, use a [Middleware] yourself: its
// [Middleware.ModelMiddleware], its [Middleware.Context], then
// [Middleware.End].
//
// Genkit does not tell a tool which request it answers, so the turn finds
// each call by its tool and input; the steps keep the requests' refs as call
// IDs. Genkit's finish reasons have no "tool calls": a response that
// requests tools and says "stop" (or nothing) is recorded with
// "tool_calls", since Genkit runs the tools and goes on.
package genkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// A Middleware connects a guard to one run of Genkit's generate loop and to
// the guarded tools it calls. Create it with [New]; [Generate] makes one for
// each call. It is safe for concurrent use (Genkit runs the tools of a
// response in parallel), but one guard watches one run: give each
// concurrent run its own guard and Middleware.
type Middleware struct {
	cur *hook.Current // the response whose tools run now

	mu        sync.Mutex
	requested map[string]bool // the tools the last response asked for
	ran       map[string]bool // those of them that ran through the guard
}

// New returns a Middleware that uses g, which must not be nil.
func New(g *guard.Guard) *Middleware { return &Middleware{cur: hook.NewCurrent(g)} }

// Guard returns the middleware's guard.
func (m *Middleware) Guard() *guard.Guard { return m.cur.Guard() }

// ctxKey is the context key of the Middleware of a run.
type ctxKey struct{}

// Context returns ctx carrying m: the guarded tools that a generate loop
// run with this context calls run through m.
func (m *Middleware) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, m)
}

// Generate is genkit.Generate guarded by g, which must not be nil: it runs
// with m's model middleware and m in its context, for m a new Middleware of
// g, and then records the last response's tool calls if the loop ended
// after running them ([Middleware.End]). The error is a [*guard.StopError]
// when the guard stopped the run; a normal finish is not an error.
func Generate(ctx context.Context, gk *genkit.Genkit, g *guard.Guard, opts ...ai.GenerateOption) (*ai.ModelResponse, error) {
	m := New(g)
	opts = append(opts[:len(opts):len(opts)], ai.WithMiddleware(m.ModelMiddleware()))
	resp, err := genkit.Generate(m.Context(ctx), gk, opts...)
	if _, endErr := m.End(ctx); err == nil {
		err = endErr
	}
	return resp, err
}

// ModelMiddleware returns the model middleware to pass to genkit.Generate
// (or a prompt's Execute) with ai.WithMiddleware, beside a context from
// [Middleware.Context]. Before each model call it records the step of the last
// response, whose tools have run since, and returns a [*guard.StopError] in
// place of calling the model when the guard stops the run. After it, it
// decides the response's tool requests, or records a response without
// them (a stop then is returned in place of the response).
func (m *Middleware) ModelMiddleware() ai.ModelMiddleware {
	return func(next core.StreamingFunc[*ai.ModelRequest, *ai.ModelResponse, *ai.ModelResponseChunk]) core.StreamingFunc[*ai.ModelRequest, *ai.ModelResponse, *ai.ModelResponseChunk] {
		return func(ctx context.Context, req *ai.ModelRequest, cb core.StreamCallback[*ai.ModelResponseChunk]) (*ai.ModelResponse, error) {
			if _, err := m.End(ctx); err != nil {
				return nil, err
			}
			if err := m.unguarded(req); err != nil {
				return nil, err
			}
			resp, err := next(ctx, req, cb)
			if err != nil {
				return resp, err
			}
			step := StepFromResponse(resp)
			m.asked(step.ToolCalls)
			if _, _, err := m.cur.Reply(ctx, step, step.ToolCalls); err != nil {
				return nil, err
			}
			return resp, nil
		}
	}
}

// ErrUnguardedTool is the error (wrapped) that ends a guarded generate loop
// in which a tool ran without the guard: a tool defined with
// genkit.DefineTool or ai.NewTool rather than this package's [DefineTool]
// or [NewTool]. Genkit v1.4.0 has no tool-level middleware, so the guard
// cannot wrap such a tool; rather than let it run unguarded, silently, on
// every turn, the model middleware ends the loop before the model is
// called again, naming the tools.
var ErrUnguardedTool = errors.New("lggenkit: a tool ran without the guard")

// asked notes the tools that a response asks for, which have not run yet.
func (m *Middleware) asked(calls []guard.ToolCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requested, m.ran = make(map[string]bool, len(calls)), make(map[string]bool, len(calls))
	for _, c := range calls {
		m.requested[c.Name] = true
	}
}

// ranGuarded notes that a guarded tool ran (or was refused) in m's run.
func (m *Middleware) ranGuarded(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ran != nil {
		m.ran[name] = true
	}
}

// unguarded returns an error wrapping [ErrUnguardedTool] when a tool that
// the last response asked for answered it (a tool response in the request's
// last message) without running through the guard.
func (m *Middleware) unguarded(req *ai.ModelRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	requested, ran := m.requested, m.ran
	m.requested, m.ran = nil, nil
	if len(requested) == 0 || req == nil || len(req.Messages) == 0 {
		return nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last == nil || last.Role != ai.RoleTool {
		return nil
	}
	var names []string
	for _, p := range last.Content {
		if p == nil || !p.IsToolResponse() || p.ToolResponse == nil {
			continue
		}
		name := p.ToolResponse.Name
		if requested[name] && !ran[name] && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return fmt.Errorf("%w: %q; define it with lggenkit.DefineTool or lggenkit.NewTool", ErrUnguardedTool, names)
}

// End records the step of the last response that requested tools, if it
// has not been recorded yet, and returns the verdict; the error is a
// [*guard.StopError] when the guard stops the run for a fault. The model
// middleware calls it before each model call, and [Generate] after the loop
// (which may end without calling the model again, as at Genkit's limit on
// turns): call it after the loop when you use the middleware yourself.
// Without such a response it records nothing and returns a zero verdict.
func (m *Middleware) End(ctx context.Context) (guard.Verdict, error) { return m.cur.End(ctx) }

// StepFromResponse returns the step of a model response: its text, its
// tool requests (with their refs as IDs, their inputs as arguments and no
// outcome), its finish reason and its token usage. A response that requests
// tools and finishes with "stop" or no reason gets "tool_calls".
func StepFromResponse(resp *ai.ModelResponse) guard.Step {
	if resp == nil {
		return guard.Step{}
	}
	step := guard.Step{FinishReason: string(resp.FinishReason)}
	if u := resp.Usage; u != nil {
		step.Usage = guard.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens), TotalTokens: int64(u.TotalTokens)}
	}
	if resp.Message == nil {
		return step
	}
	for _, p := range resp.Message.Content {
		switch {
		case p.IsText():
			step.Text += p.Text
		case p.IsToolRequest() && p.ToolRequest != nil:
			tr := p.ToolRequest
			step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: tr.Ref, Name: tr.Name, Args: tr.Input})
		}
	}
	if len(step.ToolCalls) > 0 && (resp.FinishReason == "" || resp.FinishReason == ai.FinishReasonStop) {
		step.FinishReason = "tool_calls"
	}
	return step
}

// DefineTool defines and registers a tool, as genkit.DefineTool does, that
// runs through the [Middleware] in its context (see [Generate]), and
// unguarded without one. Its input schema is inferred from In unless opts
// give one; fn gets its input decoded into In. A call the guard refuses does
// not run, and its output is the guard's feedback (a string); otherwise the
// output is fn's.
func DefineTool[In, Out any](gk *genkit.Genkit, name, description string, fn ai.ToolFunc[In, Out], opts ...ai.ToolOption) *ai.ToolDef[any, any] {
	return genkit.DefineTool(gk, name, description, toolFunc(name, fn), toolOptions[In](opts)...)
}

// NewTool is [DefineTool] for a tool that is not registered, as ai.NewTool
// creates: pass it to Generate with ai.WithTools.
func NewTool[In, Out any](name, description string, fn ai.ToolFunc[In, Out], opts ...ai.ToolOption) *ai.ToolDef[any, any] {
	return ai.NewTool(name, description, toolFunc(name, fn), toolOptions[In](opts)...)
}

// toolOptions returns opts, or, when they are empty, the input schema
// inferred from In: the guarded tool takes its input as it comes (any) and
// decodes it itself.
func toolOptions[In any](opts []ai.ToolOption) []ai.ToolOption {
	if len(opts) > 0 {
		return opts
	}
	var in In
	return []ai.ToolOption{ai.WithInputSchema(core.InferSchemaMap(in))}
}

// toolFunc returns fn guarded by the Middleware in its context: it runs
// through the current turn (the last response's, or, for a tool called
// without one, a new one that the next End records), which finds the call by tool and input among
// the response's requests.
func toolFunc[In, Out any](name string, fn ai.ToolFunc[In, Out]) ai.ToolFunc[any, any] {
	return func(tc *ai.ToolContext, input any) (any, error) {
		run := func(context.Context) (any, error) {
			in, err := decode[In](input)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", name, err)
			}
			return fn(tc, in) // Run passes tc on as ctx
		}
		m, _ := tc.Value(ctxKey{}).(*Middleware)
		if m == nil {
			return run(tc)
		}
		m.ranGuarded(name)
		out, err := m.cur.Run(tc, guard.ToolCall{Name: name, Args: input}, run)
		var refused *guard.RefusedError
		if errors.As(err, &refused) {
			return refused.Error(), nil
		}
		return out, err
	}
}

// decode converts a tool's input, as Genkit decoded it from JSON, to In.
func decode[In any](input any) (In, error) {
	var in In
	if v, ok := input.(In); ok {
		return v, nil
	}
	b, err := json.Marshal(input)
	if err != nil {
		return in, err
	}
	err = json.Unmarshal(b, &in)
	return in, err
}
