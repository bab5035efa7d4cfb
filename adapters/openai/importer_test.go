package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	lgopenai "github.com/loopguard/loopguard/adapters/openai"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

// These tests hold package trace's importers, which mirror the API's JSON
// by hand, to what openai-go writes: its request parameters as the SDK sends
// them, and its response values as an application that logs them with
// encoding/json writes them.

var importerErrText = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
})

// importerJSON marshals v, failing the test on an error.
func importerJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// importerLines writes values as JSON lines.
func importerLines(t *testing.T, vs ...any) []byte {
	t.Helper()
	var out []byte
	for _, v := range vs {
		out = append(append(out, importerJSON(t, v)...), '\n')
	}
	return out
}

// importerItems marshals each value on its own, as a proxy sees the items of
// a request.
func importerItems[T any](t *testing.T, vs []T) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		out[i] = importerJSON(t, v)
	}
	return out
}

func importerCall(name, args string, result any) guard.ToolCall {
	return guard.ToolCall{Name: name, Args: json.RawMessage(args), Result: result}
}

// chatCompletions are three chat completions of one run, as the SDK gives
// them to an application (decoded from the API's JSON, which its union
// accessors such as AsFunction read): parallel function calls, a custom tool
// call with text, an answer.
func chatCompletions(t *testing.T) (first, second, last sdk.ChatCompletion) {
	t.Helper()
	first, second, last = builtCompletions()
	for _, c := range []*sdk.ChatCompletion{&first, &second, &last} {
		if err := json.Unmarshal(importerJSON(t, *c), c); err != nil {
			t.Fatal(err)
		}
	}
	return first, second, last
}

// builtCompletions are the completions of chatCompletions, built in Go.
func builtCompletions() (first, second, last sdk.ChatCompletion) {
	first = sdk.ChatCompletion{
		ID: "chatcmpl-1", Object: "chat.completion", Created: 1, Model: "gpt-4o",
		Choices: []sdk.ChatCompletionChoice{{
			Index: 0, FinishReason: "tool_calls",
			Message: sdk.ChatCompletionMessage{Role: "assistant", ToolCalls: []sdk.ChatCompletionMessageToolCallUnion{
				{ID: "call_1", Type: "function", Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{ID: "call_2", Type: "function", Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: "get_weather", Arguments: `{"city":"Tokyo"}`}},
			}},
		}},
		Usage: sdk.CompletionUsage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
	}
	second = sdk.ChatCompletion{
		ID: "chatcmpl-2", Object: "chat.completion", Created: 2, Model: "gpt-4o",
		Choices: []sdk.ChatCompletionChoice{{
			Index: 0, FinishReason: "tool_calls",
			Message: sdk.ChatCompletionMessage{Role: "assistant", Content: "Paris is 14°C; Tokyo timed out. Noting it.", ToolCalls: []sdk.ChatCompletionMessageToolCallUnion{
				{ID: "call_3", Type: "custom", Custom: sdk.ChatCompletionMessageCustomToolCallCustom{Name: "notes", Input: "Tokyo: timeout"}},
			}},
		}},
		Usage: sdk.CompletionUsage{PromptTokens: 200, CompletionTokens: 25, TotalTokens: 225},
	}
	last = sdk.ChatCompletion{
		ID: "chatcmpl-3", Object: "chat.completion", Created: 3, Model: "gpt-4o",
		Choices: []sdk.ChatCompletionChoice{{
			Index: 0, FinishReason: "stop",
			Message: sdk.ChatCompletionMessage{Role: "assistant", Content: "Paris is 14°C and cloudy."},
		}},
		Usage: sdk.CompletionUsage{PromptTokens: 240, CompletionTokens: 9, TotalTokens: 249},
	}
	return first, second, last
}

