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

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		data string
		want trace.Format
	}{
		{"empty", "", trace.Unknown},
		{"not JSON", "hello", trace.Unknown},
		{"a step line", `{"text": "hi", "toolCalls": []}` + "\n" + `{"text": "x"}`, trace.Steps},
		{"a step with only usage", `{"usage": {"inputTokens": 1}}`, trace.Steps},
		{"an array of steps", `[{"toolCalls": [{"name": "a"}]}]`, trace.Steps},
		{"an empty object is a step", "{}\n" + `{"role": "user", "content": "x"}`, trace.Steps},
		{"objects of no kind decide nothing", `{"file": 1}` + "\n" + `{"text": "x"}`, trace.Steps},
		{"a control line", `{"preflight": {"name": "a"}}`, trace.Steps},
		{"a provider's spelling of a step key", `{"tool_calls": [], "finish_reason": "stop"}`, trace.Steps},
		{"annotations only", `{"meta": {"source": "x"}}`, trace.Steps},
		{"an object of another kind", `{"file": "a.jsonl", "label": "loops"}`, trace.Unknown},
		{"a manifest", `[{"file": "a.jsonl", "steps": 3}]`, trace.Unknown},
		{"OpenAI system message", `[{"role": "system", "content": "x"}]`, trace.OpenAI},
		{"OpenAI tool_calls", `{"role": "user", "content": "x"}` + "\n" + `{"role": "assistant", "tool_calls": []}`, trace.OpenAI},
		{"OpenAI completion", `{"object": "chat.completion", "choices": []}`, trace.OpenAI},
		{"OpenAI image part", `[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]`, trace.OpenAI},
		{"OpenAI request body", `{"model": "m", "messages": [{"role": "developer", "content": "x"}]}`, trace.OpenAI},
		{"plain text messages read as OpenAI", `[{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "text", "text": "b"}]}]`, trace.OpenAI},
		{"Anthropic tool_use", `[{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]`, trace.Anthropic},
		{"Anthropic message object", `{"type": "message", "role": "assistant", "content": []}`, trace.Anthropic},
		{"Anthropic stop_reason", `{"role": "assistant", "content": "x", "stop_reason": "end_turn"}`, trace.Anthropic},
		{"Anthropic request body", `{"model": "m", "system": "s", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "source": {}}]}]}`, trace.Anthropic},
		{"Responses function_call", `{"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}`, trace.Responses},
		{"Responses input_text part", `[{"role": "user", "content": [{"type": "input_text", "text": "a"}]}]`, trace.Responses},
		{"Responses output_text part", `{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}`, trace.Responses},
		{"Responses message item with a string", `{"type": "message", "role": "user", "content": "a"}`, trace.Responses},
		{"Responses response object", `{"object": "response", "status": "completed", "output": [], "text": {"format": {"type": "text"}}, "usage": {}}`, trace.Responses},
		{"Responses request body", `{"model": "m", "text": {}, "input": [{"role": "developer", "content": "x"}, {"role": "user", "content": "a"}, {"type": "reasoning", "summary": []}]}`, trace.Responses},
		{"Responses after a developer message", `{"role": "developer", "content": "x"}` + "\n" + `{"type": "function_call_output", "call_id": "c", "output": "x"}`, trace.Responses},
		{"a built-in tool call", `{"type": "web_search_call", "id": "ws", "status": "completed"}`, trace.Responses},
		{"a byte order mark", "\uFEFF" + `{"text": "x"}`, trace.Steps},
		{"broken JSON after a decision", `{"text": "x"}` + "\n{", trace.Steps},
		{"broken JSON before a decision", `{"file": 1}` + "\n{", trace.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trace.Detect([]byte(tt.data)); got != tt.want {
				t.Errorf("Detect(%q) = %v, want %v", tt.data, got, tt.want)
			}
		})
	}
}

