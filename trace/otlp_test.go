package trace_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// canonicalSteps writes steps as canonical JSON, one per line, so that
// arguments given as a map and as JSON text compare equal.
func canonicalSteps(t *testing.T, steps []guard.Step) []string {
	t.Helper()
	var out []string
	for _, s := range steps {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		c, err := canonical.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(c))
	}
	return out
}

// TestOTLPFixtures reads the fixtures that testdata/otlpgen made with the
// OpenTelemetry SDK and checks that each run is exactly the loop the program
// wrote as step lines beside it.
func TestOTLPFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "otlp", "*.otlp.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("fixtures: %v, %v", files, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".otlp.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if f := trace.Detect(data); f != trace.OTLP {
				t.Errorf("Detect = %v, want otlp", f)
			}
			tr, err := trace.Parse(data, trace.Unknown)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != trace.OTLP || len(tr.Runs) != len(tr.Steps) {
				t.Fatalf("format %v, %d runs for %d steps", tr.Format, len(tr.Runs), len(tr.Steps))
			}
			byRun := map[string][]guard.Step{}
			var order []string
			for i, s := range tr.Steps {
				if _, ok := byRun[tr.Runs[i]]; !ok {
					order = append(order, tr.Runs[i])
				}
				byRun[tr.Runs[i]] = append(byRun[tr.Runs[i]], s)
			}
			for _, run := range order {
				want := filepath.Join(filepath.Dir(file), name+".steps.jsonl")
				if len(order) > 1 {
					want = filepath.Join(filepath.Dir(file), name+"."+run+".steps.jsonl")
				}
				wdata, err := os.ReadFile(want)
				if err != nil {
					t.Fatalf("run %s: %v", run, err)
				}
				steps, err := trace.ReadSteps(bytes.NewReader(wdata))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(canonicalSteps(t, steps), canonicalSteps(t, byRun[run])); diff != "" {
					t.Errorf("run %s: the spans' steps differ from %s (-want +got):\n%s", run, want, diff)
				}
			}
		})
	}
}

