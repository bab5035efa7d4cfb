package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// failureOf returns the failure signature and the failed flag the guard
// computes for one call.
func failureOf(t *testing.T, o guard.Config, c guard.ToolCall) (canonical.Sum, bool) {
	t.Helper()
	var sum canonical.Sum
	var failed bool
	p := &probe{name: "p", prio: 1}
	p.stopWhen = func(f *guard.Facts) bool {
		sum, failed = f.Calls[0].Failure, f.Calls[0].Failed
		return false
	}
	testutil.Check(t, mustNew(t, o, p), guard.Step{ToolCalls: []guard.ToolCall{c}})
	return sum, failed
}

func TestFailureSignatures(t *testing.T) {
	edit := func(old, msg string) guard.ToolCall {
		return guard.ToolCall{Name: "str_replace", Args: raw(`{"path":"/repo/a.py","old_str":` + quote(old) + `,"new_str":"x"}`),
			Result: msg, Err: errors.New("error observation")}
	}
	bash := func(cmd, out string) guard.ToolCall {
		return guard.ToolCall{Name: "bash", Args: map[string]string{"command": cmd}, Result: out, Err: errors.New("exit code 1")}
	}
	tests := []struct {
		name string
		a, b guard.ToolCall
		same bool
	}{
		{"the echoed old_str is taken out",
			edit("def f(x):", "No replacement was performed, old_str `def f(x):` did not appear verbatim in /repo/a.py."),
			edit("def f(x) :", "No replacement was performed, old_str `def f(x) :` did not appear verbatim in /repo/a.py."), true},
		{"one line of a multi-line old_str is taken out",
			edit("    if x:\n        return compute_value(x)", "old_str not found; closest line: return compute_value(x)"),
			edit("    if y:\n        return compute_other(y)", "old_str not found; closest line: return compute_other(y)"), true},
		{"echoed lines count as one, however many there are",
			edit("from a import b\nfrom c import d", "no exact match for\nfrom a import b\nfrom c import d\n=======\nend"),
			edit("from a import b\nfrom x import y\nfrom c import d", "no exact match for\nfrom a import b\nfrom x import y\nfrom c import d\n=======\nend"), true},
		{"line and column numbers do not count",
			bash("python a.py", "  File \"a.py\", line 12\n    x = (\n        ^\nSyntaxError: '(' was never closed"),
			bash("python -m a", "  File \"a.py\", line 14\n    x = (\n        ^\nSyntaxError: '(' was never closed"), true},
		{"hex ids and addresses do not count",
			bash("go build", "panic at 0x4f3a2c in goroutine 7 (build 3fa85f6457174562b3fc)"),
			bash("go build ./...", "panic at 0x1b00ff in goroutine 9 (build 9c1d2e3f4a5b6c7d8e9f)"), true},
		{"temporary names do not count",
			bash("pytest", "cannot open /tmp/tmpa1b2c3/conftest.py"),
			bash("pytest -x", "cannot open /tmp/tmpzz9y8x/conftest.py"), true},
		{"case and white space do not count",
			bash("make", "Error:   Missing  Separator"),
			bash("make all", "error: missing separator\n"), true},
		{"another message is another failure",
			bash("make", "error: missing separator"),
			bash("make", "error: no rule to make target"), false},
		{"another tool is another failure",
			bash("make", "error: missing separator"),
			guard.ToolCall{Name: "sh", Args: map[string]string{"command": "make"}, Result: "error: missing separator", Err: errors.New("exit code 1")}, false},
		{"the error text counts",
			guard.ToolCall{Name: "t", Result: "same", Err: errors.New("exit code 1")},
			guard.ToolCall{Name: "t", Result: "same", Err: errors.New("timeout")}, false},
		// Ids as providers and tools write them (formats from their
		// public error reports): the same failure with another id is the
		// same failure.
		{"a UUID v4 request id does not count",
			bash("curl", "service unavailable (request 93d088a6-a044-4964-8b25-fab487a6859a)"),
			bash("curl -v", "service unavailable (request ebbb2373-ab4b-484d-9bfa-9bef286759a5)"), true},
		{"a UUID v7 thread id does not count",
			bash("codex", `{"detail":"Bad Request"} thread 019c2f64-ce92-70a1-a17d-9bf8e8408f84`),
			bash("codex", `{"detail":"Bad Request"} thread 019c3a01-0b7e-7c55-a9d2-41e6f00c1d3b`), true},
		{"an OpenAI req_ id does not count",
			bash("ask", "An error occurred while processing your request. Please include the request ID req_1332ed8a813a4caaa2f0f3c55a6a68cb in your message."),
			bash("ask", "An error occurred while processing your request. Please include the request ID req_5c0e0b7a9d3f4e21b8a6c4d2e1f09a7b in your message."), true},
		{"an Anthropic req_011C id does not count",
			bash("ask", `529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CZAZuCr9hV42toiCdnnKB"}`),
			bash("ask", `529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_01RCc7MbLyQNtGKzBTv8VCep"}`), true},
		{"OpenAI call_ and chatcmpl- ids, Anthropic toolu_ and msg_ ids do not count",
			bash("t", "no output for call_Vbc0ED1XxIkc4yG8l2WdPb2a in chatcmpl-9pQ2hXyZbcdEfGhIjKlMnOpQrStUv (toolu_01A09q90qw90lq917835lq9, msg_01XFDUDYJgAACzvnptvVoYEL)"),
			bash("t", "no output for call_qWeRtY7uIoPaSdF3gHjKlZx in chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012 (toolu_01QbcKbZqWzEyhV3tPhYmwZs, msg_01HnGgPxmTbWzKJcPqeLAXrC)"), true},
		{"S3 request and host ids do not count",
			bash("aws s3 cp", "<Error><Code>AccessDenied</Code><RequestId>7BMJM8PWV1J1FNEH</RequestId><HostId>TW2qeJptLnLL7+0pKGRgdR+t5T/GKN362KnA1JuYa83s+Y0YsVEeIxGoiUK+pCQIRwhNsDNC1ws=</HostId></Error>"),
			bash("aws s3 ls", "<Error><Code>AccessDenied</Code><RequestId>4F8BF8887D829814</RequestId><HostId>i4rhOCLqQEJzmbKClcnKkGlQlKBOxYTa6Dv+T/JgvZoK90ESYQjhGivPU4VchK9I</HostId></Error>"), true},
		{"trace ids and short hex do not count",
			bash("t", "failed: traceparent 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, X-Amzn-Trace-Id Root=1-5759e988-bd862e3fe1be46a994272793, cf-ray 8e695a03eed4f9fd-SJC, chunk 8f3a"),
			bash("t", "failed: traceparent 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01, X-Amzn-Trace-Id Root=1-67891233-abcdef012345678912345678, cf-ray 7d2b3c4e5f6a7b8c-SJC, chunk c0de"), true},
		{"hex-looking words are words",
			bash("ls", "no such key: dead"),
			bash("ls", "no such key: face"), false},
		{"a lint code is no id",
			bash("flake8", "a.py:1:1: E501 line too long"),
			bash("flake8", "a.py:1:1: F501 line too long"), false},
		{"a word after a provider's prefix is a word",
			bash("t", "unknown field req_name"),
			bash("t", "unknown field req_type"), false},
		{"words are not numbers",
			bash("ls", "no such file: alpha"),
			bash("ls", "no such file: beta"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa, fa := failureOf(t, guard.Config{}, tt.a)
			sb, fb := failureOf(t, guard.Config{}, tt.b)
			if !fa || !fb || sa == (canonical.Sum{}) || sb == (canonical.Sum{}) {
				t.Fatalf("failed %v %v, sums %v %v: want both failed with a signature", fa, fb, sa, sb)
			}
			if (sa == sb) != tt.same {
				t.Errorf("same signature = %v, want %v", sa == sb, tt.same)
			}
		})
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func TestFailWhen(t *testing.T) {
	o := guard.Config{
		FailWhen: []string{`^ERROR:`},
		Tools:    map[string]guard.ToolOptions{"bash": {FailWhen: []string{`<returncode>[1-9]`}}},
	}
	tests := []struct {
		call guard.ToolCall
		want bool
	}{
		{guard.ToolCall{Name: "search", Result: "ERROR: quota"}, true},
		{guard.ToolCall{Name: "search", Result: raw(`"ERROR: quota"`)}, true}, // JSON text of a string
		{guard.ToolCall{Name: "search", Result: "fine. ERROR: none"}, false},
		{guard.ToolCall{Name: "search", Result: "<returncode>1</returncode>"}, false}, // a pattern of bash only
		{guard.ToolCall{Name: "bash", Result: "<returncode>1</returncode>"}, true},
		{guard.ToolCall{Name: "bash", Result: "<returncode>0</returncode>"}, false},
		{guard.ToolCall{Name: "bash", Result: "ERROR: disk"}, true}, // the patterns of all tools apply too
		{guard.ToolCall{Name: "search", Result: map[string]any{"error": "ERROR: x"}}, false},
		{guard.ToolCall{Name: "search", Err: errors.New("boom")}, true},
		{guard.ToolCall{Name: "search"}, false}, // no result
	}
	for _, tt := range tests {
		sum, failed := failureOf(t, o, tt.call)
		if failed != tt.want || (sum != canonical.Sum{}) != tt.want {
			t.Errorf("%+v: failed %v (signature %v), want %v", tt.call, failed, sum, tt.want)
		}
	}
	g := mustNew(t, o)
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Result: "ERROR: x"}, {Name: "search", Result: "ok"}}})
	if s := testutil.Summary(t, g); s.FailedToolCalls != 1 {
		t.Errorf("FailedToolCalls = %d, want 1", s.FailedToolCalls)
	}
}

