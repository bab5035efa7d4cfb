package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/loopguard/loopguard/proxy/internal/wire"
)

var rs wire.Responses

// reqView is a Request with its items as strings, for cmp.Diff.
type reqView struct {
	Model, Head, Session, User string
	Stream, Stateful           bool
	Items                      []string
}

func view(r wire.Request) reqView {
	v := reqView{Model: r.Model, Head: string(r.Head), Session: r.Session, User: r.User, Stream: r.Stream, Stateful: r.Stateful}
	for _, it := range r.Items {
		v.Items = append(v.Items, string(it))
	}
	return v
}

func TestResponsesParseRequest(t *testing.T) {
	msg := `{"role":"user","content":"find go"}`
	asst := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}`
	call := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"search","arguments":"{\"q\":\"go\"}"}`
	out := `{"type":"function_call_output","call_id":"call_1","output":"[\"go.dev\"]"}`
	reason := `{"type":"reasoning","id":"rs_1","summary":[]}`
	parts := `{ "role" : "user", "content" : [ {"type":"input_text","text":"a ] } \" ["} ] }`
	tests := []struct {
		name string
		body string
		want reqView
	}{
		{"history", `{"model":"gpt-5","stream":true,"instructions":"Be brief.","input":[` + msg + `,` + asst + `,` + call + `,` + out + `,` + reason + `],"user":"u1"}`,
			reqView{Model: "gpt-5", Stream: true, Head: `"Be brief."`, User: "u1", Items: []string{msg, asst, call, out, reason}}},
		{"white space and parts", "{\n \"input\" : [ " + parts + " ,\n" + msg + " ] ,\"model\":\"m\"}",
			reqView{Model: "m", Items: []string{parts, msg}}},
		{"string input", `{"model":"m","input":"hello \"you\""}`, reqView{Model: "m", Items: []string{`"hello \"you\""`}}},
		{"empty input", `{"model":"m","input":[]}`, reqView{Model: "m"}},
		{"previous response", `{"model":"m","previous_response_id":"resp_1","input":[` + out + `]}`,
			reqView{Model: "m", Session: "resp_1", Stateful: true, Items: []string{out}}},
		{"previous response without input", `{"model":"m","previous_response_id":"resp_1"}`,
			reqView{Model: "m", Session: "resp_1", Stateful: true}},
		{"conversation string", `{"conversation":"conv_1","input":"x"}`,
			reqView{Session: "conv_1", Stateful: true, Items: []string{`"x"`}}},
		{"conversation object", `{"conversation":{"id":"conv_2"},"input":"x","metadata":{"session_id":"s"}}`,
			reqView{Session: "conv_2", Stateful: true, Items: []string{`"x"`}}},
		{"metadata session before previous response", `{"previous_response_id":"resp_1","metadata":{"conversation_id":"c","session_id":"s"},"input":"x"}`,
			reqView{Session: "s", Stateful: true, Items: []string{`"x"`}}},
		{"metadata conversation", `{"metadata":{"conversation_id":"c","other":1},"input":"x"}`,
			reqView{Session: "c", Items: []string{`"x"`}}},
		{"safety identifier before user", `{"user":"u","safety_identifier":"sid","input":"x"}`,
			reqView{User: "sid", Items: []string{`"x"`}}},
		{"null fields", `{"model":null,"instructions":null,"previous_response_id":null,"conversation":null,"metadata":null,"user":null,"input":"x"}`,
			reqView{Items: []string{`"x"`}}},
		{"instructions array", `{"instructions":[{"role":"developer","content":"hi"}],"input":"x"}`,
			reqView{Head: `[{"role":"developer","content":"hi"}]`, Items: []string{`"x"`}}},
		{"unknown fields", `{"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"reasoning":{"effort":"low"},"x":[1,{"a":"}"}],"stream":false,"input":"x","store":true,"temperature":0.5}`,
			reqView{Items: []string{`"x"`}}},
		{"stream not a bool", `{"stream":"true","input":"x"}`, reqView{Items: []string{`"x"`}}},
		{"escaped strings", `{"model":"gpt\u002d5","user":"a\"b","input":"x"}`, reqView{Model: "gpt-5", User: `a"b`, Items: []string{`"x"`}}},
		{"stored prompt", `{"prompt":{"id":"pmpt_1"}}`, reqView{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rs.ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, view(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesParseRequestErrors(t *testing.T) {
	for _, body := range []string{
		``, `null`, `[]`, `"input"`, `{`, `{"input":[]`, `{"input":[]}x`,
		`{"model":"m"}`, `{"input":null}`, `{"input":1}`, `{"input":{"role":"user"}}`, `{"input":true}`,
		`{"input":[{"role":"user"},]}`, `{"input":[{"role":"user"}`, `{"input":["a" "b"]}`, `{"input":"x`,
		`{"previous_response_id":"resp_1","input":{}}`,
	} {
		if r, err := rs.ParseRequest([]byte(body)); err == nil {
			t.Errorf("%s: no error, got %+v", body, view(r))
		}
	}
}

func TestResponsesAssistant(t *testing.T) {
	tests := []struct {
		item string
		want bool
	}{
		{`{"type":"message","role":"assistant","content":[]}`, true},
		{`{"role":"assistant","content":"hi"}`, true},
		{`{"content":"hi","role":"assistant","type":"message"}`, true},
		{`{"type":"message","role":"user","content":"hi"}`, false},
		{`{"role":"user","content":"hi"}`, false},
		{`{"role":"developer","content":"hi"}`, false},
		{`{"role":"system","content":"hi"}`, false},
		{`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`, true},
		{`{"call_id":"c","type":"function_call_output","output":"x","role":"assistant"}`, false},
		{`{"type":"reasoning","summary":[]}`, true},
		{`{"type":"custom_tool_call","call_id":"c","name":"f","input":"x"}`, true},
		{`{"type":"custom_tool_call_output","call_id":"c","output":"x"}`, false},
		{`{"type":"item_reference","id":"msg_1"}`, false},
		{`"a string input"`, false},
		{`{"content":"assistant"}`, false},
		{`{`, false},
		{`[]`, false},
	}
	for _, tt := range tests {
		if got := rs.Assistant([]byte(tt.item)); got != tt.want {
			t.Errorf("Assistant(%s) = %v, want %v", tt.item, got, tt.want)
		}
	}
}

// upstream returns the fake's JSON response and stream events for rep.
func upstream(t *testing.T, rep fake.Reply, stream bool) ([]byte, [][]byte) {
	t.Helper()
	s := fake.New(func(string, int, []byte) fake.Reply { return rep })
	defer s.Close()
	body := fmt.Sprintf(`{"model":"gpt-test","input":"hi","stream":%v}`, stream)
	res, err := s.Client().Post(s.URL+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if !stream {
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b, nil
	}
	var events [][]byte
	ev := wire.NewEvents(res.Body, 1<<20)
	for {
		e, err := ev.Next()
		if len(e) > 0 {
			events = append(events, append([]byte(nil), e...))
		}
		if err != nil {
			break
		}
	}
	return nil, events
}

var threeCalls = fake.Reply{
	Text: "Looking.",
	Calls: []fake.Call{
		{ID: "call_a", Name: "search", Args: `{"q":"a"}`},
		{ID: "call_b", Name: "search", Args: `{"q":"b"}`},
		{ID: "call_c", Name: "fetch", Args: `{"u":"c"}`},
	},
	InputTokens: 30, OutputTokens: 9,
}

func callsOf(ids ...string) []guard.ToolCall {
	all := map[string]guard.ToolCall{
		"call_a": {ID: "call_a", Name: "search", Args: wire.Raw([]byte(`{"q":"a"}`))},
		"call_b": {ID: "call_b", Name: "search", Args: wire.Raw([]byte(`{"q":"b"}`))},
		"call_c": {ID: "call_c", Name: "fetch", Args: wire.Raw([]byte(`{"u":"c"}`))},
	}
	var out []guard.ToolCall
	for _, id := range ids {
		out = append(out, all[id])
	}
	return out
}

var outputOpts = cmp.Comparer(func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })

func TestResponsesParseResponse(t *testing.T) {
	whole, _ := upstream(t, threeCalls, false)
	text, _ := upstream(t, fake.Reply{Text: "All done.", InputTokens: 3, OutputTokens: 2}, false)
	tests := []struct {
		name string
		body string
		want wire.Output
	}{
		{"calls", string(whole), wire.Output{ID: "resp_fake0", Text: "Looking.", Calls: callsOf("call_a", "call_b", "call_c"),
			Finish: "completed", Usage: guard.Usage{InputTokens: 30, OutputTokens: 9, TotalTokens: 39}}},
		{"text", string(text), wire.Output{ID: "resp_fake0", Text: "All done.", Finish: "completed",
			Usage: guard.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}}},
		{"incomplete, parts joined, other items", `{"id":"resp_2","status":"incomplete","output":[` +
			`{"type":"reasoning","id":"rs","summary":[]},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"refusal","refusal":"no"},{"type":"output_text","text":"b"}]},` +
			`{"type":"web_search_call","id":"ws","status":"completed"},` +
			`{"type":"function_call","call_id":"c1","name":"f","arguments":""}],"usage":null}`,
			wire.Output{ID: "resp_2", Text: "ab", Finish: "incomplete", Calls: []guard.ToolCall{{ID: "c1", Name: "f"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rs.ParseResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, outputOpts); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, body := range []string{``, `[]`, `{"id":"x"}`, `{"output":{}}`, `{"output":[1]}`, `{"output":[`} {
		if _, err := rs.ParseResponse([]byte(body)); err == nil {
			t.Errorf("ParseResponse(%s): no error", body)
		}
	}
}

// withoutOutput decodes a response and drops its output.
func withoutOutput(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	delete(m, "output")
	return m
}

func TestResponsesRewrite(t *testing.T) {
	whole, _ := upstream(t, threeCalls, false)
	const fb = "Stop: you searched for this already."
	tests := []struct {
		name    string
		refused []int
		calls   []string
	}{
		{"first", []int{0}, []string{"call_b", "call_c"}},
		{"middle", []int{1}, []string{"call_a", "call_c"}},
		{"last two", []int{1, 2}, []string{"call_a"}},
		{"all", []int{0, 1, 2}, nil},
		{"out of range ignored", []int{2, 7}, []string{"call_a", "call_b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rs.Rewrite(whole, tt.refused, fb)
			if err != nil {
				t.Fatal(err)
			}
			out, err := rs.ParseResponse(got)
			if err != nil {
				t.Fatal(err)
			}
			want := wire.Output{ID: "resp_fake0", Text: "Looking." + fb, Calls: callsOf(tt.calls...), Finish: "completed",
				Usage: guard.Usage{InputTokens: 30, OutputTokens: 9, TotalTokens: 39}}
			if diff := cmp.Diff(want, out, outputOpts); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Everything before and after "output" is kept byte for byte.
			i := bytes.Index(whole, []byte(`"output":`))
			j := bytes.Index(whole, []byte(`,"parallel_tool_calls"`))
			if !bytes.HasPrefix(got, whole[:i]) || !bytes.HasSuffix(got, whole[j:]) {
				t.Errorf("members other than output changed:\n%s\n%s", whole, got)
			}
			if diff := cmp.Diff(withoutOutput(t, whole), withoutOutput(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			var r struct {
				Output []struct{ Type, ID, Status, Role string }
			}
			json.Unmarshal(got, &r)
			last := r.Output[len(r.Output)-1]
			if last.Type != "message" || last.Role != "assistant" || last.Status != "completed" || !strings.HasPrefix(last.ID, "msg_lg") {
				t.Errorf("feedback item %+v", last)
			}
		})
	}
	t.Run("no refusal", func(t *testing.T) {
		got, err := rs.Rewrite(whole, nil, fb)
		if err != nil || !bytes.Equal(got, whole) {
			t.Errorf("changed (%v):\n%s", err, got)
		}
	})
	t.Run("no text", func(t *testing.T) {
		got, _ := rs.Rewrite(whole, []int{0, 1, 2}, "")
		out, _ := rs.ParseResponse(got)
		if out.Text != "Looking." || out.Calls != nil {
			t.Errorf("%+v", out)
		}
	})
	for _, body := range []string{``, `[]`, `{"id":"x"}`, `{"output":{}}`, `{"output":[1,]}`, `{"output":[]`} {
		if _, err := rs.Rewrite([]byte(body), []int{0}, fb); err == nil {
			t.Errorf("Rewrite(%s): no error", body)
		}
	}
}

func TestResponsesFinal(t *testing.T) {
	req := &wire.Request{Model: "gpt-5", Head: []byte(`"Be brief."`)}
	b := rs.Final(req, "Stopped: a loop.", false)
	out, err := rs.ParseResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "Stopped: a loop." || out.Calls != nil || out.Finish != "completed" || !strings.HasPrefix(out.ID, "resp_lg") {
		t.Errorf("%+v", out)
	}
	var r struct {
		Model, Instructions, Object string
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Model != "gpt-5" || r.Instructions != "Be brief." || r.Object != "response" {
		t.Errorf("%v %+v", err, r)
	}
	if b2 := rs.Final(req, "x", false); bytes.Equal(b[:40], b2[:40]) {
		t.Errorf("the same id twice: %s", b2[:40])
	}

	st := rs.NewStream(req)
	types := []string{}
	for _, e := range splitEvents(t, rs.Final(req, "Stopped: a loop.", true)) {
		if got := st.Event(e); !bytes.Equal(got, e) {
			t.Errorf("a text-only event held: %s", e)
		}
		types = append(types, eventType(t, e))
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	o := st.Output()
	if o.Text != "Stopped: a loop." || o.Finish != "completed" || o.Calls != nil || !strings.HasPrefix(o.ID, "resp_lg") {
		t.Errorf("%+v", o)
	}
}

func TestResponsesError(t *testing.T) {
	got := rs.Error(422, "REPEATED_TOOL_CALL", `search "a" 3 times`)
	want := `{"error":{"message":"search \"a\" 3 times","type":"invalid_request_error","param":null,"code":"REPEATED_TOOL_CALL"}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = rs.ErrorEvent("REPEATED_TOOL_CALL", "loop")
	want = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":0,\"code\":\"REPEATED_TOOL_CALL\",\"message\":\"loop\",\"param\":null," +
		"\"error\":{\"message\":\"loop\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"REPEATED_TOOL_CALL\"}}\n\n"
	if string(got) != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func splitEvents(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	ev := wire.NewEvents(bytes.NewReader(b), 1<<20)
	for {
		e, err := ev.Next()
		if len(e) > 0 {
			out = append(out, append([]byte(nil), e...))
		}
		if err != nil {
			return out
		}
	}
}

func eventType(t *testing.T, e []byte) string {
	t.Helper()
	data, name := wire.Data(e)
	var v struct{ Type string }
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %q", err, e)
	}
	if name != v.Type {
		t.Errorf("event name %q, type %q", name, v.Type)
	}
	return v.Type
}
