package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
	"github.com/loopguard/loopguard/trace"
)

var auditCommand = &command{
	name:    "audit",
	summary: "replay many agent logs (steps, OpenAI, Responses, Anthropic, OTLP) and report where each stops",
	help:    auditHelp,
	run:     runAudit,
}

const auditUsage = `Usage: loopguard audit [--config FILE] [--preset text-actions] [--input FORMAT]
                       [--format text|json] [--fail-on fault|any|never]
                       [--strict] [--max-size SIZE] [--labels MANIFEST.json]
                       [--html FILE] PATH...

Audit replays each run in PATH through a fresh guard built from the options in
FILE (the default set when there is none) and reports, per run, its steps,
the first stop (step, line, rule, code and why) and the warnings seen, then
totals. A PATH is a file, a directory (read recursively: its .jsonl, .ndjson
and .json files; .json files that hold no trace are skipped, and so, with a
line on standard error, is anything that is not a regular file, such as a
named pipe) or - for standard input. Each file is one run, in one of five
formats, detected per file unless --input names one:

	steps       loopguard step lines, one JSON object per line
	openai      OpenAI Chat Completions messages or chat completion objects
	responses   OpenAI Responses input items or response objects
	anthropic   Anthropic Messages messages or message objects
	otlp        OpenTelemetry traces in OTLP/JSON (the Collector's file
	            exporter) with the GenAI semantic conventions: model call
	            spans are steps, execute_tool spans their calls

An OTLP file holds a run per gen_ai.conversation.id (or per trace where there
is none), reported as FILE#RUN, each replayed through a guard of its own. When
its tool calls carry no arguments (the opt-in gen_ai.tool.call.arguments),
they are told apart by tool name alone, which a line on standard error says.

Step lines are read exactly as replay reads them, control lines (preflight,
snapshot, reset) included: audit reports the stop replay prints first. An
unknown key that resembles a known one (tool_calls, finish_reason, Text, ...)
is an error; any other unknown key, such as an annotation, is named once per
file on standard error and ignored (--strict makes it an error). The guard's
clock is frozen: only the durations the steps report count.

--preset text-actions is for agents whose harness reads the action out of the
model's text (ReAct, mini-swe-agent): their provider reports the finish reason
"stop" on every step, which the default finish-reason rule takes as the end of
the run. The preset sets
	"finishReason": {"terminal": ["length", "content-filter", "error"],
	                 "otherPolicy": "continue"},
	"repeatedInput": false
so that "stop" ends nothing and the loop rules can judge the run; the harness
decides when the run is over. Such harnesses send each observation back as a
user message, which a transcript holds as input: the repeated-input rule, for
messages from people and other agents, is off. FILE must then set neither
key itself.

The text output is a table that fits 80 columns (a rule's detail on a line
of its own, cut to fit); --format json has every detail, one object per run
and the totals last:

	{"kind": "run", "run": PATH, "format": F, "steps": N, "stop": {...},
	 "warnings": [...]}
	{"kind": "run", "run": PATH, "format": F, "steps": 0, "empty": true}
	{"kind": "run", "run": PATH, "error": {"line": L, "message": "..."}}
	{"kind": "summary", "runs": N, "clean": N, "finished": N, ...}

--html FILE also writes the report as one self-contained HTML page (inline
CSS and SVG; no script, no external asset, every text escaped): the table,
then per run a timeline with the steps along a horizontal axis that scrolls,
each tool call a mark coloured by tool (failed calls crossed out, refused
ones hollow), the steps with text, user input or a finish reason, the
warnings, the stop, and under them each rule's counter step by step against
the value that stops the run. Hover a step for what it held; the stop's
evidence is in a panel below. With --labels, the labelled start of each
loop is drawn and the lead given. The page is bounded: a run draws at most
500 steps (of a longer one, the first 25, at least the 400 up to and
including its stop and the 50 after it, and the last ones, with gaps that
count the others), the page at most 50,000 steps and 2,000 runs; it says
what it leaves out.

Exit status: 2 for bad arguments, bad options (an options file or manifest
is read whole, up to 16M), or a PATH that cannot be audited: missing,
unreadable, larger than --max-size, or empty (no steps: a broken logging
pipeline must not pass a CI gate). Each is named on standard
error ("FILE:LINE: why" or "FILE: why") and counted in the totals, and the
other runs are still reported. Otherwise 1 when a run stops on a fault
(--fail-on fault, the default), on any stop (--fail-on any), never (--fail-on
never); else 0.

Flags:

`

