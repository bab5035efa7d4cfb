package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
)

// This file holds audit --labels: scoring the audited runs against a
// manifest of labels made by hand. audit.go reads the flag, loads the
// manifest with loadLabels and writes through newAuditOutput.

// labelsUsage is the part of audit's help about --labels.
const labelsUsage = `
Scoring with --labels MANIFEST.json

The manifest is a JSON array of runs labelled by hand; other keys are ignored:

	{"file": "run-1.jsonl", "label": "loops", "loop_start": 12,
	 "harness": "swe-agent"}

file is relative to the manifest's folder. label is loops, healthy or unclear.
loop_start is the 1-based line where the loop starts, or null when unknown.
harness is optional. Each run's first stop is one of:

	a pattern stop  a fault by any rule but max-steps, budget,
	                tool-limit and finish-reason (custom rules count)
	a limit stop    a fault by max-steps, budget or tool-limit
	another fault   a finish-reason fault (length, content-filter)
	a normal finish, or no stop at all

and each labelled run gets an outcome:

	loops    caught      a pattern stop at or after loop_start; its
	                     lead is the stop's line minus loop_start
	                     (unknown without loop_start)
	         early       a pattern stop before loop_start: not caught
	                     (its lead is reported, below 0)
	         limit       a limit stop
	         missed      anything else
	healthy  false-stop  a fault stop (of any rule) before the run's
	                     last step
	         at-end      a fault stop at the run's last step
	         clean       anything else: a normal finish is no fault
	unclear  stopped, finished or clean: reported, never scored

The text output lists each run (named as in the manifest) with its label,
loop_start, stop line, rule, outcome and lead; then, per rule, the runs it
stopped under each label; per harness, when the manifest names any, the loops
caught and the healthy runs falsely stopped; and last the scores per label and
the lead over the caught runs with a loop_start (median, mean, max and each
value), so that "| tail" shows them. With --format json, each run object adds
"label", "harness", "loopStart", "outcome" and "lead"; each manifest entry that
is not among the inputs is a {"kind": "missing", ...} object; and the summary
adds "labels", "byRule", "byHarness", "unlabelled" and "missing".

An input that is not in the manifest (outcome "unlabelled") and an entry that
is not among the inputs ("missing") are listed, and counted in a warning on
standard error; neither is an error. Runs that cannot be read are left out of
the scores. --labels changes no exit status: --fail-on counts the stops of all
runs, whatever their label. A manifest that cannot be read, or an entry with a
bad field, is a usage error (2).
`

// The labels of a manifest entry.
const (
	labelLoops   = "loops"
	labelHealthy = "healthy"
	labelUnclear = "unclear"
)

// The outcomes of a run scored against its label.
const (
	outcomeCaught     = "caught"     // loops: a pattern stop at or after loop_start
	outcomeEarly      = "early"      // loops: a pattern stop before loop_start
	outcomeLimit      = "limit"      // loops: a limit stop
	outcomeMissed     = "missed"     // loops: anything else
	outcomeFalseStop  = "false-stop" // healthy: a fault stop before the last step
	outcomeAtEnd      = "at-end"     // healthy: a fault stop at the last step
	outcomeClean      = "clean"      // healthy or unclear: no fault stop (healthy), no stop (unclear)
	outcomeStopped    = "stopped"    // unclear: a fault stop
	outcomeFinished   = "finished"   // unclear: a normal finish
	outcomeUnlabelled = "unlabelled" // an input that is not in the manifest
	outcomeUnreadable = "unreadable" // a labelled input that cannot be read
	outcomeMissing    = "missing"    // a manifest entry that is not among the inputs
)

// A labelEntry is one run of a manifest.
type labelEntry struct {
	N         int    // 1-based position in the manifest
	File      string // as the manifest gives it
	Label     string
	LoopStart int // 1-based line; 0 when unknown
	Harness   string

	path string // File, from the manifest's folder
	key  string // path made absolute, for matching the inputs
	seen bool   // among the inputs
}

// A labelSet is a manifest, read.
type labelSet struct {
	path    string
	entries []*labelEntry
	byKey   map[string]*labelEntry
}

// A manifestError says what is wrong with a manifest: the document, or one
// entry's field.
type manifestError struct {
	Path  string // the manifest
	Entry int    // 1-based; 0 for the document as a whole
	File  string // the entry's file, when known
	Field string // "file", "label", "loop_start" or "harness"; "" for the entry as a whole
	Err   error
}

