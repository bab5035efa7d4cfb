package anthropic_test

import (
	"bytes"
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	lganthropic "github.com/loopguard/loopguard/adapters/anthropic"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

// This test holds package trace's Anthropic importer, which mirrors the
// API's JSON by hand, to what anthropic-sdk-go writes: its MessageParam
// values as the SDK sends them, and its Message values (as the SDK decodes
// them from the API) as an application that logs them with encoding/json
// writes them.

var importerErrText = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
})

// importerNoIDs compares calls without their IDs, which only the adapter
// keeps.
var importerNoIDs = cmp.Transformer("noIDs", func(c guard.ToolCall) guard.ToolCall { c.ID = ""; return c })

func importerJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func importerLines(t *testing.T, vs ...any) []byte {
	t.Helper()
	var out []byte
	for _, v := range vs {
		out = append(append(out, importerJSON(t, v)...), '\n')
	}
	return out
}

// apiMessages are the assistant's messages of one run, as the SDK decodes
// them from the API: thinking, text and parallel tool calls; a tool call;
// an answer.
func apiMessages(t *testing.T) []sdk.Message {
	t.Helper()
	var out []sdk.Message
	for _, s := range []string{
		`{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		  "content": [{"type": "thinking", "thinking": "Read both.", "signature": "sig"}, {"type": "text", "text": "I will read the files."},
		              {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path":"calc_test.go"}},
		              {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path":"calc.go"}}],
		  "stop_reason": "tool_use", "stop_sequence": null,
		  "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 100, "output_tokens": 95}}`,
		`{"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		  "content": [{"type": "tool_use", "id": "toolu_3", "name": "run_tests", "input": {}}],
		  "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 1500, "output_tokens": 20}}`,
		`{"id": "msg_3", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		  "content": [{"type": "text", "text": "Add is not defined:"}, {"type": "text", "text": "the code lives in add.go."}],
		  "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1600, "output_tokens": 21}}`,
	} {
		var m sdk.Message
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestImporterMessages(t *testing.T) {
	ms := apiMessages(t)
	results1 := sdk.NewUserMessage(
		sdk.NewToolResultBlock("toolu_2", "open calc.go: no such file or directory", true),
		sdk.NewToolResultBlock("toolu_1", "func TestAdd(t *testing.T) {}", false),
	)
	results2 := sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_3", "FAIL: undefined: Add", false), sdk.NewTextBlock("The code is in add.go."))
	history := []sdk.MessageParam{
		sdk.NewUserMessage(sdk.NewTextBlock("Why does the test fail?")),
		ms[0].ToParam(), results1,
		ms[1].ToParam(), results2,
		ms[2].ToParam(),
	}
	request := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, System: []sdk.TextBlockParam{{Text: "Be brief."}}, Messages: history}

	calls := [][]guard.ToolCall{
		{
			{Name: "read_file", Args: json.RawMessage(`{"path":"calc_test.go"}`), Result: "func TestAdd(t *testing.T) {}"},
			{Name: "read_file", Args: json.RawMessage(`{"path":"calc.go"}`), Err: errText("open calc.go: no such file or directory")},
		},
		{{Name: "run_tests", Args: json.RawMessage(`{}`), Result: "FAIL: undefined: Add"}},
	}
	bare := []guard.Step{
		{Text: "I will read the files.", ToolCalls: calls[0]},
		{ToolCalls: calls[1], Input: "The code is in add.go."},
		{Text: "Add is not defined:\nthe code lives in add.go."},
	}
	full := []guard.Step{
		{Text: bare[0].Text, ToolCalls: calls[0], FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 1400, OutputTokens: 95}},
		{ToolCalls: calls[1], Input: bare[1].Input, FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 1500, OutputTokens: 20}},
		{Text: bare[2].Text, FinishReason: "stop", Usage: guard.Usage{InputTokens: 1600, OutputTokens: 21}},
	}
	tests := []struct {
		name string
		data []byte
		want []guard.Step
	}{
		{"a request body", importerJSON(t, request), bare},
		{"the messages array", importerJSON(t, history), bare},
		{"messages marshalled with encoding/json and the results sent back", importerLines(t, history[0], ms[0], results1, ms[1], results2, ms[2]), full},
		{"messages as the API sent them (RawJSON)", []byte(string(importerJSON(t, history[0])) + "\n" + ms[0].RawJSON() + "\n" + string(importerJSON(t, results1)) + "\n" + ms[1].RawJSON() + "\n" + string(importerJSON(t, results2)) + "\n" + ms[2].RawJSON()), full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := trace.Detect(tt.data); f != trace.Anthropic {
				t.Errorf("Detect = %v, want anthropic", f)
			}
			got, err := trace.ReadAnthropic(bytes.NewReader(tt.data))
			if err != nil {
				t.Fatalf("%v\n%s", err, tt.data)
			}
			if diff := cmp.Diff(tt.want, got, importerErrText); diff != "" {
				t.Errorf("ReadAnthropic (-want +got):\n%s\n%s", diff, tt.data)
			}
		})
	}
	// A proxy's view: the messages of the last request from the second
	// step on; the results of the first step's calls are not in it.
	var tail []json.RawMessage
	for _, m := range history[3:] {
		tail = append(tail, importerJSON(t, m))
	}
	got, err := trace.StepsOf(trace.Anthropic, tail)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bare[1:], got, importerErrText); diff != "" {
		t.Errorf("StepsOf (-want +got):\n%s", diff)
	}
	// The importer and the adapter read a message alike, but for the call
	// IDs and the spelling of the finish reason.
	for i := range ms {
		step := lganthropic.StepFromMessage(&ms[i])
		step.FinishReason = rule.NormalizeFinishReason(step.FinishReason)
		imported, err := trace.ReadAnthropic(bytes.NewReader(importerJSON(t, ms[i])))
		if err != nil || len(imported) != 1 {
			t.Fatalf("message %d: %v, %v", i, imported, err)
		}
		if diff := cmp.Diff(step, imported[0], importerErrText, importerNoIDs); diff != "" {
			t.Errorf("message %d: StepFromMessage and ReadAnthropic differ (-adapter +importer):\n%s", i, diff)
		}
	}
}

// errText is an error with a text, for comparing by text.
type errText string

func (e errText) Error() string { return string(e) }
