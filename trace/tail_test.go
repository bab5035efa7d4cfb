package trace_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// items splits JSON lines into items.
func items(lines ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(lines))
	for i, l := range lines {
		out[i] = json.RawMessage(l)
	}
	return out
}

func TestStepsOf(t *testing.T) {
	tests := []struct {
		name   string
		format trace.Format
		items  []json.RawMessage
		want   []guard.Step
	}{
		{
			name:   "openai: a tail that starts with the results of calls before it",
			format: trace.OpenAI,
			items: items(
				`{"role": "tool", "tool_call_id": "before", "content": "old result"}`,
				`{"role": "user", "content": "go on"}`,
				`{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}]}`,
				`{"role": "tool", "tool_call_id": "c1", "content": "found"}`,
				`{"role": "tool", "tool_call_id": "c1", "content": "a second result"}`,
				`{"role": "function", "name": "f", "content": "no function_call"}`,
				`{"role": "critic", "content": "a role no one knows"}`,
				`{"role": "user", "content": "thanks"}`,
			),
			want: []guard.Step{{ToolCalls: []guard.ToolCall{call("search", raw(`{"q":"x"}`), "found")}, Input: "thanks"}},
		},
		{
			name:   "openai: a call whose result is not in the tail",
			format: trace.OpenAI,
			items: items(
				`{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}`,
			),
			want: []guard.Step{{ToolCalls: []guard.ToolCall{call("ls", raw(`{}`), nil)}, FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 5, OutputTokens: 2, TotalTokens: 7}}},
		},
		{
			name:   "anthropic: results of calls before the tail, then a step and its input",
			format: trace.Anthropic,
			items: items(
				`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "before", "content": "old"}, {"type": "text", "text": "and now?"}]}`,
				`{"role": "assistant", "content": [{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]}`,
				`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A", "is_error": false}]}`,
				`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "again"}]}`,
				`{"type": "ping"}`,
				`{"role": "user", "content": "Stop there."}`,
			),
			want: []guard.Step{{Text: "Reading.", ToolCalls: []guard.ToolCall{call("read", raw(`{"path": "a"}`), "A")}, Input: "Stop there."}},
		},
		{
			name:   "responses: outputs of calls before the tail, two model turns",
			format: trace.Responses,
			items: items(
				`{"type": "function_call_output", "call_id": "before", "output": "old"}`,
				`{"type": "reasoning", "id": "rs_1", "summary": []}`,
				`{"type": "function_call", "call_id": "f1", "name": "search", "arguments": "{\"q\":\"a\"}"}`,
				`{"type": "function_call", "call_id": "f2", "name": "search", "arguments": "{\"q\":\"b\"}"}`,
				`{"type": "function_call_output", "call_id": "f2", "output": "B"}`,
				`{"type": "function_call_output", "call_id": "f1", "output": "A"}`,
				`{"type": "function_call_output", "call_id": "f1", "output": "a second output"}`,
				`{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A and B."}]}`,
				`{"type": "some_future_item", "id": "x"}`,
				`{"role": "oracle", "content": "a role no one knows"}`,
				`{"role": "user", "content": [{"type": "input_text", "text": "More."}]}`,
			),
			want: []guard.Step{
				{ToolCalls: []guard.ToolCall{call("search", raw(`{"q":"a"}`), "A"), call("search", raw(`{"q":"b"}`), "B")}},
				{Text: "A and B.", Input: "More."},
			},
		},
		{
			name:   "responses: a response object",
			format: trace.Responses,
			items: items(
				`{"role": "user", "content": "task"}`,
				`{"object": "response", "status": "completed", "output": [{"type": "function_call", "call_id": "f1", "name": "ls", "arguments": ""}], "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}`,
			),
			want: []guard.Step{{ToolCalls: []guard.ToolCall{call("ls", "", nil)}, FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4}}},
		},
		{
			name:   "only user messages and old results: no steps",
			format: trace.Responses,
			items: items(
				`{"type": "function_call_output", "call_id": "before", "output": "old"}`,
				`{"role": "user", "content": "hello"}`,
			),
			want: nil,
		},
		{name: "no items", format: trace.Anthropic, items: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trace.StepsOf(tt.format, tt.items)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, errText); diff != "" {
				t.Errorf("StepsOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStepsOfTranscripts checks that StepsOf of a whole transcript's items
// gives the steps the transcript's importer gives.
func TestStepsOfTranscripts(t *testing.T) {
	for _, tt := range []struct {
		file   string
		format trace.Format
		key    string // the member that holds the items; "" for JSON lines
	}{
		{"openai-messages.json", trace.OpenAI, ""},
		{"openai-responses.jsonl", trace.OpenAI, ""},
		{"anthropic-request.json", trace.Anthropic, "messages"},
		{"anthropic-responses.jsonl", trace.Anthropic, ""},
		{"responses-input.json", trace.Responses, "input"},
		{"responses-objects.jsonl", trace.Responses, ""},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data := readFile(t, tt.file)
			var list []json.RawMessage
			switch {
			case tt.key != "":
				var body map[string]json.RawMessage
				if err := json.Unmarshal(data, &body); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(body[tt.key], &list); err != nil {
					t.Fatal(err)
				}
			case strings.HasSuffix(tt.file, ".jsonl"):
				for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					list = append(list, json.RawMessage(l))
				}
			default:
				if err := json.Unmarshal(data, &list); err != nil {
					t.Fatal(err)
				}
			}
			want, err := trace.Parse(data, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			got, err := trace.StepsOf(tt.format, list)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Steps, got, errText); diff != "" {
				t.Errorf("StepsOf (-Parse +StepsOf):\n%s", diff)
			}
			// A tail from the second step's item on gives the steps after
			// the first, with results of the first's calls ignored.
			if len(want.Steps) < 2 {
				return
			}
			from := 0
			for i := range list {
				steps, err := trace.StepsOf(tt.format, list[:i+1])
				if err != nil {
					t.Fatal(err)
				}
				if len(steps) == 2 {
					from = i
					break
				}
			}
			tail, err := trace.StepsOf(tt.format, list[from:])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Steps[1:], tail, errText); diff != "" {
				t.Errorf("StepsOf of the tail from items[%d] (-want +got):\n%s", from, diff)
			}
		})
	}
}

