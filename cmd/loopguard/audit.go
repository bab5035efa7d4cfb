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
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

var auditCommand = &command{
	name:    "audit",
	summary: "replay many agent logs (steps, OpenAI, Anthropic) and report where each stops",
	help:    func(w io.Writer) { newAuditFlags(w).fs.Usage() },
	run:     runAudit,
}

const auditUsage = `Usage: loopguard audit [--config FILE] [--preset text-actions] [--input FORMAT]
                       [--format text|json] [--fail-on fault|any|never]
                       [--labels MANIFEST.json] PATH...

Audit replays each run in PATH through a fresh guard built from the options in
FILE (the default set when there is none) and reports, per run, its steps,
the first stop (step, line, rule, code and why) and the warnings seen, then
totals. A PATH is a file, a directory (read recursively: its .jsonl, .ndjson
and .json files; .json files that hold no trace are skipped) or - for
standard input. Each file is one run, in one of three formats, detected per
file unless --input names one:

	steps       loopguard step lines, one JSON object per line
	openai      OpenAI Chat Completions messages or chat completion objects
	anthropic   Anthropic Messages messages or message objects

The guard's clock is frozen: only the durations the steps report count.

--preset text-actions is for agents whose harness reads the action out of the
model's text (ReAct, mini-swe-agent): their provider reports the finish reason
"stop" on every step, which the default finish-reason rule takes as the end of
the run. The preset sets
	"finishReason": {"terminal": ["length", "content-filter", "error"], "otherPolicy": "continue"}
so that "stop" ends nothing and the loop rules can judge the run; the harness
decides when the run is over. FILE must then not set finishReason itself.

With --format json, each run is one object and the totals a last one:

	{"kind": "run", "run": PATH, "format": F, "steps": N, "stop": {...}, "warnings": [...]}
	{"kind": "run", "run": PATH, "error": {"line": L, "message": "..."}}
	{"kind": "summary", "runs": N, "clean": N, "finished": N, "faults": N, ...}

Exit status: 2 for bad arguments, bad options or an unreadable input (each
named on standard error as "FILE:LINE: why"; the other runs are still
reported); otherwise 1 when a run stops on a fault (--fail-on fault, the
default), on any stop (--fail-on any), never (--fail-on never); else 0.

Flags:
`

// textActionsFinish is the finish-reason option of --preset text-actions.
const textActionsFinish = `{"terminal": ["length", "content-filter", "error"], "otherPolicy": "continue"}`

// presets maps a preset's name to the options it sets.
var presets = map[string]struct{ key, value string }{
	"text-actions": {"finishReason", textActionsFinish},
}

type auditFlags struct {
	fs                                            *flag.FlagSet
	config, preset, input, format, failOn, labels *string
}

func newAuditFlags(out io.Writer) *auditFlags {
	fs := flag.NewFlagSet("loopguard audit", flag.ContinueOnError)
	fs.SetOutput(out)
	f := &auditFlags{
		fs:     fs,
		config: fs.String("config", "", "read the guard's options from this JSON `FILE`"),
		preset: fs.String("preset", "", "options for a kind of agent: text-actions"),
		input:  fs.String("input", "auto", "input `format`: auto, steps, openai or anthropic"),
		format: fs.String("format", "text", "output `format`: text or json"),
		failOn: fs.String("fail-on", "fault", "exit 1 when a run stops on a `fault`, on any stop (any), or never"),
		labels: fs.String("labels", "", "score the runs against the labels in `MANIFEST.json` (see below)"),
	}
	fs.Usage = func() {
		io.WriteString(fs.Output(), auditUsage)
		fs.PrintDefaults()
		io.WriteString(fs.Output(), labelsUsage)
	}
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
	Error    *inputError   `json:"error,omitempty"`

	skipped bool // a .json file found in a directory that holds no trace
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
	Skipped    int            `json:"skipped"`
	// TextActions counts the runs that ended on a normal "stop" finish of
	// a step that calls tools.
	TextActions int `json:"textActions"`
}

