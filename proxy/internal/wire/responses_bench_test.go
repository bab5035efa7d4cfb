package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// responsesBody builds a Responses request whose input has n items: user
// and assistant messages, function_call items, and 20 function_call_output
// items of 2 KB each.
func responsesBody(n int) []byte {
	var items []string
	result := strings.Repeat(`{\"path\":\"/src/main.go\",\"line\":12,\"text\":\"fmt.Println(\\\"hi\\\")\"} `, 2048/70)
	outputs := 0
	for len(items) < n {
		i := len(items)
		switch {
		case i%5 == 0:
			items = append(items, `{"role":"user","content":[{"type":"input_text","text":"Please look at file number `+strconv.Itoa(i)+` and tell me what it does."}]}`)
		case i%5 == 1:
			items = append(items, `{"type":"message","role":"assistant","id":"msg_`+strconv.Itoa(i)+`","content":[{"type":"output_text","text":"I will read it.","annotations":[]}]}`)
		case i%5 == 2 || i%5 == 3:
			items = append(items, `{"type":"function_call","id":"fc_`+strconv.Itoa(i)+`","call_id":"call_`+strconv.Itoa(i)+`","name":"read_file","arguments":"{\"path\":\"/src/f`+strconv.Itoa(i)+`.go\"}"}`)
		default:
			out := `short result`
			if outputs < 20 {
				out = result
				outputs++
			}
			items = append(items, `{"type":"function_call_output","call_id":"call_`+strconv.Itoa(i-1)+`","output":"`+out+`"}`)
		}
	}
	return []byte(`{"model":"gpt-5","instructions":"You are a careful coding agent.","stream":true,"store":false,` +
		`"tools":[{"type":"function","name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}],` +
		`"input":[` + strings.Join(items, ",") + `],"metadata":{"session_id":"s1"},"user":"u1"}`)
}

func TestResponsesBenchBody(t *testing.T) {
	for _, n := range []int{50, 200} {
		body := responsesBody(n)
		if !json.Valid(body) {
			t.Fatalf("%d: invalid body", n)
		}
		r, err := rs.ParseRequest(body)
		if err != nil || len(r.Items) != n {
			t.Fatalf("%d: %v, %d items", n, err, len(r.Items))
		}
	}
}

func BenchmarkParseRequestResponses(b *testing.B) {
	for _, n := range []int{50, 200} {
		body := responsesBody(n)
		b.Run(fmt.Sprintf("responses/%d/parse", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rs.ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("responses/%d/valid", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func FuzzParseRequestResponses(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","stream":true,"instructions":"x","input":[{"role":"user","content":"a"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`,
		`{"previous_response_id":"resp_1","conversation":{"id":"c"},"metadata":{"session_id":"s"},"input":[]}`,
		`{"input":[{"a":"\"]}"},[1,2,{"b":null}],"s\\",true,-1.5e3]}`,
		`{"input":[`, `[]`, `{"input":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Add(responsesBody(12))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := rs.ParseRequest(body)
		if err != nil {
			return
		}
		valid := json.Valid(body)
		for _, it := range r.Items {
			if len(it) == 0 || !bytes.Contains(body, it) {
				t.Fatalf("item %q not in the body", it)
			}
			if valid && !json.Valid(it) {
				t.Fatalf("item %q of a valid body is not valid JSON", it)
			}
			rs.Assistant(it)
		}
		if valid && r.Head != nil && !json.Valid(r.Head) {
			t.Fatalf("head %q is not valid JSON", r.Head)
		}
	})
}

func ExampleResponses_ParseRequest() {
	body := []byte(`{"model":"gpt-5","instructions":"Be brief.","previous_response_id":"resp_1",
		"input":[{"type":"function_call_output","call_id":"call_1","output":"42"}]}`)
	req, err := wire.Responses{}.ParseRequest(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Model, string(req.Head), req.Previous, req.Stateful)
	for _, it := range req.Items {
		fmt.Println(string(it), wire.Responses{}.Assistant(it))
	}
	// Output:
	// gpt-5 "Be brief." resp_1 true
	// {"type":"function_call_output","call_id":"call_1","output":"42"} false
}
