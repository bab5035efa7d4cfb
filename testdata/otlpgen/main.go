// Command otlpgen writes the OTLP fixtures of loopguard's OTLP reader
// (testdata/otlp): scripted agent loops instrumented with the OpenTelemetry
// Go SDK, with the GenAI semantic conventions, exported by the SDK's own
// OTLP/HTTP exporter to a local receiver, and written as OTLP/JSON (the
// protobuf JSON mapping of the OTLP types, with hex trace and span IDs, one
// export request per line: the format of the OpenTelemetry Collector's file
// exporter).
//
// For every loop it also writes the same loop as loopguard step lines
// (NAME.steps.jsonl, or NAME.RUN.steps.jsonl for a file of several runs), so
// that a test can check that both give the same verdicts.
//
// Usage, from this directory:
//
//	go run . [-out ../otlp]
//
// The output is deterministic (fixed clock and IDs); the test of this module
// checks that the committed fixtures are what it writes.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func main() {
	out := flag.String("out", filepath.Join("..", "otlp"), "the directory to write the fixtures to")
	flag.Parse()
	// The SDK merges the resource described by these variables into every
	// span's: the fixtures must not depend on the environment.
	os.Unsetenv("OTEL_RESOURCE_ATTRIBUTES")
	os.Unsetenv("OTEL_SERVICE_NAME")
	if err := generate(*out); err != nil {
		log.Fatal(err)
	}
}

