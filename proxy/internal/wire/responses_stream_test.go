package wire_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// streamSummary is what checkStream reads of a Responses stream.
type streamSummary struct {
	Text     string   // the output_text deltas joined
	Calls    []string // the call_ids of the function_call items done
	Final    []string // the types of the completed response's output items
	Terminal string   // the last event's type
}

type evData struct {
	Type           string          `json:"type"`
	SequenceNumber *int            `json:"sequence_number"`
	OutputIndex    *int            `json:"output_index"`
	ItemID         string          `json:"item_id"`
	Delta          string          `json:"delta"`
	Item           json.RawMessage `json:"item"`
	Response       json.RawMessage `json:"response"`
}

// checkStream checks that events are a well-formed Responses stream:
// names match types, sequence numbers go 0, 1, 2, …, items are added at
// consecutive output indexes, every item event names an added item, and
// the terminal event's output is the items done, in order.
func checkStream(t *testing.T, events [][]byte) streamSummary {
	t.Helper()
	var s streamSummary
	type item struct{ ID, Type, CallID string }
	var added, done []item
	for i, e := range events {
		data, name := wire.Data(e)
		var d evData
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("event %d: %v: %q", i, err, e)
		}
		if name != d.Type {
			t.Errorf("event %d: name %q, type %q", i, name, d.Type)
		}
		if d.SequenceNumber == nil || *d.SequenceNumber != i {
			t.Errorf("event %d (%s): sequence_number %v", i, d.Type, d.SequenceNumber)
		}
		s.Terminal = d.Type
		var it item
		if d.Item != nil {
			json.Unmarshal(d.Item, &struct {
				ID     *string `json:"id"`
				Type   *string `json:"type"`
				CallID *string `json:"call_id"`
			}{&it.ID, &it.Type, &it.CallID})
		}
		if d.OutputIndex != nil {
			k := *d.OutputIndex
			switch {
			case d.Type == "response.output_item.added":
				if k != len(added) {
					t.Errorf("event %d: item added at %d after %d items", i, k, len(added))
				}
				added = append(added, it)
			case k >= len(added):
				t.Errorf("event %d (%s): output_index %d of no item", i, d.Type, k)
				continue
			}
			id := it.ID
			if d.Item == nil {
				id = d.ItemID
			}
			if id != added[k].ID {
				t.Errorf("event %d (%s): item %q at %d, which is %q", i, d.Type, id, k, added[k].ID)
			}
			switch d.Type {
			case "response.output_item.done":
				if k != len(done) {
					t.Errorf("event %d: item %d done after %d", i, k, len(done))
				}
				done = append(done, it)
				if it.Type == "function_call" {
					s.Calls = append(s.Calls, it.CallID)
				}
			case "response.output_text.delta":
				s.Text += d.Delta
			}
		}
		switch d.Type {
		case "response.completed", "response.incomplete", "response.failed":
			if i != len(events)-1 {
				t.Errorf("event %d: %s before the end", i, d.Type)
			}
			var r struct {
				Output []item `json:"output"`
			}
			if err := json.Unmarshal(d.Response, &r); err != nil {
				t.Fatal(err)
			}
			s.Final = []string{}
			for _, o := range r.Output {
				s.Final = append(s.Final, o.Type)
			}
			if len(r.Output) != len(done) {
				t.Errorf("%s: %d items in output, %d done", d.Type, len(r.Output), len(done))
			}
			for k := range min(len(r.Output), len(done)) {
				if r.Output[k].ID != done[k].ID {
					t.Errorf("output[%d] is %q, item done %q", k, r.Output[k].ID, done[k].ID)
				}
			}
		}
	}
	return s
}

// run passes events through a new stream and returns what it sent at
// once, event by event (nil when held), and its Stream.
func run(t *testing.T, events [][]byte) ([][]byte, wire.Stream) {
	t.Helper()
	st := rs.NewStream(&wire.Request{Model: "gpt-test", Stream: true})
	var sent [][]byte
	for _, e := range events {
		ev := append([]byte(nil), e...)
		got := st.Event(ev)
		if got != nil {
			got = append([]byte(nil), got...)
		}
		// The stream must not keep ev: the proxy reuses its buffer.
		for i := range ev {
			ev[i] = 'x'
		}
		sent = append(sent, got)
	}
	return sent, st
}