func (e *manifestError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Entry > 0 {
		fmt.Fprintf(&b, ": entry %d", e.Entry)
		if e.File != "" {
			fmt.Fprintf(&b, " (%s)", e.File)
		}
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

func (e *manifestError) Unwrap() error { return e.Err }

// loadLabels reads the manifest at path; "" means no --labels, and a nil set.
func loadLabels(path string) (*labelSet, error) {
	if path == "" {
		return nil, nil
	}
	data, err := readDoc(path)
	if errors.Is(err, errDocTooLarge) {
		return nil, &manifestError{Path: path, Err: err}
	}
	if err != nil {
		return nil, err
	}
	return parseLabels(path, data)
}

// parseLabels reads a manifest whose entries' files are relative to path's
// folder.
func parseLabels(path string, data []byte) (*labelSet, error) {
	docErr := func(err error) error { return &manifestError{Path: path, Err: err} }
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, docErr(errors.New("not a JSON array of entries"))
		}
		return nil, docErr(err)
	}
	set := &labelSet{path: path, byKey: make(map[string]*labelEntry, len(raw))}
	dir := filepath.Dir(path)
	for i, r := range raw {
		e, err := parseLabelEntry(r)
		if err != nil {
			err.Path, err.Entry = path, i+1
			return nil, err
		}
		e.N = i + 1
		e.path = e.File
		if !filepath.IsAbs(e.path) {
			e.path = filepath.Join(dir, e.path)
		}
		e.key = pathKey(e.path)
		if prev, ok := set.byKey[e.key]; ok {
			return nil, &manifestError{Path: path, Entry: e.N, File: e.File, Field: "file",
				Err: fmt.Errorf("the same run as entry %d", prev.N)}
		}
		set.byKey[e.key] = e
		set.entries = append(set.entries, e)
	}
	return set, nil
}

// parseLabelEntry reads one entry; its error lacks the manifest's path and
// the entry's number.
func parseLabelEntry(data json.RawMessage) (*labelEntry, *manifestError) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, &manifestError{Err: errors.New("not a JSON object")}
	}
	e := &labelEntry{}
	fieldErr := func(field string, err error) *manifestError {
		return &manifestError{File: e.File, Field: field, Err: err}
	}
	if err := json.Unmarshal(m["file"], &e.File); err != nil || e.File == "" {
		return nil, fieldErr("file", errors.New("want the run's path, relative to the manifest's folder"))
	}
	if err := json.Unmarshal(m["label"], &e.Label); err != nil {
		return nil, fieldErr("label", errors.New("want loops, healthy or unclear"))
	}
	switch e.Label {
	case labelLoops, labelHealthy, labelUnclear:
	default:
		return nil, fieldErr("label", fmt.Errorf("want loops, healthy or unclear, not %q", e.Label))
	}
	if v, ok := m["loop_start"]; ok && string(v) != "null" {
		n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil || n < 1 {
			return nil, fieldErr("loop_start", fmt.Errorf("want a line number from 1, or null; not %s", v))
		}
		e.LoopStart = n
	}
	if v, ok := m["harness"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &e.Harness); err != nil {
			return nil, fieldErr("harness", fmt.Errorf("want a string, not %s", v))
		}
	}
	return e, nil
}