// generate writes every fixture into dir.
func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range fixtures() {
		otlp, err := f.otlp()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name+".otlp.json"), otlp, 0o644); err != nil {
			return err
		}
		for _, r := range f.Runs {
			name := f.Name + ".steps.jsonl"
			if len(f.Runs) > 1 {
				name = f.Name + "." + r.Conversation + ".steps.jsonl"
			}
			if err := os.WriteFile(filepath.Join(dir, name), f.steps(r), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// A fixture is one OTLP file: one or more runs of a scripted agent.
type fixture struct {
	Name string
	// Content records the opt-in content attributes: the tools' arguments
	// and results, and the model's input and output messages.
	Content bool
	// Structured records arguments and results as structured attribute
	// values (OTLP kvlistValue) rather than JSON strings.
	Structured bool
	// Batch exports every span of the file in one request (one line);
	// otherwise each span is exported when it ends, one per line.
	Batch bool
	// Legacy records the older shape of the conventions (v1.28 to
	// v1.36), which their transition plan has instrumentations keep
	// emitting by default, as instrumentations of model clients write it:
	// the messages as span events (gen_ai.user.message,
	// gen_ai.assistant.message, gen_ai.tool.message, gen_ai.choice) whose
	// body fields are attributes, gen_ai.system, the older token counts
	// (gen_ai.usage.prompt_tokens and completion_tokens), and no
	// execute_tool spans: the tools' results are seen in the next model
	// call's messages.
	Legacy bool
	// EventContent, with Legacy, writes each event's body as JSON text
	// in one attribute, gen_ai.event.content, as the Azure AI
	// instrumentations do; NoOperation leaves gen_ai.operation.name out,
	// as the conventions before v1.27 did (the span's name says it).
	EventContent, NoOperation bool
	Runs                      []run
}

// A run is one conversation: one trace per user turn, or one trace when it
// has no conversation ID.
type run struct {
	Conversation string // gen_ai.conversation.id; "" for none
	Turns        []turn
}

// A turn is a user's message and the agent's steps that answer it.
type turn struct {
	User  string
	Steps []step
}

// A step is one model call and the tool calls it asked for.
type step struct {
	Text    string
	Calls   []toolCall
	Finish  string // a finish reason of the GenAI conventions: tool_call, stop, ...
	In, Out int64  // tokens
}

type toolCall struct {
	ID     string
	Name   string
	Args   map[string]any
	Result string
	// Fail, when set, is the span's status description: the call failed,
	// with error.type ErrorType.
	Fail      string
	ErrorType string
}

func fixtures() []fixture {
	search := func(id, query string) toolCall {
		return toolCall{ID: id, Name: "search", Args: map[string]any{"query": query}, Result: "no results"}
	}
	searchLoop := run{Turns: []turn{{
		User: "When was loopguard 1.0 released?",
		Steps: []step{
			{Text: "Let me search for that.", Calls: []toolCall{search("call_1", "loopguard 1.0 release date")}, Finish: "tool_call", In: 120, Out: 18},
			{Text: "Nothing yet; searching again.", Calls: []toolCall{search("call_2", "loopguard 1.0 release date")}, Finish: "tool_call", In: 160, Out: 17},
			{Text: "Still nothing; one more search.", Calls: []toolCall{search("call_3", "loopguard 1.0 release date")}, Finish: "tool_call", In: 200, Out: 19},
			{Text: "Searching once more.", Calls: []toolCall{search("call_4", "loopguard 1.0 release date")}, Finish: "tool_call", In: 240, Out: 15},
		},
	}}}
	// The same tool with other arguments each time: a healthy search,
	// which only the arguments tell from a loop.
	varied := run{Turns: []turn{{
		User: "Find the changelog entries for 0.1, 0.2 and 0.3.",
		Steps: []step{
			{Calls: []toolCall{search("call_1", "loopguard changelog 0.1")}, Finish: "tool_call", In: 90, Out: 12},
			{Calls: []toolCall{search("call_2", "loopguard changelog 0.2")}, Finish: "tool_call", In: 110, Out: 12},
			{Calls: []toolCall{search("call_3", "loopguard changelog 0.3")}, Finish: "tool_call", In: 130, Out: 12},
			{Text: "Here are the three entries.", Finish: "stop", In: 150, Out: 40},
		},
	}}}
	open := func(id string) toolCall {
		return toolCall{ID: id, Name: "open_page", Args: map[string]any{"url": "https://example.com/releases", "page": 2}, Result: "404 Not Found"}
	}
	var pingPong []step
	for i := 0; i < 4; i++ {
		pingPong = append(pingPong,
			step{Text: fmt.Sprintf("Searching for the releases page (try %d).", i+1), Calls: []toolCall{search(fmt.Sprintf("call_s%d", i), "loopguard releases")}, Finish: "tool_call", In: int64(100 + 40*i), Out: 14},
			step{Text: fmt.Sprintf("Opening the second page (try %d).", i+1), Calls: []toolCall{open(fmt.Sprintf("call_o%d", i))}, Finish: "tool_call", In: int64(120 + 40*i), Out: 16},
		)
	}
	var edits []step
	for i := 0; i < 6; i++ {
		edits = append(edits, step{
			Text: fmt.Sprintf("Fixing the import, attempt %d.", i+1),
			Calls: []toolCall{{
				ID: fmt.Sprintf("call_e%d", i), Name: "edit_file",
				Args: map[string]any{"path": "app.py", "old_str": fmt.Sprintf("import foo%d", i), "new_str": "import bar"},
				Fail: "old_str not found in app.py", ErrorType: "ToolError",
			}},
			Finish: "tool_call", In: int64(300 + 50*i), Out: 30,
		})
	}
	// A support agent that looks the same order up after every message of
	// the user, and gives the same answer.
	lookup := func(id string) toolCall {
		return toolCall{ID: id, Name: "lookup_order", Args: map[string]any{"order": "1234"}, Result: `{"error": "not found"}`}
	}
	var supportTurns []turn
	for i, msg := range []string{"My order 1234 has not arrived.", "It is order 1234, placed last week.", "Order 1234. Where is it?", "Please, where is my order?"} {
		supportTurns = append(supportTurns, turn{User: msg, Steps: []step{
			{Text: "Let me check.", Calls: []toolCall{lookup(fmt.Sprintf("call_k%d", i))}, Finish: "tool_call", In: int64(80 + 60*i), Out: 12},
			{Text: "I could not find that order.", Finish: "stop", In: int64(110 + 60*i), Out: 9},
		}})
	}
	support := run{Conversation: "conv-support-7", Turns: supportTurns}
	order := run{Conversation: "conv-orders-3", Turns: []turn{
		{User: "Where is order 9876?", Steps: []step{
			{Text: "Let me look it up.", Calls: []toolCall{{ID: "call_l1", Name: "lookup_order", Args: map[string]any{"order": "9876"}, Result: `{"status": "shipped", "eta": "Friday"}`}}, Finish: "tool_call", In: 90, Out: 15},
			{Text: "Order 9876 has shipped and should arrive on Friday.", Finish: "stop", In: 130, Out: 20},
		}},
		{User: "And order 5555?", Steps: []step{
			{Text: "Checking.", Calls: []toolCall{{ID: "call_l2", Name: "lookup_order", Args: map[string]any{"order": "5555"}, Result: `{"status": "processing"}`}}, Finish: "tool_call", In: 170, Out: 12},
			{Text: "Order 5555 is still being processed.", Finish: "stop", In: 200, Out: 14},
		}},
	}}
	return []fixture{
		{Name: "search-loop", Content: true, Runs: []run{searchLoop}},
		{Name: "search-names-only", Runs: []run{searchLoop}},
		{Name: "varied-search", Content: true, Runs: []run{varied}},
		{Name: "varied-search-names-only", Runs: []run{varied}},
		{Name: "ping-pong", Content: true, Structured: true, Batch: true, Runs: []run{{Turns: []turn{{User: "What is new in loopguard?", Steps: pingPong}}}}},
		{Name: "failing-edit", Content: true, Runs: []run{{Turns: []turn{{User: "Replace the foo import with bar in app.py.", Steps: edits}}}}},
		{Name: "support", Content: true, Runs: []run{support, order}},
		{Name: "legacy-search-loop", Content: true, Legacy: true, NoOperation: true, Runs: []run{searchLoop}},
		{Name: "legacy-orders", Content: true, Legacy: true, EventContent: true, Runs: []run{order}},
	}
}

// otlp runs the fixture's loops under the OpenTelemetry SDK and returns what
// its OTLP/HTTP exporter sent, as OTLP/JSON lines.
func (f fixture) otlp() ([]byte, error) {
	var (
		mu    sync.Mutex
		lines [][]byte
		bad   error
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		var line []byte
		if err == nil {
			line, err = otlpJSON(&req)
		}
		mu.Lock()
		if err != nil {
			bad = errors.Join(bad, err)
		} else {
			lines = append(lines, line)
		}
		mu.Unlock()
		resp, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(resp)
	}))
	defer srv.Close()

	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
	)
	if err != nil {
		return nil, err
	}
	processor := sdktrace.NewSimpleSpanProcessor(exp)
	if f.Batch {
		processor = sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithMaxExportBatchSize(4096),
			sdktrace.WithMaxQueueSize(4096), sdktrace.WithBatchTimeout(time.Hour))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(processor),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "otlpgen-agent"))),
		sdktrace.WithIDGenerator(&ids{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	tracer := tp.Tracer("github.com/loopguard/loopguard/testdata/otlpgen")
	clock := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	tick := func(d time.Duration) time.Time { clock = clock.Add(d); return clock }
	for _, r := range f.Runs {
		f.record(ctx, tracer, r, tick)
	}
	if err := tp.ForceFlush(ctx); err != nil {
		return nil, err
	}
	if err := tp.Shutdown(ctx); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if bad != nil {
		return nil, bad
	}
	var out []byte
	for _, l := range lines {
		out = append(append(out, l...), '\n')
	}
	return out, nil
}

// record makes the spans of one run: per turn, an invoke_agent span holding
// a chat span per step and an execute_tool span per call.
func (f fixture) record(ctx context.Context, tracer trace.Tracer, r run, tick func(time.Duration) time.Time) {
	var history []message
	for _, t := range r.Turns {
		history = append(history, message{Role: "user", Parts: []part{{Type: "text", Content: t.User}}})
		agentAttrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName("support")}
		if r.Conversation != "" {
			agentAttrs = append(agentAttrs, semconv.GenAIConversationID(r.Conversation))
		}
		actx, agent := tracer.Start(ctx, "invoke_agent support", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(tick(10*time.Millisecond)), trace.WithAttributes(agentAttrs...))
		for _, s := range t.Steps {
			if f.Legacy {
				history = f.legacyChat(actx, tracer, r, s, history, tick)
				continue
			}
			attrs := []attribute.KeyValue{
				semconv.GenAIOperationNameChat,
				semconv.GenAIProviderNameOpenAI,
				semconv.GenAIRequestModel("gpt-4o"),
				semconv.GenAIUsageInputTokens(int(s.In)),
				semconv.GenAIUsageOutputTokens(int(s.Out)),
				semconv.GenAIResponseFinishReasons(s.Finish),
			}
			if r.Conversation != "" {
				attrs = append(attrs, semconv.GenAIConversationID(r.Conversation))
			}
			out := message{Role: "assistant", FinishReason: s.Finish}
			if s.Text != "" {
				out.Parts = append(out.Parts, part{Type: "text", Content: s.Text})
			}
			for _, c := range s.Calls {
				out.Parts = append(out.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
			}
			if f.Content {
				attrs = append(attrs,
					semconv.GenAIInputMessagesKey.String(jsonText(history)),
					semconv.GenAIOutputMessagesKey.String(jsonText([]message{out})))
			}
			_, chat := tracer.Start(actx, "chat gpt-4o", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithTimestamp(tick(5*time.Millisecond)), trace.WithAttributes(attrs...))
			chat.End(trace.WithTimestamp(tick(800 * time.Millisecond)))
			history = append(history, out)

			for _, c := range s.Calls {
				attrs := []attribute.KeyValue{
					semconv.GenAIOperationNameExecuteTool,
					semconv.GenAIToolName(c.Name),
					semconv.GenAIToolCallID(c.ID),
					semconv.GenAIToolType("function"),
				}
				if f.Content {
					attrs = append(attrs, f.content(semconv.GenAIToolCallArgumentsKey, c.Args))
					if c.Fail == "" {
						attrs = append(attrs, f.content(semconv.GenAIToolCallResultKey, c.Result))
					}
				}
				_, tool := tracer.Start(actx, "execute_tool "+c.Name, trace.WithSpanKind(trace.SpanKindInternal),
					trace.WithTimestamp(tick(2*time.Millisecond)), trace.WithAttributes(attrs...))
				response := any(c.Result)
				if c.Fail != "" {
					tool.SetAttributes(semconv.ErrorTypeKey.String(c.ErrorType))
					tool.SetStatus(codes.Error, c.Fail)
					response = c.Fail
				}
				tool.End(trace.WithTimestamp(tick(150 * time.Millisecond)))
				history = append(history, message{Role: "tool", Parts: []part{{Type: "tool_call_response", ID: c.ID, Response: response}}})
			}
		}
		agent.End(trace.WithTimestamp(tick(time.Millisecond)))
	}
}

// legacyChat makes the span of one model call in the older shape of the
// conventions, and returns the history with the step's messages and its
// tools' results (the tools run, but make no spans).
func (f fixture) legacyChat(ctx context.Context, tracer trace.Tracer, r run, s step, history []message, tick func(time.Duration) time.Time) []message {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.system", "openai"),
		semconv.GenAIRequestModel("gpt-4o"),
		attribute.Int("gen_ai.usage.prompt_tokens", int(s.In)),
		attribute.Int("gen_ai.usage.completion_tokens", int(s.Out)),
		semconv.GenAIResponseFinishReasons(legacyFinish(s.Finish)),
	}
	if !f.NoOperation {
		attrs = append(attrs, semconv.GenAIOperationNameChat)
	}
	if r.Conversation != "" {
		attrs = append(attrs, semconv.GenAIConversationID(r.Conversation))
	}
	_, chat := tracer.Start(ctx, "chat gpt-4o", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(tick(5*time.Millisecond)), trace.WithAttributes(attrs...))
	at := trace.WithTimestamp(tick(time.Millisecond))
	// The request's messages, then the response's choice.
	for _, m := range history {
		body := map[string]any{}
		switch m.Role {
		case "user":
			body["content"] = m.Parts[0].Content
		case "assistant":
			if m.Parts[0].Type == "text" {
				body["content"] = m.Parts[0].Content
			}
			if calls := legacyCalls(m); calls != nil {
				body["tool_calls"] = calls
			}
		case "tool":
			body["id"] = m.Parts[0].ID
			body["content"] = m.Parts[0].Response
		}
		chat.AddEvent("gen_ai."+m.Role+".message", at, trace.WithAttributes(f.eventBody(body)...))
	}
	out := message{Role: "assistant", FinishReason: s.Finish}
	if s.Text != "" {
		out.Parts = append(out.Parts, part{Type: "text", Content: s.Text})
	}
	for _, c := range s.Calls {
		out.Parts = append(out.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
	}
	msg := map[string]any{"content": s.Text}
	if calls := legacyCalls(out); calls != nil {
		msg["tool_calls"] = calls
	}
	chat.AddEvent("gen_ai.choice", trace.WithTimestamp(tick(800*time.Millisecond)),
		trace.WithAttributes(f.eventBody(map[string]any{"index": 0, "finish_reason": legacyFinish(s.Finish), "message": msg})...))
	chat.End(trace.WithTimestamp(tick(time.Millisecond)))
	history = append(history, out)
	for _, c := range s.Calls {
		tick(150 * time.Millisecond)
		response := c.Result
		if c.Fail != "" {
			response = c.Fail
		}
		history = append(history, message{Role: "tool", Parts: []part{{Type: "tool_call_response", ID: c.ID, Response: response}}})
	}
	return history
}

// legacyCalls are an assistant message's tool calls as the older
// conventions write them, in OpenAI's shape: arguments are JSON text.
func legacyCalls(m message) []map[string]any {
	var calls []map[string]any
	for _, p := range m.Parts {
		if p.Type == "tool_call" {
			calls = append(calls, map[string]any{"id": p.ID, "type": "function",
				"function": map[string]any{"name": p.Name, "arguments": jsonText(p.Arguments)}})
		}
	}
	return calls
}

// legacyFinish is a finish reason as OpenAI's client instrumentations
// report it.
func legacyFinish(r string) string {
	if r == "tool_call" {
		return "tool_calls"
	}
	return r
}

// eventBody writes an event's body as attributes: with EventContent, all of
// it as JSON text in gen_ai.event.content; otherwise one attribute per
// field, a structured field as JSON text.
func (f fixture) eventBody(body map[string]any) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.system", "openai")}
	if f.EventContent {
		return append(attrs, attribute.String("gen_ai.event.content", jsonText(body)))
	}
	for _, k := range slices.Sorted(maps.Keys(body)) {
		switch v := body[k].(type) {
		case string:
			attrs = append(attrs, attribute.String(k, v))
		case int:
			attrs = append(attrs, attribute.Int(k, v))
		default:
			attrs = append(attrs, attribute.String(k, jsonText(v)))
		}
	}
	return attrs
}

