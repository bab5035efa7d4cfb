package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
	"github.com/loopguard/loopguard/trace"
)

var replayCommand = &command{
	name:    "replay",
	summary: "feed a trace through a guard and print the verdict of every line",
	help:    replayHelp,
	run:     runReplay,
}

const replayUsage = `Usage: loopguard replay [--config FILE] [--all] [--format text|json]
                        [--input FORMAT] [--lenient] [--max-size SIZE] TRACE

Replay reads a trace ("-" reads standard input) and feeds it through a guard
built from the options in FILE (the default set when there is none). A trace
is loopguard's step lines, one JSON object per line, each one of:

	a step       {"text": "...", "toolCalls": [{"name": "search",
	             "args": {...}, "result": ..., "error": null}],
	             "finishReason": "tool-calls", "usage": {"inputTokens": 1,
	             "outputTokens": 2, "totalTokens": 3, "costUsd": 0.01,
	             "durationMs": 1200}}
	a preflight  {"preflight": {"name": "search", "args": {...}}} or an
	             array of calls: would running them now trip a rule?
	             (changes nothing)
	a snapshot   {"snapshot": true}: save the guard and go on with one
	             restored from the saved JSON
	a reset      {"reset": true}: forget the run

A step may also hold "input" (or "userReply": a user's reply), "refused"
(calls refused and not run) and "meta" (annotations, never looked into); a
call may hold "id" and "meta". Keys are strict: an unknown key is an error
("FILE:LINE: unknown key ..."), with "did you mean" when it resembles a known
one (tool_calls, finish_reason, arguments, Text, ...). --lenient ignores the
unknown keys that resemble none. Odd values inside a line (a number where text
belongs, a toolCalls that is not an array) are ignored. Blank lines are
skipped.

An OpenAI (Chat Completions or Responses) or Anthropic transcript, or OTLP
traces, are read as audit reads
them (detected, or named with --input): their steps are replayed, each on the
line of the assistant message (or span) it comes from. The runs of an OTLP
file are replayed one after the other, each through a fresh guard, and each
line of output names its run. The guard's clock is frozen: only the
durations the steps report count.

Replay prints one line of output per entry and stops after the first stop on
a fault (in an OTLP file, goes on with the next run), unless --all is given.
A normal finish (finish reason "stop") is printed and the replay goes on:
whether the run ends there is the harness's call, and the trace says what it
did. With --format json, each is an object:

	{"line": N, "kind": "check", "step": I, "verdict": {...}}
	                     ("run": R after "line" in a file of several runs)
	{"line": N, "kind": "preflight", "decision": {...}}
	{"line": N, "kind": "snapshot", "bytes": B}
	{"line": N, "kind": "reset"}

Exit status: 0 when the trace was read; 2 for bad arguments, bad options
("config: why"; an options file is read whole, up to 16M) or an input that
cannot be read ("FILE:LINE: why", or "FILE: too large: ..." past
--max-size); 1 when the guard itself failed.

Flags:

`

// replayFlags are the flags of replay.
type replayFlags struct {
	fs                    *flag.FlagSet
	config, format, input *string
	all, lenient          *bool
	maxSize               sizeFlag
}

func newReplayFlags() *replayFlags {
	fs := newFlagSet("replay")
	f := &replayFlags{
		fs:      fs,
		config:  fs.String("config", "", "read the guard's options from this JSON `FILE`"),
		all:     fs.Bool("all", false, "read on after a stop verdict"),
		format:  fs.String("format", "text", "output `format`: text or json"),
		input:   fs.String("input", "auto", "input `format`: auto, steps, openai, responses,\nanthropic or otlp"),
		lenient: fs.Bool("lenient", false, "ignore unknown keys that resemble no known key"),
		maxSize: sizeFlag{defaultMaxSize},
	}
	fs.Var(&f.maxSize, "max-size", "read at most `SIZE` bytes (2G, 512K; 0: none)")
	return f
}

func runReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newReplayFlags()
	pos, code, ok := parseArgs("replay", flags.fs, replayHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if *flags.format != "text" && *flags.format != "json" {
		return usageError(stderr, "replay", "--format must be text or json, not %q", *flags.format)
	}
	input, err := parseInput(*flags.input)
	if err != nil {
		return usageError(stderr, "replay", "%v", err)
	}
	if len(pos) != 1 {
		return usageError(stderr, "replay", "want one trace file (or - for standard input), got %d arguments", len(pos))
	}

	conf, err := loadConfig(*flags.config)
	if err != nil {
		reportConfigError(stderr, err)
		return exitUsage
	}

	opts := readOptions{format: input, keys: trace.RejectUnknownKeys, maxSize: flags.maxSize.n}
	if *flags.lenient {
		opts.keys = trace.IgnoreUnknownKeys
	}
	name := pos[0]
	in, err := opts.open(name, stdin, false)
	if name == "-" {
		name = "<stdin>"
	}
	if err != nil {
		msg := readErrorOf(err, opts.maxSize).in(name)
		if errors.Is(err, errIsDir) {
			msg += " (replay reads one trace; audit reads directories)"
		}
		fmt.Fprintln(stderr, msg)
		return exitUsage
	}
	defer in.Close()

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	r := &replayer{conf: conf, all: *flags.all, name: name, stderr: flushFirst{out, stderr}}
	if *flags.format == "json" {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		r.emit = func(rec record) error { return enc.Encode(rec) }
	} else {
		r.emit = func(rec record) error { _, err := io.WriteString(out, textRecord(rec)+"\n"); return err }
	}
	code = r.run(opts.newReader(in, nil), opts.maxSize)
	if err := out.Flush(); err != nil && code == exitOK {
		fmt.Fprintf(stderr, "loopguard replay: writing the output: %v\n", err)
		return exitFailed
	}
	return code
}

// flushFirst writes to w after flushing out, so that on a terminal, where
// both go, an error comes after the lines that came before it.
type flushFirst struct {
	out *bufio.Writer
	w   io.Writer
}

func (f flushFirst) Write(p []byte) (int, error) {
	_ = f.out.Flush() // a failure to write the output is reported at the end
	return f.w.Write(p)
}

// A replayer feeds one trace through a guard and prints every record.
type replayer struct {
	conf   *guardConfig
	all    bool
	name   string // of the input, for messages
	stderr io.Writer
	emit   func(record) error
}

// run reads the trace and returns the exit status.
func (r *replayer) run(rd *trace.Reader, maxSize int64) int {
	s, err := newSession(r.conf)
	if err != nil {
		reportConfigError(r.stderr, err)
		return exitUsage
	}
	run, stopped, steps := "", false, 0
	for {
		e, err := rd.Next()
		if err == io.EOF {
			if steps == 0 {
				// As audit says: a trace without steps (or preflights) is
				// a broken logging pipeline, not a clean run.
				fmt.Fprintf(r.stderr, "%s: empty: no steps\n", escape.String(r.name))
				return exitUsage
			}
			return exitOK
		}
		if err != nil {
			fmt.Fprintln(r.stderr, readErrorOf(err, maxSize).in(r.name))
			return exitUsage
		}
		if e.Run != run {
			// The input's next run (OTLP): a fresh guard.
			run, stopped = e.Run, false
			if s, err = newSession(r.conf); err != nil {
				reportConfigError(r.stderr, err)
				return exitUsage
			}
		}
		if stopped {
			continue
		}
		rec, err := s.apply(e)
		if err != nil {
			fmt.Fprintf(r.stderr, "%s:%d: %s\n", escape.String(r.name), e.Line, escape.String(err.Error()))
			return exitFailed
		}
		if rec.Kind == kindCheck || rec.Kind == kindPreflight {
			steps++ // a trace of preflights alone is not empty
		}
		if err := r.emit(rec); err != nil {
			fmt.Fprintf(r.stderr, "loopguard replay: writing the output: %v\n", err)
			return exitFailed
		}
		if rec.Verdict != nil && guard.IsFault(*rec.Verdict) && !r.all {
			if run == "" {
				return exitOK
			}
			stopped = true // the rest of this run is not replayed; the next run is
		}
	}
}

// textRecord writes a record for people, on one line, escaped.
func textRecord(rec record) string {
	head := fmt.Sprintf("line %d: ", rec.Line)
	if rec.Run != "" {
		head += "run " + escape.String(rec.Run) + ": "
	}
	switch rec.Kind {
	case kindCheck:
		return head + fmt.Sprintf("step %d: ", *rec.Step) + explain(*rec.Verdict)
	case kindPreflight:
		text := explain(rec.Decision.Verdict())
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

// explain is guard.Explain on one line, with every text that comes from a
// rule or the input escaped: a tool name cannot end the line or send the
// terminal an escape sequence.
func explain(v guard.Verdict) string {
	v.Reason = guard.Reason(escape.String(string(v.Reason)))
	v.Code = escape.String(v.Code)
	v.Detail = escape.String(v.Detail)
	ws := make([]guard.Warning, len(v.Warnings))
	for i, w := range v.Warnings {
		w.Code, w.Detail = escape.String(w.Code), escape.String(w.Detail)
		ws[i] = w
	}
	v.Warnings = ws
	return strings.ReplaceAll(guard.Explain(v), "\n", "; ")
}

// replayHelp writes the help of the replay command.
func replayHelp(w io.Writer) {
	f := newReplayFlags()
	writeHelp(w, replayUsage, f.fs)
}