func TestImporterChatCompletions(t *testing.T) {
	first, second, last := chatCompletions(t)
	tool1 := sdk.ToolMessage(`{"temp": 14, "sky": "cloudy"}`, "call_1")
	tool2 := sdk.ToolMessage([]sdk.ChatCompletionContentPartTextParam{{Text: "Error:"}, {Text: "timeout"}}, "call_2")
	tool3 := sdk.ToolMessage("noted", "call_3")
	reply := sdk.UserMessage("Never mind Tokyo.")
	// The request of the last call: the whole history, as the SDK sends it.
	request := sdk.ChatCompletionNewParams{
		Model: shared.ChatModelGPT4o,
		Messages: []sdk.ChatCompletionMessageParamUnion{
			sdk.SystemMessage("Be brief."),
			sdk.UserMessage([]sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart("Weather in Paris and Tokyo?")}),
			first.Choices[0].Message.ToParam(), tool1, tool2,
			second.Choices[0].Message.ToParam(), tool3, reply,
			last.Choices[0].Message.ToParam(),
		},
	}
	calls := [][]guard.ToolCall{
		{importerCall("get_weather", `{"city":"Paris"}`, `{"temp": 14, "sky": "cloudy"}`), importerCall("get_weather", `{"city":"Tokyo"}`, "Error:\ntimeout")},
		{{Name: "notes", Args: "Tokyo: timeout", Result: "noted"}},
	}
	bare := []guard.Step{
		{ToolCalls: calls[0]},
		{Text: "Paris is 14°C; Tokyo timed out. Noting it.", ToolCalls: calls[1], Input: "Never mind Tokyo."},
		{Text: "Paris is 14°C and cloudy."},
	}
	// The completions add finish reasons and usage.
	full := []guard.Step{
		{ToolCalls: calls[0], FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}},
		{Text: bare[1].Text, ToolCalls: calls[1], Input: bare[1].Input, FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 200, OutputTokens: 25, TotalTokens: 225}},
		{Text: bare[2].Text, FinishReason: "stop", Usage: guard.Usage{InputTokens: 240, OutputTokens: 9, TotalTokens: 249}},
	}
	tests := []struct {
		name string
		data []byte
		want []guard.Step
	}{
		{"a request body", importerJSON(t, request), bare},
		{"the messages array", importerJSON(t, request.Messages), bare},
		{"completions and the messages sent back, one per line", importerLines(t, request.Messages[0], request.Messages[1], first, tool1, tool2, second, tool3, reply, last), full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := trace.Detect(tt.data); f != trace.OpenAI {
				t.Errorf("Detect = %v, want openai", f)
			}
			got, err := trace.ReadOpenAI(bytes.NewReader(tt.data))
			if err != nil {
				t.Fatalf("%v\n%s", err, tt.data)
			}
			if diff := cmp.Diff(tt.want, got, importerErrText); diff != "" {
				t.Errorf("ReadOpenAI (-want +got):\n%s\n%s", diff, tt.data)
			}
		})
	}
	// A proxy's view: the items of the last request from the second step
	// on; the results of the first step's calls are not in it.
	got, err := trace.StepsOf(trace.OpenAI, importerItems(t, request.Messages[5:]))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bare[1:], got, importerErrText); diff != "" {
		t.Errorf("StepsOf (-want +got):\n%s", diff)
	}
	// The importer and the adapter read a completion alike, but for the
	// call IDs, which only the adapter keeps, and the spelling of the
	// finish reason.
	for i, c := range []sdk.ChatCompletion{first, second, last} {
		step := lgopenai.StepFromChatCompletion(&c)
		step.FinishReason = rule.NormalizeFinishReason(step.FinishReason)
		imported, err := trace.ReadOpenAI(bytes.NewReader(importerJSON(t, c)))
		if err != nil || len(imported) != 1 {
			t.Fatalf("completion %d: %v, %v", i, imported, err)
		}
		if diff := cmp.Diff(step, imported[0], importerErrText, importerNoIDs); diff != "" {
			t.Errorf("completion %d: StepFromChatCompletion and ReadOpenAI differ (-adapter +importer):\n%s", i, diff)
		}
	}
}

// importerNoIDs compares calls without their IDs.
var importerNoIDs = cmp.Transformer("noIDs", func(c guard.ToolCall) guard.ToolCall { c.ID = ""; return c })

// apiResponses are two responses of the Responses API as the SDK decodes
// them from the API's JSON: the values an application holds.
func apiResponses(t *testing.T) (first, last responses.Response) {
	t.Helper()
	for _, r := range []struct {
		into *responses.Response
		json string
	}{
		{&first, `{"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5",
			"output": [
				{"type": "reasoning", "id": "rs_1", "summary": []},
				{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Searching both ways.", "annotations": []}]},
				{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search_flights", "arguments": "{\"from\":\"SFO\",\"to\":\"JFK\"}", "status": "completed"},
				{"type": "custom_tool_call", "id": "ct_1", "call_id": "call_2", "name": "sql", "input": "SELECT 1"}],
			"usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 160}}`},
		{&last, `{"id": "resp_2", "object": "response", "created_at": 2, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "model": "gpt-5",
			"output": [{"type": "message", "id": "msg_2", "role": "assistant", "status": "incomplete", "content": [{"type": "output_text", "text": "DL200 is the cheapest", "annotations": []}]}],
			"usage": {"input_tokens": 260, "output_tokens": 16, "total_tokens": 276}}`},
	} {
		if err := json.Unmarshal([]byte(r.json), r.into); err != nil {
			t.Fatal(err)
		}
	}
	return first, last
}

