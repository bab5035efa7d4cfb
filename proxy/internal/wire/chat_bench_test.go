package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// chatBody returns a chat request with n (41 or more) messages: short user
// and assistant turns, then a user turn and 20 tool calls each with its
// result of about 2 KB (JSON text in a string, quotes escaped).
func chatBody(n int) []byte {
	result := strings.Repeat(`{"path":"/src/main.go","line":12,"text":"func main() { fmt.Println(\"hi\") }"},`, 26)
	result = `[` + result[:len(result)-1] + `]`
	user := map[string]any{"role": "user", "content": "Find where main is defined and explain what it prints, then fix the bug."}
	msgs := []any{map[string]any{"role": "system", "content": "You are a coding agent. Use the tools."}}
	for len(msgs) < n-41 { // the chat before, then a user turn and 20 calls with their results
		msgs = append(msgs, user, map[string]any{"role": "assistant", "content": "main prints hi; the bug is in the loop."})
	}
	msgs = append(msgs[:n-41], user)
	for i := range 20 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": id, "type": "function",
			"function": map[string]any{"name": "grep", "arguments": `{"pattern":"func main","path":"/src"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": result})
	}
	b, _ := json.Marshal(map[string]any{
		"model": "gpt-4o", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"user": "u1", "metadata": map[string]string{"session_id": "s1"}, "messages": msgs,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "grep", "parameters": map[string]any{"type": "object"}}}},
	})
	return b
}

func BenchmarkParseRequestChat(b *testing.B) {
	for _, n := range []int{50, 200} {
		body := chatBody(n)
		b.Run(fmt.Sprintf("chat/%d/parse", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := wire.Chat{}.ParseRequest(body)
				if err != nil || len(req.Items) != n {
					b.Fatal(err, len(req.Items))
				}
			}
		})
		b.Run(fmt.Sprintf("chat/%d/valid", n), func(b *testing.B) {
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

func TestChatBenchBody(t *testing.T) {
	for _, n := range []int{50, 200} {
		body := chatBody(n)
		req, err := wire.Chat{}.ParseRequest(body)
		if err != nil || len(req.Items) != n || req.Session != "s1" || !req.IncludeUsage {
			t.Fatalf("%d: %+v %v", n, req, err)
		}
		tools := strings.Count(string(body), `"role":"tool"`)
		if tools != 20 || len(body) < 40<<10 {
			t.Errorf("%d messages: %d tool results, %d bytes", n, tools, len(body))
		}
	}
}

func FuzzParseRequestChat(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":\"]\\\"\"}"}}]},{"role":"tool","tool_call_id":"c","content":"x"}],"metadata":{"session_id":"s"},"stream":true}`))
	f.Add([]byte(` { "messages" : [ 1 , "a\\\"" , [ ] , { } ] } `))
	f.Add([]byte(`{"messages":[`))
	f.Add(chatBody(41))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := wire.Chat{}.ParseRequest(body)
		if err != nil {
			return
		}
		for _, it := range req.Items {
			wire.Chat{}.Assistant(it) // never panics
		}
		if !json.Valid(body) {
			// The scanner is lenient on what it does not need (a number
			// that runs into a quote): on a malformed body the one-pass
			// cut and Fields may disagree, and the upstream rejects it.
			return
		}
		// The one-pass cut is the scanner's Fields and Items.
		var messages []byte
		if wire.Fields(body, func(k, v []byte) bool {
			if wire.Key(k, "messages") {
				messages = v
			}
			return true
		}) != nil {
			t.Fatalf("Fields fails on a body ParseRequest read")
		}
		items, err := wire.Items(messages)
		if err != nil || len(items) != len(req.Items) {
			t.Fatalf("Items: %d, %v; ParseRequest: %d", len(items), err, len(req.Items))
		}
		for i := range items {
			if string(items[i]) != string(req.Items[i]) {
				t.Errorf("item %d: %q, Items cuts %q", i, req.Items[i], items[i])
			}
		}
		for i, it := range req.Items {
			if !json.Valid(it) {
				t.Errorf("item %d %q of a valid body is not valid JSON", i, it)
			}
		}
		// Without escapes (a key the scanner takes raw), encoding/json
		// finds the same history.
		if !bytes.ContainsRune(body, '\\') {
			var m map[string]json.RawMessage
			var items []json.RawMessage
			if json.Unmarshal(body, &m) == nil && json.Unmarshal(m["messages"], &items) == nil && len(items) != len(req.Items) {
				t.Errorf("%d items, encoding/json finds %d", len(req.Items), len(items))
			}
		}
	})
}
