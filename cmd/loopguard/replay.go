package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/loopguard/loopguard/guard"
)

var replayCommand = &command{
	name:    "replay",
	summary: "feed a trace through a guard and print the verdict of every line",
	help:    func(w io.Writer) { newReplayFlags(w).fs.Usage() },
	run:     runReplay,
}

const replayUsage = `Usage: loopguard replay [--config FILE] [--all] [--format text|json] TRACE.jsonl

Replay reads a trace, one JSON object per line ("-" reads standard input), and
feeds it through a guard built from the options in FILE (the default set when
there is none). Each line is one of:

	a step        {"text": "...", "toolCalls": [{"name": "search", "args": {...},
	              "result": ..., "error": null}], "finishReason": "tool-calls",
	              "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3,
	              "costUsd": 0.01, "durationMs": 1200}}
	a preflight   {"preflight": {"name": "search", "args": {...}}} or an array
	              of calls: would running them now trip a rule? (changes nothing)
	a snapshot    {"snapshot": true}: save the guard and go on with one
	              restored from the saved JSON
	a reset       {"reset": true}: forget the run

Blank lines are skipped. Odd values inside a line (a number where text
belongs, a toolCalls that is not an array, unusable usage numbers) are ignored.
The guard's clock is frozen: only the durations the steps report count.

Replay prints one line of output per input line and stops after the first
stop verdict, unless --all is given. With --format json, each is an object:

	{"line": N, "kind": "check", "step": I, "verdict": {...}}
	{"line": N, "kind": "preflight", "decision": {...}}
	{"line": N, "kind": "snapshot", "bytes": B}
	{"line": N, "kind": "reset"}

Exit status: 0 when the trace was read; 2 for bad arguments, bad options
("config: why") or a line that is not a JSON object ("FILE:LINE: why"); 1
when the guard itself failed.

Flags:
`

// maxLineBytes is the longest input line replay reads. A variable so that the
// tests can lower it.
var maxLineBytes = 64 << 20

// A record is what replay reports about one input line. Its JSON form is the
// command's output contract.
type record struct {
	Line     int             `json:"line"`
	Kind     string          `json:"kind"`
	Step     *int            `json:"step,omitempty"`
	Verdict  *guard.Verdict  `json:"verdict,omitempty"`
	Decision *guard.Decision `json:"decision,omitempty"`
	Bytes    *int            `json:"bytes,omitempty"`
}

// The kinds of lines and records.
const (
	kindCheck     = "check"
	kindPreflight = "preflight"
	kindSnapshot  = "snapshot"
	kindReset     = "reset"
)

// replayFlags are the flags of replay.
type replayFlags struct {
	fs     *flag.FlagSet
	config *string
	all    *bool
	format *string
}

func newReplayFlags(out io.Writer) *replayFlags {
	fs := flag.NewFlagSet("loopguard replay", flag.ContinueOnError)
	fs.SetOutput(out)
	f := &replayFlags{
		fs:     fs,
		config: fs.String("config", "", "read the guard's options from this JSON `FILE`"),
		all:    fs.Bool("all", false, "read on after a stop verdict"),
		format: fs.String("format", "text", "output `format`: text or json"),
	}
	fs.Usage = func() {
		io.WriteString(fs.Output(), replayUsage)
		fs.PrintDefaults()
	}
	return f
}

func runReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newReplayFlags(stderr)
	fs, configPath, all, format := flags.fs, flags.config, flags.all, flags.format
	usageErr := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "loopguard replay: "+format+"\n", args...)
		fmt.Fprintln(stderr, "usage: loopguard replay [--config FILE] [--all] [--format text|json] TRACE.jsonl")
		return exitUsage
	}
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage // the flag package has said why
	}
	if *format != "text" && *format != "json" {
		return usageErr("--format must be text or json, not %q", *format)
	}
	if len(pos) != 1 {
		return usageErr("want one trace file (or - for standard input), got %d arguments", len(pos))
	}

	conf, err := loadConfig(*configPath)
	if err != nil {
		reportConfigError(stderr, err)
		return exitUsage
	}

	name, in := pos[0], stdin
	if name == "-" {
		name = "<stdin>"
	} else {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "loopguard replay: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in = f
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	r := &replayer{conf: conf, all: *all, name: name, stderr: stderr}
	if *format == "json" {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		r.emit = func(rec record) error { return enc.Encode(rec) }
	} else {
		r.emit = func(rec record) error { _, err := io.WriteString(out, textRecord(rec)+"\n"); return err }
	}
	code := r.run(in)
	if err := out.Flush(); err != nil && code == exitOK {
		fmt.Fprintf(stderr, "loopguard replay: writing the output: %v\n", err)
		return exitFailed
	}
	return code
}

