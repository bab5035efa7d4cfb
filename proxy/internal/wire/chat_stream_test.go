package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// fakeEvents returns the events of the fake server's streamed answer rep
// (as many as came before a break), split as the proxy splits them.
func fakeEvents(t *testing.T, rep fake.Reply) [][]byte {
	t.Helper()
	up := fake.New(func(string, int, []byte) fake.Reply { return rep })
	defer up.Close()
	res, err := http.Post(up.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	return splitEvents(res.Body)
}

func splitEvents(r io.Reader) [][]byte {
	ev := wire.NewEvents(r, 1<<20)
	var out [][]byte
	for {
		e, err := ev.Next()
		if len(e) > 0 {
			out = append(out, bytes.Clone(e))
		}
		if err != nil {
			return out
		}
	}
}

// turn is what a test compares of a model's turn as the SDK read it.
type turn struct {
	Content string
	Calls   []string // id name args
	Finish  string
	Usage   [3]int64
}

func turnOf(c openai.ChatCompletion) turn {
	var tu turn
	if len(c.Choices) > 0 {
		m := c.Choices[0].Message
		tu.Content, tu.Finish = m.Content, c.Choices[0].FinishReason
		for _, tc := range m.ToolCalls {
			tu.Calls = append(tu.Calls, tc.ID+" "+tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	tu.Usage = [3]int64{c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens}
	return tu
}

// accumulate reads a stream as openai-go's ChatCompletionAccumulator does
// and returns the turn, with the tool call indexes of choice 0 in the
// order they came.
func accumulate(t *testing.T, stream []byte) (turn, []int64) {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	var indexes []int64
	done := false
	for _, e := range splitEvents(bytes.NewReader(stream)) {
		data, _ := wire.Data(e)
		if len(data) == 0 {
			continue
		}
		if done {
			t.Fatalf("an event after [DONE]: %q", e)
		}
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		if !acc.AddChunk(c) {
			t.Fatalf("the accumulator refused chunk %s", data)
		}
		for _, ch := range c.Choices {
			if ch.Index == 0 {
				for _, d := range ch.Delta.ToolCalls {
					if !slices.Contains(indexes, d.Index) {
						indexes = append(indexes, d.Index)
					}
				}
			}
		}
	}
	if !done {
		t.Errorf("the stream has no [DONE]")
	}
	return turnOf(acc.ChatCompletion), indexes
}

var (
	callA = fake.Call{ID: "call_a", Name: "search", Args: `{"q":"go"}`}
	callB = fake.Call{ID: "call_b", Name: "read", Args: `{"path":"/etc/hosts","n":1}`}
	callC = fake.Call{ID: "call_c", Name: "write", Args: `{}`}
)

func TestChatStream(t *testing.T) {
	usage := [3]int64{10, 5, 15}
	tests := []struct {
		name     string
		rep      fake.Reply
		refused  []int
		text     string
		passed   int // events sent on at once
		calls    []guard.ToolCall
		want     turn
		wantIdxs []int64
	}{
		{name: "text only passes, nothing held",
			rep:    fake.Reply{Text: "hello there world", InputTokens: 10, OutputTokens: 5},
			passed: 7, // role, 3 words, finish, usage, [DONE]
			want:   turn{Content: "hello there world", Finish: "stop", Usage: usage}},
		{name: "held from the first call, no refusal: as they came",
			rep:    fake.Reply{Text: "let me see", Calls: []fake.Call{callA, callB}, InputTokens: 10, OutputTokens: 5},
			passed: 4, // role, 3 words
			calls: []guard.ToolCall{
				{ID: "call_a", Name: "search", Args: json.RawMessage(`{"q":"go"}`)},
				{ID: "call_b", Name: "read", Args: json.RawMessage(`{"path":"/etc/hosts","n":1}`)}},
			want:     turn{Content: "let me see", Calls: []string{`call_a search {"q":"go"}`, `call_b read {"path":"/etc/hosts","n":1}`}, Finish: "tool_calls", Usage: usage},
			wantIdxs: []int64{0, 1}},
		{name: "first of three refused",
			rep:     fake.Reply{Calls: []fake.Call{callA, callB, callC}, InputTokens: 10, OutputTokens: 5},
			refused: []int{0}, text: "search refused",
			passed:   0,
			want:     turn{Content: "search refused", Calls: []string{`call_b read {"path":"/etc/hosts","n":1}`, `call_c write {}`}, Finish: "tool_calls", Usage: usage},
			wantIdxs: []int64{0, 1}},
		{name: "middle of three refused, text after the model's",
			rep:     fake.Reply{Text: "ok", Calls: []fake.Call{callA, callB, callC}, InputTokens: 10, OutputTokens: 5},
			refused: []int{1}, text: "read refused",
			passed:   2,
			want:     turn{Content: "ok\n\nread refused", Calls: []string{`call_a search {"q":"go"}`, `call_c write {}`}, Finish: "tool_calls", Usage: usage},
			wantIdxs: []int64{0, 1}},
		{name: "last of three refused, no text",
			rep:      fake.Reply{Calls: []fake.Call{callA, callB, callC}, InputTokens: 10, OutputTokens: 5},
			refused:  []int{2},
			want:     turn{Calls: []string{`call_a search {"q":"go"}`, `call_b read {"path":"/etc/hosts","n":1}`}, Finish: "tool_calls", Usage: usage},
			wantIdxs: []int64{0, 1}},
		{name: "all refused: a final answer",
			rep:     fake.Reply{Text: "ok", Calls: []fake.Call{callA, callB, callC}, InputTokens: 10, OutputTokens: 5},
			refused: []int{0, 1, 2}, text: "stopped: a loop",
			passed: 2,
			want:   turn{Content: "ok\n\nstopped: a loop", Finish: "stop", Usage: usage}},
		{name: "the only call refused",
			rep:     fake.Reply{Calls: []fake.Call{callA}, InputTokens: 10, OutputTokens: 5},
			refused: []int{0}, text: "stopped",
			want: turn{Content: "stopped", Finish: "stop", Usage: usage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := fakeEvents(t, tt.rep)
			s := wire.Chat{}.NewStream(&wire.Request{Model: "gpt-test", Stream: true})
			var out []byte
			passed := 0
			for i, e := range events {
				got := s.Event(e)
				if got == nil {
					continue
				}
				if i != passed {
					t.Errorf("event %d went on after %d were held: %q", i, i-passed, e)
				}
				if !bytes.Equal(got, e) {
					t.Errorf("event %d changed: %q, want %q", i, got, e)
				}
				passed++
				out = append(out, got...)
			}
			if passed != tt.passed {
				t.Errorf("%d events went on at once, want %d", passed, tt.passed)
			}
			o := s.Output()
			if tt.calls != nil {
				if diff := cmp.Diff(tt.calls, o.Calls); diff != "" {
					t.Errorf("Output().Calls (-want +got):\n%s", diff)
				}
			}
			if o.ID != "chatcmpl-fake0" || o.Usage != (guard.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}) || len(o.Calls) != len(tt.rep.Calls) || o.Text != tt.rep.Text {
				t.Errorf("Output() = %+v", o)
			}
			end := s.End(tt.refused, tt.text)
			if tt.refused == nil && !bytes.Equal(end, slices.Concat(events[passed:]...)) {
				t.Errorf("End(nil, \"\") = %q, want the held events as they came", end)
			}
			got, idxs := accumulate(t, append(out, end...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("the SDK's accumulation (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantIdxs, idxs); diff != "" {
				t.Errorf("tool call indexes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChatStreamEndShape: in a rewritten stream the text comes before the
// finish chunk, the usage chunk and [DONE] stay last, and a chunk that
// held only refused deltas is gone.
func TestChatStreamEndShape(t *testing.T) {
	events := fakeEvents(t, fake.Reply{Calls: []fake.Call{callA, callB}, InputTokens: 1, OutputTokens: 2})
	s := wire.Chat{}.NewStream(&wire.Request{})
	for _, e := range events {
		if s.Event(e) != nil {
			t.Fatalf("event went on: %q", e)
		}
	}
	var kinds []string
	for _, e := range splitEvents(bytes.NewReader(s.End([]int{1}, "b refused"))) {
		data, _ := wire.Data(e)
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					Role      string  `json:"role"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct{} `json:"usage"`
		}
		json.Unmarshal(data, &c)
		switch {
		case string(data) == "[DONE]":
			kinds = append(kinds, "done")
		case len(c.Choices) == 0 && c.Usage != nil:
			kinds = append(kinds, "usage")
		case c.Choices[0].FinishReason != nil:
			kinds = append(kinds, "finish "+*c.Choices[0].FinishReason)
		case c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "":
			kinds = append(kinds, "text "+*c.Choices[0].Delta.Content)
		default:
			for _, d := range c.Choices[0].Delta.ToolCalls {
				kinds = append(kinds, "call "+itoa(d.Index)+" "+d.ID+" "+d.Function.Arguments)
			}
		}
	}
	want := []string{
		"call 0 call_a ", `call 0  {"q":`, `call 0  "go"}`,
		"text b refused", "finish tool_calls", "usage", "done",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("End's events (-want +got):\n%s", diff)
	}
}

// TestChatStreamChoices: with n > 1 only choice 0 is held and rewritten;
// the chunks of other choices go on as they are until choice 0 calls, and
// are held unchanged after.
func TestChatStreamChoices(t *testing.T) {
	ev := func(s string) []byte { return []byte("data: " + s + "\n\n") }
	in := [][]byte{
		ev(`{"id":"c","created":1,"model":"m","choices":[{"index":1,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`),
		ev(`{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`),
		[]byte(": keep-alive\n\n"),
		ev(`{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"y","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":null}]}`),
		[]byte(": keep-alive\n\n"),
		ev(`{"id":"c","created":1,"model":"m","choices":[{"index":1,"delta":{},"finish_reason":"tool_calls"}]}`),
		ev(`{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
		ev(`[DONE]`),
	}
	s := wire.Chat{}.NewStream(&wire.Request{})
	var passed []byte
	for _, e := range in {
		passed = append(passed, s.Event(e)...)
	}
	if want := slices.Concat(in[:3]...); !bytes.Equal(passed, want) {
		t.Errorf("went on at once:\n%s\nwant:\n%s", passed, want)
	}
	if diff := cmp.Diff([]guard.ToolCall{{ID: "y", Name: "g", Args: json.RawMessage(`{}`)}}, s.Output().Calls); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
	got := string(s.End([]int{0}, "no"))
	want := string(in[4]) + // the comment, as it came
		string(in[5]) + // choice 1 as it came
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"\n\nno"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("End (-want +got):\n%s", diff)
	}
}

func TestChatStreamFail(t *testing.T) {
	events := fakeEvents(t, fake.Reply{Text: "a", Calls: []fake.Call{callA}})
	s := wire.Chat{}.NewStream(&wire.Request{})
	var out []byte
	for _, e := range events {
		out = append(out, s.Event(e)...)
	}
	fail := s.Fail("REPEATED_TOOL_CALL", "stopped")
	if diff := cmp.Diff(string(wire.Chat{}.ErrorEvent("REPEATED_TOOL_CALL", "stopped")), string(fail)); diff != "" {
		t.Errorf("Fail (-want +got):\n%s", diff)
	}
	if bytes.Contains(out, []byte("tool_calls")) {
		t.Errorf("a call went on before Fail: %s", out)
	}
	// The SDK stops on the error event, with the text it had.
	var acc openai.ChatCompletionAccumulator
	var streamErr error
	for _, e := range splitEvents(bytes.NewReader(append(out, fail...))) {
		data, _ := wire.Data(e)
		if bytes.Contains(data, []byte(`"error"`)) {
			streamErr = errors.New(string(data))
			break
		}
		var c openai.ChatCompletionChunk
		json.Unmarshal(data, &c)
		acc.AddChunk(c)
	}
	if streamErr == nil || acc.Choices[0].Message.Content != "a" {
		t.Errorf("error %v, content %q", streamErr, acc.Choices[0].Message.Content)
	}
}

// TestChatStreamBroken: an upstream that breaks off in the middle of a
// call: End(nil, "") gives back the held events as they came.
func TestChatStreamBroken(t *testing.T) {
	full := fakeEvents(t, fake.Reply{Text: "a b", Calls: []fake.Call{callA, callB}})
	for drop := 1; drop < len(full); drop++ {
		events := fakeEvents(t, fake.Reply{Text: "a b", Calls: []fake.Call{callA, callB}, DropAfter: drop})
		if len(events) != drop {
			t.Fatalf("DropAfter %d: %d events came", drop, len(events))
		}
		s := wire.Chat{}.NewStream(&wire.Request{})
		var out []byte
		for _, e := range events {
			out = append(out, s.Event(e)...)
		}
		out = append(out, s.End(nil, "")...)
		if want := slices.Concat(events...); !bytes.Equal(out, want) {
			t.Errorf("DropAfter %d: sent\n%s\nwant\n%s", drop, out, want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestChatStreamOdd: streams a real API does not send, which End must
// still answer in a shape the SDK reads.
func TestChatStreamOdd(t *testing.T) {
	ev := func(s string) []byte { return []byte("data: " + s + "\n\n") }
	tests := []struct {
		name    string
		in      [][]byte
		refused []int
		text    string
		want    string
	}{
		{"nothing held: End sends nothing, not even the text",
			[][]byte{ev(`{"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`), ev(`[DONE]`)},
			nil, "note", ""},
		{"chunks without id, created, model: the request's model",
			[][]byte{ev(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}`),
				ev(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), ev(`[DONE]`)},
			[]int{0}, "no",
			`data: {"id":"","object":"chat.completion.chunk","created":0,"model":"req-model","choices":[{"index":0,"delta":{"content":"no"},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"},
		{"deltas without index are call 0; a call's index that is not an integer drops its chunk",
			[][]byte{ev(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":""}}]}}]}`),
				ev(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}`),
				ev(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`),
				ev(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1.5,"function":{"arguments":"x"}}]}}]}`),
				ev(`[DONE]`)},
			[]int{0}, "",
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := wire.Chat{}.NewStream(&wire.Request{Model: "req-model"})
			for _, e := range tt.in {
				s.Event(e)
			}
			if diff := cmp.Diff(tt.want, string(s.End(tt.refused, tt.text))); diff != "" {
				t.Errorf("End (-want +got):\n%s", diff)
			}
		})
	}
}
