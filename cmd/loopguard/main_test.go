package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// examples is the folder of the bundled traces.
const examples = "../../testdata/examples/"

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// TestGolden replays the bundled traces and compares the output with
// testdata/NAME.golden. Run "go test ./cmd/loopguard -update" to rewrite them
// after a deliberate change, and read the diff.
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"search-loop", []string{"replay", examples + "search-loop.jsonl"}},
		{"search-loop-all", []string{"replay", "--all", examples + "search-loop.jsonl"}},
		{"search-loop-all-json", []string{"replay", "--all", "--format", "json", examples + "search-loop.jsonl"}},
		{"search-loop-json", []string{"replay", "--format=json", examples + "search-loop.jsonl"}},
		{"ping-pong-all", []string{"replay", "--all", examples + "ping-pong.jsonl"}},
		{"ping-pong-all-json", []string{"replay", "--all", "--format", "json", examples + "ping-pong.jsonl"}},
		{"mixed", []string{"replay", examples + "mixed.jsonl"}},
		{"mixed-all", []string{"replay", "--all", examples + "mixed.jsonl"}},
		{"mixed-all-json", []string{"replay", "--format", "json", examples + "mixed.jsonl", "--all"}},
		{"mixed-polling-all", []string{"replay", "--config", examples + "polling.json", "--all", examples + "mixed.jsonl"}},
		{"mixed-polling-all-json", []string{"replay", "--config", examples + "polling.json", "--all", "--format", "json", examples + "mixed.jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, "", tt.args...)
			if res.code != exitOK || res.stderr != "" {
				t.Fatalf("run(%q) = %d, stderr %q; want 0 and nothing", tt.args, res.code, res.stderr)
			}
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(res.stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), res.stdout); diff != "" {
				t.Errorf("run(%q) output differs from %s (-want +got):\n%s", tt.args, golden, diff)
			}
		})
	}
}

// TestJSONOutputIsOneObjectPerLine checks the contract of --format json on
// every bundled trace: one object per non-blank input line, in order, each
// with its line number and kind, until the first stop unless --all.
func TestJSONOutputIsOneObjectPerLine(t *testing.T) {
	traces, err := filepath.Glob(examples + "*.jsonl")
	if err != nil || len(traces) < 3 {
		t.Fatalf("bundled traces: %v, %v", traces, err)
	}
	for _, trace := range traces {
		in, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		var wantLines []int
		for i, line := range strings.Split(strings.TrimRight(string(in), "\n"), "\n") {
			if strings.TrimSpace(line) != "" {
				wantLines = append(wantLines, i+1)
			}
		}
		res := runCmd(t, "", "replay", "--all", "--format", "json", trace)
		recs := decodeRecords(t, res.stdout)
		var gotLines []int
		for _, r := range recs {
			gotLines = append(gotLines, r.Line)
			switch r.Kind {
			case kindCheck:
				if r.Step == nil || r.Verdict == nil {
					t.Errorf("%s: a check record without step or verdict: %+v", trace, r)
				}
			case kindPreflight:
				if r.Decision == nil {
					t.Errorf("%s: a preflight record without decision", trace)
				}
			case kindSnapshot:
				if r.Bytes == nil || *r.Bytes <= 0 {
					t.Errorf("%s: a snapshot record without bytes", trace)
				}
			case kindReset:
			default:
				t.Errorf("%s: unknown kind %q", trace, r.Kind)
			}
		}
		if diff := cmp.Diff(wantLines, gotLines); diff != "" {
			t.Errorf("%s: line numbers of the records (-want +got):\n%s", trace, diff)
		}
	}
}

// jsonRecord is a record as a reader of the JSON output sees it.
type jsonRecord struct {
	Line     int             `json:"line"`
	Run      string          `json:"run"`
	Kind     string          `json:"kind"`
	Step     *int            `json:"step"`
	Verdict  json.RawMessage `json:"verdict"`
	Decision json.RawMessage `json:"decision"`
	Bytes    *int            `json:"bytes"`
}

