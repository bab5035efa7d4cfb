package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

// A Runner connects a guard to the beta tool runner: its decorated tools
// preflight each call before it runs and collect the outcomes, and
// [Runner.Check] records each message with the outcomes of its calls. Create
// it with [NewRunner]. Its methods, and its tools, are safe for concurrent
// use: the tool runner runs the tools of a turn in parallel.
//
// The tool runner runs the tools of a message when it is asked for the next
// one, and then sends the next request at once, so a message's step is
// complete only just before that request. Pass [Runner.Option] to
// NewToolRunner: its middleware records the message whose tools have just
// run before the request goes out, and when that stops the run it sends
// nothing and answers with a final message of its own (see StopMessageID),
// so a stop costs no model call more than in a loop of your own. Without the
// option, Check records a message that asks for tools at the next Check (or
// at Check(nil)), after the next request, and a stop that comes from a
// turn's tool outcomes is reported one message (and one paid request) late.
// Either way Check records at once a message that asks for no tools, and the
// preflight of each call is never late.
//
// Each checked message is a [guard.Turn]: Check preflights its calls, and
// the decorated tools run them through the turn, which finds each call by
// its tool and arguments (the tool runner does not tell a tool its call's
// ID). A call that the message does not hold is judged then, as one more
// call of that message. When the runner executes a tool before the message
// that asked for it has been given to Check, the call is judged alone with
// [guard.Guard.StartCall], together with the calls still running, and
// recorded as a step of its own when it ends.
type Runner struct {
	g *guard.Guard

	mu      sync.Mutex
	names   map[string]bool // the names of the decorated tools
	held    *heldTurn       // the message whose tools run next, if any
	ended   *guard.Verdict  // the verdict of a held message the middleware recorded, for the next Check
	stopped *guard.Verdict  // the stop the middleware answered with StopMessageID, if any
}

// StopMessageID is the ID of the final message that the middleware of
// [Runner.Option] answers with, in place of sending a request, once the
// guard has stopped the run. The message is the assistant's, has one text
// block (the stop error's text, which never quotes arguments or results),
// stop reason end_turn and no usage; it comes from no model. The tool runner
// takes it as the model's last answer and ends the run; [Runner.Check]
// returns the stop for it and records nothing.
const StopMessageID = "msg_loopguard_stop"

// heldTurn is a message whose tool calls have been preflighted and are
// waiting to run.
type heldTurn struct {
	turn *guard.Turn
	step guard.Step // the message's step, without its calls
}

// NewRunner returns a Runner that uses g, which must not be nil.
func NewRunner(g *guard.Guard) *Runner {
	return &Runner{g: g, names: make(map[string]bool)}
}

// Guard returns the runner's guard.
func (r *Runner) Guard() *guard.Guard { return r.g }

// Tools returns the tools decorated by [Runner.Tool], in order.
func (r *Runner) Tools(tools ...sdk.BetaTool) []sdk.BetaTool {
	out := make([]sdk.BetaTool, len(tools))
	for i, t := range tools {
		out[i] = r.Tool(t)
	}
	return out
}

// Tool returns t decorated: its Execute asks the guard first and returns a
// [*guard.RefusedError] without running t when the call is refused (its
// text, which the tool runner hands to the model, is the guard's feedback and
// never quotes the arguments), and records the outcome of t when it runs.
// Name, Description and InputSchema are t's.
func (r *Runner) Tool(t sdk.BetaTool) sdk.BetaTool {
	r.mu.Lock()
	r.names[t.Name()] = true
	r.mu.Unlock()
	return &guardedTool{BetaTool: t, r: r}
}

// guardedTool is a tool decorated by a Runner.
type guardedTool struct {
	sdk.BetaTool
	r *Runner
}

// Execute runs the call through the held message's turn, which took the
// guard's decision on it when the message was checked; without one, it
// judges the call alone with [guard.Guard.StartCall].
func (t *guardedTool) Execute(ctx context.Context, input json.RawMessage) ([]sdk.BetaToolResultBlockParamContentUnion, error) {
	call := guard.ToolCall{Name: t.Name(), Args: rawArgs(input)}
	t.r.mu.Lock()
	h := t.r.held
	t.r.mu.Unlock()
	if h != nil {
		// The tool runner does not tell a tool which tool_use block it
		// answers, so the turn finds the call by tool and arguments.
		res, err := h.turn.Run(ctx, call, func(ctx context.Context) (any, error) {
			content, err := t.BetaTool.Execute(ctx, input)
			if content == nil {
				return nil, err // no result, rather than a nil slice
			}
			return content, err
		})
		if !errors.Is(err, guard.ErrTurnEnded) {
			content, _ := res.([]sdk.BetaToolResultBlockParamContentUnion)
			return content, err
		}
	}
	content, d, err := hook.Call(ctx, t.r.g, call, func() ([]sdk.BetaToolResultBlockParamContentUnion, error) {
		return t.BetaTool.Execute(ctx, input)
	}, func(content []sdk.BetaToolResultBlockParamContentUnion, err error) hook.Outcome {
		if content == nil {
			return hook.Outcome{Err: err} // no result, rather than a nil slice
		}
		return hook.Outcome{Result: content, Err: err}
	})
	if err == nil && !d.Allow {
		return nil, &guard.RefusedError{Decision: d}
	}
	return content, err
}

