package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// parsed is what a test compares of a Request: the items as strings.
type parsed struct {
	Model, Session, User string
	Stream, IncludeUsage bool
	Items                []string
	Head                 string
}

func parse(t *testing.T, body string) (parsed, error) {
	t.Helper()
	req, err := wire.Chat{}.ParseRequest([]byte(body))
	if err != nil {
		return parsed{}, err
	}
	p := parsed{Model: req.Model, Session: req.Session, User: req.User, Stream: req.Stream, IncludeUsage: req.IncludeUsage, Head: string(req.Head)}
	for _, it := range req.Items {
		p.Items = append(p.Items, string(it))
	}
	if req.Stateful {
		t.Errorf("Stateful = true for a chat request")
	}
	return p, nil
}

func TestChatParseRequest(t *testing.T) {
	const sys = `{"role":"system","content":"be brief"}`
	const user = `{"role":"user","content":"a \"quoted\" [bracket} \\"}`
	const asst = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"q\":\"]\"}"}}]}`
	const tool = `{"role":"tool","tool_call_id":"call_1","content":"{}"}`
	tests := []struct {
		name string
		body string
		want parsed
	}{
		{"all fields",
			`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"user":"u1","metadata":{"session_id":"s1"},"messages":[` + sys + `,` + user + `,` + asst + `,` + tool + `]}`,
			parsed{Model: "gpt-4o", Stream: true, IncludeUsage: true, User: "u1", Session: "s1", Items: []string{sys, user, asst, tool}}},
		{"messages first, white space around items",
			"{\n  \"messages\" : [ \n" + sys + " ,\n\t" + user + "\r\n] ,\"model\" : \"m\"\n}\n",
			parsed{Model: "m", Items: []string{sys, user}}},
		{"empty history",
			`{"model":"m","messages":[]}`,
			parsed{Model: "m"}},
		{"conversation_id when no session_id",
			`{"messages":[],"metadata":{"conversation_id":"c1","other":"x"}}`,
			parsed{Session: "c1"}},
		{"session_id wins over conversation_id",
			`{"messages":[],"metadata":{"conversation_id":"c1","session_id":"s1"}}`,
			parsed{Session: "s1"}},
		{"a session_id that is not a string is not a name",
			`{"messages":[],"metadata":{"session_id":7,"conversation_id":"c1"}}`,
			parsed{Session: "c1"}},
		{"metadata not an object",
			`{"messages":[],"metadata":"x"}`,
			parsed{}},
		{"safety_identifier when no user",
			`{"messages":[],"safety_identifier":"h1"}`,
			parsed{User: "h1"}},
		{"user wins over safety_identifier",
			`{"safety_identifier":"h1","messages":[],"user":"u1"}`,
			parsed{User: "u1"}},
		{"stream false, include_usage false",
			`{"messages":[],"stream":false,"stream_options":{"include_usage":false}}`,
			parsed{}},
		{"small fields of the wrong type are left zero",
			`{"messages":[],"model":5,"stream":"yes","user":{},"stream_options":[]}`,
			parsed{}},
		{"unknown fields ignored",
			`{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":["]","}"]}}}],"n":2,"x":null,"messages":[` + user + `],"temperature":0.5,"logit_bias":{"1":-1},"model":"m"}`,
			parsed{Model: "m", Items: []string{user}}},
		{"the last of duplicate fields, as encoding/json",
			`{"model":"a","messages":[` + sys + `],"model":"b","messages":[` + user + `]}`,
			parsed{Model: "b", Items: []string{user}}},
		{"items of any kind are cut, not judged",
			`{"messages":[1,"two",null,[3]]}`,
			parsed{Items: []string{"1", `"two"`, "null", "[3]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRequest (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChatParseRequestErrors: bodies that are not a chat request. (A
// malformed item inside a well-formed array is cut as it is: the scanner
// follows brackets and strings only, and the upstream rejects the body.)
func TestChatParseRequestErrors(t *testing.T) {
	for _, body := range []string{
		``,
		`null`,
		`[]`,
		`"messages"`,
		`{}`,
		`{"model":"m"}`,
		`{"messages":null}`,
		`{"messages":"hi"}`,
		`{"messages":{"role":"user"}}`,
		`{"messages":[{"role":"user"}`,
		`{"messages":[{"role":"user"}]`,
		`{"messages":[{"role":"user"},]}`,
		`{"messages":[]} trailing`,
		`{"messages":["unterminated]}`,
		`{"model" "m","messages":[]}`,
	} {
		if req, err := (wire.Chat{}).ParseRequest([]byte(body)); err == nil {
			t.Errorf("ParseRequest(%q) = %+v, want an error", body, req)
		} else if !strings.Contains(err.Error(), `"messages"`) {
			t.Errorf("ParseRequest(%q) error %q does not name \"messages\"", body, err)
		}
	}
}

func TestChatAssistant(t *testing.T) {
	tests := []struct {
		item string
		want bool
	}{
		{`{"role":"assistant","content":"x"}`, true},
		{`{"content":"x","tool_calls":[],"role":"assistant"}`, true},
		{` { "role" : "assistant" } `, true},
		{`{"role":"user","content":"assistant"}`, false},
		{`{"role":"tool","tool_call_id":"c","content":"{\"role\":\"assistant\"}"}`, false},
		{`{"role":"system"}`, false},
		{`{"role":"developer"}`, false},
		{`{"name":"assistant"}`, false},
		{`{"role":"Assistant"}`, false},
		{`"assistant"`, false},
		{`{"role":"assistant"`, true}, // the role is read before the break
		{`{`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := (wire.Chat{}).Assistant([]byte(tt.item)); got != tt.want {
			t.Errorf("Assistant(%s) = %v, want %v", tt.item, got, tt.want)
		}
	}
}

func TestChatParseResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want wire.Output
	}{
		{"text",
			`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`,
			wire.Output{ID: "chatcmpl-1", Text: "hello", Finish: "stop", Usage: guard.Usage{InputTokens: 9, OutputTokens: 3, TotalTokens: 12}}},
		{"calls, content null",
			`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"search","arguments":"{\"q\": 1}"}},{"id":"call_b","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			wire.Output{ID: "c", Finish: "tool_calls", Calls: []guard.ToolCall{
				{ID: "call_a", Name: "search", Args: json.RawMessage(`{"q": 1}`)},
				{ID: "call_b", Name: "read", Args: json.RawMessage(``)},
			}}},
		{"a custom tool's input is a string",
			`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"x","tool_calls":[{"id":"call_c","type":"custom","custom":{"name":"sh","input":"ls -l"}}]},"finish_reason":"tool_calls"}]}`,
			wire.Output{ID: "c", Text: "x", Finish: "tool_calls", Calls: []guard.ToolCall{{ID: "call_c", Name: "sh", Args: "ls -l"}}}},
		{"content parts",
			`{"id":"c","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`,
			wire.Output{ID: "c", Text: "ab", Finish: "stop"}},
		{"only choice 0 is read",
			`{"id":"c","choices":[{"index":0,"message":{"content":"zero"},"finish_reason":"stop"},{"index":1,"message":{"content":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			wire.Output{ID: "c", Text: "zero", Finish: "stop"}},
		{"no choices",
			`{"id":"c","choices":[],"usage":{"prompt_tokens":1}}`,
			wire.Output{ID: "c", Usage: guard.Usage{InputTokens: 1}}},
		{"unknown fields and a refusal",
			`{"id":"c","x":{"y":[1]},"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"no","annotations":[]},"finish_reason":"stop","z":1}],"service_tier":"default"}`,
			wire.Output{ID: "c", Finish: "stop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Chat{}.ParseResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseResponse (-want +got):\n%s", diff)
			}
		})
	}
	for _, body := range []string{``, `[]`, `{}`, `{"choices":{}}`, `{"choices":[1]}`, `{"choices":[{"message":{"tool_calls":{}}}]}`, `{"id":"c","choices":[` + `{"message":{}}`} {
		if out, err := (wire.Chat{}).ParseResponse([]byte(body)); err == nil {
			t.Errorf("ParseResponse(%s) = %+v, want an error", body, out)
		}
	}
}