// content is an opt-in content attribute: a JSON string, or with Structured
// a structured value (a map becomes an OTLP kvlistValue).
func (f fixture) content(key attribute.Key, v any) attribute.KeyValue {
	if m, ok := v.(map[string]any); ok && f.Structured {
		var kvs []attribute.KeyValue
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch x := m[k].(type) {
			case string:
				kvs = append(kvs, attribute.String(k, x))
			case int:
				kvs = append(kvs, attribute.Int(k, x))
			default:
				kvs = append(kvs, attribute.String(k, fmt.Sprint(x)))
			}
		}
		return key.Map(kvs...)
	}
	if s, ok := v.(string); ok {
		return key.String(s)
	}
	return key.String(jsonText(v))
}

// A message is a message of gen_ai.input.messages or gen_ai.output.messages.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
}

// A stepLine is a loopguard step line, as steps writes it.
type stepLine struct {
	Text         string `json:"text,omitempty"`
	ToolCalls    []call `json:"toolCalls,omitempty"`
	FinishReason string `json:"finishReason"`
	Usage        usage  `json:"usage"`
	Input        string `json:"input,omitempty"`
}

type call struct {
	ID     string         `json:"id,omitempty"`
	Name   string         `json:"name"`
	Args   map[string]any `json:"args,omitempty"`
	Result any            `json:"result,omitempty"`
	Error  string         `json:"error,omitempty"`
}

type usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// steps writes a run as loopguard step lines: what the OTLP reader should
// read from the run's spans. Without content, calls have no arguments or
// results, and steps no text or input.
func (f fixture) steps(r run) []byte {
	var lines []stepLine
	total, n := 0, 0
	for _, t := range r.Turns {
		total += len(t.Steps)
	}
	for ti, t := range r.Turns {
		if ti > 0 && f.Content && len(lines) > 0 {
			lines[len(lines)-1].Input = t.User
		}
		for _, s := range t.Steps {
			n++
			if f.Legacy {
				lines = append(lines, f.legacyStep(s, n < total))
				continue
			}
			l := stepLine{FinishReason: finishReason(s.Finish), Usage: usage{s.In, s.Out}}
			if f.Content {
				l.Text = s.Text
			}
			for _, c := range s.Calls {
				lc := call{ID: c.ID, Name: c.Name}
				if f.Content {
					lc.Args = c.Args
					if c.Fail == "" {
						lc.Result = c.Result
						var v map[string]any
						if json.Unmarshal([]byte(c.Result), &v) == nil {
							lc.Result = v // a JSON object's text is read as that object
						}
					}
				}
				if c.Fail != "" {
					lc.Error, lc.Result = c.ErrorType, c.Fail
				}
				l.ToolCalls = append(l.ToolCalls, lc)
			}
			lines = append(lines, l)
		}
	}
	var out []byte
	for _, l := range lines {
		b, _ := json.Marshal(l)
		out = append(append(out, b...), '\n')
	}
	return out
}

