package fake

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
)

func TestMessagesWhole(t *testing.T) {
	whole, events := messages("claude-x", 3, Reply{
		Text:        "Let me <look>.",
		Calls:       []Call{{ID: "toolu_1", Name: "ls", Args: `{"dir": "/"}`}, {ID: "toolu_2", Name: "pwd"}},
		InputTokens: 10, OutputTokens: 5,
	}, false)
	want := `{"content":[{"text":"Let me \u003clook\u003e.","type":"text"},` +
		`{"id":"toolu_1","input":{"dir":"/"},"name":"ls","type":"tool_use"},` +
		`{"id":"toolu_2","input":{},"name":"pwd","type":"tool_use"}],` +
		`"id":"msg_fake3","model":"claude-x","role":"assistant","stop_reason":"tool_use","stop_sequence":null,"type":"message",` +
		`"usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":10,"output_tokens":5}}`
	if diff := cmp.Diff(want, string(whole)); diff != "" {
		t.Errorf("whole (-want +got):\n%s", diff)
	}
	if events != nil {
		t.Errorf("events of a response not streamed: %q", events)
	}
	whole, _ = messages("m", 0, Reply{}, false)
	if !bytes.Contains(whole, []byte(`"content":[],`)) || !bytes.Contains(whole, []byte(`"stop_reason":"end_turn"`)) {
		t.Errorf("empty reply: %s", whole)
	}
}

func TestMessagesEvents(t *testing.T) {
	_, events := messages("m", 0, Reply{Text: "héllo", Calls: []Call{{ID: "toolu_1", Name: "ls", Args: `{"a":1}`}}, OutputTokens: 5}, true)
	var got []string
	for _, e := range events {
		got = append(got, strings.TrimSuffix(string(e), "\n\n"))
	}
	want := []string{
		"event: message_start\ndata: " + `{"message":{"content":[],"id":"msg_fake0","model":"m","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":0,"output_tokens":1}},"type":"message_start"}`,
		"event: ping\ndata: " + `{"type":"ping"}`,
		"event: content_block_start\ndata: " + `{"content_block":{"text":"","type":"text"},"index":0,"type":"content_block_start"}`,
		"event: content_block_delta\ndata: " + `{"delta":{"text":"hé","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		"event: content_block_delta\ndata: " + `{"delta":{"text":"llo","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		"event: content_block_stop\ndata: " + `{"index":0,"type":"content_block_stop"}`,
		"event: content_block_start\ndata: " + `{"content_block":{"id":"toolu_1","input":{},"name":"ls","type":"tool_use"},"index":1,"type":"content_block_start"}`,
		"event: content_block_delta\ndata: " + `{"delta":{"partial_json":"","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`,
		"event: content_block_delta\ndata: " + `{"delta":{"partial_json":"{\"a","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`,
		"event: content_block_delta\ndata: " + `{"delta":{"partial_json":"\":1}","type":"input_json_delta"},"index":1,"type":"content_block_delta"}`,
		"event: content_block_stop\ndata: " + `{"index":1,"type":"content_block_stop"}`,
		"event: message_delta\ndata: " + `{"delta":{"stop_reason":"tool_use","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":5}}`,
		"event: message_stop\ndata: " + `{"type":"message_stop"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// msgTurn is what the SDK read: the stop reason and the blocks.
func msgTurn(m *anthropic.Message) []string {
	out := []string{string(m.StopReason), m.ID, m.Model}
	for _, b := range m.Content {
		out = append(out, b.Type+" "+b.Text+b.ID+" "+b.Name+" "+string(b.Input))
	}
	return out
}

func TestMessagesSDK(t *testing.T) {
	s := New(func(api string, n int, body []byte) Reply {
		if api != "messages" {
			t.Errorf("api %q", api)
		}
		return Reply{Text: "Let me look.", Calls: []Call{{Name: "ls", Args: `{"dir":"/"}`}, {Name: "pwd", Args: `{}`}}, InputTokens: 12, OutputTokens: 7}
	})
	defer s.Close()
	client := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("sk-ant-test"))
	params := anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
	ctx := context.Background()
	m, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tool_use", "msg_fake0", "claude-sonnet-4-5", "text Let me look.  ", `tool_use toolu_0_0 ls {"dir":"/"}`, "tool_use toolu_0_1 pwd {}"}
	if diff := cmp.Diff(want, msgTurn(m)); diff != "" {
		t.Errorf("New (-want +got):\n%s", diff)
	}
	if m.Usage.InputTokens != 12 || m.Usage.OutputTokens != 7 {
		t.Errorf("usage %+v", m.Usage)
	}

	stream := client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want = []string{"tool_use", "msg_fake1", "claude-sonnet-4-5", "text Let me look.  ", `tool_use toolu_1_0 ls {"dir":"/"}`, "tool_use toolu_1_1 pwd {}"}
	if diff := cmp.Diff(want, msgTurn(&acc)); diff != "" {
		t.Errorf("NewStreaming (-want +got):\n%s", diff)
	}
	if acc.Usage.InputTokens != 12 || acc.Usage.OutputTokens != 7 {
		t.Errorf("stream usage %+v", acc.Usage)
	}
}

func TestMessagesSDKStatus(t *testing.T) {
	s := New(func(string, int, []byte) Reply {
		return Reply{Status: http.StatusBadRequest, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}
	})
	defer s.Close()
	client := anthropic.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("sk-ant-test"))
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 1, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message != "bad" {
		t.Errorf("error %v, want the 400 as an *anthropic.Error", err)
	}
}
