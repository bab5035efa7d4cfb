package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// msgBody is a Messages request of n messages, 20 of them tool results of
// 2 KB each (the rest short text turns and the tool_use turns before the
// results).
func msgBody(n int) []byte {
	result := strings.Repeat(`line "quoted" \ and more text of the tool's output`+"\n", 50)[:2048]
	var msgs []any
	for i := 0; len(msgs) < n; i++ {
		switch {
		case i < 20 && len(msgs)+2 <= n:
			id := fmt.Sprintf("toolu_%02d", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{
					map[string]any{"type": "text", "text": "I will read the file."},
					map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("/src/f%d.go", i)}},
				}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": id, "content": result},
				}})
		default:
			role := "user"
			if len(msgs)%2 == 0 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"role": role, "content": fmt.Sprintf("message %d: a short turn of text, with a few words in it.", i)})
		}
	}
	body, _ := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 4096, "stream": true,
		"system":   "You are a coding agent.",
		"metadata": map[string]any{"user_id": "u-1"},
		"tools":    []any{map[string]any{"name": "read_file", "input_schema": map[string]any{"type": "object"}}},
		"messages": msgs,
	})
	return body
}

func BenchmarkParseRequestMessages(b *testing.B) {
	for _, n := range []int{50, 200} {
		body := msgBody(n)
		b.Run(fmt.Sprintf("%d/parse", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := Messages{}.ParseRequest(body)
				if err != nil || len(req.Items) != n {
					b.Fatalf("%d items, %v", len(req.Items), err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/valid", n), func(b *testing.B) {
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

func TestMessagesBenchBody(t *testing.T) {
	for _, n := range []int{50, 200} {
		req, err := Messages{}.ParseRequest(msgBody(n))
		if err != nil || len(req.Items) != n {
			t.Fatalf("body of %d: %d items, %v", n, len(req.Items), err)
		}
	}
}

func FuzzParseRequestMessages(f *testing.F) {
	f.Add([]byte(`{"model":"m","system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":[1,"]"]}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"a\"b\\"}],"metadata":{"user_id":"u"}}`))
	f.Add([]byte(`{"messages":[1, "x", null, true, {"a":{}}, []]}`))
	f.Add([]byte(`{"messages":[`))
	f.Add(msgBody(4))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Messages{}.ParseRequest(body)
		if err != nil {
			return
		}
		valid := json.Valid(body)
		for i, it := range req.Items {
			if len(it) == 0 {
				t.Fatalf("item %d is empty", i)
			}
			if valid && !json.Valid(it) {
				t.Fatalf("item %d of a valid body is not JSON: %q", i, it)
			}
			Messages{}.Assistant(it)
		}
		if valid && req.Head != nil && !json.Valid(req.Head) {
			t.Fatalf("head of a valid body is not JSON: %q", req.Head)
		}
	})
}