func TestFailWhenErrors(t *testing.T) {
	_, err := guard.New(guard.Config{FailWhen: []string{"ok", "(", "x"},
		Tools: map[string]guard.ToolOptions{"b": {FailWhen: []string{"[a"}}, "a": {FailWhen: []string{"fine"}}}})
	if !errors.Is(err, guard.ErrInvalidOption) {
		t.Fatalf("err = %v, want an invalid option", err)
	}
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var oe *guard.OptionError
		if errors.As(e, &oe) {
			fields = append(fields, oe.Field)
		}
	}
	if diff := cmp.Diff([]string{"FailWhen[1]", `Tools["b"].FailWhen[0]`}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestFailWhenFingerprint(t *testing.T) {
	g := mustNew(t, guard.Config{FailWhen: []string{"^ERROR"}})
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Restore(data, guard.Config{}); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("restored without FailWhen: %v, want ErrOptionsChanged", err)
	}
	if _, err := guard.Restore(data, guard.Config{FailWhen: []string{"^ERROR"}}); err != nil {
		t.Errorf("restored with the same FailWhen: %v", err)
	}
	// Any pattern that matches marks a failure, so their order and
	// repeats change nothing: a list in another order restores.
	two := guard.Config{FailWhen: []string{"^ERROR", "exit code [1-9]"},
		Tools: map[string]guard.ToolOptions{"bash": {FailWhen: []string{"a", "b"}}}}
	data, err = mustNew(t, two).Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reordered := guard.Config{FailWhen: []string{"exit code [1-9]", "^ERROR", "^ERROR"},
		Tools: map[string]guard.ToolOptions{"bash": {FailWhen: []string{"b", "a"}}}}
	if _, err := guard.Restore(data, reordered); err != nil {
		t.Errorf("restored with the same patterns in another order: %v", err)
	}
	other := guard.Config{FailWhen: []string{"^ERROR"}, Tools: two.Tools}
	if _, err := guard.Restore(data, other); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("restored with a pattern fewer: %v, want ErrOptionsChanged", err)
	}
}

func TestRefusedFacts(t *testing.T) {
	var got []string
	var keys []canonical.Sum
	p := &probe{name: "p", prio: 1}
	p.stopWhen = func(f *guard.Facts) bool {
		for _, c := range f.Refused {
			got = append(got, c.Tool)
			keys = append(keys, c.Key)
		}
		return false
	}
	g := mustNew(t, guard.Config{}, p)
	call := guard.ToolCall{Name: "search", Args: raw(`{"q":"x"}`)}
	testutil.Check(t, g, guard.Step{Refused: []guard.ToolCall{call, {Name: "open", Args: raw(`{}`)}}})
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{call}})
	if diff := cmp.Diff([]string{"search", "open"}, got); diff != "" {
		t.Errorf("refused tools (-want +got):\n%s", diff)
	}
	var ran canonical.Sum
	p.stopWhen = func(f *guard.Facts) bool { ran = f.Calls[0].Key; return false }
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{call}})
	if keys[0] != ran {
		t.Error("a refused call's key differs from the same call's key when it runs")
	}
	if s := testutil.Summary(t, g); s.ToolCalls != 2 {
		t.Errorf("ToolCalls = %d: refused calls must not count as calls", s.ToolCalls)
	}
}