// auditMemoryLimit is the soft memory limit of an audit (see runAudit),
// unless GOGC or GOMEMLIMIT is set.
const auditMemoryLimit = 256 << 20

// textActionsFinish is the finish-reason option of --preset text-actions.
const textActionsFinish = `{"terminal": ["length", "content-filter", "error"], "otherPolicy": "continue"}`

// A presetOption is one top-level key of the options document that a
// preset sets, and its value.
type presetOption struct{ key, value string }

// presets maps a preset's name to the options it sets. text-actions also
// turns the repeated-input rule off: such harnesses send each observation
// back as a user message, so in their transcripts a tool result is an
// input, and a sweep's same answer would count.
var presets = map[string][]presetOption{
	"text-actions": {{"finishReason", textActionsFinish}, {"repeatedInput", "false"}},
}

type auditFlags struct {
	fs                                    *flag.FlagSet
	config, preset, input, format, failOn *string
	labels, html                          *string
	strict                                *bool
	maxSize                               sizeFlag
}

func newAuditFlags() *auditFlags {
	fs := newFlagSet("audit")
	f := &auditFlags{
		fs:      fs,
		config:  fs.String("config", "", "read the guard's options from this JSON `FILE`"),
		preset:  fs.String("preset", "", "options for a kind of agent: text-actions"),
		input:   fs.String("input", "auto", "input `format`: auto, steps, openai, responses,\nanthropic or otlp"),
		format:  fs.String("format", "text", "output `format`: text or json"),
		failOn:  fs.String("fail-on", "fault", "exit 1 on a `fault` stop, any stop (any), or never"),
		strict:  fs.Bool("strict", false, "make every unknown key in step lines an error, as replay does"),
		labels:  fs.String("labels", "", "score the runs against the labels in `MANIFEST.json` (see below)"),
		html:    fs.String("html", "", "also write the report as an HTML page with a timeline per run to `FILE`"),
		maxSize: sizeFlag{defaultMaxSize},
	}
	fs.Var(&f.maxSize, "max-size", "read at most `SIZE` bytes of a file (2G, 512K; 0: none)")
	return f
}

// A runReport is what audit says about one run. Its JSON form is the
// command's output contract.
type runReport struct {
	Kind     string        `json:"kind"`
	Run      string        `json:"run"`
	Format   string        `json:"format,omitempty"`
	Steps    int           `json:"steps"`
	Stop     *stopReport   `json:"stop,omitempty"`
	Warnings []warningSeen `json:"warnings,omitempty"`
	// Finishes counts the normal finishes (finish reason "stop") after
	// which the run went on: the harness did not take them as the end.
	Finishes int `json:"finishesBeforeEnd,omitempty"`
	// Empty is set for a run with no steps.
	Empty bool        `json:"empty,omitempty"`
	Error *inputError `json:"error,omitempty"`

	skipped bool      // a .json file found in a directory that holds no trace
	notes   []string  // warnings about the input, for standard error
	tl      *timeline // the run step by step, for --html; nil without it
}

// A stopReport is the first stop of a run.
type stopReport struct {
	Step     int          `json:"step"`
	Line     int          `json:"line"`
	Detector string       `json:"detector"`
	Reason   guard.Reason `json:"reason"`
	Code     string       `json:"code"`
	Fault    bool         `json:"fault"`
	Why      string       `json:"why"`
	Evidence any          `json:"evidence,omitempty"`
	// TextActions is set on a normal "stop" finish of a step that calls
	// tools: the sign of an agent whose actions are read from its text.
	TextActions bool `json:"textActions,omitempty"`
}

// A warningSeen is a kind of warning and how often it was given.
type warningSeen struct {
	Detector  string `json:"detector"`
	Code      string `json:"code"`
	Metric    string `json:"metric,omitempty"`
	FirstStep int    `json:"firstStep"`
	Count     int    `json:"count"`
}

