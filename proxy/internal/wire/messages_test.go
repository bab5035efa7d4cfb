package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
)

// msgRequest is a Request with its raw values as strings, for cmp.Diff.
type msgRequest struct {
	Model, Head, Session, User string
	Stream, Stateful           bool
	Items                      []string
}

func asMsgRequest(r Request) msgRequest {
	out := msgRequest{Model: r.Model, Head: string(r.Head), Session: r.Session, User: r.User, Stream: r.Stream, Stateful: r.Stateful}
	for _, it := range r.Items {
		out.Items = append(out.Items, string(it))
	}
	return out
}

func TestMessagesParseRequest(t *testing.T) {
	user := `{"role":"user","content":"hi"}`
	asst := `{"role":"assistant","content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"/"}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a b ] } \" c","is_error":false}]}`
	tests := []struct {
		name string
		body string
		want msgRequest
	}{{
		name: "everything",
		body: `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"system":"be brief","metadata":{"user_id":"u-1"},"messages":[` + user + `,` + asst + `,` + result + `]}`,
		want: msgRequest{Model: "claude-sonnet-4-5", Stream: true, Head: `"be brief"`, User: "u-1", Items: []string{user, asst, result}},
	}, {
		name: "system blocks, white space kept inside items and cut around them",
		body: "{ \"system\" : [{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{\"type\":\"ephemeral\"}}] ,\n \"messages\" : [\n  " + user + " ,\n\t{ \"role\" : \"assistant\" , \"content\" : \"ok\" }\n ] }",
		want: msgRequest{Head: `[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]`, Items: []string{user, `{ "role" : "assistant" , "content" : "ok" }`}},
	}, {
		name: "empty history",
		body: `{"model":"m","messages":[]}`,
		want: msgRequest{Model: "m", Items: nil},
	}, {
		name: "null system is no head, false stream",
		body: `{"system":null,"stream":false,"messages":[` + user + `]}`,
		want: msgRequest{Items: []string{user}},
	}, {
		name: "unknown fields and fields of other types are ignored",
		body: `{"model":7,"stream":"yes","metadata":{"user_id":42,"x":[1]},"tools":[{"name":"ls","input_schema":{}}],"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user + `],"zzz":null}`,
		want: msgRequest{Items: []string{user}},
	}, {
		name: "metadata session_id and conversation_id",
		body: `{"metadata":{"user_id":"u","session_id":"s-1","conversation_id":"c-1"},"messages":[` + user + `]}`,
		want: msgRequest{User: "u", Session: "s-1", Items: []string{user}},
	}, {
		name: "metadata conversation_id",
		body: `{"metadata":{"conversation_id":"c-1","user_id":null},"messages":[` + user + `]}`,
		want: msgRequest{Session: "c-1", Items: []string{user}},
	}, {
		name: "escaped strings and keys",
		body: `{"mod\u0065l":"claude-\u00e9","metadata":{"user_id":"a\"b"},"messages":[` + user + `]}`,
		want: msgRequest{Model: "claude-é", User: `a"b`, Items: []string{user}},
	}, {
		name: "a repeated key: the last one counts, as in encoding/json",
		body: `{"model":"a","messages":[` + user + `],"model":"b","messages":[` + asst + `]}`,
		want: msgRequest{Model: "b", Items: []string{asst}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.body)) {
				t.Fatalf("test body is not JSON: %s", tt.body)
			}
			got, err := Messages{}.ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, asMsgRequest(got)); diff != "" {
				t.Errorf("ParseRequest (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessagesParseRequestErrors(t *testing.T) {
	for _, body := range []string{
		``,
		`null`,
		`[]`,
		`"messages"`,
		`{}`,
		`{"model":"m"}`,
		`{"messages":null}`,
		`{"messages":{}}`,
		`{"messages":"hi"}`,
		`{"messages":[{"role":"user"}`,
		`{"messages":[{"role":"user"}]`,
		`{"messages":[{"role":"user"}]}}`,
		`{"messages":[{"role":"user}]}`,
		`{"messages":[{"role":"user"},]}`,
		`{"messages" [1]}`,
	} {
		t.Run(body, func(t *testing.T) {
			got, err := Messages{}.ParseRequest([]byte(body))
			if err == nil {
				t.Fatalf("ParseRequest(%s) = %+v, want an error", body, asMsgRequest(got))
			}
			if diff := cmp.Diff(msgRequest{}, asMsgRequest(got)); diff != "" {
				t.Errorf("a failed ParseRequest returned a value (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessagesAssistant(t *testing.T) {
	tests := []struct {
		item string
		want bool
	}{
		{`{"role":"assistant","content":"x"}`, true},
		{`{"content":[{"type":"text","text":"role"}],"role":"assistant"}`, true},
		{`{ "role" : "assistant" }`, true},
		{`{"role":"\u0061ssistant"}`, true},
		{`{"role":"user","content":"assistant"}`, false},
		{`{"role":"Assistant"}`, false},
		{`{"content":"x"}`, false},
		{`{"role":null}`, false},
		{`"assistant"`, false},
		// It reads no further than the role.
		{`{"role":"assistant","content":[`, true},
		{`{"role":`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := (Messages{}).Assistant([]byte(tt.item)); got != tt.want {
			t.Errorf("Assistant(%s) = %v, want %v", tt.item, got, tt.want)
		}
	}
}

// msgOutput is an Output with Args as strings, for cmp.Diff.
type msgOutput struct {
	ID, Text, Finish string
	Calls            []msgCall
	Usage            guard.Usage
}

type msgCall struct{ ID, Name, Args string }

func asMsgOutput(o Output) msgOutput {
	out := msgOutput{ID: o.ID, Text: o.Text, Finish: o.Finish, Usage: o.Usage}
	for _, c := range o.Calls {
		a, _ := c.Args.(json.RawMessage)
		out.Calls = append(out.Calls, msgCall{c.ID, c.Name, string(a)})
	}
	return out
}

const messagesToolResponse = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
	`"content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Looking."},` +
	`{"type":"tool_use","id":"toolu_a","name":"ls","input":{"dir":"/"}},` +
	`{"type":"tool_use","id":"toolu_b","name":"cat","input":{"f":"x"}},` +
	`{"type":"tool_use","id":"toolu_c","name":"rm","input":{}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,` +
	`"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":7,"service_tier":"standard"}}`

func TestMessagesParseResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want msgOutput
	}{{
		name: "text, thinking and three calls",
		body: messagesToolResponse,
		want: msgOutput{ID: "msg_01", Text: "Looking.", Finish: "tool_use",
			Calls: []msgCall{{"toolu_a", "ls", `{"dir":"/"}`}, {"toolu_b", "cat", `{"f":"x"}`}, {"toolu_c", "rm", `{}`}},
			Usage: guard.Usage{InputTokens: 15, OutputTokens: 7}},
	}, {
		name: "text only, two text blocks joined by a newline",
		body: `{"id":"msg_2","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`,
		want: msgOutput{ID: "msg_2", Text: "a\nb", Finish: "end_turn", Usage: guard.Usage{InputTokens: 1, OutputTokens: 2}},
	}, {
		name: "server tools are not calls; a tool_use without input has {}",
		body: `{"id":"msg_3","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"tool_use","id":"toolu_1","name":"f"}],"stop_reason":"tool_use","stop_sequence":null,"usage":{}}`,
		want: msgOutput{ID: "msg_3", Finish: "tool_use", Calls: []msgCall{{"toolu_1", "f", `{}`}}},
	}, {
		name: "null stop_reason, unknown fields",
		body: `{"id":"msg_4","content":[],"stop_reason":null,"container":{"id":"c"},"usage":{"input_tokens":-1,"output_tokens":3}}`,
		want: msgOutput{ID: "msg_4", Usage: guard.Usage{OutputTokens: 3}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Messages{}.ParseResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, asMsgOutput(got)); diff != "" {
				t.Errorf("ParseResponse (-want +got):\n%s", diff)
			}
		})
	}
	for _, body := range []string{``, `[]`, `{"content":`, `{"content":{}}`, `{"content":[{"type":1}]}`} {
		if _, err := (Messages{}).ParseResponse([]byte(body)); err == nil {
			t.Errorf("ParseResponse(%s): no error", body)
		}
	}
}

func TestMessagesRewrite(t *testing.T) {
	const (
		head  = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Looking."},`
		a     = `{"type":"tool_use","id":"toolu_a","name":"ls","input":{"dir":"/"}}`
		b     = `{"type":"tool_use","id":"toolu_b","name":"cat","input":{"f":"x"}}`
		c     = `{"type":"tool_use","id":"toolu_c","name":"rm","input":{}}`
		fb    = `{"type":"text","text":"Stop: <loop> \"x\"."}`
		usage = `"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":7,"service_tier":"standard"}}`
		toolU = `],"stop_reason":"tool_use","stop_sequence":null,` + usage
		endT  = `],"stop_reason":"end_turn","stop_sequence":null,` + usage
	)
	text := `Stop: <loop> "x".`
	tests := []struct {
		name    string
		body    string
		refused []int
		text    string
		want    string
	}{
		{"first", messagesToolResponse, []int{0}, text, head + fb + `,` + b + `,` + c + toolU},
		{"middle", messagesToolResponse, []int{1}, text, head + fb + `,` + a + `,` + c + toolU},
		{"last two", messagesToolResponse, []int{1, 2}, text, head + fb + `,` + a + toolU},
		{"all", messagesToolResponse, []int{0, 1, 2}, text, head + fb + endT},
		{"all, no text", messagesToolResponse, []int{0, 1, 2}, "", head[:len(head)-1] + endT},
		{"none, text", messagesToolResponse, nil, text, head + fb + `,` + a + `,` + b + `,` + c + toolU},
		{"none, no text: the body as it was", messagesToolResponse, nil, "", messagesToolResponse},
		{
			"no stop_reason: one is added",
			`{"content":[{"type":"tool_use","id":"t","name":"f","input":{}}], "id":"m"}`, []int{0}, "no",
			`{"content":[{"type":"text","text":"no"}],"stop_reason":"end_turn", "id":"m"}`,
		},
		{
			"stop_reason before content, white space kept outside content",
			"{\"stop_reason\" : \"tool_use\",\n \"content\" : [ {\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}} ] }", []int{0}, "no",
			"{\"stop_reason\" : \"end_turn\",\n \"content\" : [{\"type\":\"text\",\"text\":\"no\"}] }",
		},
		{
			"no calls: the text goes at the end",
			`{"content":[{"type":"text","text":"a"}],"stop_reason":"max_tokens"}`, nil, "b",
			`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"max_tokens"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Messages{}.Rewrite([]byte(tt.body), tt.refused, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Rewrite (-want +got):\n%s", diff)
			}
			if !json.Valid(got) {
				t.Errorf("Rewrite gave invalid JSON: %s", got)
			}
		})
	}
	for _, refused := range [][]int{{3}, {-1}, {1, 0}, {1, 1}} {
		if got, err := (Messages{}).Rewrite([]byte(messagesToolResponse), refused, text); err == nil {
			t.Errorf("Rewrite(refused %v) = %s, want an error", refused, got)
		}
	}
	for _, body := range []string{`[]`, `{"id":"x"}`, `{"content":{}}`, `{"content":[}`} {
		if got, err := (Messages{}).Rewrite([]byte(body), nil, text); err == nil {
			t.Errorf("Rewrite(%s) = %s, want an error", body, got)
		}
	}
}

// msgEvents splits a stream into its events.
func msgEvents(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	ev := NewEvents(bytes.NewReader(stream), 1<<20)
	var out [][]byte
	for {
		e, err := ev.Next()
		if len(e) > 0 {
			out = append(out, append([]byte(nil), e...))
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// msgLines shows a stream as its events' names and data.
func msgLines(t *testing.T, stream []byte) []string {
	t.Helper()
	var out []string
	for _, e := range msgEvents(t, stream) {
		data, name := Data(e)
		out = append(out, name+" "+string(data))
	}
	return out
}

func TestMessagesFinal(t *testing.T) {
	req := &Request{Model: "claude-haiku-4-5"}
	var m map[string]any
	got := Messages{}.Final(req, "Stopped: <same call>.", false)
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatalf("Final JSON: %v: %s", err, got)
	}
	id, _ := m["id"].(string)
	if !strings.HasPrefix(id, "msg_lg") || len(id) < len("msg_lg")+16 {
		t.Errorf("id = %q, want msg_lg and a random part", id)
	}
	want := `{"id":"` + id + `","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Stopped: \u003csame call\u003e."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Final JSON (-want +got):\n%s", diff)
	}
	if again := (Messages{}).Final(req, "x", false); bytes.Contains(again, []byte(id)) {
		t.Errorf("two Finals have the same id %s", id)
	}
	if got := (Messages{}).Final(nil, "", false); !bytes.Contains(got, []byte(`"model":"","content":[],"stop_reason":"end_turn"`)) {
		t.Errorf("Final(nil, \"\") = %s", got)
	}

	stream := Messages{}.Final(req, "Stopped.", true)
	ls := msgLines(t, stream)
	if len(ls) == 0 {
		t.Fatal("no events")
	}
	var start struct {
		Message struct{ ID string } `json:"message"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(ls[0], "message_start ")), &start)
	if !strings.HasPrefix(start.Message.ID, "msg_lg") {
		t.Errorf("stream id = %q", start.Message.ID)
	}
	wantLines := []string{
		`message_start {"type":"message_start","message":{"id":"` + start.Message.ID + `","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`,
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Stopped."}}`,
		`content_block_stop {"type":"content_block_stop","index":0}`,
		`message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}`,
		`message_stop {"type":"message_stop"}`,
	}
	if diff := cmp.Diff(wantLines, ls); diff != "" {
		t.Errorf("Final stream (-want +got):\n%s", diff)
	}
}

func TestMessagesError(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{422, `{"type":"error","error":{"type":"invalid_request_error","message":"REPEATED_TOOL_CALL: the agent called ls(\"/\") 3 times \u0026 <more>"}}`},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"REPEATED_TOOL_CALL: the agent called ls(\"/\") 3 times \u0026 <more>"}}`},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"REPEATED_TOOL_CALL: the agent called ls(\"/\") 3 times \u0026 <more>"}}`},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"REPEATED_TOOL_CALL: the agent called ls(\"/\") 3 times \u0026 <more>"}}`},
		{500, `{"type":"error","error":{"type":"api_error","message":"REPEATED_TOOL_CALL: the agent called ls(\"/\") 3 times \u0026 <more>"}}`},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"REPEATED_TOOL_CALL: the agent called ls(\"/\") 3 times \u0026 <more>"}}`},
	}
	for _, tt := range tests {
		got := Messages{}.Error(tt.status, "REPEATED_TOOL_CALL", `the agent called ls("/") 3 times & <more>`)
		// The expected text spells & as \u0026 for the test's sake only.
		want := strings.ReplaceAll(tt.want, `\u0026`, `&`)
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("Error(%d) (-want +got):\n%s", tt.status, diff)
		}
		if !json.Valid(got) {
			t.Errorf("Error(%d) is not JSON: %s", tt.status, got)
		}
	}
	if got, want := string(Messages{}.Error(422, "", "plain")), `{"type":"error","error":{"type":"invalid_request_error","message":"plain"}}`; got != want {
		t.Errorf("Error without code = %s, want %s", got, want)
	}
	got := string(Messages{}.ErrorEvent("BUDGET", "line1\nline2"))
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"BUDGET: line1\\nline2\"}}\n\n"
	if got != want {
		t.Errorf("ErrorEvent = %q, want %q", got, want)
	}
}