func TestChatRewrite(t *testing.T) {
	const head = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":`
	const tail = `,"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12},"system_fingerprint":"fp"}`
	const a = `{"id":"call_a","type":"function","function":{"name":"a","arguments":"{}"}}`
	const b = `{"id":"call_b","type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}`
	const c = `{"id":"call_c","type":"function","function":{"name":"c","arguments":"{}"}}`
	msg := func(content string, calls ...string) string {
		m := `{"role":"assistant","content":` + content
		if calls != nil {
			m += `,"tool_calls":[` + strings.Join(calls, ",") + `]`
		}
		return m + `,"refusal":null,"annotations":[]}`
	}
	body := func(message, finish string) string {
		return head + message + `,"logprobs":null,"finish_reason":"` + finish + `"}]` + tail
	}
	tests := []struct {
		name    string
		in      string
		refused []int
		text    string
		want    string
	}{
		{"first of three",
			body(msg("null", a, b, c), "tool_calls"), []int{0}, "a refused",
			body(msg(`"a refused"`, b, c), "tool_calls")},
		{"middle of three, text after the model's",
			body(msg(`"let me look"`, a, b, c), "tool_calls"), []int{1}, "b refused",
			body(msg(`"let me look\n\nb refused"`, a, c), "tool_calls")},
		{"last of three, no text",
			body(msg(`""`, a, b, c), "tool_calls"), []int{2}, "",
			body(msg(`""`, a, b), "tool_calls")},
		{"all: tool_calls dropped, finish stop",
			body(msg("null", a, b, c), "tool_calls"), []int{0, 1, 2}, "stopped: a loop",
			body(`{"role":"assistant","content":"stopped: a loop","refusal":null,"annotations":[]}`, "stop")},
		{"the only call, empty content",
			body(msg(`""`, a), "tool_calls"), []int{0}, "stopped",
			body(`{"role":"assistant","content":"stopped","refusal":null,"annotations":[]}`, "stop")},
		{"no content member: added at the end",
			head + `{"role":"assistant","tool_calls":[` + a + `]},"finish_reason":"tool_calls"}]` + tail, []int{0}, "stopped",
			head + `{"role":"assistant","content":"stopped"},"finish_reason":"stop"}]` + tail},
		{"content parts get a text part",
			body(`{"role":"assistant","content":[{"type":"text","text":"x"}],"tool_calls":[`+a+`]}`, "tool_calls"), []int{0}, "stopped",
			body(`{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"text","text":"stopped"}]}`, "stop")},
		{"a finish reason other than tool_calls is kept",
			body(msg("null", a), "length"), []int{0}, "stopped",
			body(`{"role":"assistant","content":"stopped","refusal":null,"annotations":[]}`, "length")},
		{"finish stop with forced tool_choice stays stop",
			body(msg("null", a, b), "stop"), []int{1}, "",
			body(msg("null", a), "stop")},
		{"nothing refused, text added",
			body(msg(`"x"`, a), "tool_calls"), nil, "note",
			body(msg(`"x\n\nnote"`, a), "tool_calls")},
		{"white space outside the message is kept",
			"{\n  \"id\": \"c\",\n  \"choices\": [\n    {\n      \"index\": 0,\n      \"message\": {\n        \"role\": \"assistant\",\n        \"content\": null,\n        \"tool_calls\": [" + a + "]\n      },\n      \"finish_reason\": \"tool_calls\"\n    }\n  ]\n}\n",
			[]int{0}, "stopped",
			"{\n  \"id\": \"c\",\n  \"choices\": [\n    {\n      \"index\": 0,\n      \"message\": {\"role\":\"assistant\",\"content\":\"stopped\"},\n      \"finish_reason\": \"stop\"\n    }\n  ]\n}\n"},
		{"other choices are kept as they came",
			`{"id":"c","choices":[{"index":0,"message":{"content":null,"tool_calls":[` + a + `]},"finish_reason":"tool_calls"},{"index":1,"message":{"content":null,"tool_calls":[` + a + `]},"finish_reason":"tool_calls"}]}`,
			[]int{0}, "s",
			`{"id":"c","choices":[{"index":0,"message":{"content":"s"},"finish_reason":"stop"},{"index":1,"message":{"content":null,"tool_calls":[` + a + `]},"finish_reason":"tool_calls"}]}`},
		{"tool_calls null is left as it is",
			body(`{"role":"assistant","content":null,"tool_calls":null}`, "stop"), []int{0}, "x",
			body(`{"role":"assistant","content":"x","tool_calls":null}`, "stop")},
		{"html characters and unicode in the text",
			body(msg("null", a), "tool_calls"), []int{0}, "<stop> & “quote”\n",
			body(`{"role":"assistant","content":"\u003cstop\u003e \u0026 “quote”\n","refusal":null,"annotations":[]}`, "stop")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Chat{}.Rewrite([]byte(tt.in), tt.refused, tt.text)
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
	for _, body := range []string{``, `[]`, `{}`, `{"choices":[]}`, `{"choices":[{}]}`, `{"choices":[{"message":{"tool_calls":[1,}}]}`, `{"choices":[{"message":{"content":"\x"}}]}`} {
		if out, err := (wire.Chat{}).Rewrite([]byte(body), []int{0}, "t"); err == nil {
			t.Errorf("Rewrite(%s) = %s, want an error", body, out)
		}
	}
}

// chatFinal is what a test reads of a chat.completion.
type chatFinal struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []any   `json:"tool_calls"`
			Refusal   *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]int `json:"usage"`
}

