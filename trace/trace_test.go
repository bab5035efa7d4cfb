package trace_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// errText compares errors by their text.
var errText = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
})

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func call(name string, args any, result any) guard.ToolCall {
	return guard.ToolCall{Name: name, Args: args, Result: result}
}

func failed(name string, args any, msg string) guard.ToolCall {
	return guard.ToolCall{Name: name, Args: args, Err: errors.New(msg)}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTranscripts(t *testing.T) {
	tests := []struct {
		file   string
		format trace.Format
		want   *trace.Trace
	}{
		{
			file:   "openai-messages.json",
			format: trace.OpenAI,
			want: &trace.Trace{Format: trace.OpenAI, Lines: []int{4, 14, 23}, Steps: []guard.Step{
				{ToolCalls: []guard.ToolCall{ // parallel calls, answered out of order; one failed
					call("get_weather", raw(`{"location": "Paris", "unit": "celsius"}`), `{"temperature": 14, "sky": "cloudy"}`),
					call("get_weather", raw(`{"location": "Tokyo", "unit": "celsius"}`), "Error: weather service timed out for Tokyo"),
				}},
				{
					Text: "Paris is at 14°C. The Tokyo lookup failed; trying again.",
					// Arguments that are not valid JSON stay a string.
					ToolCalls: []guard.ToolCall{call("get_weather", `{"location": "Tokyo"`, "Error: arguments are not valid JSON")},
					Input:     "Never mind Tokyo.",
				},
				{Text: "Paris is 14°C and cloudy. I could not get the weather for Tokyo."},
			}},
		},
		{
			file:   "openai-responses.jsonl",
			format: trace.OpenAI,
			want: &trace.Trace{Format: trace.OpenAI, Lines: []int{2, 5, 7}, Steps: []guard.Step{
				{
					ToolCalls: []guard.ToolCall{
						call("search_flights", raw(`{"from":"SFO","to":"JFK","date":"2025-01-02"}`), `[{"flight":"UA100","price":180},{"flight":"DL200","price":150}]`),
						call("get_user", raw(`{}`), `{"id":"u_7","payment":"card_1"}`),
					},
					FinishReason: "tool-calls",
					Usage:        guard.Usage{InputTokens: 120, OutputTokens: 40, TotalTokens: 160},
				},
				{
					Text:         "DL200 is the cheapest at $150. Booking it.",
					ToolCalls:    []guard.ToolCall{call("book_flight", raw(`{"flight":"DL200","user":"u_7"}`), "Error: payment declined")},
					FinishReason: "tool-calls", // no usage
				},
				{
					Text:         "The booking failed: the payment was declined. Please check your card.",
					FinishReason: "stop",
					Usage:        guard.Usage{InputTokens: 260, OutputTokens: 18, TotalTokens: 278},
				},
			}},
		},
		{
			file:   "anthropic-request.json",
			format: trace.Anthropic,
			want: &trace.Trace{Format: trace.Anthropic, Lines: []int{11, 26, 39}, Steps: []guard.Step{
				{
					Text: "I will read the test and the code.",
					ToolCalls: []guard.ToolCall{
						call("read_file", raw(`{"path": "calc_test.go"}`), "func TestAdd(t *testing.T) { if Add(2, 2) != 4 { t.Fatal() } }"),
						failed("read_file", raw(`{"path": "calc.go"}`), "open calc.go: no such file or directory"),
					},
				},
				{
					ToolCalls: []guard.ToolCall{call("run_tests", raw(`{}`), "FAIL: undefined: Add")},
					Input:     "The code is in add.go, not calc.go.",
				},
				{Text: "The test fails because Add is not defined in the package it builds: the code lives in add.go."},
			}},
		},
		{
			file:   "anthropic-responses.jsonl",
			format: trace.Anthropic,
			want: &trace.Trace{Format: trace.Anthropic, Lines: []int{2, 4, 6}, Steps: []guard.Step{
				{
					Text: "Let me look up the order.", // the thinking block is not text
					ToolCalls: []guard.ToolCall{
						failed("get_order", raw(`{"order_id": "1234"}`), "order service unavailable"),
						call("get_shipping_policy", raw(`{}`), "Orders ship within 2 business days."),
					},
					FinishReason: "tool-calls",
					Usage:        guard.Usage{InputTokens: 1410, OutputTokens: 95},
				},
				{
					ToolCalls:    []guard.ToolCall{call("get_order", raw(`{"order_id": "1234"}`), `{"status": "packed", "placed": "2025-01-01"}`)},
					FinishReason: "tool-calls", // no usage
				},
				{
					Text:         "Order 1234 is packed and will ship within 2 business days.",
					FinishReason: "stop",
					Usage:        guard.Usage{InputTokens: 1620, OutputTokens: 21},
				},
			}},
		},
		{
			file:   "responses-input.json",
			format: trace.Responses,
			want: &trace.Trace{Format: trace.Responses, Lines: []int{9, 15, 18}, Steps: []guard.Step{
				{
					// The reasoning item is no text; the message and the
					// calls after it are one model turn.
					Text: "I will read the files.",
					ToolCalls: []guard.ToolCall{
						call("read_file", raw(`{"path": "main.go"}`), "package main\nfunc main() { helper() }"),
						call("read_file", raw(`{"path": "util.go"}`), "open util.go: no such file or directory"),
					},
				},
				{
					ToolCalls: []guard.ToolCall{call("run_build", raw(`{}`), "undefined: helper")},
					Input:     "helper is in helpers.go.",
				},
				{Text: "The build fails because helper is not defined: helpers.go is not in the package."},
			}},
		},
		{
			file:   "responses-objects.jsonl",
			format: trace.Responses,
			want: &trace.Trace{Format: trace.Responses, Lines: []int{2, 5, 7, 9}, Steps: []guard.Step{
				{
					ToolCalls: []guard.ToolCall{
						call("search_flights", raw(`{"from":"SFO","to":"JFK","date":"2025-01-02"}`), `[{"flight":"UA100","price":180},{"flight":"DL200","price":150}]`),
						call("get_user", raw(`{}`), `{"id":"u_7","payment":"card_1"}`),
					},
					FinishReason: "tool-calls",
					Usage:        guard.Usage{InputTokens: 120, OutputTokens: 40, TotalTokens: 160},
				},
				{
					Text:         "DL200 is the cheapest at $150. Booking it.",
					ToolCalls:    []guard.ToolCall{call("book_flight", raw(`{"flight":"DL200","user":"u_7"}`), "Error: payment declined")},
					FinishReason: "tool-calls", // no usage
				},
				{
					Text:         "The booking failed: the payment was",
					FinishReason: "length",
					Usage:        guard.Usage{InputTokens: 260, OutputTokens: 16, TotalTokens: 276},
					Input:        "Try my other card.\n[input_image]",
				},
				{
					Text:         "I cannot read card numbers from images. Please type the card's last four digits.",
					FinishReason: "stop",
					Usage:        guard.Usage{InputTokens: 300, OutputTokens: 20, TotalTokens: 320},
				},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readFile(t, tt.file)
			if got := trace.Detect(data); got != tt.format {
				t.Errorf("Detect = %v, want %v", got, tt.format)
			}
			got, err := trace.Parse(data, trace.Unknown)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, errText); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			read := map[trace.Format]func(io.Reader) ([]guard.Step, error){
				trace.OpenAI:    trace.ReadOpenAI,
				trace.Anthropic: trace.ReadAnthropic,
				trace.Responses: trace.ReadResponses,
			}[tt.format]
			steps, err := read(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want.Steps, steps, errText); diff != "" {
				t.Errorf("Read%v (-want +got):\n%s", tt.format, diff)
			}
		})
	}
}

// TestParseCopies checks that the steps do not change when the caller
// reuses the data it parsed.
func TestParseCopies(t *testing.T) {
	data := []byte(`{"toolCalls": [{"name": "a", "args": {"q": 1}, "result": [2]}]}`)
	tr, err := trace.Parse(data, trace.Steps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = ' '
	}
	want := []guard.Step{{ToolCalls: []guard.ToolCall{call("a", raw(`{"q": 1}`), raw(`[2]`))}}}
	if diff := cmp.Diff(want, tr.Steps, errText); diff != "" {
		t.Errorf("steps after the data changed (-want +got):\n%s", diff)
	}
}