// pathKey returns the form of a path that manifest entries and inputs are
// matched on: absolute, clean, with symbolic links resolved when it exists.
func pathKey(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// lookup returns the entry of an audited run, or nil, and marks it seen.
func (s *labelSet) lookup(run string) *labelEntry {
	e := s.byKey[pathKey(run)]
	if e != nil {
		e.seen = true
	}
	return e
}

// A stopKind sorts a run's first stop for scoring.
type stopKind int

const (
	noStop      stopKind = iota
	normalStop           // a normal finish
	patternStop          // a fault by a rule that looks for a pattern, custom rules included
	limitStop            // a fault by a limit: max-steps, budget, tool-limit
	otherFault           // a finish-reason fault: length, content-filter, ...
)

// kindOf sorts a stop by its reason: every reason but the limits' and the
// finish reason's is a pattern, so that custom rules count as patterns.
func kindOf(s *stopReport) stopKind {
	switch {
	case s == nil:
		return noStop
	case !s.Fault:
		return normalStop
	}
	switch s.Reason {
	case budget.ReasonMaxSteps, budget.ReasonBudget, toollimit.ReasonToolLimit:
		return limitStop
	case finish.ReasonFinishReason:
		return otherFault
	}
	return patternStop
}

// judge scores one audited run against its entry (nil when the run is not in
// the manifest). lead is set for caught runs with a known loop_start, and for
// early ones, where it is negative.
func judge(e *labelEntry, r *runReport) (outcome string, lead *int) {
	if e == nil {
		return outcomeUnlabelled, nil
	}
	if r.Error != nil {
		return outcomeUnreadable, nil
	}
	s := r.Stop
	switch e.Label {
	case labelLoops:
		switch kindOf(s) {
		case patternStop:
			if e.LoopStart == 0 {
				return outcomeCaught, nil
			}
			n := s.Line - e.LoopStart
			if n < 0 {
				return outcomeEarly, &n
			}
			return outcomeCaught, &n
		case limitStop:
			return outcomeLimit, nil
		}
		return outcomeMissed, nil
	case labelHealthy:
		if s != nil && s.Fault {
			if s.Step < r.Steps-1 {
				return outcomeFalseStop, nil
			}
			return outcomeAtEnd, nil
		}
		return outcomeClean, nil
	default:
		switch {
		case s == nil:
			return outcomeClean, nil
		case s.Fault:
			return outcomeStopped, nil
		}
		return outcomeFinished, nil
	}
}

// ruleName is how a stop's rule is shown: its reason, marked when the stop is
// a normal finish.
func ruleName(s *stopReport) string {
	if s.Fault {
		return string(s.Reason)
	}
	return string(s.Reason) + " (normal)"
}

// The scores of a labelled set. Their JSON form is part of audit's output
// contract.
type (
	labelScores struct {
		Loops   loopsScore   `json:"loops"`
		Healthy healthyScore `json:"healthy"`
		Unclear unclearScore `json:"unclear"`
	}
	loopsScore struct {
		Runs   int       `json:"runs"`
		Caught int       `json:"caught"`
		Early  int       `json:"early"`
		Limit  int       `json:"limit"`
		Missed int       `json:"missed"`
		Lead   leadScore `json:"lead"`
	}
	// leadScore is the lead of the caught runs whose loop_start is known.
	leadScore struct {
		Known  int      `json:"known"`
		Median *float64 `json:"median"`
		Mean   *float64 `json:"mean"` // rounded to 0.01
		Max    *int     `json:"max"`
		List   []int    `json:"list"` // in increasing order
	}
	healthyScore struct {
		Runs       int `json:"runs"`
		FalseStops int `json:"falseStops"`
		AtEnd      int `json:"atEnd"`
		Clean      int `json:"clean"`
		// FalseStopRules counts the false stops by rule.
		FalseStopRules map[string]int `json:"falseStopRules,omitempty"`
	}
	unclearScore struct {
		Runs     int `json:"runs"`
		Stopped  int `json:"stopped"`
		Finished int `json:"finished"`
		Clean    int `json:"clean"`
	}
	// ruleScore is how many runs of each label one rule stopped, with a
	// fault or a normal finish.
	ruleScore struct {
		Rule    string `json:"rule"` // the stop's reason
		Fault   bool   `json:"fault"`
		Loops   int    `json:"loops"`
		Healthy int    `json:"healthy"`
		Unclear int    `json:"unclear"`
	}
	harnessScore struct {
		Harness    string `json:"harness"`
		Loops      int    `json:"loops"`
		Caught     int    `json:"caught"`
		Healthy    int    `json:"healthy"`
		FalseStops int    `json:"falseStops"`
		Unclear    int    `json:"unclear"`
	}
)

// labelledRun is a run's JSON object with --labels.
type labelledRun struct {
	*runReport
	Label     string `json:"label,omitempty"`
	Harness   string `json:"harness,omitempty"`
	LoopStart int    `json:"loopStart,omitempty"`
	Outcome   string `json:"outcome"`
	Lead      *int   `json:"lead,omitempty"`
}

// missingRun is the JSON object of a manifest entry not among the inputs.
type missingRun struct {
	Kind      string `json:"kind"`
	Run       string `json:"run"`
	Label     string `json:"label"`
	Harness   string `json:"harness,omitempty"`
	LoopStart int    `json:"loopStart,omitempty"`
	Outcome   string `json:"outcome"`
}

// labelledSummary is the summary object with --labels.
type labelledSummary struct {
	*summary
	Labels     labelScores    `json:"labels"`
	ByRule     []ruleScore    `json:"byRule"`
	ByHarness  []harnessScore `json:"byHarness,omitempty"`
	Unlabelled int            `json:"unlabelled"`
	Missing    int            `json:"missing"`
}

// scoreboard adds up the outcomes.
type scoreboard struct {
	labels     labelScores
	rules      []ruleScore
	harnesses  []harnessScore
	anyHarness bool
	unlabelled int
}

func (b *scoreboard) add(e *labelEntry, r *runReport, outcome string, lead *int) {
	switch outcome {
	case outcomeUnlabelled:
		b.unlabelled++
		return
	case outcomeUnreadable:
		return
	}
	h := b.harness(e.Harness)
	if e.Harness != "" {
		b.anyHarness = true
	}
	switch e.Label {
	case labelLoops:
		l := &b.labels.Loops
		l.Runs++
		h.Loops++
		switch outcome {
		case outcomeCaught:
			l.Caught++
			h.Caught++
			if lead != nil {
				l.Lead.List = append(l.Lead.List, *lead)
			}
		case outcomeEarly:
			l.Early++
		case outcomeLimit:
			l.Limit++
		default:
			l.Missed++
		}
	case labelHealthy:
		l := &b.labels.Healthy
		l.Runs++
		h.Healthy++
		switch outcome {
		case outcomeFalseStop:
			l.FalseStops++
			h.FalseStops++
			if l.FalseStopRules == nil {
				l.FalseStopRules = map[string]int{}
			}
			l.FalseStopRules[ruleName(r.Stop)]++
		case outcomeAtEnd:
			l.AtEnd++
		default:
			l.Clean++
		}
	default:
		l := &b.labels.Unclear
		l.Runs++
		h.Unclear++
		switch outcome {
		case outcomeStopped:
			l.Stopped++
		case outcomeFinished:
			l.Finished++
		default:
			l.Clean++
		}
	}
	if s := r.Stop; s != nil {
		rs := b.rule(string(s.Reason), s.Fault)
		switch e.Label {
		case labelLoops:
			rs.Loops++
		case labelHealthy:
			rs.Healthy++
		default:
			rs.Unclear++
		}
	}
}

// name is how the rule is shown, as ruleName shows a stop's.
func (r ruleScore) name() string {
	return ruleName(&stopReport{Reason: guard.Reason(r.Rule), Fault: r.Fault})
}

func (b *scoreboard) rule(name string, fault bool) *ruleScore {
	for i := range b.rules {
		if b.rules[i].Rule == name && b.rules[i].Fault == fault {
			return &b.rules[i]
		}
	}
	b.rules = append(b.rules, ruleScore{Rule: name, Fault: fault})
	return &b.rules[len(b.rules)-1]
}

func (b *scoreboard) harness(name string) *harnessScore {
	if name == "" {
		name = "-"
	}
	for i := range b.harnesses {
		if b.harnesses[i].Harness == name {
			return &b.harnesses[i]
		}
	}
	b.harnesses = append(b.harnesses, harnessScore{Harness: name})
	return &b.harnesses[len(b.harnesses)-1]
}

// finish sorts the tables and works out the lead.
func (b *scoreboard) finish() {
	slices.SortFunc(b.rules, func(x, y ruleScore) int { return strings.Compare(x.name(), y.name()) })
	slices.SortFunc(b.harnesses, func(x, y harnessScore) int { return strings.Compare(x.Harness, y.Harness) })
	if !b.anyHarness {
		b.harnesses = nil
	}
	b.labels.Loops.Lead = newLeadScore(b.labels.Loops.Lead.List)
}

func newLeadScore(leads []int) leadScore {
	s := leadScore{Known: len(leads), List: slices.Sorted(slices.Values(leads))}
	if s.List == nil {
		s.List = []int{}
	}
	n := len(s.List)
	if n == 0 {
		return s
	}
	sum := 0
	for _, v := range s.List {
		sum += v
	}
	median := float64(s.List[n/2])
	if n%2 == 0 {
		median = float64(s.List[n/2-1]+s.List[n/2]) / 2
	}
	mean := math.Round(float64(sum)/float64(n)*100) / 100
	s.Median, s.Mean, s.Max = &median, &mean, &s.List[n-1]
	return s
}

// An auditOutput takes the reports of an audit, in order, then the totals.
type auditOutput interface {
	run(*runReport)
	summary(*summary)
	flush() error
}

// newAuditOutput returns the writer of audit's output: the plain report, or,
// with labels, the scores.
func newAuditOutput(stdout, stderr io.Writer, format string, labels *labelSet, jobs []*job) auditOutput {
	if labels == nil {
		return newReportWriter(stdout, format, jobs)
	}
	w := &labelWriter{out: stdout, stderr: stderr, labels: labels, buf: new(bytes.Buffer)}
	if format == "json" {
		w.enc = json.NewEncoder(w.buf)
		w.enc.SetEscapeHTML(false)
	}
	return w
}

// labelWriter writes the scores of the audited runs, as a table or as JSON.
type labelWriter struct {
	out, stderr io.Writer
	labels      *labelSet
	enc         *json.Encoder // nil for text
	buf         *bytes.Buffer
	rows        []labelRow // text only
	board       scoreboard
}

// A labelRow is one line of the text table.
type labelRow struct {
	run, label, steps, loop, stop, rule, outcome, lead string
}

func (w *labelWriter) run(r *runReport) {
	e := w.labels.lookup(r.Run)
	outcome, lead := judge(e, r)
	w.board.add(e, r, outcome, lead)
	if w.enc != nil {
		lr := labelledRun{runReport: r, Outcome: outcome, Lead: lead}
		if e != nil {
			lr.Label, lr.Harness, lr.LoopStart = e.Label, e.Harness, e.LoopStart
		}
		w.enc.Encode(lr)
		if w.buf.Len() >= 64<<10 {
			w.out.Write(w.buf.Bytes())
			w.buf.Reset()
		}
		return
	}
	row := labelRow{run: r.Run, label: "-", steps: "-", loop: "-", stop: "-", rule: "-", outcome: outcome, lead: "-"}
	if e != nil {
		row.run, row.label, row.loop = e.File, e.Label, loopText(e)
	}
	switch {
	case r.Error != nil:
		row.rule = "unreadable"
	case r.Stop != nil:
		row.steps = strconv.Itoa(r.Steps)
		row.stop, row.rule = strconv.Itoa(r.Stop.Line), ruleName(r.Stop)
	default:
		row.steps = strconv.Itoa(r.Steps)
	}
	switch {
	case lead != nil:
		row.lead = strconv.Itoa(*lead)
	case outcome == outcomeCaught:
		row.lead = "?"
	}
	w.rows = append(w.rows, row)
}

// loopText is how an entry's loop_start is shown: "?" for a loops run without
// one, "-" for the other labels.
func loopText(e *labelEntry) string {
	switch {
	case e.LoopStart > 0:
		return strconv.Itoa(e.LoopStart)
	case e.Label == labelLoops:
		return "?"
	}
	return "-"
}

func (w *labelWriter) summary(sum *summary) {
	var missing []*labelEntry
	for _, e := range w.labels.entries {
		if !e.seen {
			missing = append(missing, e)
		}
	}
	w.board.finish()
	b := &w.board
	if w.enc != nil {
		for _, e := range missing {
			w.enc.Encode(missingRun{Kind: "missing", Run: e.path, Label: e.Label, Harness: e.Harness,
				LoopStart: e.LoopStart, Outcome: outcomeMissing})
		}
		rules := b.rules
		if rules == nil {
			rules = []ruleScore{}
		}
		w.enc.Encode(labelledSummary{summary: sum, Labels: b.labels, ByRule: rules, ByHarness: b.harnesses,
			Unlabelled: b.unlabelled, Missing: len(missing)})
	} else {
		w.text(sum, missing)
	}
	if b.unlabelled > 0 {
		fmt.Fprintf(w.stderr, "loopguard audit: warning: %s %s not in %s\n", plural(b.unlabelled, "run", "runs"), isAre(b.unlabelled), escape.String(w.labels.path))
	}
	if len(missing) > 0 {
		fmt.Fprintf(w.stderr, "loopguard audit: warning: %s in %s %s not among the inputs\n",
			plural(len(missing), "entry", "entries"), escape.String(w.labels.path), isAre(len(missing)))
	}
}

func (w *labelWriter) text(sum *summary, missing []*labelEntry) {
	b := &w.board
	table := func(header string, rows func(tab io.Writer)) {
		tab := tabwriter.NewWriter(w.buf, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tab, header)
		rows(tab)
		tab.Flush()
	}
	// row writes a row of cells, each escaped: neither a file name nor a
	// harness can write a tab, a fake row or an escape sequence.
	row := func(tab io.Writer, cells ...string) {
		for i, c := range cells {
			if i > 0 {
				io.WriteString(tab, "\t")
			}
			io.WriteString(tab, escape.String(c))
		}
		io.WriteString(tab, "\n")
	}
	itoa := strconv.Itoa
	for _, e := range missing {
		w.rows = append(w.rows, labelRow{run: e.File, label: e.Label, steps: "-", loop: loopText(e),
			stop: "-", rule: "-", outcome: outcomeMissing, lead: "-"})
	}
	table("RUN\tLABEL\tSTEPS\tLOOP\tSTOP\tRULE\tOUTCOME\tLEAD", func(tab io.Writer) {
		for _, r := range w.rows {
			row(tab, r.run, r.label, r.steps, r.loop, r.stop, r.rule, r.outcome, r.lead)
		}
	})
	if len(b.rules) > 0 {
		w.buf.WriteString("\n")
		table("RULE\tLOOPS\tHEALTHY\tUNCLEAR", func(tab io.Writer) {
			for _, r := range b.rules {
				row(tab, r.name(), itoa(r.Loops), itoa(r.Healthy), itoa(r.Unclear))
			}
		})
	}
	if len(b.harnesses) > 0 {
		w.buf.WriteString("\n")
		table("HARNESS\tLOOPS CAUGHT\tHEALTHY FALSE STOPS\tUNCLEAR", func(tab io.Writer) {
			for _, h := range b.harnesses {
				row(tab, h.Harness, fmt.Sprintf("%d/%d", h.Caught, h.Loops), fmt.Sprintf("%d/%d", h.FalseStops, h.Healthy), itoa(h.Unclear))
			}
		})
	}

	out := w.buf
	fmt.Fprintf(out, "\n%s: %d stopped on a fault, %d finished normally, %d clean", plural(sum.Runs, "run", "runs"), sum.Faults, sum.Finished, sum.Clean)
	if sum.Unreadable > 0 {
		fmt.Fprintf(out, ", %d unreadable", sum.Unreadable)
	}
	out.WriteString("\n")
	if sum.TextActions > 0 {
		fmt.Fprintf(out, "%s ended on finish reason \"stop\" at a step that calls tools: see --preset text-actions\n",
			plural(sum.TextActions, "run", "runs"))
	}
	if b.unlabelled > 0 || len(missing) > 0 {
		fmt.Fprintf(out, "%s not in the manifest, %s not among the inputs\n",
			plural(b.unlabelled, "run", "runs"), plural(len(missing), "entry", "entries"))
	}

	l := &b.labels
	fmt.Fprintf(out, "\nloops    %s: %d caught, %d early, %d stopped by a limit, %d missed\n",
		plural(l.Loops.Runs, "run", "runs"), l.Loops.Caught, l.Loops.Early, l.Loops.Limit, l.Loops.Missed)
	fmt.Fprintf(out, "         lead %s\n", leadText(l.Loops))
	fmt.Fprintf(out, "healthy  %s: %s%s, %d stopped at their last step, %d clean\n",
		plural(l.Healthy.Runs, "run", "runs"), plural(l.Healthy.FalseStops, "false stop", "false stops"),
		rulesText(l.Healthy.FalseStopRules), l.Healthy.AtEnd, l.Healthy.Clean)
	fmt.Fprintf(out, "unclear  %s, not scored: %d stopped on a fault, %d finished normally, %d clean\n",
		plural(l.Unclear.Runs, "run", "runs"), l.Unclear.Stopped, l.Unclear.Finished, l.Unclear.Clean)
}

// leadText says what is known of the lead of the caught loops.
func leadText(l loopsScore) string {
	s := l.Lead
	unknown := l.Caught - s.Known
	switch {
	case l.Caught == 0:
		return "(stop line - loop_start): no loop caught"
	case s.Known == 0:
		return fmt.Sprintf("(stop line - loop_start): unknown, no loop_start for the %s", plural(l.Caught, "caught run", "caught runs"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(stop line - loop_start) over %s", plural(s.Known, "caught run", "caught runs"))
	if unknown > 0 {
		fmt.Fprintf(&b, " with a loop_start (%d without)", unknown)
	}
	fmt.Fprintf(&b, ": median %s, mean %s, max %d; each:", formatNumber(*s.Median), formatNumber(*s.Mean), *s.Max)
	for _, v := range s.List {
		fmt.Fprintf(&b, " %d", v)
	}
	return b.String()
}

// rulesText lists the false stops by rule, as " (max-steps 1, ...)".
func rulesText(rules map[string]int) string {
	if len(rules) == 0 {
		return ""
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(rules)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, rules[r]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// isAre is the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func formatNumber(x float64) string {
	return strconv.FormatFloat(x, 'f', -1, 64)
}

func (w *labelWriter) flush() error {
	_, err := w.out.Write(w.buf.Bytes())
	w.buf.Reset()
	return err
}