func TestImporterResponses(t *testing.T) {
	first, last := apiResponses(t)
	// The items an application sends back: the first response's output
	// as input items, the tools' outputs, a user message.
	fc := first.Output[2].AsFunctionCall().ToParam()
	output1 := responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: param.NewOpt("call_1"),
		Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(`[{"flight":"DL200","price":150}]`)},
	}}
	output2 := responses.ResponseInputItemParamOfCustomToolCallOutput("call_2", "1")
	reply := responses.ResponseInputItemParamOfMessage("Book the cheapest.", responses.EasyInputMessageRoleUser)
	message := first.Output[1].AsMessage().ToParam()
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Be brief.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfInputMessage(responses.ResponseInputMessageContentListParam{responses.ResponseInputContentParamOfInputText("Find flights from SFO to JFK.")}, "user"),
		responses.ResponseInputItemParamOfReasoning("rs_1", []responses.ResponseReasoningItemSummaryParam{{Text: "Search."}}),
		{OfOutputMessage: &message},
		{OfFunctionCall: &fc},
		responses.ResponseInputItemParamOfCustomToolCall("call_2", "SELECT 1", "sql"),
		output1, output2, reply,
	}
	request := responses.ResponseNewParams{Model: shared.ResponsesModel("gpt-5"), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}

	calls := []guard.ToolCall{
		importerCall("search_flights", `{"from":"SFO","to":"JFK"}`, `[{"flight":"DL200","price":150}]`),
		{Name: "sql", Args: "SELECT 1", Result: "1"},
	}
	bare := []guard.Step{{Text: "Searching both ways.", ToolCalls: calls, Input: "Book the cheapest."}}
	full := []guard.Step{
		{Text: "Searching both ways.", ToolCalls: calls, Input: "Book the cheapest.", FinishReason: "tool-calls", Usage: guard.Usage{InputTokens: 120, OutputTokens: 40, TotalTokens: 160}},
		{Text: "DL200 is the cheapest", FinishReason: "length", Usage: guard.Usage{InputTokens: 260, OutputTokens: 16, TotalTokens: 276}},
	}
	tests := []struct {
		name string
		data []byte
		want []guard.Step
	}{
		{"a request body", importerJSON(t, request), bare},
		{"the input array", importerJSON(t, input), bare},
		{"responses marshalled with encoding/json and the items sent back", importerLines(t, input[0], input[1], first, output1, output2, reply, last), full},
		{"responses as the API sent them (RawJSON)", []byte(strings.Join([]string{string(importerJSON(t, input[0])), string(importerJSON(t, input[1])), first.RawJSON(), string(importerJSON(t, output1)), string(importerJSON(t, output2)), string(importerJSON(t, reply)), last.RawJSON()}, "\n")), full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := trace.Detect(tt.data); f != trace.Responses {
				t.Errorf("Detect = %v, want responses", f)
			}
			got, err := trace.ReadResponses(bytes.NewReader(tt.data))
			if err != nil {
				t.Fatalf("%v\n%s", err, tt.data)
			}
			if diff := cmp.Diff(tt.want, got, importerErrText); diff != "" {
				t.Errorf("ReadResponses (-want +got):\n%s\n%s", diff, tt.data)
			}
		})
	}
	// A proxy's view: the input items from the tools' outputs on. Their
	// calls are before the tail: no steps, and no error.
	got, err := trace.StepsOf(trace.Responses, importerItems(t, input[6:]))
	if err != nil || len(got) != 0 {
		t.Errorf("StepsOf of outputs only = %v, %v; want no steps", got, err)
	}
	got, err = trace.StepsOf(trace.Responses, importerItems(t, input[2:]))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bare, got, importerErrText); diff != "" {
		t.Errorf("StepsOf (-want +got):\n%s", diff)
	}
	// The importer and the adapter read a response alike, but for the
	// call IDs, which only the adapter keeps, and the spelling of the
	// finish reason.
	for i, r := range []responses.Response{first, last} {
		step := lgopenai.StepFromResponse(&r)
		step.FinishReason = rule.NormalizeFinishReason(step.FinishReason)
		imported, err := trace.ReadResponses(bytes.NewReader(importerJSON(t, r)))
		if err != nil || len(imported) != 1 {
			t.Fatalf("response %d: %v, %v", i, imported, err)
		}
		if diff := cmp.Diff(step, imported[0], importerErrText, importerNoIDs); diff != "" {
			t.Errorf("response %d: StepFromResponse and ReadResponses differ (-adapter +importer):\n%s", i, diff)
		}
	}
}

// TestImporterChatErrors checks that a result the SDK sends for a call the
// transcript does not hold is named by its id.
func TestImporterChatErrors(t *testing.T) {
	data := importerLines(t, sdk.ToolMessage("x", "call_9"))
	_, err := trace.ReadOpenAI(bytes.NewReader(data))
	var te *trace.Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), `tool_call_id "call_9"`) {
		t.Errorf("ReadOpenAI = %v, want an error naming call_9", err)
	}
}