func runAudit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newAuditFlags(stderr)
	usageErr := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "loopguard audit: "+format+"\n", args...)
		fmt.Fprintln(stderr, `usage: loopguard audit [--config FILE] [--preset text-actions] [--input FORMAT] [--format text|json] [--fail-on fault|any|never] [--labels MANIFEST.json] PATH...`)
		return exitUsage
	}
	paths, err := parseFlags(flags.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if *flags.format != "text" && *flags.format != "json" {
		return usageErr("--format must be text or json, not %q", *flags.format)
	}
	switch *flags.failOn {
	case "fault", "any", "never":
	default:
		return usageErr("--fail-on must be fault, any or never, not %q", *flags.failOn)
	}
	input, err := trace.ParseFormat(*flags.input)
	if err != nil {
		return usageErr("--input must be auto, steps, openai or anthropic, not %q", *flags.input)
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
		if err := conf.withPreset(p.key, p.value); err != nil {
			return usageErr("--preset %s: %v", *flags.preset, err)
		}
	}
	labels, err := loadLabels(*flags.labels)
	if err != nil {
		return usageErr("--labels: %v", err)
	}

	if os.Getenv("GOGC") == "" {
		// An audit makes much short-lived garbage (each run's steps) and
		// keeps little: collecting less often saves a quarter of its time
		// for a few tens of megabytes.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	a := &auditor{conf: conf, input: input, stdin: stdin}
	jobs, status := a.collect(paths, stderr)
	w := newAuditOutput(stdout, stderr, *flags.format, labels)
	var sum summary
	sum.Kind, sum.ByReason = "summary", map[string]int{}
	prog := newProgress(stderr, len(jobs))
	a.run(jobs, func(r *runReport) {
		prog.tick()
		if r.skipped {
			sum.Skipped++
			return
		}
		sum.add(r)
		if r.Error != nil {
			prog.clear()
			if r.Error.Line > 0 {
				fmt.Fprintf(stderr, "%s:%d: %s\n", r.Run, r.Error.Line, r.Error.Message)
			} else {
				fmt.Fprintf(stderr, "%s: %s\n", r.Run, r.Error.Message)
			}
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
	if _, err := c.build(); err != nil {
		c.doc = old
		return err
	}
	return nil
}

// A job is one run to audit: a file, or standard input.
type job struct {
	name   string // as reported
	path   string // "" for standard input
	walked bool   // found in a directory, not named
	report *runReport
}

// auditor replays runs.
type auditor struct {
	conf  *guardConfig
	input trace.Format
	stdin io.Reader
}

// collect turns the paths into jobs, in order: a directory's files in
// lexical order. Paths that cannot be read are reported on stderr and make
// the exit status 2.
func (a *auditor) collect(paths []string, stderr io.Writer) ([]*job, int) {
	status := exitOK
	var jobs []*job
	stdinSeen := false
	for _, p := range paths {
		if p == "-" {
			if stdinSeen {
				continue
			}
			stdinSeen = true
			jobs = append(jobs, &job{name: "<stdin>"})
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(stderr, "loopguard audit: %v\n", err)
			status = exitUsage
			continue
		}
		if !info.IsDir() {
			jobs = append(jobs, &job{name: p, path: p})
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(stderr, "loopguard audit: %v\n", err)
				status = exitUsage
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
				jobs = append(jobs, &job{name: path, path: path, walked: true})
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(stderr, "loopguard audit: %v\n", err)
			status = exitUsage
		}
	}
	return jobs, status
}

// run audits the jobs on a bounded pool of workers and hands the reports to
// emit in the order of the jobs.
func (a *auditor) run(jobs []*job, emit func(*runReport)) {
	for _, j := range jobs {
		if j.path == "" {
			// Standard input is read here, so that the workers only
			// ever read files.
			data, err := io.ReadAll(a.stdin)
			j.report = a.audit(j, data, err)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), max(len(jobs), 1))
	// window bounds how many runs are audited ahead of the one being
	// emitted, so that memory does not grow with the corpus.
	window := make(chan struct{}, 4*workers)
	next := make(chan int)
	done := make([]chan struct{}, len(jobs))
	for i := range done {
		done[i] = make(chan struct{})
	}
	go func() {
		defer close(next)
		for i := range jobs {
			window <- struct{}{}
			next <- i
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if j := jobs[i]; j.report == nil {
					data, err := os.ReadFile(j.path)
					j.report = a.audit(j, data, err)
				}
				close(done[i])
			}
		}()
	}
	for i, j := range jobs {
		<-done[i]
		emit(j.report)
		j.report = nil
		<-window
	}
	wg.Wait()
}

// audit replays one run.
func (a *auditor) audit(j *job, data []byte, readErr error) *runReport {
	r := &runReport{Kind: "run", Run: j.name}
	if readErr != nil {
		r.Error = &inputError{Message: readErr.Error()}
		return r
	}
	format := a.input
	if format == trace.Unknown {
		format = trace.Detect(data)
		if format == trace.Unknown && j.walked && strings.EqualFold(filepath.Ext(j.path), ".json") && json.Valid(data) {
			r.skipped = true // JSON that is no trace, such as a manifest
			return r
		}
	}
	t, err := trace.Parse(data, format)
	if err != nil {
		var te *trace.Error
		if errors.As(err, &te) {
			r.Error = &inputError{Line: te.Line, Message: te.Err.Error()}
		} else {
			r.Error = &inputError{Message: err.Error()}
		}
		return r
	}
	r.Format = t.Format.String()
	r.Steps = len(t.Steps)
	g, err := a.conf.newGuard()
	if err != nil {
		r.Error = &inputError{Message: "config: " + err.Error()}
		return r
	}
	for i, s := range t.Steps {
		v := g.Check(s)
		for _, w := range v.Warnings {
			r.warn(w, i)
		}
		if v.Stop {
			r.Stop = newStopReport(v, i, t.Lines[i])
			break
		}
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
type reportWriter struct {
	out  io.Writer
	tab  *tabwriter.Writer
	enc  *json.Encoder
	buf  *bytes.Buffer
	rows int
}

func newReportWriter(out io.Writer, format string) *reportWriter {
	w := &reportWriter{out: out, buf: new(bytes.Buffer)}
	if format == "json" {
		w.enc = json.NewEncoder(w.buf)
		w.enc.SetEscapeHTML(false)
		return w
	}
	w.tab = tabwriter.NewWriter(w.buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w.tab, "RUN\tSTEPS\tSTOP\tLINE\tRULE\tCODE\tWHY")
	return w
}

// maxWhy is the most characters of explanation a table row shows.
const maxWhy = 120

func (w *reportWriter) run(r *runReport) {
	if w.enc != nil {
		w.enc.Encode(r)
		w.spill()
		return
	}
	w.rows++
	switch {
	case r.Error != nil:
		line := "-"
		if r.Error.Line > 0 {
			line = fmt.Sprint(r.Error.Line)
		}
		fmt.Fprintf(w.tab, "%s\t-\t-\t%s\tunreadable\t-\t%s\n", r.Run, line, cut(r.Error.Message, maxWhy))
	case r.Stop == nil:
		fmt.Fprintf(w.tab, "%s\t%d\t-\t-\t-\t-\tno stop%s\n", r.Run, r.Steps, warningsText(r.Warnings))
	default:
		s := r.Stop
		rule := string(s.Reason)
		if !s.Fault {
			rule += " (normal)"
		}
		fmt.Fprintf(w.tab, "%s\t%d\t%d\t%d\t%s\t%s\t%s%s\n", r.Run, r.Steps, s.Step, s.Line, rule, s.Code, cut(s.Why, maxWhy), warningsText(r.Warnings))
	}
}

// spill writes out what the JSON encoder has buffered, once there is enough.
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
	return " (warnings: " + strings.Join(parts, ", ") + ")"
}

func (w *reportWriter) summary(s *summary) {
	if w.enc != nil {
		w.enc.Encode(s)
		return
	}
	w.tab.Flush()
	b := w.buf
	fmt.Fprintf(b, "\n%s: %d stopped on a fault, %d finished normally, %d clean", plural(s.Runs, "run", "runs"), s.Faults, s.Finished, s.Clean)
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
		fmt.Fprintf(b, "  %-20s %d\n", r, s.ByReason[r])
	}
	if s.Skipped > 0 {
		fmt.Fprintf(b, "%s with no trace skipped\n", plural(s.Skipped, ".json file", ".json files"))
	}
	if s.TextActions > 0 {
		runs := plural(s.TextActions, "run", "runs")
		fmt.Fprintf(b, "%s ended on finish reason \"stop\" at a step that calls tools: when a harness reads actions\n"+
			"from the model's text, \"stop\" ends every step. Audit such runs with --preset text-actions.\n", runs)
	}
}

func (w *reportWriter) flush() error {
	if w.tab != nil && w.rows == 0 {
		w.tab.Flush()
	}
	_, err := w.out.Write(w.buf.Bytes())
	w.buf.Reset()
	return err
}

// plural writes n and the noun, in the singular for 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// cut shortens s to n characters, ending in "..." when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
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
