// Package eino connects a loopguard guard to the agents of
// github.com/cloudwego/eino: the chat model agent of its adk package, and
// the ReAct graph agent of its flow/agent/react package.
//
// [New] returns a [Middleware]. For adk.ChatModelAgent, its
// [Middleware.AgentMiddleware] goes in the agent's configuration, and the
// agent runs as before:
//
//	lg := lgeino.New(g)
//	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
//		Name: "weather", Description: "Answers weather questions.", Model: model,
//		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}},
//		Middlewares: []adk.AgentMiddleware{lg.AgentMiddleware()},
//	})
//	// ...
//	for event, ok := iter.Next(); ok; event, ok = iter.Next() {
//		var stop *guard.StopError
//		if errors.As(event.Err, &stop) {
//			log.Print(guard.Explain(stop.Verdict)) // the guard stopped the run
//		}
//	}
//
// After each reply of the model that asks for tools, the guard decides the
// calls at once, in order, each with the allowed calls before it (so that
// parallel calls of one reply see each other). The tool-call wrapper then
// runs each call by its ID: a refused call does not run, and its result is
// the guard's feedback, which names the tool and never quotes the arguments
// (a tool error would end eino's run). The calls and their outcomes are
// recorded as one step before the model is called again, and a stop of the
// guard is then the error of that call, which ends the agent's run: the
// event's Err is a [*guard.StopError]. A reply without tool calls is
// recorded at once; a normal finish is not an error.
//
// The ReAct graph agent (react.NewAgent) has no hook before and after its
// model, so the model goes in wrapped by [Middleware.ChatModel], and the
// tools run through [Middleware.ToolMiddleware]:
//
//	lg := lgeino.New(g)
//	agent, err := react.NewAgent(ctx, &react.AgentConfig{
//		ToolCallingModel: lg.ChatModel(model),
//		ToolsConfig: compose.ToolsNodeConfig{Tools: tools,
//			ToolCallMiddlewares: []compose.ToolMiddleware{lg.ToolMiddleware()}},
//	})
//	// ...
//	_, err = agent.Generate(ctx, messages) // a *guard.StopError when the guard stopped the run
//
// The wrapper ends the last reply's turn before each model call; when the
// guard stops the run, it returns the [*guard.StopError] instead of
// calling the model, and the graph's run ends with that error: the model
// is called as often as in a loop written by hand, not until eino's step
// limit (MaxStep). With the tool middleware alone, refusals work but a
// stop cannot end the run. A run that ends after its tools, without a
// model call (ToolReturnDirectly), leaves the last reply's step to
// [Middleware.End].
//
// Invokable, streamable and enhanced (multimodal) tools are all guarded. A
// streamed result is recorded when its stream ends, as the text of its
// chunks (for an enhanced tool, the text of its text parts).
//
// eino v0.8 adds adk.ChatModelAgentMiddleware, a newer hook for the chat
// model agent. The Go module proxy serves eino only up to v0.7.36, which
// this module requires, so the adapter uses adk.AgentMiddleware; its
// pieces, [Middleware.End] before a model call, [Middleware.Reply] after
// it and [Middleware.ToolMiddleware] around the tools, are what a
// ChatModelAgentMiddleware would call, once v0.8 can be had.
package eino

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// A Middleware connects a guard to a chat model agent. Create it with
// [New]. It is safe for concurrent use (the agent runs the calls of a reply
// in parallel), but one guard watches one run: give each concurrent run its
// own guard and Middleware.
type Middleware struct {
	cur *hook.Current // the reply whose tools run now
}

// New returns a Middleware that uses g, which must not be nil.
func New(g *guard.Guard) *Middleware { return &Middleware{cur: hook.NewCurrent(g)} }

// Guard returns the middleware's guard.
func (m *Middleware) Guard() *guard.Guard { return m.cur.Guard() }

// AgentMiddleware returns the hooks to put in
// adk.ChatModelAgentConfig.Middlewares: after each model reply, before each
// model call, and around each tool call.
func (m *Middleware) AgentMiddleware() adk.AgentMiddleware {
	return adk.AgentMiddleware{
		BeforeChatModel: func(ctx context.Context, _ *adk.ChatModelAgentState) error {
			_, err := m.End(ctx)
			return err
		},
		AfterChatModel: func(ctx context.Context, s *adk.ChatModelAgentState) error {
			if len(s.Messages) == 0 {
				return nil
			}
			return m.Reply(ctx, s.Messages[len(s.Messages)-1])
		},
		WrapToolCall: m.ToolMiddleware(),
	}
}

