package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
)

// testdataFiles returns every file of the repository's testdata folders that
// audit would read in a directory.
func testdataFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{"../../testdata", "testdata"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "fuzz" {
				return filepath.SkipDir
			}
			switch filepath.Ext(path) {
			case ".jsonl", ".ndjson", ".json":
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 30 {
		t.Fatalf("only %d files in testdata", len(files))
	}
	return files
}

// firstStop is what replay and audit say about a run: the first stop (or
// none), the steps, or the error.
type firstStop struct {
	Run        string // "" for an input of one run
	Steps      int
	Line, Step int
	Code       string
	Error      string
}

// replayRuns replays a file with --all and sums up what it printed about
// each of its runs.
func replayRuns(t *testing.T, file string, flags ...string) []firstStop {
	t.Helper()
	res := runCmd(t, "", append(append([]string{"replay", "--all", "--format", "json"}, flags...), file)...)
	if res.code != exitOK {
		return []firstStop{{Error: strings.TrimSuffix(res.stderr, "\n")}}
	}
	if res.stdout == "" {
		return []firstStop{{}}
	}
	var runs []firstStop
	var fs *firstStop
	// The first fault is the stop; a normal finish is the stop only on the
	// last step (the harness went on after the others).
	var finish *firstStop
	lastLine := 0
	end := func() {
		if fs != nil && fs.Code == "" && finish != nil && finish.Line == lastLine {
			fs.Line, fs.Step, fs.Code = finish.Line, finish.Step, finish.Code
		}
	}
	for i, r := range decodeRecords(t, res.stdout) {
		if i == 0 || r.Run != fs.Run {
			end()
			runs = append(runs, firstStop{Run: r.Run})
			fs, finish, lastLine = &runs[len(runs)-1], nil, 0
		}
		if r.Kind != kindCheck {
			continue
		}
		fs.Steps++
		lastLine = r.Line
		var v guard.Verdict
		if err := json.Unmarshal(r.Verdict, &v); err != nil {
			t.Fatal(err)
		}
		switch {
		case fs.Code != "" || !v.Stop:
		case guard.IsFault(v):
			fs.Line, fs.Step, fs.Code = r.Line, *r.Step, v.Code
		default:
			finish = &firstStop{Line: r.Line, Step: *r.Step, Code: v.Code}
		}
	}
	end()
	if len(runs) == 1 {
		runs[0].Run = "" // audit names a file's only run by the file
	}
	return runs
}

// auditRuns audits one file and sums up the report of each of its runs.
func auditRuns(t *testing.T, file string, flags ...string) []firstStop {
	t.Helper()
	res := runCmd(t, "", append(append([]string{"audit", "--format", "json", "--fail-on", "never"}, flags...), file)...)
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	var runs []firstStop
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("audit %s: %v\n%s", file, err, res.stdout)
		}
		var kind struct{ Kind string }
		if err := json.Unmarshal(raw, &kind); err != nil || kind.Kind != "run" {
			break // the summary
		}
		var r runReport
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		var fs firstStop
		if name, run, ok := strings.Cut(r.Run, "#"); ok && name == file {
			fs.Run = run
		}
		if r.Error != nil {
			fs.Error = strings.TrimSuffix(res.stderr, "\n")
			if res.code != exitUsage {
				t.Errorf("audit %s: exit status %d for an unreadable run", file, res.code)
			}
			runs = append(runs, fs)
			continue
		}
		fs.Steps = r.Steps
		if s := r.Stop; s != nil {
			fs.Line, fs.Step, fs.Code = s.Line, s.Step, s.Code
		}
		runs = append(runs, fs)
	}
	return runs
}

// auditRun audits a file of one run and sums up its report.
func auditRun(t *testing.T, file string, flags ...string) firstStop {
	t.Helper()
	runs := auditRuns(t, file, flags...)
	if len(runs) != 1 {
		t.Fatalf("audit %s: %d runs, want 1", file, len(runs))
	}
	return runs[0]
}

