package trace_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// readEntries reads every entry of data, and the warnings given.
func readEntries(data string, opt trace.Options) ([]trace.Entry, []string, error) {
	var warnings []string
	opt.Warn = func(err error) { warnings = append(warnings, err.Error()) }
	r := trace.NewReader(strings.NewReader(data), &opt)
	var es []trace.Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return es, warnings, nil
		}
		if err != nil {
			return es, warnings, err
		}
		es = append(es, e)
	}
}

// TestUnknownKeys checks the step reader's keys under each policy: a key
// that resembles a known one is an error under all of them, any other
// unknown key only under RejectUnknownKeys.
func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name, line string
		want       string // the error of a key that resembles a known one, under every policy
	}{
		{"provider spellings", `{"tool_calls": [{"name": "a"}], "finish_reason": "stop"}`, `unknown key "tool_calls" (did you mean "toolCalls"?)`},
		{"another case", `{"Text": "a"}`, `unknown key "Text" (did you mean "text"?)`},
		{"another case beside the key", `{"text": "a", "TEXT": "b"}`, `unknown key "TEXT" (did you mean "text"?)`},
		{"a hyphen", `{"finish-reason": "stop"}`, `unknown key "finish-reason" (did you mean "finishReason"?)`},
		{"a swap", `{"txet": "a"}`, `unknown key "txet" (did you mean "text"?)`},
		{"a typo", `{"finishReasn": "stop"}`, `unknown key "finishReasn" (did you mean "finishReason"?)`},
		{"a folded s", `{"uſage": {}}`, `unknown key "uſage" (did you mean "usage"?)`},
		{"content", `{"content": "a"}`, `unknown key "content" (did you mean "text"?)`},
		{"a role", `{"role": "assistant", "text": "a"}`, `unknown key "role" (an OpenAI or Anthropic message? read such logs as openai or anthropic)`},
		{"usage beside the text", `{"text": "a", "input_tokens": 3}`, `unknown key "input_tokens" (did you mean "usage.inputTokens"?)`},
		{"a call's arguments", `{"toolCalls": [{"name": "a", "args": {}}, {"name": "b", "arguments": "{}"}]}`, `unknown key "toolCalls[1].arguments" (did you mean "args"?)`},
		{"a call's name in another case", `{"toolCalls": [{"Name": "a"}]}`, `unknown key "toolCalls[0].Name" (did you mean "name"?)`},
		{"an Anthropic input", `{"toolCalls": [{"name": "a", "input": {}}]}`, `unknown key "toolCalls[0].input" (did you mean "args"?)`},
		{"a refused call", `{"refused": [{"name": "a", "parameters": {}}]}`, `unknown key "refused[0].parameters" (did you mean "args"?)`},
		{"usage", `{"usage": {"prompt_tokens": 3, "completion_tokens": 1}}`, `unknown key "usage.prompt_tokens" (did you mean "inputTokens"?)`},
		{"usage in snake case", `{"usage": {"total_tokens": 3}}`, `unknown key "usage.total_tokens" (did you mean "totalTokens"?)`},
		{"a preflight call", `{"preflight": {"name": "a", "arguments": {}}}`, `unknown key "preflight.arguments" (did you mean "args"?)`},
		{"preflight calls", `{"preflight": [{"name": "a"}, {"nmae": "b"}]}`, `unknown key "preflight[1].nmae" (did you mean "name"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, policy := range []trace.KeyPolicy{trace.RejectUnknownKeys, trace.WarnUnknownKeys, trace.IgnoreUnknownKeys} {
				_, warnings, err := readEntries("{}\n"+tt.line+"\n", trace.Options{Format: trace.Steps, UnknownKeys: policy})
				var te *trace.Error
				var ke *trace.UnknownKeyError
				if !errors.As(err, &te) || !errors.As(err, &ke) || te.Line != 2 || te.Err.Error() != tt.want {
					t.Errorf("policy %d: error %v, want line 2: %s", policy, err, tt.want)
				}
				if ke != nil && !ke.Resembles() {
					t.Errorf("policy %d: %v does not resemble a known key", policy, ke)
				}
				if len(warnings) > 0 {
					t.Errorf("policy %d: warnings %q", policy, warnings)
				}
			}
		})
	}

	// Keys that resemble none: an error, a warning once per key, or nothing.
	data := `{"text": "a", "step": 1}` + "\n" +
		`{"text": "b", "step": 2, "timestamp": "x", "usage": {"inputTokens": 1, "cached": 0}}` + "\n" +
		`{"toolCalls": [{"name": "a", "tags": []}, {"name": "b", "tags": []}], "meta": {"tool_calls": 1}}` + "\n" +
		`{"toolCalls": [{"name": "a", "id": "c1", "meta": {"Args": 1}}], "refused": [{"name": "b", "tags": []}]}` + "\n"
	_, _, err := readEntries(data, trace.Options{})
	if want := `trace: line 1: unknown key "step"`; err == nil || err.Error() != want {
		t.Errorf("strict: %v, want %s", err, want)
	}
	es, warnings, err := readEntries(data, trace.Options{UnknownKeys: trace.WarnUnknownKeys})
	wantWarnings := []string{
		`trace: line 1: unknown key "step"`,
		`trace: line 2: unknown key "timestamp"`,
		`trace: line 2: unknown key "usage.cached"`,
		`trace: line 3: unknown key "toolCalls[0].tags"`,
	}
	if err != nil || len(es) != 4 {
		t.Errorf("warn: %d entries, %v; want 4", len(es), err)
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	es2, warnings, err := readEntries(data, trace.Options{UnknownKeys: trace.IgnoreUnknownKeys})
	if err != nil || len(warnings) > 0 {
		t.Errorf("ignore: %v, warnings %q", err, warnings)
	}
	if diff := cmp.Diff(es, es2, errText); diff != "" {
		t.Errorf("ignored keys change the entries (-warn +ignore):\n%s", diff)
	}
	want := []guard.Step{
		{Text: "a"},
		{Text: "b", Usage: guard.Usage{InputTokens: 1}},
		{ToolCalls: []guard.ToolCall{{Name: "a"}, {Name: "b"}}},
		{ToolCalls: []guard.ToolCall{{ID: "c1", Name: "a"}}, Refused: []guard.ToolCall{{Name: "b"}}},
	}
	var got []guard.Step
	for _, e := range es {
		got = append(got, e.Step)
	}
	if diff := cmp.Diff(want, got, errText); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func withID(id string, c guard.ToolCall) guard.ToolCall {
	c.ID = id
	return c
}

func TestControlLines(t *testing.T) {
	data := `{"text": "a", "toolCalls": [{"name": "s", "args": {"q": 1}}]}` + "\n" +
		`{"preflight": {"name": "s", "args": {"q": 1}, "id": "c1"}}` + "\n" +
		`{"preflight": [{"name": "s"}, 3, {"name": "t", "args": [1]}], "meta": {"why": "x"}}` + "\n" +
		`{"preflight": null}` + "\n" +
		"\n" +
		`{"snapshot": true}` + "\n" +
		`{"reset": true, "meta": {}}` + "\n"
	es, _, err := readEntries(data, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Entry{
		{Kind: trace.StepEntry, Line: 1, Step: guard.Step{Text: "a", ToolCalls: []guard.ToolCall{call("s", raw(`{"q": 1}`), nil)}}},
		{Kind: trace.PreflightEntry, Line: 2, Calls: []guard.ToolCall{withID("c1", call("s", raw(`{"q": 1}`), nil))}},
		{Kind: trace.PreflightEntry, Line: 3, Calls: []guard.ToolCall{call("s", nil, nil), call("t", raw(`[1]`), nil)}},
		{Kind: trace.PreflightEntry, Line: 4},
		{Kind: trace.SnapshotEntry, Line: 6},
		{Kind: trace.ResetEntry, Line: 7},
	}
	if diff := cmp.Diff(want, es, errText); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	for _, k := range []trace.EntryKind{trace.StepEntry, trace.PreflightEntry, trace.SnapshotEntry, trace.ResetEntry, 9} {
		if k.String() == "" {
			t.Errorf("EntryKind %d has no name", k)
		}
	}

	for _, tt := range []struct{ line, want string }{
		{`{"snapshot": false}`, `"snapshot" must be true, not false`},
		{`{"reset": 1}`, `"reset" must be true, not 1`},
		{`{"snapshot": true, "reset": true}`, `a line with both "snapshot" and "reset": give each its own line`},
		{`{"preflight": {"name": "a"}, "text": "x"}`, `a preflight line holds "preflight" and nothing else (but "meta"), not "text"`},
		{`{"text": "x", "reset": true}`, `a reset line holds "reset" and nothing else (but "meta"), not "text"`},
	} {
		_, _, err := readEntries("{}\n"+tt.line, trace.Options{UnknownKeys: trace.IgnoreUnknownKeys})
		var te *trace.Error
		if !errors.As(err, &te) || te.Line != 2 || te.Err.Error() != tt.want {
			t.Errorf("%s: %v, want line 2: %s", tt.line, err, tt.want)
		}
	}

	// A Trace holds steps only.
	if _, err := trace.Parse([]byte("{}\n{\"reset\": true}\n"), trace.Unknown); err == nil ||
		err.Error() != "trace: line 2: a reset line, which a Trace cannot hold: read the log with a Reader" {
		t.Errorf("Parse of a reset line: %v", err)
	}
}

// TestReaderFormats checks how a Reader decides between step lines, read
// line by line, and transcripts, read whole.
func TestReaderFormats(t *testing.T) {
	openai := `{"role": "user", "content": "hi"}` + "\n" +
		`{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}` + "\n" +
		`{"role": "tool", "tool_call_id": "c1", "content": "ok"}` + "\n" +
		`{"role": "assistant", "content": "done", "finish_reason": "stop"}` + "\n"
	tests := []struct {
		name   string
		data   string
		opt    trace.Options
		format trace.Format
		lines  []int
		kinds  []trace.EntryKind
		err    string
	}{
		{name: "empty", data: "", format: trace.Steps},
		{name: "blank lines and a byte order mark", data: "\uFEFF\n \n", format: trace.Steps},
		{name: "step lines", data: "\n{}\n" + `{"preflight": []}` + "\n", format: trace.Steps, lines: []int{2, 3}, kinds: []trace.EntryKind{trace.StepEntry, trace.PreflightEntry}},
		{name: "a control line first", data: `{"reset": true}` + "\n{}", format: trace.Steps, lines: []int{1, 2}, kinds: []trace.EntryKind{trace.ResetEntry, trace.StepEntry}},
		{name: "an OpenAI transcript", data: openai, format: trace.OpenAI, lines: []int{2, 4}, kinds: []trace.EntryKind{trace.StepEntry, trace.StepEntry}},
		{name: "an OpenAI transcript after blank lines", data: "\n\n" + openai, format: trace.OpenAI, lines: []int{4, 6}, kinds: []trace.EntryKind{trace.StepEntry, trace.StepEntry}},
		{name: "an OpenAI transcript read as steps", data: openai, opt: trace.Options{Format: trace.Steps}, format: trace.Steps,
			err: `trace: line 1: unknown key "role" (an OpenAI or Anthropic message? read such logs as openai or anthropic)`},
		{name: "a transcript in an array", data: "[\n" + strings.ReplaceAll(strings.TrimSpace(openai), "\n", ",\n") + "\n]", format: trace.OpenAI, lines: []int{3, 5}, kinds: []trace.EntryKind{trace.StepEntry, trace.StepEntry}},
		{name: "an array of steps and control lines", data: `[{"text": "a"},` + "\n" + `{"snapshot": true}]`, format: trace.Steps, lines: []int{1, 2}, kinds: []trace.EntryKind{trace.StepEntry, trace.SnapshotEntry}},
		{name: "a first line that decides nothing", data: `{"x": 1}` + "\n" + `{"text": "a"}`, opt: trace.Options{UnknownKeys: trace.IgnoreUnknownKeys}, format: trace.Steps, lines: []int{1, 2}, kinds: []trace.EntryKind{trace.StepEntry, trace.StepEntry}},
		{name: "a first line that decides nothing, strictly", data: `{"x": 1}` + "\n" + `{"text": "a"}`, format: trace.Steps, err: `trace: line 1: unknown key "x"`},
		{name: "a step that spans lines", data: "{\n\"text\": \"a\"}\n", format: trace.Steps, err: "trace: line 1: invalid JSON: unexpected end of JSON input"},
		{name: "no format", data: `{"x": 1}` + "\n" + `{"y": 2}`, format: trace.Unknown, err: "trace: line 1: not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces"},
		{name: "not JSON", data: "hello\n", format: trace.Unknown, err: "trace: line 1: invalid JSON: invalid character 'h' looking for beginning of value"},
		{name: "a forced transcript", data: `{"role": "user", "content": "a"}`, opt: trace.Options{Format: trace.Anthropic}, format: trace.Anthropic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := trace.NewReader(strings.NewReader(tt.data), &tt.opt)
			var lines []int
			var kinds []trace.EntryKind
			var err error
			for {
				var e trace.Entry
				if e, err = r.Next(); err != nil {
					break
				}
				lines, kinds = append(lines, e.Line), append(kinds, e.Kind)
			}
			if err == io.EOF {
				err = nil
			}
			if fmt.Sprint(err) != fmt.Sprint(errors.New(tt.err)) && !(err == nil && tt.err == "") {
				t.Errorf("error %v, want %s", err, tt.err)
			}
			if _, again := r.Next(); err != nil && again != err {
				t.Errorf("Next after an error = %v, want the same error", again)
			}
			if r.Format() != tt.format {
				t.Errorf("format %v, want %v", r.Format(), tt.format)
			}
			if diff := cmp.Diff(tt.lines, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kinds, kinds); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTooLarge checks the limit at its boundary: MaxBytes bytes are read,
// one more is too large, for step lines and transcripts alike.
func TestTooLarge(t *testing.T) {
	steps := strings.Repeat(`{"text": "a"}`+"\n", 10)
	transcript := strings.Repeat(`{"role": "assistant", "content": "a"}`+"\n", 10)
	for _, data := range []string{steps, transcript} {
		n := int64(len(data))
		es, _, err := readEntries(data, trace.Options{MaxBytes: n})
		if err != nil || len(es) != 10 {
			t.Errorf("%d bytes under a limit of %d: %d entries, %v", n, n, len(es), err)
		}
		es, _, err = readEntries(data, trace.Options{MaxBytes: n - 1})
		var te *trace.Error
		if !errors.Is(err, trace.ErrTooLarge) || !errors.As(err, &te) || te.Line != 0 {
			t.Errorf("%d bytes under a limit of %d: %v, want ErrTooLarge", n, n-1, err)
		}
		if want := fmt.Sprintf("trace: too large: more than %d bytes", n-1); err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
		if data == steps && len(es) != 9 {
			t.Errorf("%d entries before the limit, want 9 (step lines are read as they come)", len(es))
		}
	}
	if _, _, err := readEntries(steps, trace.Options{MaxBytes: -1}); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

// endless is an input that never ends: the byte c, again and again.
type endless struct {
	c    byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.c
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestEndlessInput checks that input with no end, or one endless line, stops
// at the limit, for every format.
func TestEndlessInput(t *testing.T) {
	for _, c := range []byte{0, '\n', '['} {
		for _, f := range []trace.Format{trace.Unknown, trace.Steps, trace.OpenAI} {
			in := &endless{c: c}
			r := trace.NewReader(in, &trace.Options{Format: f, MaxBytes: 1 << 20})
			_, err := r.Next()
			if c == 0 && err != nil && !errors.Is(err, trace.ErrTooLarge) {
				continue // not JSON may be said before the limit
			}
			if !errors.Is(err, trace.ErrTooLarge) {
				t.Errorf("%q, %v: %v, want ErrTooLarge", c, f, err)
			}
			if in.read > 2<<20 {
				t.Errorf("%q, %v: read %d bytes under a limit of 1 MiB", c, f, in.read)
			}
		}
	}
}

// TestMemoryFollowsTheLongestLine reads 50 MB of newlines, and many short
// lines: what is allocated must not grow with the number of lines.
func TestMemoryFollowsTheLongestLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 50 MB")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	in := io.LimitReader(&endless{c: '\n'}, 50<<20)
	r := trace.NewReader(in, &trace.Options{MaxBytes: -1})
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next = %v, want io.EOF", err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("50 MB of newlines allocated %d bytes, want under 1 MiB", alloc)
	}
}

func TestReadError(t *testing.T) {
	r := trace.NewReader(io.MultiReader(strings.NewReader("{}\n{}\n"), &failing{}), nil)
	for range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.Next()
	var te *trace.Error
	if !errors.As(err, &te) || te.Line != 3 || te.Err.Error() != "disk on fire" {
		t.Errorf("Next = %v, want line 3: disk on fire", err)
	}
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestEntriesAreTheirOwn reads a log with short and long lines, keeping the
// entries: reading on must not change the arguments of earlier ones.
func TestEntriesAreTheirOwn(t *testing.T) {
	var log strings.Builder
	var want []string
	for i := range 300 {
		args := fmt.Sprintf(`{"i": %d, "pad": %q}`, i, strings.Repeat("x", i*i%20000))
		want = append(want, args)
		fmt.Fprintf(&log, `{"toolCalls": [{"name": "a", "args": %s}]}`+"\n", args)
	}
	es, _, err := readEntries(log.String(), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if got := string(e.Step.ToolCalls[0].Args.(json.RawMessage)); got != want[i] {
			t.Fatalf("entry %d: args %.60q, want %.60q", i, got, want[i])
		}
	}
}
