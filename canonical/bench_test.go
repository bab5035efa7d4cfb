package canonical

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// argsJSON is a typical arguments object of a tool call (about 150 bytes).
var argsJSON = []byte(`{"path": "/workspace/src/server/handlers.go", "pattern": "func (h \\*Handler) Serve", "line": 128, "context": 3, "recursive": true, "exclude": ["vendor", "testdata"]}`)

// docJSON is a nested document of about 10 KB.
var docJSON = func() []byte {
	var b strings.Builder
	b.WriteString(`{"model": "gpt-x", "temperature": 0.7, "messages": [`)
	for i := 0; b.Len() < 10_000-400; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"role": "tool", "id": "call_%04d", "tokens": %d, "score": %g, "content": {"stdout": "line %d: ok\nline 2: done \u00e9t\u00e9", "exit": 0, "files": ["a/b/c.go", "d/e.go"], "meta": {"cached": false, "ms": %d.5}}}`, i, i*37, float64(i)/7, i, i*3)
	}
	b.WriteString(`], "tools": [{"name": "grep", "strict": true}], "stream": false}`)
	return []byte(b.String())
}()

// chatJSON is a 10 KB chat request as an agent sends it: messages with
// text content and tool calls whose arguments are JSON in strings.
var chatJSON = func() []byte {
	var b strings.Builder
	b.WriteString(`{"model": "gpt-x", "temperature": 0.2, "max_tokens": 4096, "messages": [{"role": "system", "content": "You are a coding agent. Use the tools to read, search and edit files in the repository; run the tests after every change and stop when they pass."}`)
	for i := 0; b.Len() < 10_000-700; i++ {
		fmt.Fprintf(&b, `, {"role": "assistant", "content": null, "tool_calls": [{"id": "call_%04d", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"func Serve\", \"path\": \"src/server\", \"context\": %d}"}}]}`, i, i%5)
		fmt.Fprintf(&b, `, {"role": "tool", "tool_call_id": "call_%04d", "content": "src/server/handlers.go:%d: func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) {\n\tctx := r.Context()\n\tif err := h.auth(ctx, r); err != nil {\n\t\thttp.Error(w, err.Error(), http.StatusUnauthorized)\n\t\treturn\n\t}"}`, i, 100+i)
	}
	b.WriteString(`], "tools": [{"type": "function", "function": {"name": "grep", "description": "Search files", "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}}}}], "stream": false}`)
	return []byte(b.String())
}()

func decode(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic(err)
	}
	return v
}

func BenchmarkHashJSONArgs(b *testing.B) {
	bench(b, int64(len(argsJSON)), func() { HashJSON(argsJSON) })
}

func BenchmarkHashJSONDoc(b *testing.B) {
	bench(b, int64(len(docJSON)), func() { HashJSON(docJSON) })
}

func BenchmarkHashJSONChat(b *testing.B) {
	bench(b, int64(len(chatJSON)), func() { HashJSON(chatJSON) })
}

func BenchmarkUnmarshalChat(b *testing.B) {
	bench(b, int64(len(chatJSON)), func() { decode(chatJSON) })
}

func BenchmarkHashMapChat(b *testing.B) {
	v := decode(chatJSON)
	bench(b, int64(len(chatJSON)), func() { Hash(v) })
}

func BenchmarkUnmarshalArgs(b *testing.B) {
	bench(b, int64(len(argsJSON)), func() { decode(argsJSON) })
}

func BenchmarkUnmarshalDoc(b *testing.B) {
	bench(b, int64(len(docJSON)), func() { decode(docJSON) })
}

func BenchmarkHashMapArgs(b *testing.B) {
	v := decode(argsJSON)
	bench(b, int64(len(argsJSON)), func() { Hash(v) })
}

func BenchmarkHashMapDoc(b *testing.B) {
	v := decode(docJSON)
	bench(b, int64(len(docJSON)), func() { Hash(v) })
}

func BenchmarkHashStruct(b *testing.B) {
	type args struct {
		Path      string   `json:"path"`
		Pattern   string   `json:"pattern"`
		Line      int      `json:"line"`
		Context   int      `json:"context"`
		Recursive bool     `json:"recursive"`
		Exclude   []string `json:"exclude"`
	}
	var v any = &args{"/workspace/src/server/handlers.go", `func (h \*Handler) Serve`, 128, 3, true, []string{"vendor", "testdata"}}
	bench(b, 0, func() { Hash(v) })
}

func BenchmarkHashString300(b *testing.B) {
	var v any = strings.Repeat("tool output ", 25)
	bench(b, 300, func() { Hash(v) })
}

func BenchmarkHashRawMessage(b *testing.B) {
	var v any = json.RawMessage(argsJSON)
	bench(b, int64(len(argsJSON)), func() { Hash(v) })
}

func BenchmarkTransformArgs(b *testing.B) {
	bench(b, int64(len(argsJSON)), func() { Transform(argsJSON) })
}

// The hash candidates, over the canonical encoding of the document.
func BenchmarkHashFunc(b *testing.B) {
	for _, size := range []int{150, 10_000} {
		data := []byte(strings.Repeat("x", size))
		b.Run(fmt.Sprintf("murmur3/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				murmur3(data)
			}
		})
		b.Run(fmt.Sprintf("sha256/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				sha256.Sum256(data)
			}
		})
	}
}