// ToolMiddleware returns the wrapper of each tool call, for the
// ToolCallMiddlewares of a compose.ToolsNodeConfig (the ReAct agent's
// ToolsConfig): it runs each call of the current reply by its ID, and
// answers a refused one with the guard's feedback as its result.
func (m *Middleware) ToolMiddleware() compose.ToolMiddleware {
	return compose.ToolMiddleware{
		Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
				return invoke(ctx, m, in, func(ctx context.Context) (*compose.ToolOutput, error) { return next(ctx, in) },
					func(o *compose.ToolOutput) string { return o.Result },
					func(text string) *compose.ToolOutput { return &compose.ToolOutput{Result: text} })
			}
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
				sr, err := stream(ctx, m, in, func(ctx context.Context) (*schema.StreamReader[string], error) {
					out, err := next(ctx, in)
					if err != nil {
						return nil, err
					}
					return out.Result, nil
				}, func(s string) string { return s }, func(text string) string { return text })
				if err != nil {
					return nil, err
				}
				return &compose.StreamToolOutput{Result: sr}, nil
			}
		},
		EnhancedInvokable: func(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
				return invoke(ctx, m, in, func(ctx context.Context) (*compose.EnhancedInvokableToolOutput, error) { return next(ctx, in) },
					func(o *compose.EnhancedInvokableToolOutput) string { return partsText(o.Result) },
					func(text string) *compose.EnhancedInvokableToolOutput {
						return &compose.EnhancedInvokableToolOutput{Result: textResult(text)}
					})
			}
		},
		EnhancedStreamable: func(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
				sr, err := stream(ctx, m, in, func(ctx context.Context) (*schema.StreamReader[*schema.ToolResult], error) {
					out, err := next(ctx, in)
					if err != nil {
						return nil, err
					}
					return out.Result, nil
				}, partsText, textResult)
				if err != nil {
					return nil, err
				}
				return &compose.EnhancedStreamableToolOutput{Result: sr}, nil
			}
		},
	}
}

// ChatModel returns cm wrapped for the ReAct agent of eino's
// flow/agent/react (its AgentConfig.ToolCallingModel), which has no hook
// before and after the model: before each call of cm it ends the turn of
// the last reply ([Middleware.End]), and when the guard stops the run it
// returns the [*guard.StopError] without calling cm, which ends the agent's
// run with that error; after each reply it records the reply (one without
// tool calls at once) or decides its calls, as AgentMiddleware does. A
// streamed reply is recorded when its stream ends, before its end reaches
// the graph, so before its tools run. The tools must run through
// [Middleware.ToolMiddleware].
//
// The wrapper keeps cm's own callbacks (components.Checker) and type
// name; WithTools wraps the model that cm's WithTools returns.
func (m *Middleware) ChatModel(cm model.ToolCallingChatModel) model.ToolCallingChatModel {
	return &chatModel{m: m, inner: cm}
}

// chatModel is a chat model that runs through a Middleware.
type chatModel struct {
	m     *Middleware
	inner model.ToolCallingChatModel
}

// Generate ends the last turn, calls the model unless the run stopped, and
// records its reply.
func (c *chatModel) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	if _, err := c.m.End(ctx); err != nil {
		return nil, err
	}
	msg, err := c.inner.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.m.Reply(ctx, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// Stream ends the last turn, calls the model unless the run stopped, and
// records its reply when the stream ends: the stream's end (or the
// guard's stop, as the stream's error) reaches the reader after that.
func (c *chatModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	if _, err := c.m.End(ctx); err != nil {
		return nil, err
	}
	src, err := c.inner.Stream(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	sr, sw := schema.Pipe[*schema.Message](0)
	go func() {
		defer src.Close()
		defer sw.Close()
		var chunks []*schema.Message
		for {
			chunk, err := src.Recv()
			if errors.Is(err, io.EOF) {
				msg, err := schema.ConcatMessages(chunks)
				if err == nil {
					err = c.m.Reply(ctx, msg)
				}
				if err != nil {
					sw.Send(nil, err)
				}
				return
			}
			if err != nil {
				sw.Send(nil, err)
				return
			}
			chunks = append(chunks, chunk)
			if sw.Send(chunk, nil) {
				return // the reader was closed: the reply is not read, nor recorded
			}
		}
	}()
	return sr, nil
}

// WithTools wraps the model with tools that the inner model returns.
func (c *chatModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	inner, err := c.inner.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &chatModel{m: c.m, inner: inner}, nil
}

// IsCallbacksEnabled is the inner model's: a model that runs its own
// callbacks keeps them, and eino adds its own around one that does not.
func (c *chatModel) IsCallbacksEnabled() bool { return components.IsCallbacksEnabled(c.inner) }

// GetType is the inner model's type name, or "" when it has none.
func (c *chatModel) GetType() string {
	t, _ := components.GetType(c.inner)
	return t
}

// Reply records a model reply without tool calls at once, and begins the
// turn of one with tool calls, deciding its calls, after ending the turn of
// the last reply ([hook.Current.Reply]); the error is a [*guard.StopError]
// when the guard stops the run for a fault. AgentMiddleware and ChatModel
// call it after each model reply; call it yourself from another hook
// that sees the replies.
func (m *Middleware) Reply(ctx context.Context, msg *schema.Message) error {
	step := StepFromMessage(msg)
	_, _, err := m.cur.Reply(ctx, step, step.ToolCalls)
	return err
}

// End records the step of the last model reply that asked for tools, if it
// has not been recorded yet, and returns the verdict; the error is a
// [*guard.StopError] when the guard stops the run for a fault. The
// middleware calls it before each model call; call it yourself when the
// agent's run ended after its tools ran (as when a tool returns directly,
// or at the iteration limit) to record that last reply's calls. Without
// such a reply it records nothing and returns a zero verdict.
func (m *Middleware) End(ctx context.Context) (guard.Verdict, error) { return m.cur.End(ctx) }

// StepFromMessage returns the step of a model reply: its text, its tool
// calls with their IDs, their arguments as JSON text and no outcome, and
// the finish reason and token usage of its response metadata.
func StepFromMessage(msg *schema.Message) guard.Step {
	if msg == nil {
		return guard.Step{}
	}
	step := guard.Step{Text: msg.Content}
	if meta := msg.ResponseMeta; meta != nil {
		step.FinishReason = meta.FinishReason
		if u := meta.Usage; u != nil {
			step.Usage = guard.Usage{InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens), TotalTokens: int64(u.TotalTokens)}
		}
	}
	for _, tc := range msg.ToolCalls {
		step.ToolCalls = append(step.ToolCalls, guard.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: jsonArgs(tc.Function.Arguments)})
	}
	return step
}