func TestRealTraces(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if f := trace.Detect(data); f != trace.Steps {
			t.Errorf("%s: Detect = %v, want steps", file, f)
		}
		tr, err := trace.Parse(data, trace.Unknown)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(tr.Steps) != len(lines) || len(tr.Lines) != len(lines) {
			t.Fatalf("%s: %d steps, %d lines numbered, want %d", file, len(tr.Steps), len(tr.Lines), len(lines))
		}
		for i, line := range lines {
			var want guard.Step
			if err := json.Unmarshal(line, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, tr.Steps[i], errText); diff != "" {
				t.Errorf("%s: step %d (-want +got):\n%s", file, i, diff)
			}
			if tr.Lines[i] != i+1 {
				t.Errorf("%s: step %d on line %d, want %d", file, i, tr.Lines[i], i+1)
			}
		}
	}
}

func TestSteps(t *testing.T) {
	data := "\uFEFF" + `{"text": "a", "toolCalls": [{"name": "search", "args": {"q": 1}, "result": "r", "error": null}]}` + "\r\n\n" +
		`{"text": "b", "userReply": "yes", "finishReason": "stop", "usage": {"inputTokens": 3, "durationMs": 1500}}` + "\n"
	want := &trace.Trace{Format: trace.Steps, Lines: []int{1, 3}, Steps: []guard.Step{
		{Text: "a", ToolCalls: []guard.ToolCall{call("search", raw(`{"q": 1}`), raw(`"r"`))}},
		{Text: "b", Input: "yes", FinishReason: "stop", Usage: guard.Usage{InputTokens: 3, Duration: 1500e6}},
	}}
	got, err := trace.Parse([]byte(data), trace.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, errText); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}

	arr := "[\n  " + `{"text": "a"},` + "\n  " + `{"toolCalls": [{"name": "x", "error": "boom"}]}` + "\n]"
	want = &trace.Trace{Format: trace.Steps, Lines: []int{2, 3}, Steps: []guard.Step{
		{Text: "a"}, {ToolCalls: []guard.ToolCall{{Name: "x", Err: errors.New("boom")}}},
	}}
	got, err = trace.Parse([]byte(arr), trace.Steps)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, errText); diff != "" {
		t.Errorf("Parse of an array (-want +got):\n%s", diff)
	}

	for _, blank := range []string{"", " \n\n", "\uFEFF"} {
		got, err := trace.Parse([]byte(blank), trace.Unknown)
		if err != nil || len(got.Steps) != 0 {
			t.Errorf("Parse(%q) = %+v, %v; want no steps", blank, got, err)
		}
	}
}

