package fake_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/loopguard/loopguard/proxy/internal/fake"
)

type chatTurn struct {
	ID, Model, Content, Finish string
	Calls                      []string
	Usage                      [3]int64
}

func chatTurnOf(c openai.ChatCompletion) chatTurn {
	tu := chatTurn{ID: c.ID, Model: c.Model, Usage: [3]int64{c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens}}
	if len(c.Choices) > 0 {
		m := c.Choices[0].Message
		tu.Content, tu.Finish = m.Content, c.Choices[0].FinishReason
		for _, tc := range m.ToolCalls {
			tu.Calls = append(tu.Calls, tc.ID+" "+tc.Type+" "+tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	return tu
}

// TestChatSDK: openai-go reads the fake's answers, whole and streamed
// (through its ChatCompletionAccumulator), as the same turn.
func TestChatSDK(t *testing.T) {
	replies := []fake.Reply{
		{Text: "hello there, world", InputTokens: 3, OutputTokens: 4},
		{Calls: []fake.Call{{Name: "search", Args: `{"q":"günther"}`}, {ID: "call_x", Name: "read", Args: ``}}, InputTokens: 5},
		{Text: "one", Calls: []fake.Call{{Name: "f", Args: `{"a":[1,2]}`}}, OutputTokens: 2},
	}
	want := []chatTurn{
		{ID: "chatcmpl-fake0", Model: "gpt-test", Content: "hello there, world", Finish: "stop", Usage: [3]int64{3, 4, 7}},
		{ID: "chatcmpl-fake1", Model: "gpt-test", Finish: "tool_calls", Usage: [3]int64{5, 0, 5},
			Calls: []string{`call_1_0 function search {"q":"günther"}`, `call_x function read `}},
		{ID: "chatcmpl-fake2", Model: "gpt-test", Content: "one", Finish: "tool_calls", Usage: [3]int64{0, 2, 2},
			Calls: []string{`call_2_0 function f {"a":[1,2]}`}},
	}
	for _, stream := range []bool{false, true} {
		srv := fake.New(func(api string, n int, _ []byte) fake.Reply {
			if api != "chat" {
				t.Errorf("api %q", api)
			}
			return replies[n]
		})
		c := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
		p := openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		for i := range replies {
			var got chatTurn
			if !stream {
				r, err := c.Chat.Completions.New(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				got = chatTurnOf(*r)
			} else {
				s := c.Chat.Completions.NewStreaming(context.Background(), p)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					if !acc.AddChunk(s.Current()) {
						t.Fatalf("refused chunk %s", s.Current().RawJSON())
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				got = chatTurnOf(acc.ChatCompletion)
			}
			if diff := cmp.Diff(want[i], got); diff != "" {
				t.Errorf("stream %v, reply %d (-want +got):\n%s", stream, i, diff)
			}
		}
		srv.Close()
	}
}

// TestChatStreamShape: the events are chat.completion.chunk data lines in
// the API's order, the usage chunk without choices, then [DONE].
func TestChatStreamShape(t *testing.T) {
	srv := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "a b", Calls: []fake.Call{{Name: "f", Args: `{"x":1}`}, {Name: "g", Args: `{}`}}, InputTokens: 1, OutputTokens: 1}
	})
	defer srv.Close()
	res, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var got []string
	for _, ev := range strings.SplitAfter(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || !strings.HasSuffix(data, "\n\n") || strings.Count(ev, "\n") != 2 {
			t.Fatalf("event %q is not one data line", ev)
		}
		data = strings.TrimSuffix(data, "\n\n")
		if data == "[DONE]" {
			got = append(got, data)
			continue
		}
		var c struct {
			ID, Object, Model string
			Choices           []struct {
				Index        int
				Delta        map[string]any
				FinishReason *string `json:"finish_reason"`
			}
			Usage *map[string]any
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID != "chatcmpl-fake0" || c.Object != "chat.completion.chunk" || c.Model != "m" {
			t.Errorf("chunk %s", data)
		}
		if len(c.Choices) == 0 {
			got = append(got, "usage")
			continue
		}
		ch := c.Choices[0]
		d, _ := json.Marshal(ch.Delta)
		s := string(d)
		if ch.FinishReason != nil {
			s += " " + *ch.FinishReason
		}
		if c.Usage != nil {
			t.Errorf("a chunk with choices has usage: %s", data)
		}
		got = append(got, s)
	}
	want := []string{
		`{"content":"","refusal":null,"role":"assistant"}`,
		`{"content":"a "}`,
		`{"content":"b"}`,
		`{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_0_0","index":0,"type":"function"}]}`,
		`{"tool_calls":[{"function":{"arguments":"{\"x"},"index":0}]}`,
		`{"tool_calls":[{"function":{"arguments":"\":1}"},"index":0}]}`,
		`{"tool_calls":[{"function":{"arguments":"","name":"g"},"id":"call_0_1","index":1,"type":"function"}]}`,
		`{"tool_calls":[{"function":{"arguments":"{"},"index":1}]}`,
		`{"tool_calls":[{"function":{"arguments":"}"},"index":1}]}`,
		`{} tool_calls`,
		`usage`,
		`[DONE]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestChatStreamCallFirst: a turn that opens with a call has the role in
// its first call chunk, with content null, as the API sends it.
func TestChatStreamCallFirst(t *testing.T) {
	srv := fake.New(func(string, int, []byte) fake.Reply { return fake.Reply{Calls: []fake.Call{{Name: "f", Args: `{}`}}} })
	defer srv.Close()
	res, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	first, _, _ := strings.Cut(string(body), "\n\n")
	want := `"delta":{"content":null,"refusal":null,"role":"assistant","tool_calls":[{"index":0,"id":"call_0_0","type":"function","function":{"name":"f","arguments":""}}]}`
	if !strings.Contains(first, want) {
		t.Errorf("first event %s\nwant it to hold %s", first, want)
	}
}