func decodeRecords(t *testing.T, out string) []jsonRecord {
	t.Helper()
	var recs []jsonRecord
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var r jsonRecord
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestSnapshotChangesNothing replays each bundled trace twice, the second
// time with a snapshot (a real JSON round trip into fresh detectors) after
// every line, and checks that every verdict and decision is the same.
func TestSnapshotChangesNothing(t *testing.T) {
	traces, _ := filepath.Glob(examples + "*.jsonl")
	for _, trace := range traces {
		for _, config := range []string{"", examples + "polling.json"} {
			in, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			var withSnapshots strings.Builder
			for _, line := range strings.SplitAfter(string(in), "\n") {
				withSnapshots.WriteString(line)
				withSnapshots.WriteString("\n{\"snapshot\": true}\n")
			}
			args := []string{"replay", "--all", "--format", "json", "-"}
			if config != "" {
				args = append(args, "--config", config)
			}
			plain := runCmd(t, string(in), args...)
			snapped := runCmd(t, withSnapshots.String(), args...)
			if plain.code != 0 || snapped.code != 0 {
				t.Fatalf("%s: exit %d / %d, stderr %q / %q", trace, plain.code, snapped.code, plain.stderr, snapped.stderr)
			}
			if diff := cmp.Diff(answers(t, plain.stdout), answers(t, snapped.stdout)); diff != "" {
				t.Errorf("%s (config %q): verdicts differ after snapshots (-plain +with snapshots):\n%s", trace, config, diff)
			}
		}
	}
}

// answers returns the verdicts and decisions of a JSON output, without line
// numbers.
func answers(t *testing.T, out string) []string {
	var got []string
	snapshots := 0
	for _, r := range decodeRecords(t, out) {
		switch r.Kind {
		case kindCheck:
			got = append(got, string(r.Verdict))
		case kindPreflight:
			got = append(got, string(r.Decision))
		case kindSnapshot:
			snapshots++
		default:
			got = append(got, r.Kind)
		}
	}
	return got
}

func TestExitPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notJSON := write("not-json.json", "maxSteps: 3\n")
	twoProblems := write("two.json", `{"maxStep": 3, "tools": {"search": {"maxCalls": -1}}}`)
	good := write("good.json", `{"maxSteps": 2}`)
	trace := write("trace.jsonl", "{\"text\": \"a\"}\n\n[1, 2]\n")
	// The OpenAI user: four identical calls, spelt as OpenAI spells them.
	openAISpelling := strings.Repeat(`{"tool_calls": [{"name": "search", "args": {"q": 1}}], "finish_reason": "tool_calls"}`+"\n", 4)
	help := func(cmd string) string { return " (run \"loopguard " + cmd + " --help\" for the flags)\n" }

	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // exact, unless prefixed with "~" (contains)
		stderr string // likewise
	}{
		{"no arguments", nil, "", exitUsage, "", "~Commands:"},
		{"help", []string{"help"}, "", exitOK, "~replay   feed a trace", ""},
		{"--help", []string{"--help"}, "", exitOK, "~Commands:", ""},
		{"help replay", []string{"help", "replay"}, "", exitOK, "~Usage: loopguard replay [--config FILE]", ""},
		{"help of an unknown command", []string{"help", "nope"}, "", exitUsage, "",
			"loopguard help: unknown command \"nope\" (run \"loopguard help\" for the commands)\n"},
		{"unknown command", []string{"nope"}, "", exitUsage, "", "loopguard: unknown command \"nope\" (run \"loopguard help\" for the commands)\n"},
		{"unknown flag before a command", []string{"--bogus"}, "", exitUsage, "", "loopguard: unknown flag \"--bogus\" (run \"loopguard help\" for the commands)\n"},
		{"replay -h", []string{"replay", "-h"}, "", exitOK, "~\n  --format format\n    \toutput format: text or json (default \"text\")\n", ""},
		{"replay --help", []string{"replay", "--help"}, "", exitOK, "~Usage: loopguard replay", ""},
		{"replay without a trace", []string{"replay"}, "", exitUsage, "",
			"loopguard replay: want one trace file (or - for standard input), got 0 arguments" + help("replay")},
		{"replay with two traces", []string{"replay", "a", "b"}, "", exitUsage, "",
			"loopguard replay: want one trace file (or - for standard input), got 2 arguments" + help("replay")},
		{"replay with a bad format", []string{"replay", "--format", "yaml", "-"}, "", exitUsage, "",
			"loopguard replay: --format must be text or json, not \"yaml\"" + help("replay")},
		{"replay with a bad input format", []string{"replay", "--input", "gemini", "-"}, "", exitUsage, "",
			"loopguard replay: --input must be auto, steps, openai, anthropic or otlp, not \"gemini\"" + help("replay")},
		{"replay with an unknown flag", []string{"replay", "--bogus", "-"}, "", exitUsage, "", "loopguard replay: unknown flag --bogus" + help("replay")},
		{"replay with an unknown flag, one dash", []string{"replay", "-bogus", "-"}, "", exitUsage, "", "loopguard replay: unknown flag --bogus" + help("replay")},
		{"replay with a flag without its value", []string{"replay", "-", "--config"}, "", exitUsage, "", "loopguard replay: flag needs an argument: --config" + help("replay")},
		{"replay with a bad size", []string{"replay", "--max-size", "lots", "-"}, "", exitUsage, "",
			"loopguard replay: invalid value \"lots\" for flag --max-size: want a number of bytes such as 1048576, 512K, 64M or 2G (0: no limit), not \"lots\"" + help("replay")},
		{"replay of a missing file", []string{"replay", filepath.Join(dir, "missing.jsonl")}, "", exitUsage, "",
			filepath.Join(dir, "missing.jsonl") + ": no such file or directory\n"},
		{"replay of blank and control lines only", []string{"replay", "-"}, "\n" + `{"reset": true}` + "\n", exitUsage, "line 2: reset\n", "<stdin>: empty: no steps\n"},
		{"replay of a directory", []string{"replay", dir}, "", exitUsage, "",
			dir + ": is a directory (replay reads one trace; audit reads directories)\n"},
		{"a missing config", []string{"replay", "--config", filepath.Join(dir, "missing.json"), "-"}, "", exitUsage, "",
			"config: open " + filepath.Join(dir, "missing.json") + ": no such file or directory\n"},
		{"a config that is not JSON", []string{"replay", "--config", notJSON, "-"}, "", exitUsage, "",
			"config: " + notJSON + ": invalid option: the options are not a JSON object: invalid character 'm' looking for beginning of value\n"},
		{"a config with two problems", []string{"replay", "--config", twoProblems, "-"}, "", exitUsage, "",
			"config: " + twoProblems + ": option maxStep: unknown option (did you mean \"maxSteps\"?)\n" +
				"config: " + twoProblems + ": toollimit: option tools.search.maxCalls: must be a whole number >= 0, not -1\n"},
		{"a good config", []string{"replay", "--config", good, "-"}, "{}\n{}\n{}\n", exitOK,
			"line 1: step 0: go on\nline 2: step 1: stop: max-steps (MAX_STEPS): ~", ""},

		{"a line that is not JSON", []string{"replay", "-"}, "{\"text\": \"a\"}\n{\"text\": }\n", exitUsage,
			"line 1: step 0: go on\n", "<stdin>:2: invalid JSON: invalid character '}' looking for beginning of value\n"},
		{"a line that is an array, after a blank line", []string{"replay", trace}, "", exitUsage,
			"line 1: step 0: go on\n", trace + ":3: a step must be a JSON object, not an array\n"},
		{"a first line that is a string", []string{"replay", "-"}, "\"hello\"\n", exitUsage, "",
			"<stdin>:1: not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces: a string, not an object\n"},
		{"a first line that is a number", []string{"replay", "-"}, "42\n", exitUsage, "",
			"<stdin>:1: not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces: a number, not an object\n"},
		{"a line that is a string", []string{"replay", "-"}, "{}\n\"hello\"\n", exitUsage, "line 1: step 0: go on\n",
			"<stdin>:2: a step must be a JSON object, not a string\n"},
		{"two objects on a line", []string{"replay", "-"}, "{}\n{} {}\n", exitUsage, "line 1: step 0: go on\n",
			"<stdin>:2: invalid JSON: invalid character '{' after top-level value\n"},
		{"a truncated last line", []string{"replay", "-"}, "{}\n{\"text\": \"a", exitUsage, "line 1: step 0: go on\n", "<stdin>:2: invalid JSON: unexpected end of JSON input\n"},
		{"an unreadable line after a stop is not read", []string{"replay", "-"}, "{\"finishReason\": \"length\"}\nnot json\n", exitOK,
			"~line 1: step 0: stop: finish-reason (FINISH_TERMINAL): finish reason \"length\" is terminal", ""},
		{"a normal finish is no stop of the replay", []string{"replay", "-"}, "{\"finishReason\": \"stop\"}\nnot json\n", exitUsage,
			"line 1: step 0: stop: finish-reason (FINISH_TERMINAL): finish reason \"stop\" is terminal\n",
			"<stdin>:2: invalid JSON: invalid character 'o' in literal null (expecting 'u')\n"},
		{"an unreadable line after a stop, with --all", []string{"replay", "--all", "-"}, "{\"finishReason\": \"stop\"}\nnot json\n", exitUsage,
			"~line 1: step 0: stop", "<stdin>:2: invalid JSON: invalid character 'o' in literal null (expecting 'u')\n"},

		{"OpenAI spellings are an error", []string{"replay", "-"}, openAISpelling, exitUsage, "",
			"<stdin>:1: unknown key \"tool_calls\" (did you mean \"toolCalls\"?)\n"},
		{"OpenAI spellings are an error even with --lenient", []string{"replay", "--lenient", "-"}, openAISpelling, exitUsage, "",
			"<stdin>:1: unknown key \"tool_calls\" (did you mean \"toolCalls\"?)\n"},
		{"the right spelling", []string{"replay", "-"}, strings.ReplaceAll(strings.ReplaceAll(openAISpelling, "tool_calls\"", "toolCalls\""), "finish_reason", "finishReason"), exitOK,
			"line 1: step 0: go on\nline 2: step 1: go on\nline 3: step 2: stop: repeated-tool-call (REPEATED_TOOL_CALL): ~", ""},
		{"a call's key in another case", []string{"replay", "-"}, "{}\n" + `{"toolCalls": [{"name": "a", "Args": {}}]}` + "\n", exitUsage, "line 1: step 0: go on\n",
			"<stdin>:2: unknown key \"toolCalls[0].Args\" (did you mean \"args\"?)\n"},
		{"an unknown key", []string{"replay", "-"}, `{"text": "a", "step": 1}` + "\n", exitUsage, "", "<stdin>:1: unknown key \"step\"\n"},
		{"an unknown key with --lenient", []string{"replay", "--lenient", "-"}, `{"text": "a", "step": 1}` + "\n", exitOK, "line 1: step 0: go on\n", ""},
		{"annotations under meta", []string{"replay", "-"}, `{"text": "a", "meta": {"step": 1, "tool_calls": []}, "toolCalls": [{"name": "x", "id": "c1", "meta": {}}], "refused": [{"name": "y", "args": {}}]}` + "\n", exitOK,
			"line 1: step 0: go on\n", ""},
		{"a provider's message among step lines", []string{"replay", "-"}, "{}\n" + `{"role": "assistant", "content": "a"}` + "\n", exitUsage, "line 1: step 0: go on\n",
			"<stdin>:2: unknown key \"role\" (an OpenAI or Anthropic message? use --input openai or --input anthropic)\n"},
		{"a transcript read as steps", []string{"replay", "--input", "steps", "-"}, `{"role": "user", "content": "a"}` + "\n", exitUsage, "",
			"<stdin>:1: unknown key \"role\" (an OpenAI or Anthropic message? use --input openai or --input anthropic)\n"},
		{"an OpenAI transcript", []string{"replay", "-"}, `{"role": "user", "content": "hi"}` + "\n" + `{"role": "assistant", "content": "hello", "finish_reason": "stop"}` + "\n", exitOK,
			"line 2: step 0: stop: finish-reason (FINISH_TERMINAL): finish reason \"stop\" is terminal\n", ""},
		{"steps read as a transcript", []string{"replay", "--input", "openai", "-"}, "{\"text\": \"a\"}\n", exitUsage, "",
			"<stdin>:1: not an OpenAI message (no role) or chat completion (no choices)\n"},

		{"a trace larger than --max-size", []string{"replay", "--max-size", "20", "-"}, "{\"text\": \"a\"}\n{\"text\": \"b\"}\n", exitUsage,
			"line 1: step 0: go on\n", "<stdin>: too large: more than 20 bytes (see --max-size)\n"},
		{"a trace of exactly --max-size", []string{"replay", "--max-size", "28", "-"}, "{\"text\": \"a\"}\n{\"text\": \"b\"}\n", exitOK,
			"line 1: step 0: go on\nline 2: step 1: go on\n", ""},
		{"a file larger than --max-size", []string{"replay", "--max-size", "10", trace}, "", exitUsage, "", trace + ": too large: more than 10 bytes (see --max-size)\n"},
		{"a file within --max-size", []string{"replay", "--max-size", "1K", trace}, "", exitUsage, "line 1: step 0: go on\n", "~" + trace + ":3:"},
		{"no limit", []string{"replay", "--max-size", "0", "-"}, "{}\n", exitOK, "line 1: step 0: go on\n", ""},

		{"an empty trace", []string{"replay", "-"}, "", exitUsage, "", "<stdin>: empty: no steps\n"},
		{"only blank lines", []string{"replay", "-"}, "\n  \n\t\n", exitUsage, "", "<stdin>: empty: no steps\n"},
		{"odd values are ignored", []string{"replay", "-"},
			`{"text": 5, "toolCalls": "x", "finishReason": 7, "usage": {"inputTokens": -1, "costUsd": "free", "durationMs": 1e999}}` + "\n" +
				`{"toolCalls": [1, "a", null, {"name": 3}, {"args": {}}, {"name": "ok", "args": "not json", "error": {"code": 1}}], "usage": []}` + "\n" +
				`{"text": null, "input": 3, "userReply": [], "meta": {"deep": [1, 2]}}` + "\n",
			exitOK, "line 1: step 0: go on\nline 2: step 1: go on\nline 3: step 2: go on\n", ""},
		{"a byte order mark and CRLF line ends", []string{"replay", "-"}, "\uFEFF{\"text\": \"a\"}\r\n{\"text\": \"b\"}\r\n", exitOK,
			"line 1: step 0: go on\nline 2: step 1: go on\n", ""},
		{"preflight of odd values", []string{"replay", "-"}, "{\"preflight\": null}\n{\"preflight\": \"search\"}\n{\"preflight\": []}\n{\"preflight\": [3, {\"name\": 1}]}\n", exitOK,
			"line 1: preflight: allow\nline 2: preflight: allow\nline 3: preflight: allow\nline 4: preflight: allow\n", ""},
		{"a refused preflight does not end the replay", []string{"replay", "-"},
			strings.Repeat(`{"toolCalls": [{"name": "s", "args": {"q": 1}}]}`+"\n", 2) + `{"preflight": {"name": "s", "args": {"q": 1}}}` + "\n" + `{"text": "done"}` + "\n",
			exitOK, "line 1: step 0: go on\nline 2: step 1: go on\nline 3: preflight: refuse: repeated-tool-call (REPEATED_TOOL_CALL): ~line 4: step 2: go on\n", ""},
		{"snapshot and reset", []string{"replay", "-"}, "{}\n{}\n{\"reset\": true}\n{\"snapshot\": true, \"meta\": {\"why\": \"x\"}}\n", exitOK,
			"line 1: step 0: go on\nline 2: step 1: go on\nline 3: reset\nline 4: snapshot: saved and restored (~", ""},
		{"a snapshot that is not true", []string{"replay", "-"}, "{\"snapshot\": false}\n", exitUsage, "", "<stdin>:1: \"snapshot\" must be true, not false\n"},
		{"a reset with a step's key", []string{"replay", "-"}, "{\"reset\": true, \"text\": \"a\"}\n", exitUsage, "",
			"<stdin>:1: a reset line holds \"reset\" and nothing else (but \"meta\"), not \"text\"\n"},
		{"flags after the trace", []string{"replay", "-", "--format", "json"}, "{}\n", exitOK,
			"{\"line\":1,\"kind\":\"check\",\"step\":0,\"verdict\":{\"stop\":false}}\n", ""},
		{"a trace named like a flag, after --", []string{"replay", "--", "-"}, "{}\n", exitOK, "line 1: step 0: go on\n", ""},

		{"version", []string{"version"}, "", exitOK, "~loopguard ", ""},
		{"--version", []string{"--version"}, "", exitOK, "~loopguard ", ""},
		{"version with an argument", []string{"version", "x"}, "", exitUsage, "", "loopguard version: version takes no arguments" + help("version")},
		{"help version", []string{"help", "version"}, "", exitOK, "~Usage: loopguard version", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, tt.stdin, tt.args...)
			if res.code != tt.code {
				t.Errorf("exit status %d, want %d (stderr %q)", res.code, tt.code, res.stderr)
			}
			check := func(what, got, want string) {
				if rest, ok := strings.CutPrefix(want, "~"); ok {
					// Contains, or for an exact start followed by "~", starts with.
					if head, tail, ok := strings.Cut(rest, "~"); ok {
						if !strings.HasPrefix(got, head) || !strings.Contains(got, tail) {
							t.Errorf("%s = %q, want it to start with %q and contain %q", what, got, head, tail)
						}
						return
					}
					if !strings.Contains(got, rest) {
						t.Errorf("%s = %q, want it to contain %q", what, got, rest)
					}
					return
				}
				if head, tail, ok := strings.Cut(want, "~"); ok {
					if !strings.HasPrefix(got, head) || !strings.Contains(got[len(head):], tail) {
						t.Errorf("%s = %q, want it to start with %q, then contain %q", what, got, head, tail)
					}
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", what, diff)
				}
			}
			check("stdout", res.stdout, tt.stdout)
			check("stderr", res.stderr, tt.stderr)
		})
	}
}

