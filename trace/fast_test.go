package trace

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
)

var errText = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
})

// sameAsGuard checks that fastStep, when it reads line, reads it as
// guard.Step.UnmarshalJSON does.
func sameAsGuard(t *testing.T, line []byte) (fast bool) {
	t.Helper()
	got, ok := fastStep(bytes.Clone(line), nil)
	var want guard.Step
	err := json.Unmarshal(line, &want)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("fastStep read %q, which encoding/json rejects: %v", line, err)
	}
	if diff := cmp.Diff(want, got, errText); diff != "" {
		t.Fatalf("fastStep(%q) (-guard +fast):\n%s", line, diff)
	}
	return true
}

var fastSeeds = []string{
	`{"text": "a", "toolCalls": [{"name": "search", "args": {"q": 1}, "result": "r", "error": null}], "finishReason": "stop", "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7, "costUsd": 0.5, "durationMs": 12.5}}`,
	`{"text": "caf\u00e9 \"q\" \ud83d\ude00 \ud800", "input": "", "userReply": "yes"}`,
	`{"text": 5, "toolCalls": {"name": "x"}, "usage": [1]}`,
	`{"toolCalls": [1, "x", null, {"name": 3}, {"name": null}, {"args": {}}, {"name": "a", "error": ""}, {"name": "b", "error": {"code": 1}}, {"name": "c", "error": false}]}`,
	`{"TEXT": "a"}`,
	`{"text": "a", "text": "b"}`,
	`{"toolCalls": [{"name": "a", "Name": "b"}]}`,
	`{"usage": {"inputTokens": -1, "outputTokens": 1.5, "totalTokens": 1e300, "costUsd": -0, "durationMs": 1e400}}`,
	`{"usage": {"inputTokens": "5", "outputTokens": null, "durationMs": 9.3e15}}`,
	`{"t\u0065xt": "a"}`,
	"{\"text\": \"\xff\xfe\"}",
	`{"text": "a"} x`,
	`{"text": "a",}`,
	`{"a": [1, 2, {"b": [true, false, null, -0.5e+3]}], "text": "x"}`,
	`{"a": 01}`,
	`{"a": tru}`,
	`{"toolCalls": [{"name": "a", "args": [ 1 , 2 ] , "result": { } }]}`,
	` { } `,
	`{"toolCalls": null, "usage": null, "text": null}`,
	`{"toolCalls": [{"id": "call_1", "name": "a", "args": {}, "result": "r"}, {"id": 5, "name": "b"}, {"name": "c", "id": null}]}`,
	`{"toolCalls": [{"name": "a", "id": "c1", "ID": "c2"}]}`,
	`{"refused": [{"id": "call_2", "name": "a", "args": {"q": 1}, "result": "r", "error": "e"}, 7, {"name": 3}, {"name": "c"}]}`,
	`{"refused": {"name": "a"}, "toolCalls": [{"name": "b"}]}`,
	`{"refused": [], "REFUSED": [{"name": "a"}]}`,
}

func TestFastStep(t *testing.T) {
	fast := 0
	for _, s := range fastSeeds {
		if sameAsGuard(t, []byte(s)) {
			fast++
		}
	}
	if fast < len(fastSeeds)/2 {
		t.Errorf("fastStep read only %d of %d seeds", fast, len(fastSeeds))
	}

	// Every line of the real traces must take the fast way, or audits
	// slow down without anyone noticing.
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no traces")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			if !sameAsGuard(t, line) {
				t.Errorf("%s:%d: fastStep gave up", file, i+1)
			}
		}
	}
}

func FuzzFastStep(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsGuard(t, line)
	})
}

func BenchmarkParseSteps(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "traces", "mini-gemini3pro-sympy-13091.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, Steps); err != nil {
			b.Fatal(err)
		}
	}
}