type inputError struct {
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// summary is the totals of an audit.
type summary struct {
	Kind       string         `json:"kind"`
	Runs       int            `json:"runs"`
	Clean      int            `json:"clean"`
	Finished   int            `json:"finished"`
	Faults     int            `json:"faults"`
	ByReason   map[string]int `json:"byReason"`
	Unreadable int            `json:"unreadable"`
	Empty      int            `json:"empty"`
	Skipped    int            `json:"skipped"`
	// TextActions counts the runs that ended on a normal "stop" finish of
	// a step that calls tools.
	TextActions int `json:"textActions"`
}

func runAudit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newAuditFlags()
	paths, code, ok := parseArgs("audit", flags.fs, auditHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	usageErr := func(format string, args ...any) int { return usageError(stderr, "audit", format, args...) }
	if *flags.format != "text" && *flags.format != "json" {
		return usageErr("--format must be text or json, not %q", *flags.format)
	}
	switch *flags.failOn {
	case "fault", "any", "never":
	default:
		return usageErr("--fail-on must be fault, any or never, not %q", *flags.failOn)
	}
	input, err := parseInput(*flags.input)
	if err != nil {
		return usageErr("%v", err)
	}
	if len(paths) == 0 {
		return usageErr("no PATH to audit")
	}
	conf, err := loadConfig(*flags.config)
	if err != nil {
		reportConfigError(stderr, err)
		return exitUsage
	}
	if *flags.preset != "" {
		p, ok := presets[*flags.preset]
		if !ok {
			return usageErr("unknown preset %q (want text-actions)", *flags.preset)
		}
		for _, o := range p {
			if err := conf.withPreset(o.key, o.value); err != nil {
				return usageErr("--preset %s: %v", *flags.preset, err)
			}
		}
	}

	labels, err := loadLabels(*flags.labels)
	if err != nil {
		return usageErr("--labels: %v", err)
	}

	if os.Getenv("GOGC") == "" {
		// An audit makes much short-lived garbage (each run's steps) and
		// keeps little: collecting less often saves a quarter of its time
		// for a few tens of megabytes. Only while the heap is small: past
		// auditMemoryLimit the collector works to stay there, so that an
		// input that keeps much alive (an OTLP file is read whole) does
		// not take five times that.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		if os.Getenv("GOMEMLIMIT") == "" {
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(auditMemoryLimit))
		}
	}
	opts := readOptions{format: input, keys: trace.WarnUnknownKeys, maxSize: flags.maxSize.n}
	if *flags.strict {
		opts.keys = trace.RejectUnknownKeys
	}
	a := &auditor{conf: conf, read: opts, stdin: stdin, timelines: *flags.html != ""}
	var page *htmlOutput
	if *flags.html != "" {
		if page, err = newHTMLOutput(*flags.html, labels, paths); err != nil {
			return usageErr("--html: %v", pathError(err))
		}
	}
	jobs := a.collect(paths, stderr)
	w := newAuditOutput(stdout, stderr, *flags.format, labels, jobs)
	if page != nil {
		w = teeOutput{w, page}
	}
	var sum summary
	sum.Kind, sum.ByReason = "summary", map[string]int{}
	status := exitOK
	prog := newProgress(stderr, len(jobs))
	a.run(jobs, func(r *runReport) {
		prog.tick()
		if r.skipped {
			sum.Skipped++
			return
		}
		sum.add(r)
		if len(r.notes) > 0 || r.Error != nil || r.Empty {
			prog.clear()
		}
		for _, n := range r.notes {
			fmt.Fprintln(stderr, n)
		}
		switch {
		case r.Error != nil:
			fmt.Fprintln(stderr, readError{r.Error.Line, r.Error.Message}.in(r.Run))
			status = exitUsage
		case r.Empty:
			fmt.Fprintf(stderr, "%s: empty: no steps\n", escape.String(r.Run))
			status = exitUsage
		}
		w.run(r)
	})
	prog.clear()
	w.summary(&sum)
	if err := w.flush(); err != nil {
		fmt.Fprintf(stderr, "loopguard audit: writing the output: %v\n", err)
		return exitFailed
	}
	if status != exitOK {
		return status
	}
	switch {
	case *flags.failOn == "fault" && sum.Faults > 0,
		*flags.failOn == "any" && sum.Faults+sum.Finished > 0:
		return exitFailed
	}
	return exitOK
}