// TestAuditAndReplayAgree reads every file in testdata with both commands:
// the same steps, the same first stop on the same line, the same error on
// the same line. replay is strict and audit warns of unknown keys, so each
// is also compared with the other's reading.
func TestAuditAndReplayAgree(t *testing.T) {
	stops, errs := 0, 0
	for _, file := range testdataFiles(t) {
		t.Run(file, func(t *testing.T) {
			replay, audit := replayRuns(t, file), auditRuns(t, file, "--strict")
			if diff := cmp.Diff(replay, audit); diff != "" {
				t.Errorf("replay and audit --strict differ (-replay +audit):\n%s", diff)
			}
			lenient, warn := replayRuns(t, file, "--lenient"), auditRuns(t, file)
			if diff := cmp.Diff(lenient, warn); diff != "" {
				t.Errorf("replay --lenient and audit differ (-replay +audit):\n%s", diff)
			}
			for _, run := range audit {
				if run.Code != "" {
					stops++
				}
				if run.Error != "" {
					errs++
				}
			}
		})
	}
	if stops < 12 || errs < 5 {
		t.Errorf("%d files stop and %d cannot be read: the comparison saw too little", stops, errs)
	}

	// The file: control lines are read as replay reads them.
	want := firstStop{Steps: 6, Line: 7, Step: 2, Code: "REPEATED_TOOL_CALL"}
	if got := auditRun(t, examples+"mixed.jsonl"); got != want {
		t.Errorf("audit of mixed.jsonl = %+v, want %+v", got, want)
	}
	dir := t.TempDir()
	controlFirst := filepath.Join(dir, "control-first.jsonl")
	os.WriteFile(controlFirst, []byte(`{"preflight": {"name": "a"}}`+"\n"+`{"snapshot": true}`+"\n"+strings.Repeat(`{"toolCalls": [{"name": "a"}]}`+"\n", 3)), 0o644)
	want = firstStop{Steps: 3, Line: 5, Step: 2, Code: "REPEATED_TOOL_CALL"}
	if got := auditRun(t, controlFirst); got != want {
		t.Errorf("audit of a file that starts with control lines = %+v, want %+v", got, want)
	}
}