func TestResponsesStreamPasses(t *testing.T) {
	_, events := upstream(t, threeCalls, true)
	sent, st := run(t, events)
	// The text message's events (created … output_item.done) pass at
	// once; from the first function_call item on everything is held.
	first := -1
	for i, e := range events {
		if first < 0 && bytes.Contains(e, []byte(`"type":"response.output_item.added"`)) && bytes.Contains(e, []byte(`"function_call"`)) {
			first = i
		}
		switch {
		case first < 0 && !bytes.Equal(sent[i], e):
			t.Errorf("event %d not passed at once: %q", i, sent[i])
		case first >= 0 && sent[i] != nil:
			t.Errorf("event %d passed after the first call: %q", i, sent[i])
		}
	}
	if first != 8 {
		t.Errorf("first call event %d, want 8", first)
	}
	want := wire.Output{ID: "resp_fake0", Text: "Looking.", Calls: callsOf("call_a", "call_b", "call_c"), Finish: "completed",
		Usage: guard.Usage{InputTokens: 30, OutputTokens: 9, TotalTokens: 39}}
	if diff := cmp.Diff(want, st.Output(), outputOpts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// No refusal: the held events go out as they came.
	if got, want := st.End(nil, ""), bytes.Join(events[first:], nil); !bytes.Equal(got, want) {
		t.Errorf("End(nil) changed the events:\n%s", got)
	}
}

func TestResponsesStreamEnd(t *testing.T) {
	const fb = "Stop: you searched for this already."
	tests := []struct {
		name    string
		rep     fake.Reply
		refused []int
		want    streamSummary
	}{
		{"first", threeCalls, []int{0}, streamSummary{Text: "Looking." + fb, Calls: []string{"call_b", "call_c"},
			Final: []string{"message", "function_call", "function_call", "message"}, Terminal: "response.completed"}},
		{"middle", threeCalls, []int{1}, streamSummary{Text: "Looking." + fb, Calls: []string{"call_a", "call_c"},
			Final: []string{"message", "function_call", "function_call", "message"}, Terminal: "response.completed"}},
		{"all", threeCalls, []int{0, 1, 2}, streamSummary{Text: "Looking." + fb,
			Final: []string{"message", "message"}, Terminal: "response.completed"}},
		{"all, no text before", fake.Reply{Calls: threeCalls.Calls}, []int{2, 0, 1}, streamSummary{Text: fb,
			Final: []string{"message"}, Terminal: "response.completed"}},
		{"none", threeCalls, nil, streamSummary{Text: "Looking.", Calls: []string{"call_a", "call_b", "call_c"},
			Final: []string{"message", "function_call", "function_call", "function_call"}, Terminal: "response.completed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, events := upstream(t, tt.rep, true)
			sent, st := run(t, events)
			var out [][]byte
			for _, e := range sent {
				if e != nil {
					out = append(out, e)
				}
			}
			out = append(out, splitEvents(t, st.End(tt.refused, fb))...)
			got := checkStream(t, out)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesStreamTextAfterCall(t *testing.T) {
	// A message after a call is held with it, and moves down when the
	// call before it goes.
	final := rs.Final(&wire.Request{Model: "m"}, "after", true)
	fe := splitEvents(t, final)
	_, events := upstream(t, fake.Reply{Calls: threeCalls.Calls[:1]}, true)
	// events: created, in_progress, call (5 events), completed. Put the
	// final's message events (output_index 0) after the call as index 1.
	var evs [][]byte
	evs = append(evs, events[:7]...)
	for _, e := range fe[2:8] {
		e = bytes.ReplaceAll(e, []byte(`"output_index":0`), []byte(`"output_index":1`))
		evs = append(evs, e)
	}
	evs = append(evs, events[7])
	for i := range evs {
		data, name := wire.Data(evs[i])
		var m map[string]any
		json.Unmarshal(data, &m)
		m["sequence_number"] = i
		if m["type"] == "response.completed" {
			var msg any
			json.Unmarshal(bytes.TrimSuffix(bytes.SplitN(fe[7], []byte(`"item":`), 2)[1], []byte("}\n\n")), &msg)
			r := m["response"].(map[string]any)
			r["output"] = append(r["output"].([]any), msg)
		}
		b, _ := json.Marshal(m)
		evs[i] = wire.Event(name, b)
	}
	checkStream(t, evs)
	sent, st := run(t, evs)
	if sent[9] != nil || st.Output().Text != "after" {
		t.Errorf("text after a call not held: %q, %q", sent[8], st.Output().Text)
	}
	var out [][]byte
	for _, e := range sent {
		if e != nil {
			out = append(out, e)
		}
	}
	out = append(out, splitEvents(t, st.End([]int{0}, "fb"))...)
	got := checkStream(t, out)
	want := streamSummary{Text: "afterfb", Final: []string{"message", "message"}, Terminal: "response.completed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestResponsesStreamFail(t *testing.T) {
	_, events := upstream(t, threeCalls, true)
	sent, st := run(t, events)
	got := st.Fail("REPEATED_TOOL_CALL", "a loop")
	var out [][]byte
	for _, e := range sent {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) != 8 {
		t.Fatalf("%d events sent before the call, want 8", len(out))
	}
	data, name := wire.Data(got)
	var e struct {
		Type           string
		SequenceNumber int `json:"sequence_number"`
		Code, Message  string
		Error          struct{ Code, Message, Type string }
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	// The error comes after the last event the upstream numbered (the
	// held ones included: their numbers are not reused).
	want := struct {
		Type           string
		SequenceNumber int `json:"sequence_number"`
		Code, Message  string
		Error          struct{ Code, Message, Type string }
	}{"error", len(events), "REPEATED_TOOL_CALL", "a loop", struct{ Code, Message, Type string }{"REPEATED_TOOL_CALL", "a loop", "invalid_request_error"}}
	if name != "error" || !cmp.Equal(want, e) {
		t.Errorf("%q: %s", name, cmp.Diff(want, e))
	}
}

func TestResponsesStreamBroken(t *testing.T) {
	_, events := upstream(t, threeCalls, true)
	for _, cut := range []int{3, 9, 10, 14, len(events) - 1} {
		sent, st := run(t, events[:cut])
		var out []byte
		for _, e := range sent {
			out = append(out, e...)
		}
		out = append(out, st.End(nil, "")...)
		if want := bytes.Join(events[:cut], nil); !bytes.Equal(out, want) {
			t.Errorf("cut at %d: the events changed:\n%s", cut, out)
		}
		if st.Output().Finish != "" {
			t.Errorf("cut at %d: finish %q", cut, st.Output().Finish)
		}
	}
	// A last event cut in the middle of its data is held as it came.
	sent, st := run(t, [][]byte{events[8], events[9][:20]})
	if sent[0] != nil || sent[1] != nil || !bytes.Equal(st.End(nil, ""), append(append([]byte(nil), events[8]...), events[9][:20]...)) {
		t.Error("a broken event changed")
	}
}

func TestResponsesStreamOddEvents(t *testing.T) {
	// Comments, keep-alives, CRLF lines and unknown events pass (or are
	// held) as they came, and never panic.
	evs := [][]byte{
		[]byte(": keep-alive\n\n"),
		[]byte("event: response.created\r\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\r\n\r\n"),
		[]byte("event: response.future_thing\ndata: {\"type\":\"response.future_thing\",\"sequence_number\":1,\"x\":[1,2]}\n\n"),
		[]byte("data: not json\n\n"),
		[]byte("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"\"}}\n\n"),
		[]byte(": ping\n\n"),
		[]byte("event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":3,\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{\\\"a\\\":1}\"}\n\n"),
		[]byte("data: {\"type\":\"response.output_item.added\",\"output_index\":\"x\",\"item\":5}\n\n"),
	}
	sent, st := run(t, evs)
	for i := range 4 {
		if !bytes.Equal(sent[i], evs[i]) {
			t.Errorf("event %d not passed: %q", i, sent[i])
		}
	}
	for i := 4; i < len(evs); i++ {
		if sent[i] != nil {
			t.Errorf("event %d not held", i)
		}
	}
	want := wire.Output{ID: "resp_1", Calls: []guard.ToolCall{{ID: "c1", Name: "f", Args: wire.Raw([]byte(`{"a":1}`))}}}
	if diff := cmp.Diff(want, st.Output(), outputOpts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	end := string(st.End([]int{0}, "fb"))
	if !strings.HasPrefix(end, ": ping\n\n") || strings.Contains(end, "fc_1") || !strings.Contains(end, `"sequence_number":2`) ||
		!strings.Contains(end, "\"output_index\":\"x\"") {
		t.Errorf("End:\n%s", end)
	}
}