// withPreset adds a preset's key to the options document; it is an error for
// the document to set that key already.
func (c *guardConfig) withPreset(key, value string) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c.doc, &top); err != nil {
		return err
	}
	if _, ok := top[key]; ok {
		return fmt.Errorf("the options file sets %s too; keep one of them", key)
	}
	doc := bytes.TrimSpace(c.doc)
	inner := bytes.TrimSpace(doc[1 : len(doc)-1])
	merged := fmt.Sprintf(`{%q: %s`, key, value)
	if len(inner) > 0 {
		merged += ", " + string(inner)
	}
	old := c.doc
	c.doc = []byte(merged + "}")
	if _, err := c.build(nil); err != nil {
		c.doc = old
		return err
	}
	return nil
}

// A job is one run to audit: a file, or standard input.
type job struct {
	name   string // as reported
	path   string // "-" for standard input
	walked bool   // found in a directory, not named
	err    error  // the path cannot be read at all (missing, ...)
}

// auditor replays runs.
type auditor struct {
	conf  *guardConfig
	read  readOptions
	stdin io.Reader
	// timelines records every run step by step (--html).
	timelines bool
}

// collect turns the paths into jobs, in order: a directory's files in
// lexical order. A path that cannot be read is a job with an error, so that
// it is reported as a run. What a directory holds that is not a regular file
// (a named pipe, a socket, a device) is skipped, with a line on stderr.
func (a *auditor) collect(paths []string, stderr io.Writer) []*job {
	var jobs []*job
	stdinSeen := false
	for _, p := range paths {
		if p == "-" {
			if stdinSeen {
				continue
			}
			stdinSeen = true
			jobs = append(jobs, &job{name: "<stdin>", path: "-"})
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			jobs = append(jobs, &job{name: p, path: p, err: pathError(err)})
			continue
		}
		if !info.IsDir() {
			jobs = append(jobs, &job{name: p, path: p})
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				jobs = append(jobs, &job{name: path, path: path, err: pathError(err)})
				return nil
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".jsonl", ".ndjson", ".json":
			default:
				return nil
			}
			if !d.Type().IsRegular() {
				// A symbolic link is followed; anything else that is
				// not a regular file is never opened.
				info, err := os.Stat(path)
				if err != nil || !info.Mode().IsRegular() {
					fmt.Fprintf(stderr, "%s: skipped: not a regular file\n", escape.String(path))
					return nil
				}
			}
			jobs = append(jobs, &job{name: path, path: path, walked: true})
			return nil
		})
		if err != nil {
			jobs = append(jobs, &job{name: p, path: p, err: pathError(err)})
		}
	}
	return jobs
}

// run audits the jobs on a bounded pool of workers and hands the reports to
// emit in the order of the jobs. The reports of an input that holds many
// runs are handed on as they are made, not gathered.
func (a *auditor) run(jobs []*job, emit func(*runReport)) {
	workers := min(runtime.GOMAXPROCS(0), max(len(jobs), 1))
	// window bounds how many inputs are audited ahead of the one being
	// emitted, so that memory does not grow with the corpus.
	window := 4 * workers
	type work struct {
		j       *job
		reports chan *runReport
	}
	next := make(chan work)
	order := make(chan chan *runReport, window) // the jobs' reports, in order
	go func() {
		defer close(next)
		defer close(order)
		for _, j := range jobs {
			w := work{j, make(chan *runReport, 8)}
			order <- w.reports
			next <- w
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range next {
				func() {
					defer close(w.reports)
					a.audit(w.j, func(r *runReport) { w.reports <- r })
				}()
			}
		}()
	}
	for reports := range order {
		for r := range reports {
			emit(r)
		}
	}
	wg.Wait()
}