// Check records a message the tool runner returned, and returns the verdict.
//
// It first records the message given to the previous Check, if that one
// asked for tools: its text, finish reason and usage, with the calls that
// ran and their outcomes, and in [guard.Step.Refused] the calls the guard
// refused (calls to tools that were not decorated are left out). Then, if m
// asks for tools, Check preflights its calls to decorated tools in order, as
// parts of one step, and keeps m until the next Check; otherwise it records
// m at once. The verdict is the first stop of these records, or else the
// last verdict. The error is a [*guard.StopError] carrying it when it stops
// the run for a fault; a normal finish (the model answered) is not an error.
// ctx goes to the guard's observer.
//
// Call Check with a nil message after the runner has finished to record a
// message whose tools never ran (as when MaxIterations ends the run).
//
// For the message of [StopMessageID] that the middleware of [Runner.Option]
// answered with, Check returns the stop and records nothing.
func (r *Runner) Check(ctx context.Context, m *sdk.BetaMessage) (guard.Verdict, error) {
	r.mu.Lock()
	h := r.held
	r.held = nil
	var v guard.Verdict
	if r.ended != nil {
		v, r.ended = *r.ended, nil
	}
	stopped := r.stopped
	r.mu.Unlock()
	if h != nil {
		v, _ = h.turn.End(ctx, h.step)
	}
	if m == nil {
		return v, v.Err()
	}
	if m.ID == StopMessageID && stopped != nil {
		return *stopped, stopped.Err()
	}
	step := StepFromBetaMessage(m)
	if m.StopReason != sdk.BetaStopReasonToolUse || len(step.ToolCalls) == 0 {
		mv, err := r.g.Check(ctx, step)
		if err != nil {
			return guard.Verdict{}, err
		}
		if !v.Stop {
			v = mv
		}
		return v, v.Err()
	}
	next := &heldTurn{turn: r.g.Begin()}
	r.mu.Lock()
	var guarded []guard.ToolCall
	for _, c := range step.ToolCalls {
		if r.names[c.Name] {
			guarded = append(guarded, c)
		}
	}
	r.mu.Unlock()
	if _, err := next.turn.Preflight(ctx, guarded...); err != nil {
		return v, err // ctx ended before the calls were decided
	}
	step.ToolCalls = nil
	next.step = step
	r.mu.Lock()
	r.held = next
	r.mu.Unlock()
	return v, v.Err()
}

// Option returns the request option that ends the run before a request the
// guard has made pointless: pass it to NewToolRunner (or to the client, for
// a client that serves this run alone). Its middleware runs before each
// request of the runner, once the tools of the last message have run: it
// records that message, as the next [Runner.Check] would, and if the guard
// has stopped the run (that record stops it, or [guard.Summary].FirstStop
// is set, as when the tools were judged without Check) it sends nothing and
// answers with a final message of its own, of ID [StopMessageID], streamed
// when the request asks for a stream. The runner returns that message and
// ends; Check returns the stop for it. The verdict of the record is kept for
// the next Check, which returns it as it would have.
//
// The record is made with the request's context, which the guard's observer
// is given: with the SDK's tracing on, its span is the SDK's span of the
// request, the one that the middleware answers when it stops the run. When
// no message is held, the middleware asks the guard's [guard.Guard.Summary]
// whether the run has stopped: with a guard over a store, that is one
// round trip to the store per request.
func (r *Runner) Option() option.RequestOption {
	return option.WithMiddleware(r.middleware)
}

// middleware is the middleware of [Runner.Option].
func (r *Runner) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	ctx := req.Context()
	r.mu.Lock()
	h := r.held
	r.held = nil
	stopped := r.stopped
	r.mu.Unlock()
	if h != nil {
		v, _ := h.turn.End(ctx, h.step)
		r.mu.Lock()
		r.ended = &v
		if v.Stop && r.stopped == nil {
			r.stopped = &v
		}
		stopped = r.stopped
		r.mu.Unlock()
	}
	if stopped == nil {
		sum, err := r.g.Summary(ctx)
		if err != nil || sum.FirstStop == nil {
			return next(req) // the guard could not answer: the request's own fate decides
		}
		r.mu.Lock()
		if r.stopped == nil {
			r.stopped = sum.FirstStop
		}
		stopped = r.stopped
		r.mu.Unlock()
	}
	return stopResponse(req, *stopped), nil
}

// stopResponse is the answer to req that the middleware gives in place of
// the model's once the run has stopped with v: a final message of ID
// StopMessageID, as JSON or as a stream of events, as req asks.
func stopResponse(req *http.Request, v guard.Verdict) *http.Response {
	var asked struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	body := req.Body
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			body = b
		}
	}
	if body != nil {
		data, _ := io.ReadAll(body)
		_ = json.Unmarshal(data, &asked) // a body that is not JSON leaves the model empty
	}
	text := "loopguard: run stopped"
	if err := v.Err(); err != nil {
		text = err.Error()
	}
	msg, _ := json.Marshal(map[string]any{
		"id": StopMessageID, "type": "message", "role": "assistant", "model": asked.Model,
		"content":     []any{map[string]any{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0},
	})
	contentType := "application/json"
	if asked.Stream {
		contentType = "text/event-stream"
		start, _ := json.Marshal(map[string]any{
			"id": StopMessageID, "type": "message", "role": "assistant", "model": asked.Model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 0, "output_tokens": 0},
		})
		quoted, _ := json.Marshal(text)
		var b bytes.Buffer
		event := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
		event("message_start", `{"type":"message_start","message":`+string(start)+`}`)
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(quoted)+`}}`)
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}`)
		event("message_stop", `{"type":"message_stop"}`)
		msg = b.Bytes()
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {contentType}, "Content-Length": {strconv.Itoa(len(msg))}},
		Body:          io.NopCloser(bytes.NewReader(msg)),
		ContentLength: int64(len(msg)),
		Request:       req,
	}
}