func TestOpenAIShapes(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []guard.Step
	}{
		{
			name: "deprecated function_call answered by a function message",
			data: `[{"role": "assistant", "content": null, "function_call": {"name": "lookup", "arguments": "{\"id\": 7}"}},
			        {"role": "function", "name": "lookup", "content": "found"},
			        {"role": "assistant", "content": "done", "finish_reason": "function_call"}]`,
			want: []guard.Step{
				{ToolCalls: []guard.ToolCall{call("lookup", raw(`{"id": 7}`), "found")}},
				{Text: "done", FinishReason: "tool-calls"},
			},
		},
		{
			name: "custom tool call, refusal, content parts and logger fields",
			data: `{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"}], "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "grammar", "input": "free text"}}], "finish_reason": "content_filter", "usage": {"prompt_tokens": 5, "completion_tokens": 2.5, "total_tokens": -1}}
			       {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}
			       {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:"}}]}
			       {"role": "user", "content": "again"}`,
			want: []guard.Step{{
				Text:         "a\nno",
				ToolCalls:    []guard.ToolCall{call("grammar", "free text", "x\ny")},
				FinishReason: "content-filter",
				Usage:        guard.Usage{InputTokens: 5},
				Input:        "look\n[image_url]\nagain",
			}},
		},
		{
			name: "the choice with index 0, and a completion without usage",
			data: `{"object": "chat.completion", "choices": [{"index": 1, "message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}, {"index": 0, "message": {"role": "assistant", "content": "A", "refusal": null}, "finish_reason": "length"}]}`,
			want: []guard.Step{{Text: "A", FinishReason: "length"}},
		},
		{
			name: "a call with no result, a tool result that is not text",
			data: `[{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}, {"id": "b", "type": "function", "function": {"name": "g", "arguments": "[1]"}}]},
			        {"role": "tool", "tool_call_id": "b", "content": [{"type": "file", "file": {}}]}]`,
			want: []guard.Step{{ToolCalls: []guard.ToolCall{
				call("f", "", nil),
				call("g", raw(`[1]`), raw(`[{"type": "file", "file": {}}]`)),
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trace.ReadOpenAI(strings.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, errText); diff != "" {
				t.Errorf("ReadOpenAI (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnthropicShapes(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []guard.Step
	}{
		{
			name: "server tool use with its result in the same message, paused turn",
			data: `{"type": "message", "role": "assistant", "content": [{"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "go"}}, {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [{"type": "web_search_result", "url": "https://go.dev"}]}, {"type": "server_tool_use", "id": "srv_2", "name": "web_search", "input": {"query": "rust"}}, {"type": "web_search_tool_result", "tool_use_id": "srv_2", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}], "stop_reason": "pause_turn"}`,
			want: []guard.Step{{ToolCalls: []guard.ToolCall{
				call("web_search", raw(`{"query": "go"}`), raw(`[{"type": "web_search_result", "url": "https://go.dev"}]`)),
				failed("web_search", raw(`{"query": "rust"}`), "web_search_tool_result_error: max_uses_exceeded"),
			}}},
		},
		{
			name: "stop reasons, an error result without text, a user reply",
			data: `[{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "deploy", "input": null}], "stop_reason": "max_tokens"},
			        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true}, {"type": "text", "text": "why?"}, {"type": "image", "source": {}}]},
			        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "stop_reason": "refusal"},
			        {"role": "assistant", "content": "c", "stop_reason": "stop_sequence"},
			        {"role": "assistant", "content": "d", "stop_reason": "something_new"}]`,
			want: []guard.Step{
				{ToolCalls: []guard.ToolCall{failed("deploy", nil, "tool error")}, FinishReason: "length", Input: "why?\n[image]"},
				{Text: "a\nb", FinishReason: "content-filter"},
				{Text: "c", FinishReason: "stop"},
				{Text: "d", FinishReason: "something-new"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trace.ReadAnthropic(strings.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, errText); diff != "" {
				t.Errorf("ReadAnthropic (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesShapes(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []guard.Step
	}{
		{
			name: "statuses and incomplete reasons",
			data: `{"object": "response", "status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "output": []}
			       {"object": "response", "status": "incomplete", "output": [{"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]}
			       {"object": "response", "status": "failed", "error": {"code": "server_error", "message": "x"}, "output": null}
			       {"object": "response", "status": "cancelled", "output": []}
			       {"object": "response", "status": "in_progress", "output": []}
			       {"object": "response", "status": "completed", "output": [{"type": "web_search_call", "id": "ws", "status": "completed", "action": {"type": "search", "query": "go"}}, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b"}]}]}`,
			want: []guard.Step{
				{FinishReason: "content-filter"},
				{Text: "no", FinishReason: "incomplete"},
				{FinishReason: "error"},
				{FinishReason: "cancelled"},
				{},
				// A built-in tool's call is no client call: the response stops.
				{Text: "a\nb", ToolCalls: []guard.ToolCall{call("web_search", raw(`{"type": "search", "query": "go"}`), nil)}, FinishReason: "stop"},
			},
		},
		{
			name: "custom tool calls, MCP calls, outputs that are not text, arguments as JSON",
			data: `[{"type": "custom_tool_call", "call_id": "c1", "name": "grammar", "input": "free text"},
			        {"type": "mcp_call", "id": "m1", "server_label": "s", "name": "lookup", "arguments": "{\"id\": 1}", "output": "found"},
			        {"type": "mcp_call", "id": "m2", "server_label": "s", "name": "lookup", "arguments": "{\"id\": 2}", "error": "not found"},
			        {"type": "computer_call", "call_id": "cc", "action": {"type": "click", "x": 1, "y": 2}},
			        {"type": "function_call", "call_id": "f1", "name": "f", "arguments": {"logged": "as JSON"}},
			        {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
			        {"type": "computer_call_output", "call_id": "cc", "output": {"type": "computer_screenshot", "image_url": "data:"}},
			        {"type": "function_call_output", "call_id": "f1", "output": [{"type": "input_text", "text": "x"}, {"type": "input_image", "image_url": "data:"}]},
			        {"type": "item_reference", "id": "msg_0"},
			        {"role": "system", "content": "ignored"},
			        {"type": "function_call", "call_id": "f2", "name": "g", "arguments": "not JSON"}]`,
			want: []guard.Step{
				{ToolCalls: []guard.ToolCall{
					call("grammar", "free text", "ok"),
					call("lookup", raw(`{"id": 1}`), "found"),
					failed("lookup", raw(`{"id": 2}`), "not found"),
					call("computer", raw(`{"type": "click", "x": 1, "y": 2}`), raw(`{"type": "computer_screenshot", "image_url": "data:"}`)),
					call("f", raw(`{"logged": "as JSON"}`), raw(`[{"type": "input_text", "text": "x"}, {"type": "input_image", "image_url": "data:"}]`)),
				}},
				{ToolCalls: []guard.ToolCall{call("g", "not JSON", nil)}},
			},
		},
		{
			name: "a request body with string input, then the response",
			data: `{"model": "m", "input": "What is 2+2?"}
			       {"object": "response", "status": "completed", "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]}], "usage": {"input_tokens": 1.5, "output_tokens": 1, "total_tokens": 2}}
			       {"model": "m", "input": "And 3+3?"}`,
			want: []guard.Step{{Text: "4", FinishReason: "stop", Usage: guard.Usage{OutputTokens: 1, TotalTokens: 2}, Input: "And 3+3?"}},
		},
		{
			name: "an assistant message after a reasoning item joins the turn; a developer message ends it",
			data: `[{"type": "message", "role": "assistant", "content": "a"},
			        {"type": "reasoning", "summary": []},
			        {"type": "function_call", "call_id": "x", "name": "f", "arguments": "{}"},
			        {"role": "developer", "content": "hurry"},
			        {"role": "assistant", "content": "b"}]`,
			want: []guard.Step{
				{Text: "a", ToolCalls: []guard.ToolCall{call("f", raw(`{}`), nil)}},
				{Text: "b"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trace.ReadResponses(strings.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, errText); diff != "" {
				t.Errorf("ReadResponses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		format trace.Format
		data   string
		line   int
		msg    string
	}{
		{"steps: not JSON", trace.Steps, `{"text": "a"}` + "\n\n" + `{"text": "b"` + "\n", 3, "invalid JSON: unexpected end of JSON input"},
		{"steps: not an object", trace.Steps, `{"text": "a"}` + "\n" + `["text"]`, 2, "a step must be a JSON object, not an array"},
		{"steps: garbage", trace.Steps, "{}\nhello", 2, "invalid JSON: invalid character 'h' looking for beginning of value"},
		{"steps: an array with a string", trace.Steps, "[\n{},\n\"x\"\n]", 3, "a step must be a JSON object, not a string"},
		{"unknown format", trace.Unknown, "\n\n" + `{"file": "x"}`, 3, "not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces"},
		{"unknown format: bad JSON", trace.Unknown, "{}\n{]", 2, "invalid JSON: invalid character ']' looking for beginning of object key string"},
		{"unknown format: a string", trace.Unknown, "\n\"hello\"\n", 2, "not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces: a string, not an object"},
		{"unknown format: numbers in an array", trace.Unknown, "[1, 2]", 1, "not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces: a number, not an object"},
		{"openai: broken JSON on a later line", trace.OpenAI, `{"role": "user", "content": "a"}` + "\n" + `{"role": "assistant", "content": "b"` + "\n", 2, "invalid JSON: unexpected end of input"},
		{"openai: a result for an unknown call", trace.OpenAI, `[{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},` + "\n" + `{"role": "tool", "tool_call_id": "b", "content": "x"}]`, 2, `a result for tool_call_id "b", which no earlier call has`},
		{"openai: a second result", trace.OpenAI, `{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}` + "\n" + `{"role": "tool", "tool_call_id": "a", "content": "x"}` + "\n" + `{"role": "tool", "tool_call_id": "a", "content": "y"}`, 3, `a second result for tool_call_id "a" (the first is on line 2)`},
		{"openai: tool message without id", trace.OpenAI, `{"role": "tool", "content": "x"}`, 1, "a tool message without tool_call_id"},
		{"openai: unknown role", trace.OpenAI, `{"role": "critic", "content": "x"}`, 1, `unknown role "critic" (want system, developer, user, assistant, tool or function)`},
		{"openai: no role", trace.OpenAI, `{"content": "x"}`, 1, "not an OpenAI message (no role) or chat completion (no choices)"},
		{"openai: wrong type", trace.OpenAI, `[{"role": "user", "content": "a"},` + "\n" + `{"role": 7}]`, 2, "an OpenAI message: field role must be a string, not number"},
		{"openai: not an object", trace.OpenAI, `["x"]`, 1, "an OpenAI message must be a JSON object, not a string"},
		{"openai: content of the wrong kind", trace.OpenAI, `{"role": "assistant", "content": 5}`, 1, "assistant message content must be a string, an array or null, not a number"},
		{"openai: a chunk", trace.OpenAI, `{"object": "chat.completion.chunk", "choices": []}`, 1, "a streaming chunk: log the assembled chat completion instead"},
		{"openai: no choices", trace.OpenAI, `{"object": "chat.completion", "choices": []}`, 1, "a chat completion without a choice's message"},
		{"openai: a tool call of no kind", trace.OpenAI, `{"role": "assistant", "tool_calls": [{"id": "a", "type": "web"}]}`, 1, "tool_calls[0] has neither function nor custom"},
		{"openai: a function message without a call", trace.OpenAI, `{"role": "function", "name": "f", "content": "x"}`, 1, `a function message for "f", which no earlier function_call has`},
		{"anthropic: a result for an unknown call", trace.Anthropic, `{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}` + "\n" + `{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "z", "content": "x"}]}`, 2, `a result for tool_use_id "z", which no earlier call has`},
		{"anthropic: an API error", trace.Anthropic, `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`, 1, "an API error: overloaded_error: Overloaded"},
		{"anthropic: another object", trace.Anthropic, `{"type": "message_start", "message": {}}`, 1, `an object of type "message_start", not a message`},
		{"anthropic: unknown role", trace.Anthropic, `{"role": "system", "content": "x"}`, 1, `unknown role "system" (want user or assistant)`},
		{"anthropic: no role", trace.Anthropic, `{"content": "x"}`, 1, "not an Anthropic message: no role"},
		{"responses: a result for an unknown call", trace.Responses, `{"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}` + "\n" + `{"type": "function_call_output", "call_id": "b", "output": "x"}`, 2, `a result for call_id "b", which no earlier call has`},
		{"responses: a second result", trace.Responses, `{"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}` + "\n" + `{"type": "function_call_output", "call_id": "a", "output": "x"}` + "\n" + `{"type": "function_call_output", "call_id": "a", "output": "y"}`, 3, `a second result for call_id "a" (the first is on line 2)`},
		{"responses: an output without call_id", trace.Responses, `{"type": "function_call_output", "output": "x"}`, 1, "a function_call_output item without call_id"},
		{"responses: unknown role", trace.Responses, `{"type": "message", "role": "critic", "content": "x"}`, 1, `unknown role "critic" (want user, assistant, system or developer)`},
		{"responses: a message without role", trace.Responses, `{"type": "message", "content": "x"}`, 1, "a message item without role"},
		{"responses: no type or role", trace.Responses, `{"content": "x"}`, 1, "not a Responses item (no type or role) or response (no object)"},
		{"responses: a streaming event", trace.Responses, `{"type": "response.output_text.delta", "delta": "x"}`, 1, "a streaming event (response.output_text.delta): log the assembled response instead"},
		{"responses: another object", trace.Responses, `{"object": "chat.completion", "choices": []}`, 1, `an object of type "chat.completion", not a response`},
		{"responses: output not an array", trace.Responses, `{"object": "response", "output": {}}`, 1, "response output must be an array, not an object"},
		{"responses: an output item that is not an object", trace.Responses, "\n" + `{"object": "response", "output": [1]}`, 2, "response output[0] must be a JSON object, not a number"},
		{"responses: a user message in output", trace.Responses, `{"object": "response", "output": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]}`, 1, "response output[1] is a user message item, not the model's output"},
		{"responses: bad content", trace.Responses, `{"role": "user", "content": 1}`, 1, "user message content must be a string, an array or null, not a number"},
		{"responses: a part that is not an object", trace.Responses, `{"role": "user", "content": [1]}`, 1, "user message content[0] must be a JSON object, not a number"},
		{"responses: wrong type", trace.Responses, `{"type": "function_call", "call_id": 1}`, 1, "a Responses item: field call_id must be a string, not number"},
		{"anthropic: a block that is not an object", trace.Anthropic, "[\n\n" + `{"role": "user", "content": ["x"]}]`, 3, "user message content[0] must be a JSON object, not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trace.Parse([]byte(tt.data), tt.format)
			var te *trace.Error
			if !errors.As(err, &te) {
				t.Fatalf("Parse = %v, want a *trace.Error", err)
			}
			if te.Line != tt.line || te.Err.Error() != tt.msg {
				t.Errorf("Parse: line %d: %q\nwant line %d: %q", te.Line, te.Err, tt.line, tt.msg)
			}
		})
	}
	if _, err := trace.Parse([]byte(`{"file": 1}`+"\n"+`{"label": 2}`), trace.Unknown); !errors.Is(err, trace.ErrUnknownFormat) {
		t.Errorf("Parse of objects of no kind = %v, want ErrUnknownFormat", err)
	}
}

func TestFormatNames(t *testing.T) {
	for _, f := range []trace.Format{trace.Steps, trace.OpenAI, trace.Anthropic, trace.OTLP, trace.Responses} {
		got, err := trace.ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, got, err)
		}
	}
	if f, err := trace.ParseFormat("auto"); f != trace.Unknown || err != nil {
		t.Errorf("ParseFormat(auto) = %v, %v", f, err)
	}
	if _, err := trace.ParseFormat("gemini"); err == nil {
		t.Error("ParseFormat(gemini) did not fail")
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"openai-messages.json", "openai-responses.jsonl", "anthropic-request.json", "anthropic-responses.jsonl", "responses-input.json", "responses-objects.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, name := range []string{"search-loop.otlp.json", "ping-pong.otlp.json", "support.otlp.json"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "otlp", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"text": "a", "toolCalls": [{"name": "x"}]}`))
	f.Add([]byte(`[{"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]}]`))
	f.Add([]byte(`[{"type": "function_call", "call_id": "a"}, {"object": "response", "output": [{"type": "message", "role": "assistant"}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []trace.Format{trace.Unknown, trace.Steps, trace.OpenAI, trace.Anthropic, trace.OTLP, trace.Responses} {
			tr, err := trace.Parse(data, format)
			if err != nil {
				var te *trace.Error
				if !errors.As(err, &te) {
					t.Fatalf("Parse(%v) = %v, not a *trace.Error", format, err)
				}
				continue
			}
			if len(tr.Lines) != len(tr.Steps) {
				t.Fatalf("Parse(%v): %d lines for %d steps", format, len(tr.Lines), len(tr.Steps))
			}
			if tr.Format == trace.OTLP {
				// Spans are ordered by start time, not by line.
				if len(tr.Runs) != len(tr.Steps) {
					t.Fatalf("Parse(%v): %d runs for %d steps", format, len(tr.Runs), len(tr.Steps))
				}
				continue
			}
			for i := 1; i < len(tr.Lines); i++ {
				if tr.Lines[i] < tr.Lines[i-1] || tr.Lines[i] < 1 {
					t.Fatalf("Parse(%v): lines out of order: %v", format, tr.Lines)
				}
			}
		}
		trace.Detect(data)
	})
}