// span writes one span of OTLP/JSON.
func span(traceID, spanID, parent, name string, start int, status string, attrs ...string) string {
	s := `{"traceId": "` + traceID + `", "spanId": "` + spanID + `"`
	if parent != "" {
		s += `, "parentSpanId": "` + parent + `"`
	}
	s += `, "name": "` + name + `", "startTimeUnixNano": "` + itoa(start) + `", "attributes": [` + strings.Join(attrs, ", ") + `]`
	if status != "" {
		s += `, "status": ` + status
	}
	return s + "}"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// attr writes a string attribute.
func attr(key, value string) string {
	v, _ := json.Marshal(value)
	return `{"key": "` + key + `", "value": {"stringValue": ` + string(v) + `}}`
}

// doc writes one export request holding spans, on one line.
func doc(spans ...string) string {
	return `{"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "test"}, "spans": [` + strings.Join(spans, ", ") + `]}]}]}`
}

func chat(trace, id, parent string, start int, attrs ...string) string {
	return span(trace, id, parent, "chat m", start, "", append([]string{attr("gen_ai.operation.name", "chat")}, attrs...)...)
}

func tool(trace, id, parent string, start int, status, name string, attrs ...string) string {
	return span(trace, id, parent, "execute_tool "+name, start, status,
		append([]string{attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", name)}, attrs...)...)
}

// withEvents adds span events to a span.
func withEvents(span string, events ...string) string {
	return strings.TrimSuffix(span, "}") + `, "events": [` + strings.Join(events, ", ") + `]}`
}

func event(name string, attrs ...string) string {
	return `{"name": "` + name + `", "attributes": [` + strings.Join(attrs, ", ") + `]}`
}

// legacyChat is a model span of the older conventions: no
// gen_ai.operation.name, gen_ai.system and the span's name.
func legacyChat(trace, id string, start int, attrs ...string) string {
	return span(trace, id, "", "chat gpt-4o", start, "", append([]string{attr("gen_ai.system", "openai")}, attrs...)...)
}

func TestOTLPShapes(t *testing.T) {
	type runSteps struct {
		Runs  []string
		Lines []int
		Steps []guard.Step
	}
	tests := []struct {
		name string
		data string
		want runSteps
		// warn is how many runs have no arguments.
		warn int
	}{{
		name: "steps are ordered by start time, not by the order in the file",
		data: doc(
			tool("t1", "s3", "s0", 30, "", "b", attr("gen_ai.tool.call.arguments", `{"x": 2}`)),
			chat("t1", "s1", "s0", 10),
			tool("t1", "s2", "s0", 20, "", "a", attr("gen_ai.tool.call.arguments", `{"x": 1}`)),
			chat("t1", "s4", "s0", 40),
		),
		want: runSteps{Runs: []string{"t1", "t1"}, Lines: []int{1, 1}, Steps: []guard.Step{
			{ToolCalls: []guard.ToolCall{{Name: "a", Args: json.RawMessage(`{"x": 1}`)}, {Name: "b", Args: json.RawMessage(`{"x": 2}`)}}},
			{},
		}},
	}, {
		name: "without model spans, each tool span is a step; a failure keeps its status message",
		data: doc(
			tool("t1", "s1", "", 10, `{"code": 2, "message": "exit code 1"}`, "bash"),
			tool("t1", "s2", "", 20, `{"code": "STATUS_CODE_ERROR"}`, "bash", attr("error.type", "Timeout")),
			tool("t1", "s3", "", 30, `{"code": 1}`, "bash", attr("gen_ai.tool.call.result", "ok")),
		),
		want: runSteps{Runs: []string{"t1", "t1", "t1"}, Lines: []int{1, 1, 1}, Steps: []guard.Step{
			{ToolCalls: []guard.ToolCall{{Name: "bash", Result: "exit code 1", Err: errors.New("error")}}},
			{ToolCalls: []guard.ToolCall{{Name: "bash", Err: errors.New("Timeout")}}},
			{ToolCalls: []guard.ToolCall{{Name: "bash", Result: "ok"}}},
		}},
		warn: 1,
	}, {
		name: "a conversation joins traces; a span takes its ancestor's conversation",
		data: doc(
			span("t1", "a1", "", "invoke_agent", 1, "", attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.conversation.id", "c1")),
			chat("t1", "m1", "a1", 2, `{"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}}`),
			chat("t2", "m2", "", 5),
			span("t3", "a3", "", "invoke_agent", 7, "", attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.conversation.id", "c1")),
			chat("t3", "m3", "a3", 8, attr("gen_ai.response.finish_reasons", "length")),
		) + "\n" + doc(chat("t4", "m4", "", 3, attr("gen_ai.conversation.id", "c2"))),
		want: runSteps{Runs: []string{"c1", "c1", "c2", "t2"}, Lines: []int{1, 1, 2, 1}, Steps: []guard.Step{
			{FinishReason: "stop"}, {FinishReason: "length"}, {}, {},
		}},
	}, {
		name: "text, calls, finish reason and usage from the output messages; input from the next call's input messages",
		data: doc(
			chat("t1", "m1", "", 10,
				attr("gen_ai.output.messages", `[{"role": "assistant", "parts": [{"type": "reasoning", "content": "hm"}, {"type": "text", "content": "Looking."}, {"type": "tool_call", "id": "c1", "name": "search", "arguments": "{\"q\": 1}"}, {"type": "tool_call", "id": "c2", "name": "open", "arguments": {"u": "x"}}], "finish_reason": "tool_call"}]`),
				`{"key": "gen_ai.usage.input_tokens", "value": {"intValue": 120}}`,
				`{"key": "gen_ai.usage.output_tokens", "value": {"intValue": "7"}}`),
			tool("t1", "x2", "", 22, "", "open", attr("gen_ai.tool.call.id", "c2"), attr("gen_ai.tool.call.result", "page")),
			tool("t1", "x1", "", 21, "", "search", attr("gen_ai.tool.call.id", "c1"), attr("gen_ai.tool.call.result", `[1, 2]`)),
			tool("t1", "x3", "", 23, "", "extra", attr("gen_ai.tool.call.id", "c9")),
			chat("t1", "m2", "", 30,
				attr("gen_ai.input.messages", `[{"role": "user", "parts": [{"type": "text", "content": "the task"}]}, {"role": "assistant", "parts": []}, {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "x"}]}, {"role": "user", "parts": [{"type": "text", "content": "hurry"}, {"type": "image"}]}]`),
				attr("gen_ai.output.messages", `[{"role": "assistant", "parts": [{"type": "text", "content": "Done."}], "finish_reason": "content_filter"}]`)),
		),
		want: runSteps{Runs: []string{"t1", "t1"}, Lines: []int{1, 1}, Steps: []guard.Step{
			{Text: "Looking.", FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 120, OutputTokens: 7}, Input: "hurry\n[image]",
				ToolCalls: []guard.ToolCall{
					{ID: "c1", Name: "search", Args: json.RawMessage(`{"q": 1}`), Result: json.RawMessage(`[1, 2]`)},
					{ID: "c2", Name: "open", Args: json.RawMessage(`{"u": "x"}`), Result: "page"},
					{ID: "c9", Name: "extra"},
				}},
			{Text: "Done.", FinishReason: "content-filter"},
		}},
	}, {
		name: "structured arguments; a failed model call with no finish reason is an error",
		data: doc(
			span("t1", "m1", "", "chat", 1, `{"code": 2}`, attr("gen_ai.operation.name", "chat")),
			tool("t1", "x1", "", 2, "", "f", `{"key": "gen_ai.tool.call.arguments", "value": {"kvlistValue": {"values": [{"key": "n", "value": {"intValue": "3"}}, {"key": "ok", "value": {"boolValue": true}}, {"key": "l", "value": {"arrayValue": {"values": [{"doubleValue": 1.5}]}}}]}}}`),
		),
		want: runSteps{Runs: []string{"t1"}, Lines: []int{1}, Steps: []guard.Step{
			{FinishReason: "error", ToolCalls: []guard.ToolCall{{Name: "f", Args: map[string]any{"n": int64(3), "ok": true, "l": []any{1.5}}}}},
		}},
	}, {
		name: "parents in a cycle: no conversation, the trace's run",
		data: doc(
			span("t1", "a", "b", "x", 1, "", attr("gen_ai.operation.name", "chat")),
			span("t1", "b", "c", "y", 2, "", attr("gen_ai.operation.name", "chat")),
			span("t1", "c", "a", "z", 3, "", attr("gen_ai.operation.name", "chat")),
			span("t1", "d", "c", "w", 4, "", attr("gen_ai.operation.name", "chat"), attr("gen_ai.conversation.id", "own")),
		),
		want: runSteps{Runs: []string{"own", "own", "own", "own"}, Lines: []int{1, 1, 1, 1}, Steps: []guard.Step{{}, {}, {}, {}}},
	}, {
		name: "the older shape: events with body fields as attributes, the older token counts, results from the next call's tool messages",
		data: doc(
			withEvents(legacyChat("t1", "m1", 10,
				`{"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "50"}}`,
				`{"key": "gen_ai.usage.completion_tokens", "value": {"intValue": 9}}`),
				event("gen_ai.system.message", attr("content", "be brief")),
				event("gen_ai.user.message", attr("content", "the task")),
				event("gen_ai.choice", `{"key": "index", "value": {"intValue": "1"}}`, attr("finish_reason", "stop"), attr("message", `{"content": "the second choice"}`)),
				event("gen_ai.choice", `{"key": "index", "value": {"intValue": "0"}}`, attr("finish_reason", "tool_calls"),
					attr("message", `{"content": [{"type": "text", "text": "Looking."}], "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": 1}"}}, {"id": "c2", "type": "function", "function": {"name": "open", "arguments": {"u": "x"}}}]}`))),
			withEvents(legacyChat("t1", "m2", 30),
				event("gen_ai.user.message", attr("content", "the task")),
				event("gen_ai.assistant.message", attr("tool_calls", `[{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]`)),
				event("gen_ai.tool.message", attr("id", "c1"), attr("content", `{"hits": 0}`)),
				event("gen_ai.tool.message", attr("id", "c2"), attr("content", "Error: timeout")),
				event("gen_ai.tool.message", attr("id", "c-unknown"), attr("content", "ignored")),
				event("gen_ai.user.message", `{"key": "content", "value": {"kvlistValue": {"values": [{"key": "text", "value": {"stringValue": "hurry"}}]}}}`),
				event("gen_ai.choice", attr("finish_reason", "length"), `{"key": "message", "value": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "Done."}}]}}}`)),
			// A span of another library with gen_ai attributes of no
			// model call.
			span("t1", "x", "", "embeddings m", 40, "", attr("gen_ai.system", "openai")),
		),
		want: runSteps{Runs: []string{"t1", "t1"}, Lines: []int{1, 1}, Steps: []guard.Step{
			{Text: "Looking.", FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 50, OutputTokens: 9}, Input: "hurry",
				ToolCalls: []guard.ToolCall{
					{ID: "c1", Name: "search", Args: json.RawMessage(`{"q": 1}`), Result: json.RawMessage(`{"hits": 0}`)},
					{ID: "c2", Name: "open", Args: json.RawMessage(`{"u":"x"}`), Result: "Error: timeout"},
				}},
			{Text: "Done.", FinishReason: "length"},
		}},
	}, {
		name: "the older shape: bodies in gen_ai.event.content; the oldest: gen_ai.content.prompt and completion",
		data: doc(
			withEvents(chat("t1", "m1", "", 10),
				event("gen_ai.user.message", attr("gen_ai.event.content", `{"role": "user", "content": "task"}`)),
				event("gen_ai.choice", attr("gen_ai.event.content", `{"finish_reason": "tool_calls", "index": 0, "message": {"content": "", "tool_calls": [{"id": "k", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}`))),
			withEvents(chat("t1", "m2", "", 20),
				event("gen_ai.content.prompt", attr("gen_ai.prompt", `[{"role": "user", "content": "task"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "k", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "k", "content": "a.go"}, {"role": "user", "content": "thanks"}]`)),
				event("gen_ai.content.completion", attr("gen_ai.completion", `[{"role": "assistant", "content": "a.go is there."}]`))),
			// The new shape's input messages give results too.
			withEvents(chat("t1", "m3", "", 30,
				attr("gen_ai.output.messages", `[{"role": "assistant", "parts": [{"type": "tool_call", "id": "n", "name": "cat", "arguments": {"f": "a.go"}}]}]`))),
			chat("t1", "m4", "", 40,
				attr("gen_ai.input.messages", `[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "n", "response": {"text": "package a"}}]}]`)),
		),
		want: runSteps{Runs: []string{"t1", "t1", "t1", "t1"}, Lines: []int{1, 1, 1, 1}, Steps: []guard.Step{
			{FinishReason: "tool-calls", ToolCalls: []guard.ToolCall{{ID: "k", Name: "ls", Args: json.RawMessage(`{}`), Result: "a.go"}}, Input: "thanks"},
			{Text: "a.go is there."},
			{ToolCalls: []guard.ToolCall{{ID: "n", Name: "cat", Args: json.RawMessage(`{"f": "a.go"}`), Result: json.RawMessage(`{"text": "package a"}`)}}},
			{},
		}},
	}, {
		name: "pretty-printed: each step on its span's line; spans of other libraries are left out",
		data: "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n" +
			span("t1", "h1", "", "GET /", 1, "") + ",\n" +
			chat("t1", "m1", "", 2) + ",\n\n" +
			chat("t1", "m2", "", 3) + "\n]}]}]}\n",
		want: runSteps{Runs: []string{"t1", "t1"}, Lines: []int{3, 5}, Steps: []guard.Step{{}, {}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []error
			r := trace.NewReader(strings.NewReader(tt.data), &trace.Options{Warn: func(err error) { warnings = append(warnings, err) }})
			var got runSteps
			for {
				e, err := r.Next()
				if err != nil {
					if err.Error() == "EOF" {
						break
					}
					t.Fatal(err)
				}
				got.Runs = append(got.Runs, e.Run)
				got.Lines = append(got.Lines, e.Line)
				got.Steps = append(got.Steps, e.Step)
			}
			if r.Format() != trace.OTLP {
				t.Errorf("format %v, want otlp", r.Format())
			}
			if diff := cmp.Diff(tt.want, got, errText); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(warnings) != tt.warn {
				t.Errorf("warnings %v, want %d", warnings, tt.warn)
			}
			for _, w := range warnings {
				if !errors.Is(w, trace.ErrNoContent) {
					t.Errorf("warning %v is not ErrNoContent", w)
				}
			}
		})
	}
}

func TestOTLPErrors(t *testing.T) {
	tests := []struct {
		name, data string
		line       int
		msg        string
	}{
		{"logs", `{"resourceLogs": []}`, 1, "OTLP Logs, not traces"},
		{"no GenAI span", doc(span("t1", "s1", "", "GET /", 1, "")), 1, "none of the 1 spans is a GenAI"},
		{"bad time, on the span's line", "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n" + chat("t1", "m1", "", 1) + ",\n" +
			`{"name": "chat", "startTimeUnixNano": "soon"}` + "\n]}]}]}", 3, "whole number of nanoseconds"},
		{"bad status", doc(`{"name": "x", "status": {"code": "STATUS_CODE_MAYBE"}}`), 1, `unknown enum value "STATUS_CODE_MAYBE"`},
		{"spans not an array", `{"resourceSpans": [{"scopeSpans": [{"spans": {}}]}]}`, 1, "spans must be an array"},
		{"bad messages", doc(chat("t1", "m1", "", 1, attr("gen_ai.output.messages", `{"role": 1}`))), 1, "gen_ai.output.messages: not an array of messages"},
		{"invalid JSON on line 2", doc(chat("t1", "m1", "", 1)) + "\n{\"resourceSpans\": [}", 2, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trace.Parse([]byte(tt.data), trace.OTLP)
			var te *trace.Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want a *trace.Error", err)
			}
			if te.Line != tt.line || !strings.Contains(te.Err.Error(), tt.msg) {
				t.Errorf("error on line %d: %v; want line %d: ...%s...", te.Line, te.Err, tt.line, tt.msg)
			}
		})
	}
}