// TestAuditInputs checks what audit says of inputs that are not ordinary
// runs: empty, missing, with annotations, too large, endless.
func TestAuditInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	empty := write("empty.jsonl", "")
	blank := write("blank.jsonl", "\n\n  \n")
	controls := write("controls.jsonl", `{"reset": true}`+"\n")
	annotated := write("annotated.jsonl", strings.Repeat(`{"text": "a", "step": 1, "toolCalls": [{"name": "x", "tags": []}]}`+"\n", 2))
	annotated2 := write("annotated2.jsonl", `{"text": "a"}`+"\n"+`{"text": "b", "step": 2}`+"\n")
	spelt := write("spelt.jsonl", `{"text": "a"}`+"\n"+`{"tool_calls": []}`+"\n")
	loop := write("loop.jsonl", strings.Repeat(`{"toolCalls": [{"name": "s", "args": {}}]}`+"\n", 3))
	missing := filepath.Join(dir, "missing.jsonl")

	tests := []struct {
		name   string
		args   []string
		stdin  io.Reader
		code   int
		stdout string // a text the output holds
		stderr string // exactly
	}{
		{name: "an empty file", args: []string{"audit", "--format", "json", empty}, code: exitUsage,
			stdout: `{"kind":"run","run":"` + empty + `","format":"steps","steps":0,"empty":true}`,
			stderr: empty + ": empty: no steps\n"},
		{name: "an empty file in the totals", args: []string{"audit", "--format", "json", empty, loop}, code: exitUsage,
			stdout: `"clean":0,"finished":0,"faults":1,"byReason":{"repeated-tool-call":1},"unreadable":0,"empty":1`,
			stderr: empty + ": empty: no steps\n"},
		{name: "blank lines", args: []string{"audit", blank}, code: exitUsage, stdout: "0      -      empty: no steps\n\n1 run: 0 stopped on a fault, 0 finished normally, 0 clean, 1 empty\n",
			stderr: blank + ": empty: no steps\n"},
		{name: "control lines only", args: []string{"audit", controls}, code: exitUsage, stdout: "empty: no steps", stderr: controls + ": empty: no steps\n"},
		{name: "empty standard input", args: []string{"audit", "-"}, stdin: strings.NewReader(""), code: exitUsage, stdout: "<stdin>", stderr: "<stdin>: empty: no steps\n"},
		{name: "a missing file", args: []string{"audit", "--format", "json", missing, loop}, code: exitUsage,
			stdout: `{"kind":"run","run":"` + missing + `","steps":0,"error":{"message":"no such file or directory"}}`,
			stderr: missing + ": no such file or directory\n"},
		{name: "a missing file in the table", args: []string{"audit", missing}, code: exitUsage,
			stdout: "-      -      unreadable\n    no such file or directory\n",
			stderr: missing + ": no such file or directory\n"},
		{name: "annotations: one warning per key and file", args: []string{"audit", "--fail-on", "never", annotated, annotated2}, code: exitOK, stdout: "no stop",
			stderr: annotated + `:1: unknown key "step" (ignored; --strict makes it an error)` + "\n" +
				annotated + `:1: unknown key "toolCalls[0].tags" (ignored; --strict makes it an error)` + "\n" +
				annotated2 + `:2: unknown key "step" (ignored; --strict makes it an error)` + "\n"},
		{name: "annotations with --strict", args: []string{"audit", "--strict", annotated}, code: exitUsage, stdout: "unreadable",
			stderr: annotated + `:1: unknown key "step"` + "\n"},
		{name: "a misspelt key", args: []string{"audit", spelt}, code: exitUsage, stdout: "unreadable",
			stderr: spelt + `:2: unknown key "tool_calls" (did you mean "toolCalls"?)` + "\n"},
		{name: "a file of --max-size, and one larger", args: []string{"audit", "--max-size", "129", loop, annotated}, code: exitUsage, stdout: "REPEATED_TOOL_CALL",
			stderr: annotated + ": too large: more than 129 bytes (see --max-size)\n"},
		{name: "standard input larger than --max-size", args: []string{"audit", "--max-size", "1K", "-", loop}, stdin: &endless{c: '\n'}, code: exitUsage, stdout: "REPEATED_TOOL_CALL",
			stderr: "<stdin>: too large: more than 1K (see --max-size)\n"},
		{name: "endless standard input, default limit", args: []string{"audit", "-"}, stdin: &endless{c: '{'}, code: exitUsage, stdout: "unreadable",
			stderr: "<stdin>: too large: more than 64M (see --max-size)\n"},
		{name: "no limit", args: []string{"audit", "--max-size", "0", loop}, code: exitFailed, stdout: "REPEATED_TOOL_CALL"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		tests = append(tests, struct {
			name   string
			args   []string
			stdin  io.Reader
			code   int
			stdout string
			stderr string
		}{name: "/dev/zero", args: []string{"audit", "--max-size", "1M", "/dev/zero", loop}, code: exitUsage, stdout: "REPEATED_TOOL_CALL",
			stderr: "/dev/zero: too large: more than 1M (see --max-size)\n"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdin := tt.stdin
			if stdin == nil {
				stdin = strings.NewReader("")
			}
			var stdout, stderr strings.Builder
			code := run(tt.args, stdin, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout does not hold %q:\n%s", tt.stdout, stdout.String())
			}
			if diff := cmp.Diff(tt.stderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// endless is an input that never ends.
type endless struct{ c byte }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.c
	}
	return len(p), nil
}

// TestReplayEndlessInput checks that replay stops reading at --max-size.
func TestReplayEndlessInput(t *testing.T) {
	for _, c := range []byte{'\n', 0, '{'} {
		var stdout, stderr strings.Builder
		code := run([]string{"replay", "--max-size", "1M", "-"}, &endless{c: c}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "too large: more than 1M") && c != 0 {
			t.Errorf("%q: exit %d, stderr %q", c, code, stderr.String())
		}
	}
}

// TestEscaping feeds file names and tool names with control characters to
// both commands: nothing they print for people may hold one.
func TestEscaping(t *testing.T) {
	dir := t.TempDir()
	evilName := "evil\n\x1b[31mrow.jsonl"
	path := filepath.Join(dir, evilName)
	a, b := "a\x1b]0;pwned\x07", "b\nfake row\r"
	var steps strings.Builder
	for range 3 {
		for _, name := range []string{a, b} {
			line, _ := json.Marshal(map[string]any{"toolCalls": []any{map[string]any{"name": name, "args": map[string]any{"q": "\x1b[2J"}}}})
			steps.Write(append(line, '\n'))
		}
	}
	if err := os.WriteFile(path, []byte(steps.String()), 0o644); err != nil {
		t.Skipf("this file system does not take such a name: %v", err)
	}
	broken := filepath.Join(dir, "\x1b[2Jbroken.jsonl")
	os.WriteFile(broken, []byte("{\"text\": \"\x1b\"}\n"), 0o644)
	annotated := filepath.Join(dir, "keys.jsonl")
	os.WriteFile(annotated, []byte(`{"te\u001bxt": 1}`+"\n"), 0o644)
	config := filepath.Join(dir, "bad\nconfig\x1b[2J.json")
	os.WriteFile(config, []byte("{\"\x1b[2J\": 1, \"maxSteps\": \"\x1b\"}"), 0o644)

	check := func(what, out string) {
		t.Helper()
		for _, r := range out {
			if r != '\n' && (r < 0x20 || r == 0x7f) {
				t.Errorf("%s holds %q:\n%s", what, r, out)
				return
			}
		}
	}
	for _, args := range [][]string{
		{"audit", dir},
		{"audit", "--strict", dir},
		{"replay", "--all", path},
		{"replay", broken},
		{"replay", annotated},
		{"replay", "--config", config, annotated},
		{"audit", "--config", config, dir},
		{"audit", "--input", "\x1b[2J", dir},
	} {
		res := runCmd(t, "", args...)
		check(fmt.Sprintf("%q stdout", args), res.stdout)
		check(fmt.Sprintf("%q stderr", args), res.stderr)
		if args[0] == "audit" && len(args) == 2 {
			if !strings.Contains(res.stdout, `evil\n\x1b[31mrow.jsonl`) {
				t.Errorf("%q: the run's name is not escaped:\n%s", args, res.stdout)
			}
			if !strings.Contains(res.stderr, `\x1b[2Jbroken.jsonl`) {
				t.Errorf("%q: the broken file's name is not escaped:\n%s", args, res.stderr)
			}
			checkWidth(t, res.stdout)
		}
	}
}

// checkWidth checks that a table fits 80 columns.
func checkWidth(t *testing.T, table string) {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if width(line) > 80 {
			t.Errorf("a line of %d columns: %q", width(line), line)
		}
	}
}

// TestTableFits checks the table's layout at its limits: long names are cut
// from the left, long details wrapped to two lines and cut.
func TestTableFits(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("a-very-long-directory-name/", 3))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("x", 60) + ".jsonl"
	args := fmt.Sprintf(`{"q": %q}`, strings.Repeat("word ", 100))
	os.WriteFile(filepath.Join(long, name), []byte(strings.Repeat(`{"toolCalls": [{"name": "search", "args": `+args+`}]}`+"\n", 3)), 0o644)
	os.WriteFile(filepath.Join(dir, "short.jsonl"), []byte("{}\n"), 0o644)
	res := runCmd(t, "", "audit", dir)
	checkWidth(t, res.stdout)
	lines := strings.Split(res.stdout, "\n")
	if !strings.HasPrefix(lines[1], "..."+strings.Repeat("x", 20)) || !strings.HasPrefix(lines[2], "    tool \"search\" called 3 times") ||
		!strings.HasSuffix(lines[3], "...") || !strings.HasPrefix(lines[4], "short.jsonl") {
		t.Errorf("table:\n%s", res.stdout)
	}
}

// TestAuditDoesNotHang audits a directory with a named pipe in it, which
// would wait for a writer forever if it were opened.
func TestAuditDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, "pipe.jsonl")); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	loop := strings.Repeat(`{"toolCalls": [{"name": "s", "args": {}}]}`+"\n", 3)
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(loop), 0o644)
	os.WriteFile(filepath.Join(dir, "b-newlines.jsonl"), []byte(strings.Repeat("\n", 3<<20)), 0o644)
	os.WriteFile(filepath.Join(dir, "c-newlines.jsonl"), []byte(strings.Repeat("\n", 1<<20)), 0o644)
	os.WriteFile(filepath.Join(dir, "z.jsonl"), []byte(loop), 0o644)
	done := make(chan result, 1)
	go func() { done <- runCmd(t, "", "audit", "--format", "json", "--max-size", "2M", dir) }()
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("audit hangs on a named pipe")
	}
	wantErr := filepath.Join(dir, "pipe.jsonl") + ": skipped: not a regular file\n" +
		filepath.Join(dir, "b-newlines.jsonl") + ": too large: more than 2M (see --max-size)\n" +
		filepath.Join(dir, "c-newlines.jsonl") + ": empty: no steps\n"
	if res.code != exitUsage || res.stderr != wantErr {
		t.Errorf("exit %d, stderr:\n%s\nwant %d and:\n%s", res.code, res.stderr, exitUsage, wantErr)
	}
	var runs []string
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	for dec.More() {
		var r struct {
			Kind, Run string
			Empty     json.RawMessage // a number in the summary
			Error     *inputError
			Stop      *stopReport
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Kind != "run":
		case r.Error != nil:
			runs = append(runs, filepath.Base(r.Run)+" error")
		case string(r.Empty) == "true":
			runs = append(runs, filepath.Base(r.Run)+" empty")
		default:
			runs = append(runs, filepath.Base(r.Run)+" "+r.Stop.Code)
		}
	}
	want := []string{"a.jsonl REPEATED_TOOL_CALL", "b-newlines.jsonl error", "c-newlines.jsonl empty", "z.jsonl REPEATED_TOOL_CALL"}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// TestDocSizeLimit gives --config (audit and replay) and --labels files one