// audit replays the runs of one input, each read as replay reads it, and
// hands each run's report to send: the first fault is the stop replay ends
// at. A normal finish ("stop") is the run's stop only when it is the run's
// last step; when more steps follow, the harness went on (one that reads
// actions from the model's text asks again), and so does the audit. The rest
// of the input is still read, so that every step is counted and every line
// checked. An input that holds several runs (an OTLP file) gives a report per
// run, named FILE#RUN, each run replayed through a guard of its own; each is
// sent once the next run starts. The warnings about the input go with the
// report that follows them.
func (a *auditor) audit(j *job, send func(*runReport)) {
	var notes []string
	var first *runReport // the input's first run, held until it is known whether more follow
	runs := 0            // the runs sent or held
	var firstRun string  // the name of the first run in the input
	out := func(r *runReport, run string) {
		r.notes = append(notes, r.notes...)
		notes = nil
		runs++
		switch runs {
		case 1:
			first, firstRun = r, run
			return
		case 2:
			first.Run = j.name + "#" + firstRun
			send(first)
			first = nil
		}
		r.Run = j.name + "#" + run
		send(r)
	}
	defer func() {
		if first != nil {
			send(first)
		}
	}()
	r := a.newReport(j.name)
	run := "" // the run of r in the input
	fail := func(err error) {
		re := readErrorOf(err, a.read.maxSize)
		r.Error = &inputError{Line: re.line, Message: re.msg}
		r.Format, r.Steps, r.Stop, r.Warnings, r.tl = "", 0, nil, nil, nil
		out(r, run)
	}
	if j.err != nil {
		fail(j.err)
		return
	}
	in, err := a.read.open(j.path, a.stdin, j.walked)
	if err != nil {
		fail(err)
		return
	}
	defer in.Close()
	rd := a.read.newReader(in, func(err error) {
		note := readErrorOf(err, 0).in(j.name)
		if !errors.Is(err, trace.ErrNoContent) {
			note += " (ignored; --strict makes it an error)"
		}
		notes = append(notes, note)
	})
	s, err := a.newSession()
	if err != nil {
		r.Error = &inputError{Message: "config: " + err.Error()}
		out(r, run)
		return
	}
	var finish *stopReport // the last normal finish
	lastStep := 0          // the line of the last step
	started := false       // an entry of the input was read
	end := func() {
		if r.Stop == nil && finish != nil {
			if finish.Line == lastStep {
				r.Stop = finish
			} else {
				r.Finishes++
			}
		}
		r.Format = rd.Format().String()
		r.Empty = r.Steps == 0
	}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if j.walked && errors.Is(err, trace.ErrUnknownFormat) && strings.EqualFold(filepath.Ext(j.path), ".json") {
				r.skipped = true // JSON that is no trace, such as a manifest
				out(r, run)
				return
			}
			fail(err)
			return
		}
		if !started {
			started, run = true, e.Run
		} else if e.Run != run {
			// The next run of the input: a fresh guard.
			end()
			out(r, run)
			r, run = a.newReport(j.name), e.Run
			if s, err = a.newSession(); err != nil {
				r.Error = &inputError{Message: "config: " + err.Error()}
				out(r, run)
				return
			}
			finish, lastStep = nil, 0
		}
		if e.Kind == trace.StepEntry {
			r.Steps++
			lastStep = e.Line
		}
		if r.Stop != nil {
			r.tl.add(e, nil, nil)
			continue
		}
		rec, err := s.apply(e)
		if err != nil {
			fail(err)
			return
		}
		r.tl.add(e, &rec, s)
		if v := rec.Verdict; v != nil {
			for _, w := range v.Warnings {
				r.warn(w, *rec.Step)
			}
			switch {
			case v.Stop && guard.IsFault(*v):
				r.Stop = newStopReport(*v, *rec.Step, rec.Line)
			case v.Stop:
				// The model finished; whether the run ends here is the
				// harness's call, and the log says what it did.
				if finish != nil {
					r.Finishes++
				}
				finish = newStopReport(*v, *rec.Step, rec.Line)
			}
		}
	}
	end()
	out(r, run)
}

// newSession returns the session of a run: with a probe when the runs are
// drawn.
func (a *auditor) newSession() (*session, error) {
	if a.timelines {
		return newProbedSession(a.conf)
	}
	return newSession(a.conf)
}

// newReport starts the report of a run of the input named name.
func (a *auditor) newReport(name string) *runReport {
	r := &runReport{Kind: "run", Run: name}
	if a.timelines {
		r.tl = &timeline{}
	}
	return r
}

func (r *runReport) warn(w guard.Warning, step int) {
	for k := range r.Warnings {
		if s := &r.Warnings[k]; s.Detector == w.Detector && s.Code == w.Code && s.Metric == w.Metric {
			s.Count++
			return
		}
	}
	r.Warnings = append(r.Warnings, warningSeen{Detector: w.Detector, Code: w.Code, Metric: w.Metric, FirstStep: step, Count: 1})
}

func newStopReport(v guard.Verdict, step, line int) *stopReport {
	s := &stopReport{Step: step, Line: line, Detector: v.Detector, Reason: v.Reason, Code: v.Code,
		Fault: guard.IsFault(v), Why: oneLine(v.Detail), Evidence: v.Evidence}
	if ev, ok := v.Evidence.(finish.Evidence); ok && ev.NormalFinish() && ev.ToolCallCount > 0 {
		s.TextActions = true
		s.Why += ", at a step with tool calls: see --preset text-actions"
	}
	if s.Why == "" {
		s.Why = oneLine(guard.Explain(v))
	}
	return s
}

