package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
)

// An upstream stream of a message: text, then two tool_use blocks, as the
// API sends it (the first partial_json empty, a ping after message_start).
var msgUpstream = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":1,\"cache_read_input_tokens\":2,\"output_tokens\":1}}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"look.\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	// 6: the first call
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"ls\",\"input\":{}}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"dir\\\": \"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"/\\\"}\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	// 12: the second call, with no input deltas
	"event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":\"pwd\",\"input\":{}}}\r\n\r\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":30}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

func msgFeed(s Stream, evs []string) (passed []string) {
	for _, e := range evs {
		if out := s.Event([]byte(e)); out != nil {
			passed = append(passed, string(out))
		}
	}
	return passed
}

func TestMessagesStreamHolds(t *testing.T) {
	s := Messages{}.NewStream(&Request{Model: "m"})
	for i, e := range msgUpstream {
		out := s.Event([]byte(e))
		if i < 6 {
			if string(out) != e {
				t.Errorf("event %d: Event returned %q, want the event at once", i, out)
			}
			if i == 4 {
				if got := s.Output().Text; got != "Let me look." {
					t.Errorf("text after event 4 = %q", got)
				}
			}
			continue
		}
		if out != nil {
			t.Errorf("event %d (from the first tool_use on): Event returned %q, want it held", i, out)
		}
	}
	want := msgOutput{ID: "msg_s", Text: "Let me look.", Finish: "tool_use",
		Calls: []msgCall{{"toolu_a", "ls", `{"dir": "/"}`}, {"toolu_b", "pwd", `{}`}},
		Usage: guard.Usage{InputTokens: 13, OutputTokens: 30}}
	if diff := cmp.Diff(want, asMsgOutput(s.Output())); diff != "" {
		t.Errorf("Output (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(strings.Join(msgUpstream[6:], ""), string(s.End(nil, ""))); diff != "" {
		t.Errorf("End without refusal: not the held events as they came (-want +got):\n%s", diff)
	}
	if got := s.End(nil, ""); got != nil {
		t.Errorf("a second End returned %q", got)
	}
}

func TestMessagesStreamEnd(t *testing.T) {
	start := func(i int, id, name string) string {
		return `content_block_start {"type":"content_block_start","index":` + strconv.Itoa(i) + `,"content_block":{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":{}}}`
	}
	delta := func(i int, pj string) string {
		return `content_block_delta {"type":"content_block_delta","index":` + strconv.Itoa(i) + `,"delta":{"type":"input_json_delta","partial_json":` + pj + `}}`
	}
	stop := func(i int) string {
		return `content_block_stop {"type":"content_block_stop","index":` + strconv.Itoa(i) + `}`
	}
	fb := func(i int) []string {
		return []string{
			`content_block_start {"type":"content_block_start","index":` + strconv.Itoa(i) + `,"content_block":{"type":"text","text":""}}`,
			`content_block_delta {"type":"content_block_delta","index":` + strconv.Itoa(i) + `,"delta":{"type":"text_delta","text":"Stop <now>."}}`,
			stop(i),
		}
	}
	callA := func(i int) []string {
		return []string{start(i, "toolu_a", "ls"), delta(i, `""`), delta(i, `"{\"dir\": "`), delta(i, `"\"/\"}"`), stop(i)}
	}
	callB := func(i int) []string { return []string{start(i, "toolu_b", "pwd"), stop(i)} }
	ping := `ping {"type": "ping"}`
	end := func(reason string) []string {
		return []string{
			`message_delta {"type":"message_delta","delta":{"stop_reason":"` + reason + `","stop_sequence":null},"usage":{"output_tokens":30}}`,
			`message_stop {"type":"message_stop"}`,
		}
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name    string
		refused []int
		text    string
		want    []string
	}{
		{"first refused", []int{0}, "Stop <now>.", cat(fb(1), []string{ping}, callB(2), end("tool_use"))},
		{"second refused", []int{1}, "Stop <now>.", cat(fb(1), callA(2), []string{ping}, end("tool_use"))},
		{"both refused", []int{0, 1}, "Stop <now>.", cat(fb(1), []string{ping}, end("end_turn"))},
		{"both refused, no text", []int{0, 1}, "", cat([]string{ping}, end("end_turn"))},
		{"second refused, no text", []int{1}, "", cat(callA(1), []string{ping}, end("tool_use"))},
		{"none refused, text", nil, "Stop <now>.", cat(fb(1), callA(2), []string{ping}, callB(3), end("tool_use"))},
		{"indexes that name no call are ignored", []int{-1, 5}, "", cat(callA(1), []string{ping}, callB(2), end("tool_use"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Messages{}.NewStream(&Request{})
			msgFeed(s, msgUpstream)
			got := msgLines(t, s.End(tt.refused, tt.text))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("End (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessagesStreamTextOnly(t *testing.T) {
	evs := append(append([]string(nil), msgUpstream[:6]...), msgUpstream[14:]...)
	evs[len(evs)-2] = strings.Replace(evs[len(evs)-2], "tool_use", "end_turn", 1)
	s := Messages{}.NewStream(&Request{})
	if diff := cmp.Diff(evs, msgFeed(s, evs)); diff != "" {
		t.Errorf("a text-only stream did not pass as it came (-want +got):\n%s", diff)
	}
	if got := s.End([]int{0}, "text"); got != nil {
		t.Errorf("End of a stream with nothing held = %q", got)
	}
	if got := s.Output(); got.Finish != "end_turn" || got.Calls != nil || got.Text != "Let me look." {
		t.Errorf("Output = %+v", got)
	}
}

func TestMessagesStreamBrokenOff(t *testing.T) {
	s := Messages{}.NewStream(&Request{})
	if got := len(msgFeed(s, msgUpstream[:9])); got != 6 {
		t.Errorf("%d events passed, want 6", got)
	}
	// The upstream broke off in the middle of the first call's input.
	if diff := cmp.Diff(strings.Join(msgUpstream[6:9], ""), string(s.End(nil, ""))); diff != "" {
		t.Errorf("End of a broken stream (-want +got):\n%s", diff)
	}
	if got := asMsgOutput(s.Output()).Calls; len(got) != 1 || got[0].Args != `{"dir": ` {
		t.Errorf("calls of a broken stream = %+v", got)
	}
}

func TestMessagesStreamFail(t *testing.T) {
	s := Messages{}.NewStream(&Request{})
	msgFeed(s, msgUpstream)
	got := string(s.Fail("REPEATED_TOOL_CALL", "looping"))
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"REPEATED_TOOL_CALL: looping\"}}\n\n"
	if got != want {
		t.Errorf("Fail = %q, want %q", got, want)
	}
	if got := s.End(nil, ""); got != nil {
		t.Errorf("End after Fail = %q", got)
	}
}

func TestMessagesStreamOddEvents(t *testing.T) {
	// Events the filter does not understand pass (or are held) as they
	// came and never make it fail.
	evs := []string{
		": keep-alive\n\n",
		"data: not json\n\n",
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\"}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n",
		"event: future\ndata: {\"type\":\"future\",\"index\":0}\n\n",
	}
	s := Messages{}.NewStream(&Request{})
	if diff := cmp.Diff(evs, msgFeed(s, evs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := s.Output().Calls; got != nil {
		t.Errorf("calls = %+v", got)
	}
}