func TestBenchmarkInputs(t *testing.T) {
	for name, b := range map[string][]byte{"args": argsJSON, "doc": docJSON, "chat": chatJSON} {
		if _, err := Transform(b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %d bytes", name, len(b))
	}
}

// BenchmarkHashJSONArgsSHA256 is HashJSONArgs with crypto/sha256 (truncated
// to 128 bits) in place of MurmurHash3, to compare the two end to end.
func BenchmarkHashJSONArgsSHA256(b *testing.B) {
	benchmarkSHA256(b, argsJSON)
}

func BenchmarkHashJSONDocSHA256(b *testing.B) {
	benchmarkSHA256(b, docJSON)
}

func benchmarkSHA256(b *testing.B, src []byte) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		e := getEncoder()
		e.run(func(e *encoder) { e.jsonText(src) })
		var s Sum
		h := sha256.Sum256(e.buf)
		copy(s[:], h[:16])
		putEncoder(e)
	}
}

// bench runs f as benchmark b, and reports besides the wall-clock figures
// the CPU time of the process per operation: on a machine that other
// processes share, it varies far less. Given the bytes of an operation, it
// reports its CPU speed (cpu-MB/s) and CPU time per byte (cpu-ns/B).
func bench(b *testing.B, bytes int64, f func()) {
	if bytes > 0 {
		b.SetBytes(bytes)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		f()
	}
	cpu := float64(cpuTime()-cpu0) / float64(b.N)
	b.ReportMetric(cpu, "cpu-ns/op")
	if bytes > 0 {
		b.ReportMetric(float64(bytes)*1e3/cpu, "cpu-MB/s")
		b.ReportMetric(cpu/float64(bytes), "cpu-ns/B")
	}
}

// hashSizes are the sizes of BenchmarkHashSize: from a small result to
// maxPooledBytes, the largest encoding whose buffers the encoder keeps.
var hashSizes = []int{1 << 10, 100 << 10, 300 << 10, 1 << 20, 4 << 20, maxPooledBytes}

// recordsOfSize is a tool result of about n bytes of JSON text: an object
// holding an array of records (13 values in about 1.1 KB each, so that 16
// MiB hold fewer than MaxValues values, and no cut is made).
func recordsOfSize(n int) []byte {
	b := make([]byte, 0, n+2000)
	b = append(b, `{"ok": true, "rows": [`...)
	for i := 0; i == 0 || len(b) < n-1200; i++ {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, `{"id": "row_%06d", "tokens": %d, "score": %g, "content": {"stdout": "`, i, i*37, float64(i)/7)
		for j := range 12 {
			b = fmt.Appendf(b, `src/server/handlers.go:%d: if err := h.auth(ctx, r); err != nil { \"%c\" }\n`, i+j, 'a'+j)
		}
		b = fmt.Appendf(b, `", "exit": 0, "files": ["a/b/c.go", "d/e.go"], "meta": {"cached": false, "ms": %d.5}}}`, i*3)
	}
	return append(b, `], "truncated": false}`...)
}

// textOfSize is a tool result of about n bytes of JSON text: an object
// holding one long text (a file's content, a page), with escapes.
func textOfSize(n int) []byte {
	const line = `\tif err := h.auth(ctx, r); err != nil { http.Error(w, \"denied: été\", 401) }\n`
	b := make([]byte, 0, n+len(line)+100)
	b = append(b, `{"content": [{"type": "text", "text": "`...)
	for len(b) < n-len(line)-30 {
		b = append(b, line...)
	}
	return append(b, `"}], "isError": false}`...)
}

// BenchmarkHashSize hashes tool results of growing size, as JSON text and
// as the Go value encoding/json decodes it into, in steady state: after one
// call, so that the pool holds an encoder that served a value as big (at
// 16 MiB, b.Loop makes few calls, and the first would count for much).
// Besides B/op, bench reports cpu-ns/B, the CPU time per byte of JSON
// text, which should not grow with the size. HashBytes, MurmurHash3 of the text
// alone, is the control: one pass over the bytes, which caches make dearer
// per byte past a few hundred KB too.
func BenchmarkHashSize(b *testing.B) {
	for _, kind := range []string{"HashJSON", "Hash", "HashBytes"} {
		for _, shape := range []struct {
			name string
			text func(int) []byte
		}{{"records", recordsOfSize}, {"text", textOfSize}} {
			for _, n := range hashSizes {
				b.Run(kind+"/"+shape.name+"/"+byteSize(n), func(b *testing.B) {
					src := shape.text(n)
					f := func() { HashJSON(src) }
					switch kind {
					case "Hash":
						v := decode(src)
						f = func() { Hash(v) }
					case "HashBytes":
						f = func() { HashBytes(src) }
					}
					f()
					bench(b, int64(len(src)), f)
				})
			}
		}
	}
}

// byteSize names n bytes in KiB or MiB.
func byteSize(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}