func TestStepsOfErrors(t *testing.T) {
	tests := []struct {
		name   string
		format trace.Format
		items  []json.RawMessage
		err    string
	}{
		{"a format of no items", trace.Steps, items(`{}`), "trace: StepsOf reads openai, anthropic or responses items, not steps"},
		{"unknown format", trace.Unknown, nil, "trace: StepsOf reads openai, anthropic or responses items, not unknown"},
		{"not an object", trace.OpenAI, items(`{"role": "user", "content": "a"}`, `[1]`), "trace: items[1]: an OpenAI message must be a JSON object, not an array"},
		{"an empty item", trace.Responses, items(``), "trace: items[0]: a Responses item must be a JSON object, not nothing"},
		{"a field of the wrong type", trace.Anthropic, items(`{"role": 1}`), "trace: items[0]: an Anthropic message: field role must be a string, not number"},
		{"bad content", trace.Responses, items(`{"type": "message", "role": "assistant", "content": 3}`), "trace: items[0]: assistant message content must be a string, an array or null, not a number"},
		{"bad tool call", trace.OpenAI, items(`{"role": "assistant", "tool_calls": [{"id": "x"}]}`), "trace: items[0]: tool_calls[0] has neither function nor custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := trace.StepsOf(tt.format, tt.items)
			if err == nil || err.Error() != tt.err {
				t.Fatalf("StepsOf = %v, %v; want error %q", steps, err, tt.err)
			}
			if steps != nil {
				t.Errorf("StepsOf returned steps with an error: %v", steps)
			}
			var te *trace.Error
			if !errors.As(err, &te) || te.Line != 0 {
				t.Errorf("error %#v is not a *trace.Error on line 0", err)
			}
		})
	}
}