// A replayer feeds one trace through a guard.
type replayer struct {
	conf   *guardConfig
	all    bool
	name   string // of the input, for messages
	stderr io.Writer
	emit   func(record) error

	g    *guard.Guard
	step int // the index the next step will have
}

// run reads the trace and returns the exit status.
func (r *replayer) run(in io.Reader) int {
	var err error
	if r.g, err = r.conf.newGuard(); err != nil {
		reportConfigError(r.stderr, err)
		return exitUsage
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLineBytes)), maxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF")) // a byte order mark
		}
		if len(line) == 0 {
			continue
		}
		rec, err := r.line(n, line)
		if err != nil {
			var fe failure
			if errors.As(err, &fe) {
				fmt.Fprintf(r.stderr, "%s:%d: %v\n", r.name, n, fe.err)
				return exitFailed
			}
			fmt.Fprintf(r.stderr, "%s:%d: %v\n", r.name, n, err)
			return exitUsage
		}
		if err := r.emit(rec); err != nil {
			fmt.Fprintf(r.stderr, "loopguard replay: writing the output: %v\n", err)
			return exitFailed
		}
		if rec.Verdict != nil && rec.Verdict.Stop && !r.all {
			return exitOK
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			fmt.Fprintf(r.stderr, "%s:%d: line longer than %d bytes\n", r.name, n+1, maxLineBytes)
		} else {
			fmt.Fprintf(r.stderr, "%s:%d: %v\n", r.name, n+1, err)
		}
		return exitUsage
	}
	return exitOK
}

// A failure is an error of the guard itself, not of the input.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }

// line handles one non-blank input line. Its errors say why the line cannot
// be read, or are a failure.
func (r *replayer) line(n int, line []byte) (record, error) {
	if line[0] != '{' {
		return record{}, fmt.Errorf("not a JSON object")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return record{}, fmt.Errorf("not valid JSON: %v", jsonError(err))
	}
	rec := record{Line: n}
	calls, isPreflight := top["preflight"]
	switch {
	case isPreflight:
		d := r.g.Preflight(preflightCalls(calls)...)
		rec.Kind, rec.Decision = kindPreflight, &d
	case isTrue(top["snapshot"]):
		data, err := r.g.Snapshot(guard.SnapshotOptions{Previews: true}) // previews: the output stays as without a snapshot
		if err != nil {
			return record{}, failure{fmt.Errorf("snapshot: %w", err)}
		}
		g, err := r.conf.restore(data)
		if err != nil {
			return record{}, failure{fmt.Errorf("restoring the snapshot: %w", err)}
		}
		r.g = g
		size := len(data)
		rec.Kind, rec.Bytes = kindSnapshot, &size
	case isTrue(top["reset"]):
		r.g.Reset()
		r.step = 0
		rec.Kind = kindReset
	default:
		var s guard.Step
		if err := s.UnmarshalJSON(line); err != nil {
			return record{}, err
		}
		v := r.g.Check(s)
		i := r.step
		r.step++
		rec.Kind, rec.Step, rec.Verdict = kindCheck, &i, &v
	}
	return rec, nil
}

// preflightCalls reads the calls of a preflight line: one call or an array
// of them, read as leniently as a step's toolCalls. Anything else is no call.
func preflightCalls(raw json.RawMessage) []guard.ToolCall {
	raw = bytes.TrimSpace(raw)
	var doc []byte
	switch {
	case len(raw) > 0 && raw[0] == '[':
		doc = append(append([]byte(`{"toolCalls":`), raw...), '}')
	case len(raw) > 0 && raw[0] == '{':
		doc = append(append([]byte(`{"toolCalls":[`), raw...), "]}"...)
	default:
		return nil
	}
	var s guard.Step
	if s.UnmarshalJSON(doc) != nil {
		return nil
	}
	return s.ToolCalls
}

func isTrue(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "true" }

// jsonError shortens encoding/json's messages for a line-oriented report.
func jsonError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// textRecord writes a record for people, on one line.
func textRecord(rec record) string {
	head := fmt.Sprintf("line %d: ", rec.Line)
	switch rec.Kind {
	case kindCheck:
		return head + fmt.Sprintf("step %d: ", *rec.Step) + oneLine(guard.Explain(*rec.Verdict))
	case kindPreflight:
		text := oneLine(guard.Explain(rec.Decision.Verdict()))
		if rec.Decision.Allow {
			text = "allow" + strings.TrimPrefix(text, "go on")
		} else {
			text = "refuse: " + strings.TrimPrefix(text, "stop: ")
		}
		return head + "preflight: " + text
	case kindSnapshot:
		return head + fmt.Sprintf("snapshot: saved and restored (%d bytes)", *rec.Bytes)
	case kindReset:
		return head + "reset"
	}
	return head + rec.Kind
}

// oneLine joins the lines of an explanation with "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", "; ")
}