// failingReader returns some lines, then an error.
type failingReader struct{ data io.Reader }

func (r *failingReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

// TestHelp checks that help goes to standard output, the same however it
// is asked for, and shows the flags as --name.
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"replay", "audit", "version"} {
		want := runCmd(t, "", "help", cmd)
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {cmd, "-help"}} {
			if got := runCmd(t, "", args...); got != want {
				t.Errorf("%q = %+v, want what help %s gives: %+v", args, got, cmd, want)
			}
		}
		if want.code != exitOK || want.stderr != "" || !strings.HasPrefix(want.stdout, "Usage: loopguard "+cmd) {
			t.Errorf("help %s = %+v", cmd, want)
		}
		for _, line := range strings.Split(want.stdout, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("help %s shows a flag with one dash: %q", cmd, line)
			}
			if width(expandTabs(line)) > 80 {
				t.Errorf("help %s: a line wider than 80 columns: %q", cmd, line)
			}
		}
	}
}

// expandTabs writes the tabs of a line as a terminal shows them.
func expandTabs(line string) string {
	var b strings.Builder
	col := 0
	for _, r := range line {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

func TestVersionText(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/loopguard/loopguard", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "loopguard v1.2.0\nmodule github.com/loopguard/loopguard\nbuilt from a git checkout at revision abc123 (2026-01-02T03:04:05Z), with uncommitted changes\ngo1.26.0\n"
	if got := versionText(info); got != want {
		t.Errorf("versionText = %q, want %q", got, want)
	}
	info = &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/loopguard/loopguard"}}
	if got, want := versionText(info), "loopguard (devel)\nmodule github.com/loopguard/loopguard\ngo1.26.0\n"; got != want {
		t.Errorf("versionText of a devel build = %q, want %q", got, want)
	}
	if got := versionText(nil); !strings.Contains(got, "unknown version") {
		t.Errorf("versionText(nil) = %q", got)
	}
}

func TestReadError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"replay", "-"}, &failingReader{strings.NewReader("{}\n")}, &stdout, &stderr)
	got := result{code, stdout.String(), stderr.String()}
	want := result{exitUsage, "line 1: step 0: go on\n", "<stdin>:2: disk on fire\n"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }

func TestWriteError(t *testing.T) {
	var stderr bytes.Buffer
	code := run([]string{"replay", "-"}, strings.NewReader("{}\n"), failingWriter{}, &stderr)
	if code != exitFailed || stderr.String() != "loopguard replay: writing the output: pipe closed\n" {
		t.Errorf("run = %d, stderr %q; want %d and a message about the output", code, stderr.String(), exitFailed)
	}
}

// brittle is a rule, and its own state, whose snapshots cannot be
// restored.
type brittle struct{}

func (brittle) Name() string                                  { return "brittle" }
func (brittle) Priority() int                                 { return rule.PriorityCustom }
func (brittle) Options() any                                  { return nil }
func (b brittle) NewState() rule.State                        { return b }
func (brittle) Observe(*rule.Facts)                           {}
func (brittle) Verdict() rule.Verdict                         { return rule.Verdict{} }
func (brittle) Preflight(*rule.Facts) rule.Verdict            { return rule.Verdict{} }
func (brittle) Snapshot(rule.SnapshotOptions) ([]byte, error) { return []byte(`"x"`), nil }
func (brittle) Restore([]byte) error                          { return errors.New("cannot restore") }

func TestSnapshotFailure(t *testing.T) {
	r := detector.Standard()
	err := r.Register(rule.Spec{Name: "brittle", Default: true, Build: func(rule.Input) (rule.Rule, error) { return brittle{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	rp := &replayer{conf: &guardConfig{registry: r, doc: []byte(`{}`)}, name: "t.jsonl", stderr: &stderr,
		emit: func(rec record) error { stdout.WriteString(textRecord(rec) + "\n"); return nil }}
	code := rp.run(trace.NewReader(strings.NewReader("{}\n{\"snapshot\": true}\n{}\n"), nil), 0)
	if code != exitFailed {
		t.Errorf("exit status %d, want %d", code, exitFailed)
	}
	if got, want := stderr.String(), "t.jsonl:2: restoring the snapshot: "; !strings.HasPrefix(got, want) || !strings.Contains(got, "cannot restore") {
		t.Errorf("stderr = %q, want it to start with %q and say why", got, want)
	}
	if got, want := stdout.String(), "line 1: step 0: go on\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

// TestFrozenClock checks that a replay's duration budget counts only the
// durations the steps report, however slowly the replay runs.
func TestFrozenClock(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "d.json")
	if err := os.WriteFile(config, []byte(`{"budget": {"maxDurationMs": 1000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, "{\"usage\": {\"durationMs\": 400}, \"text\": \"a\"}\n{\"usage\": {\"durationMs\": 400}, \"text\": \"b\"}\n{\"usage\": {\"durationMs\": 400}, \"text\": \"c\"}\n",
		"replay", "--config", config, "--format", "json", "-")
	recs := decodeRecords(t, res.stdout)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %s", len(recs), res.stdout)
	}
	var v struct {
		Stop bool   `json:"stop"`
		Code string `json:"code"`
	}
	for i, r := range recs[:2] {
		if json.Unmarshal(r.Verdict, &v); v.Stop {
			t.Errorf("step %d stopped: %s", i, r.Verdict)
		}
	}
	if json.Unmarshal(recs[2].Verdict, &v); !v.Stop || v.Code != "BUDGET_DURATION_MS" {
		t.Errorf("step 2 = %s, want a BUDGET_DURATION_MS stop", recs[2].Verdict)
	}
}

// TestReplayErrorsInOrder: where standard output and standard error are the
// same terminal, an error comes after the lines of the steps before it.
func TestReplayErrorsInOrder(t *testing.T) {
	var both bytes.Buffer
	code := run([]string{"replay", "-"}, strings.NewReader("{}\n{}\nnot json\n"), &both, &both)
	want := "line 1: step 0: go on\nline 2: step 1: go on\n<stdin>:3: invalid JSON: invalid character 'o' in literal null (expecting 'u')\n"
	if diff := cmp.Diff(want, both.String()); diff != "" || code != exitUsage {
		t.Errorf("exit %d, output (-want +got):\n%s", code, diff)
	}
}