// byte over maxDocSize, and /dev/zero: each is refused with a clear error
// and exit 2, after reading at most maxDocSize+1 bytes. A file of exactly
// maxDocSize bytes is read.
func TestDocSizeLimit(t *testing.T) {
	dir := t.TempDir()
	padded := func(name, doc string, size int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, append(bytes.Repeat([]byte{' '}, size-len(doc)), doc...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := filepath.Join(dir, "run.jsonl")
	os.WriteFile(run, []byte("{}\n"), 0o644)
	atLimit := padded("at.json", "{}", maxDocSize)
	over := padded("over.json", "{}", maxDocSize+1)
	manifestAt := padded("at-manifest.json", "[]", maxDocSize)
	manifestOver := padded("over-manifest.json", "[]", maxDocSize+1)
	tooLarge := ": too large: more than 16M (options files and manifests are read whole)"
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"audit", "--config", atLimit, run}, exitOK, ""},
		{[]string{"replay", "--config", atLimit, run}, exitOK, ""},
		{[]string{"audit", "--labels", manifestAt, run}, exitOK, "loopguard audit: warning: 1 run is not in " + manifestAt + "\n"},
		{[]string{"audit", "--config", over, run}, exitUsage, "config: " + over + tooLarge + "\n"},
		{[]string{"replay", "--config", over, run}, exitUsage, "config: " + over + tooLarge + "\n"},
		{[]string{"audit", "--labels", manifestOver, run}, exitUsage,
			"loopguard audit: --labels: " + manifestOver + tooLarge + " (run \"loopguard audit --help\" for the flags)\n"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		tests = append(tests, []struct {
			args   []string
			code   int
			stderr string
		}{
			{[]string{"audit", "--config", "/dev/zero", run}, exitUsage, "config: /dev/zero" + tooLarge + "\n"},
			{[]string{"replay", "--config", "/dev/zero", run}, exitUsage, "config: /dev/zero" + tooLarge + "\n"},
			{[]string{"audit", "--labels", "/dev/zero", run}, exitUsage,
				"loopguard audit: --labels: /dev/zero" + tooLarge + " (run \"loopguard audit --help\" for the flags)\n"},
		}...)
	}
	for _, tt := range tests {
		res := runCmd(t, "", tt.args...)
		if res.code != tt.code || res.stderr != tt.stderr {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", tt.args, res.code, res.stderr, tt.code, tt.stderr)
		}
	}
}