// jsonArgs returns arguments given as JSON text, or nil when there are none.
func jsonArgs(s string) any {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// call returns the guard's call for a tool input.
func call(in *compose.ToolInput) guard.ToolCall {
	return guard.ToolCall{ID: in.CallID, Name: in.Name, Args: jsonArgs(in.Arguments)}
}

// invoke runs an invokable tool call through the current turn (the last
// reply's, or, for a tool called without one, a new one that the next End
// records). A refusal
// comes back as the tool's result, with a nil error, so that eino hands it
// to the model and goes on.
func invoke[O any](ctx context.Context, m *Middleware, in *compose.ToolInput, next func(context.Context) (*O, error), text func(*O) string, result func(string) *O) (*O, error) {
	var out *O
	_, err := m.cur.Run(ctx, call(in), func(ctx context.Context) (any, error) {
		o, err := next(ctx)
		if err != nil || o == nil {
			return nil, err
		}
		out = o
		return text(o), nil
	})
	var refused *guard.RefusedError
	if errors.As(err, &refused) {
		return result(refused.Error()), nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stream runs a streaming tool call through the current turn. A refusal
// comes back as a stream of one chunk, the feedback. The outcome of a call
// that runs is recorded when its stream ends: the text of its chunks, and
// the stream's error if it failed.
func stream[T any](ctx context.Context, m *Middleware, in *compose.ToolInput, next func(context.Context) (*schema.StreamReader[T], error), text func(T) string, chunk func(string) T) (*schema.StreamReader[T], error) {
	turn := m.cur.Turn()
	var src *schema.StreamReader[T]
	_, err := turn.Run(ctx, call(in), func(ctx context.Context) (any, error) {
		sr, err := next(ctx)
		src = sr
		return nil, err // the outcome is given when the stream ends
	})
	var refused *guard.RefusedError
	if errors.As(err, &refused) {
		return schema.StreamReaderFromArray([]T{chunk(refused.Error())}), nil
	}
	if err != nil || src == nil {
		return src, err
	}
	sr, sw := schema.Pipe[T](0)
	go func() {
		defer src.Close()
		defer sw.Close()
		var b strings.Builder
		for {
			c, err := src.Recv()
			if errors.Is(err, io.EOF) {
				turn.SetResult(in.CallID, b.String(), nil)
				return
			}
			if err != nil {
				turn.SetResult(in.CallID, b.String(), err)
				sw.Send(c, err)
				return
			}
			b.WriteString(text(c))
			if sw.Send(c, nil) {
				// The reader was closed: the rest of the stream is not read.
				turn.SetResult(in.CallID, b.String(), nil)
				return
			}
		}
	}()
	return sr, nil
}

// partsText returns the text parts of a tool result, joined.
func partsText(r *schema.ToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Type == schema.ToolPartTypeText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// textResult returns a tool result of one text part.
func textResult(text string) *schema.ToolResult {
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text}}}
}