func (s *summary) add(r *runReport) {
	s.Runs++
	switch {
	case r.Error != nil:
		s.Unreadable++
	case r.Empty:
		s.Empty++
	case r.Stop == nil:
		s.Clean++
	case r.Stop.Fault:
		s.Faults++
		s.ByReason[string(r.Stop.Reason)]++
	default:
		s.Finished++
		if r.Stop.TextActions {
			s.TextActions++
		}
	}
}

// reportWriter writes the reports as a table or as JSON.
//
// The table fits 80 columns: a row holds the run, its steps, the line of its
// stop and the code; what the rule says (and the warnings, or why the input
// cannot be read) goes on up to two lines of its own below, cut to fit. The
// directory every run is in is named once, in the heading. Every text is
// escaped: neither a file name nor a rule's detail can write a fake row or
// talk to the terminal.
type reportWriter struct {
	out    io.Writer
	enc    *json.Encoder
	buf    *bytes.Buffer
	prefix string // left out of every run's name in the table
	width  int    // of the RUN column
	rows   int
}

// The table's layout.
const (
	tableWidth  = 80
	maxRunWidth = 40 // room for STEPS, LINE and a code such as FINISH_TERMINAL (normal)
	detailLines = 2
	indent      = "    "
)

func newReportWriter(out io.Writer, format string, jobs []*job) *reportWriter {
	w := &reportWriter{out: out, buf: new(bytes.Buffer)}
	if format == "json" {
		w.enc = json.NewEncoder(w.buf)
		w.enc.SetEscapeHTML(false)
		return w
	}
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.name
	}
	w.prefix = commonDir(names)
	head := "RUN"
	if w.prefix != "" {
		head = "RUN (in " + cutLeft(escape.String(w.prefix), maxRunWidth-len("RUN (in )")) + ")"
	}
	w.width = width(head)
	for _, n := range names {
		w.width = max(w.width, width(escape.String(strings.TrimPrefix(n, w.prefix))))
	}
	w.width = min(w.width, maxRunWidth)
	w.row(head, "STEPS", "LINE", "RESULT")
	return w
}

// commonDir returns the directory, ending in a separator, that every name
// is in, or "".
func commonDir(names []string) string {
	if len(names) == 0 {
		return ""
	}
	dir := func(n string) string {
		if i := strings.LastIndexAny(n, `/`+string(filepath.Separator)); i >= 0 {
			return n[:i+1]
		}
		return ""
	}
	common := dir(names[0])
	for _, n := range names[1:] {
		for common != "" && !strings.HasPrefix(n, common) {
			common = dir(common[:len(common)-1])
		}
	}
	return common
}

// name is a run's name in the table: escaped, without the common directory,
// and cut to the column from the left (the end names the file).
func (w *reportWriter) name(run string) string {
	return cutLeft(escape.String(strings.TrimPrefix(run, w.prefix)), w.width)
}

func (w *reportWriter) row(run, steps, line, result string) {
	pad := strings.Repeat(" ", max(w.width-width(run), 0))
	fmt.Fprintf(w.buf, "%s%s  %-5s  %-5s  %s\n", run, pad, steps, line, result)
}

// detail writes a text on lines of its own, indented, wrapped and cut to
// the table's width.
func (w *reportWriter) detail(text string) {
	if text == "" {
		return
	}
	for _, l := range wrap(escape.String(text), tableWidth-len(indent), detailLines) {
		w.buf.WriteString(indent + l + "\n")
	}
}

func (w *reportWriter) run(r *runReport) {
	if w.enc != nil {
		w.enc.Encode(r)
		w.spill()
		return
	}
	w.rows++
	name := w.name(r.Run)
	switch {
	case r.Error != nil:
		line := "-"
		if r.Error.Line > 0 {
			line = fmt.Sprint(r.Error.Line)
		}
		w.row(name, "-", line, "unreadable")
		w.detail(r.Error.Message)
	case r.Empty:
		w.row(name, "0", "-", "empty: no steps")
	case r.Stop == nil:
		w.row(name, fmt.Sprint(r.Steps), "-", "no stop")
		w.detail(warningsText(r.Warnings))
	default:
		s := r.Stop
		result := s.Code
		if !s.Fault {
			result += " (normal)"
		}
		w.row(name, fmt.Sprint(r.Steps), fmt.Sprint(s.Line), escape.String(result))
		why := s.Why
		if ws := warningsText(r.Warnings); ws != "" {
			why += "; " + ws
		}
		w.detail(why)
	}
	w.spill()
}