func TestChatFinalJSON(t *testing.T) {
	req := &wire.Request{Model: "gpt-4o"}
	var got, other chatFinal
	a := wire.Chat{}.Final(req, "stopped: <loop>", false)
	if err := json.Unmarshal(a, &got); err != nil {
		t.Fatalf("Final is not JSON: %v\n%s", err, a)
	}
	json.Unmarshal(wire.Chat{}.Final(req, "stopped: <loop>", false), &other)
	if !strings.HasPrefix(got.ID, "chatcmpl-lg") || len(got.ID) < len("chatcmpl-lg")+20 || got.Created == 0 {
		t.Errorf("id %q, created %d: want chatcmpl-lg and 20 or more characters, a time", got.ID, got.Created)
	}
	if len(wire.Chat{}.Final(nil, "x", true)) == 0 {
		t.Errorf("Final(nil, …) is empty")
	}
	if other.ID == got.ID {
		t.Errorf("two Finals have the same id %q", got.ID)
	}
	got.ID, got.Created = "", 0
	var want chatFinal
	json.Unmarshal([]byte(`{"object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"stopped: <loop>"},"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Final (-want +got):\n%s", diff)
	}
}

// chunks returns the data of a stream's events, ids and times blanked.
func chunks(t *testing.T, stream []byte) []string {
	t.Helper()
	ev := wire.NewEvents(strings.NewReader(string(stream)), 1<<20)
	var out []string
	for {
		e, err := ev.Next()
		if len(e) > 0 {
			data, _ := wire.Data(e)
			s := string(data)
			if s != "[DONE]" {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatalf("event %q: %v", e, err)
				}
				if id, _ := m["id"].(string); !strings.HasPrefix(id, "chatcmpl-lg") {
					t.Errorf("chunk id %q, want chatcmpl-lg…", id)
				}
				m["id"], m["created"] = "ID", 0
				b, _ := json.Marshal(m)
				s = string(b)
			}
			out = append(out, s)
		}
		if err != nil {
			return out
		}
	}
}

func TestChatFinalStream(t *testing.T) {
	const first = `{"choices":[{"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":0,"id":"ID","model":"m","object":"chat.completion.chunk"`
	const text = `{"choices":[{"delta":{"content":"stopped \u003cloop\u003e"},"finish_reason":null,"index":0,"logprobs":null}],"created":0,"id":"ID","model":"m","object":"chat.completion.chunk"`
	const stop = `{"choices":[{"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":0,"id":"ID","model":"m","object":"chat.completion.chunk"`
	tests := []struct {
		name string
		req  wire.Request
		text string
		want []string
	}{
		{"no usage asked", wire.Request{Model: "m", Stream: true}, "stopped <loop>",
			[]string{first + `}`, text + `}`, stop + `}`, `[DONE]`}},
		{"include_usage", wire.Request{Model: "m", Stream: true, IncludeUsage: true}, "stopped <loop>",
			[]string{first + `,"usage":null}`, text + `,"usage":null}`, stop + `,"usage":null}`,
				`{"choices":[],"created":0,"id":"ID","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":0,"prompt_tokens":0,"total_tokens":0}}`,
				`[DONE]`}},
		{"no text", wire.Request{Model: "m", Stream: true}, "",
			[]string{first + `}`, stop + `}`, `[DONE]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := wire.Chat{}.Final(&tt.req, tt.text, true)
			if diff := cmp.Diff(tt.want, chunks(t, out)); diff != "" {
				t.Errorf("Final stream (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatError(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{422, `{"error":{"message":"the run \"x\" loops","type":"invalid_request_error","param":null,"code":"REPEATED_TOOL_CALL"}}`},
		{400, `{"error":{"message":"the run \"x\" loops","type":"invalid_request_error","param":null,"code":"REPEATED_TOOL_CALL"}}`},
		{499, `{"error":{"message":"the run \"x\" loops","type":"invalid_request_error","param":null,"code":"REPEATED_TOOL_CALL"}}`},
		{500, `{"error":{"message":"the run \"x\" loops","type":"server_error","param":null,"code":"REPEATED_TOOL_CALL"}}`},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, string(wire.Chat{}.Error(tt.status, "REPEATED_TOOL_CALL", `the run "x" loops`))); diff != "" {
			t.Errorf("Error(%d) (-want +got):\n%s", tt.status, diff)
		}
	}
	want := "data: " + `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"C"}}` + "\n\n"
	if diff := cmp.Diff(want, string(wire.Chat{}.ErrorEvent("C", "m"))); diff != "" {
		t.Errorf("ErrorEvent (-want +got):\n%s", diff)
	}
}