// legacyStep is a step of the older shape as loopguard reads it: the
// results are those the next model call's messages show (none when no model
// call follows), and a failed tool's message is a result like any other.
func (f fixture) legacyStep(s step, followed bool) stepLine {
	l := stepLine{Text: s.Text, FinishReason: finishReason(s.Finish), Usage: usage{s.In, s.Out}}
	for _, c := range s.Calls {
		lc := call{ID: c.ID, Name: c.Name, Args: c.Args}
		if followed {
			lc.Result = c.Result
			if c.Fail != "" {
				lc.Result = c.Fail
			}
			var v map[string]any
			if json.Unmarshal([]byte(c.Result), &v) == nil {
				lc.Result = v
			}
		}
		l.ToolCalls = append(l.ToolCalls, lc)
	}
	return l
}

// finishReason is a GenAI finish reason as loopguard names it.
func finishReason(r string) string {
	switch r {
	case "tool_call":
		return "tool-calls"
	case "content_filter":
		return "content-filter"
	}
	return r
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the fixtures' values always marshal
	}
	return string(b)
}

// idFields are the fields of OTLP/JSON that hold IDs: hex in OTLP/JSON,
// base64 in protobuf's generic JSON mapping.
var idFields = regexp.MustCompile(`"(traceId|spanId|parentSpanId)":"([A-Za-z0-9+/=]*)"`)

// otlpJSON writes an export request as OTLP/JSON: the protobuf JSON mapping
// with enums as numbers, compacted, with trace and span IDs in hex.
func otlpJSON(req *coltrace.ExportTraceServiceRequest) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, err
	}
	var bad error
	out := idFields.ReplaceAllFunc(compact.Bytes(), func(m []byte) []byte {
		sub := idFields.FindSubmatch(m)
		id, err := base64.StdEncoding.DecodeString(string(sub[2]))
		if err != nil {
			bad = err
			return m
		}
		return fmt.Appendf(nil, `"%s":"%s"`, sub[1], hex.EncodeToString(id))
	})
	return out, bad
}

// ids hands out trace and span IDs from counters, so that the output does
// not change from one run of the program to the next.
type ids struct {
	mu           sync.Mutex
	trace, spans uint64
}

func (g *ids) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trace++
	g.spans++
	var t trace.TraceID
	t[0], t[15] = 0x4c, byte(g.trace)
	return t, g.span()
}

func (g *ids) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spans++
	return g.span()
}

func (g *ids) span() trace.SpanID {
	var s trace.SpanID
	s[0], s[6], s[7] = 0x5b, byte(g.spans>>8), byte(g.spans)
	return s
}