// spill writes out what is buffered, once there is enough.
func (w *reportWriter) spill() {
	if w.buf.Len() >= 64<<10 {
		w.out.Write(w.buf.Bytes())
		w.buf.Reset()
	}
}

func warningsText(ws []warningSeen) string {
	if len(ws) == 0 {
		return ""
	}
	var parts []string
	for _, w := range ws {
		name := w.Code
		if w.Metric != "" {
			name += " " + w.Metric
		}
		parts = append(parts, fmt.Sprintf("%s from step %d", name, w.FirstStep))
	}
	return "warnings: " + strings.Join(parts, ", ")
}

func (w *reportWriter) summary(s *summary) {
	if w.enc != nil {
		w.enc.Encode(s)
		return
	}
	b := w.buf
	fmt.Fprintf(b, "\n%s: %d stopped on a fault, %d finished normally, %d clean", plural(s.Runs, "run", "runs"), s.Faults, s.Finished, s.Clean)
	if s.Empty > 0 {
		fmt.Fprintf(b, ", %d empty", s.Empty)
	}
	if s.Unreadable > 0 {
		fmt.Fprintf(b, ", %d unreadable", s.Unreadable)
	}
	b.WriteString("\n")
	reasons := make([]string, 0, len(s.ByReason))
	for r := range s.ByReason {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	for _, r := range reasons {
		fmt.Fprintf(b, "  %-20s %d\n", escape.String(r), s.ByReason[r])
	}
	if s.Skipped > 0 {
		fmt.Fprintf(b, "%s with no trace skipped\n", plural(s.Skipped, ".json file", ".json files"))
	}
	if s.TextActions > 0 {
		runs := plural(s.TextActions, "run", "runs")
		text := fmt.Sprintf("%s ended on finish reason \"stop\" at a step that calls tools: when a harness "+
			"reads actions from the model's text, \"stop\" ends every step. Audit such runs with --preset text-actions.", runs)
		for _, l := range wrap(text, tableWidth-1, 0) {
			b.WriteString(l + "\n")
		}
	}
}

func (w *reportWriter) flush() error {
	_, err := w.out.Write(w.buf.Bytes())
	w.buf.Reset()
	return err
}

// wrap breaks text into lines of at most n runes, at spaces where it can;
// with most > 0, it keeps that many lines and cuts the last with "...".
func wrap(text string, n, most int) []string {
	var lines []string
	words := strings.Split(text, " ")
	line := ""
	for _, word := range words {
		switch {
		case line == "":
			line = word
		case width(line)+1+width(word) <= n:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
		for width(line) > n {
			r := []rune(line)
			lines = append(lines, string(r[:n]))
			line = string(r[n:])
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	if most > 0 && len(lines) > most {
		lines = lines[:most]
		if last := []rune(lines[most-1]); len(last) <= n-4 {
			lines[most-1] = string(last) + " ..."
		} else {
			lines[most-1] = string(last[:n-3]) + "..."
		}
	}
	return lines
}

// oneLine joins the lines of an explanation with "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", "; ")
}

// plural writes n and the noun, in the singular for 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// progress writes a progress line to a terminal: nothing unless w is one,
// and nothing for the first half second.
type progress struct {
	w          io.Writer
	total, n   int
	start, due time.Time
	shown      bool
}

func newProgress(w io.Writer, total int) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	now := time.Now()
	return &progress{w: w, total: total, start: now, due: now.Add(500 * time.Millisecond)}
}

func (p *progress) tick() {
	if p == nil {
		return
	}
	p.n++
	if now := time.Now(); now.After(p.due) {
		p.due = now.Add(100 * time.Millisecond)
		fmt.Fprintf(p.w, "\raudit: %d/%d runs", p.n, p.total)
		p.shown = true
	}
}

func (p *progress) clear() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// auditHelp writes the help of the audit command.
func auditHelp(w io.Writer) {
	f := newAuditFlags()
	writeHelp(w, auditUsage, f.fs)
	io.WriteString(w, labelsUsage)
}
