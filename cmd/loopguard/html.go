package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
	"github.com/loopguard/loopguard/rule"
)

// This file writes audit --html: one self-contained HTML page (inline CSS and
// SVG, no script, no external asset; a Content-Security-Policy forbids any)
// with the summary table and, per run, a timeline of its steps and the
// counter of each rule under it. The page is made with html/template, which
// escapes every value by its context; each text from an input or a rule is
// first escaped as for a terminal (package internal/escape), so that control
// and bidirectional characters show as Go escapes. The page is also
// well-formed XML, which its test reads.
//
// The page is bounded, whatever its inputs: a run draws at most
// maxDrawnSteps steps (see timeline), the page at most maxPageSteps steps in
// all and maxPageRuns runs; what is left out is counted, and the page says
// so.

// The page's bounds.
const (
	maxPageRuns  = 2000   // runs with a row and a section; later runs are counted
	maxPageSteps = 50_000 // steps drawn in all; later runs get no timeline
)

// htmlOutput collects the runs of an audit into a page, and writes it to its
// file at the end.
type htmlOutput struct {
	f        *os.File
	labels   *labelSet // nil without --labels
	inputs   []string  // the PATHs, for the heading
	rows     []htmlRow
	body     bytes.Buffer // the sections of the runs
	drawn    int          // the steps drawn so far
	notShown int          // the runs past maxPageRuns
	noTL     int          // the runs whose timeline the page's step budget left out
	cut      int          // the runs drawn in part (longer than maxDrawnSteps)
}

// An htmlRow is a run's row in the summary table.
type htmlRow struct {
	ID                         int
	Run, Format                string
	Steps, Line                string
	Result, Class, Why         string
	Label, Loop, Outcome, Lead string
}

// newHTMLOutput creates (or truncates) the page's file at once, so that a
// path that cannot be written is an error before the audit.
func newHTMLOutput(path string, labels *labelSet, inputs []string) (*htmlOutput, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &htmlOutput{f: f, labels: labels, inputs: inputs}, nil
}

// teeOutput sends an audit's reports to two outputs.
type teeOutput struct{ a, b auditOutput }

func (t teeOutput) run(r *runReport) { t.a.run(r); t.b.run(r) }
func (t teeOutput) summary(s *summary) {
	t.a.summary(s)
	t.b.summary(s)
}
func (t teeOutput) flush() error {
	errA, errB := t.a.flush(), t.b.flush()
	if errA != nil {
		return errA
	}
	return errB
}

// The page's templates. Every value is escaped by html/template; the text
// values are escaped for a terminal first (see esc).
var pageTemplates = template.Must(template.New("page").Funcs(template.FuncMap{"esc": escape.String}).Parse(pageHTML))

const pageHTML = `{{define "page"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<meta name="generator" content="loopguard audit --html"/>
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<header><h1>{{.Title}}</h1>
<p class="inputs">{{range $i, $in := .Inputs}}{{if $i}} {{end}}<code>{{esc $in}}</code>{{end}}</p>
<p class="totals">{{.Totals}}</p>{{range .Bounds}}
<p class="bound">{{.}}</p>{{end}}</header>
<table class="summary">
<thead><tr><th>#</th><th>run</th><th>format</th><th>steps</th><th>line</th><th>result</th>{{if .Labels}}<th>label</th><th>loop start</th><th>outcome</th><th>lead</th>{{end}}<th>why</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{.Class}}"><td>{{.ID}}</td><td><a href="#run-{{.ID}}">{{esc .Run}}</a></td><td>{{esc .Format}}</td><td>{{.Steps}}</td><td>{{.Line}}</td><td>{{esc .Result}}</td>{{if $.Labels}}<td>{{esc .Label}}</td><td>{{esc .Loop}}</td><td class="o-{{.Outcome}}">{{esc .Outcome}}</td><td>{{esc .Lead}}</td>{{end}}<td class="why">{{esc .Why}}</td></tr>
{{end}}</tbody>
</table>
{{.Legend}}{{.Body}}</body>
</html>
{{end}}

{{define "section"}}<section class="run {{.Row.Class}}" id="run-{{.Row.ID}}" data-run="{{esc .R.Run}}" data-steps="{{.R.Steps}}"{{with .R.Stop}} data-stop-step="{{.Step}}" data-stop-line="{{.Line}}" data-stop-code="{{esc .Code}}" data-fault="{{.Fault}}"{{end}}>
<h2><a href="#run-{{.Row.ID}}">#{{.Row.ID}}</a> {{esc .R.Run}}</h2>
<p class="meta">{{if .R.Format}}format {{esc .R.Format}}, {{end}}{{.StepsText}}: <b class="{{.Row.Class}}">{{esc .Row.Result}}</b>{{with .R.Stop}} at step {{.Step}} (line {{.Line}}){{end}}{{if .Labels}}; label <b>{{esc .Row.Label}}</b>{{if .LoopStart}}, loop starts at line {{.LoopStart}}{{end}}; outcome <b class="o-{{.Row.Outcome}}">{{esc .Row.Outcome}}</b>{{if ne .Row.Lead "-"}}, lead {{esc .Row.Lead}}{{end}}{{end}}</p>
{{if .Row.Why}}<p class="why">{{esc .Row.Why}}</p>
{{end}}{{with .NotDrawn}}<p class="bound">{{.}}</p>
{{end}}{{with .TL}}{{template "timeline" .}}{{end}}{{with .Details}}{{template "details" .}}{{end}}</section>
{{end}}

{{define "details"}}<details class="evidence"><summary>{{.Summary}}</summary>
{{with .Stop}}<p>{{esc .Code}} ({{esc (printf "%s" .Reason)}}, detector {{esc .Detector}}) at step {{.Step}}, line {{.Line}}</p>
{{end}}{{if .Evidence}}<pre>{{.Evidence}}</pre>
{{end}}{{if .Warnings}}<ul class="warnings">
{{range .Warnings}}<li>{{esc .Name}} ({{esc .Detector}}): from step {{.FirstStep}}, {{.Times}}</li>
{{end}}</ul>
{{end}}</details>
{{end}}

{{define "timeline"}}{{if .Tools}}<ul class="tools">{{range .Tools}}<li><i class="{{.Class}}"></i>{{if .More}}{{.More}} more tools{{else}}{{esc .Name}} &#215;{{.Count}}{{end}}</li>{{end}}</ul>
{{end}}<div class="tl"><svg class="labels" width="{{.LabelWidth}}" height="{{.Height}}" viewBox="0 0 {{.LabelWidth}} {{.Height}}">{{range .LaneLabels}}<text x="{{.X}}" y="{{.Y}}">{{.Text}}</text>{{end}}{{range .MeterLabels}}<text x="{{.X}}" y="{{.Y}}">{{esc .Text}} <tspan class="lim">({{.Limit}})</tspan></text>{{end}}</svg><div class="scroll"><svg class="lanes" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">{{range .Bands}}<rect class="band" x="0" y="{{.Y}}" width="{{.W}}" height="{{.H}}"/>{{end}}{{range .Limits}}<line class="limit" x1="0" x2="{{.X2}}" y1="{{.Y1}}" y2="{{.Y1}}"/><line class="zero" x1="0" x2="{{.X2}}" y1="{{.Y2}}" y2="{{.Y2}}"/>{{end}}{{with .After}}<rect class="after" x="{{.X}}" y="0" width="{{.W}}" height="{{.H}}"><title>after the stop: not judged</title></rect>{{end}}{{range .Gaps}}<g class="gap" data-steps="{{.N}}"><rect x="{{.X}}" y="0" width="{{.W}}" height="{{.H}}"/><text x="{{.TX}}" y="{{.TY}}">&#8230;</text><title>{{.Title}}</title></g>{{end}}{{range .Ticks}}<text class="tick" x="{{.X}}" y="11">{{.N}}</text>{{end}}{{range .Marks}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"/>{{end}}{{range .Crosses}}<path class="x" d="{{.}}"/>{{end}}{{range .Mores}}<text class="more" x="{{.X}}" y="{{.Y}}">+{{.N}}</text>{{end}}{{range .Shapes}}{{if eq .Kind "circle"}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="3.5"/>{{else if eq .Kind "rect"}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="7" height="7"/>{{else}}<path class="{{.Class}}" d="{{.D}}"/>{{end}}{{end}}{{range .Meters}}<path class="meter" data-meter="{{esc .Name}}" d="{{.D}}"/>{{with .Hit}}<circle class="hit-limit" cx="{{.X}}" cy="{{.Y}}" r="3"/>{{end}}{{end}}{{with .Loop}}<g class="loop-start" data-line="{{.Line}}" data-step="{{.Step}}"><line x1="{{.X}}" x2="{{.X}}" y1="{{.Y1}}" y2="{{.Y2}}"/><text x="{{.TX}}" y="{{.TY}}">loop (line {{.Line}})</text></g>{{end}}{{with .Stop}}<g class="{{.Class}}" data-step="{{.Step}}" data-line="{{.Line}}"><title>{{esc .Title}}</title><line x1="{{.X}}" x2="{{.X}}" y1="{{.Y1}}" y2="{{.Y2}}"/><path d="{{.D}}"/></g>{{end}}{{range .Hits}}<rect class="hit" data-step="{{.Step}}" x="{{.X}}" y="0" width="{{.W}}" height="{{.H}}"><title>{{.Title}}</title></rect>{{end}}</svg></div></div>
{{end}}`

// pageView is what the page template draws.
type pageView struct {
	Title, Totals string
	Inputs        []string
	Bounds        []string // what the page leaves out
	Labels        bool
	Rows          []htmlRow
	CSS           template.CSS
	Legend        template.HTML
	Body          template.HTML // the sections, made by the section template
}

func (h *htmlOutput) run(r *runReport) {
	if len(h.rows) == maxPageRuns {
		h.notShown++
		return
	}
	id := len(h.rows) + 1
	row := htmlRow{ID: id, Run: r.Run, Format: r.Format, Steps: "-", Line: "-"}
	var entry *labelEntry
	var lead *int
	if h.labels != nil {
		entry = h.labels.byKey[pathKey(r.Run)]
		row.Outcome, lead = judge(entry, r)
		row.Label, row.Loop, row.Lead = "-", "-", "-"
		if entry != nil {
			row.Label, row.Loop = entry.Label, loopText(entry)
		}
		switch {
		case lead != nil:
			row.Lead = strconv.Itoa(*lead)
		case row.Outcome == outcomeCaught:
			row.Lead = "?"
		}
	}
	switch {
	case r.Error != nil:
		row.Result, row.Class, row.Why = "unreadable", "error", r.Error.Message
		if r.Error.Line > 0 {
			row.Line = strconv.Itoa(r.Error.Line)
		}
	case r.Empty:
		row.Steps, row.Result, row.Class = "0", "empty: no steps", "error"
	case r.Stop == nil:
		row.Steps, row.Result, row.Class = strconv.Itoa(r.Steps), "no stop", "clean"
	default:
		row.Steps, row.Line = strconv.Itoa(r.Steps), strconv.Itoa(r.Stop.Line)
		row.Result, row.Class, row.Why = r.Stop.Code, "fault", r.Stop.Why
		if !r.Stop.Fault {
			row.Result += " (normal)"
			row.Class = "normal"
		}
	}
	h.section(r, &row, entry)
	row.Why = cut(row.Why, 160)
	h.rows = append(h.rows, row)
}

func (h *htmlOutput) summary(s *summary) {
	title := fmt.Sprintf("loopguard audit: %s", plural(s.Runs, "run", "runs"))
	totals := fmt.Sprintf("%d stopped on a fault, %d finished normally, %d clean", s.Faults, s.Finished, s.Clean)
	if s.Empty > 0 {
		totals += fmt.Sprintf(", %d empty", s.Empty)
	}
	if s.Unreadable > 0 {
		totals += fmt.Sprintf(", %d unreadable", s.Unreadable)
	}
	v := pageView{Title: title, Totals: totals, Inputs: h.inputs, Labels: h.labels != nil, Rows: h.rows,
		CSS: template.CSS(htmlCSS), Legend: template.HTML(htmlLegend), Body: template.HTML(h.body.String())}
	if h.cut > 0 {
		v.Bounds = append(v.Bounds, fmt.Sprintf("%s longer than %d steps %s drawn in part: the first %d steps, the %d up to and including the stop and the %d after it, and the last ones, %d in all; a gap in the timeline says how many steps it leaves out.",
			plural(h.cut, "run", "runs"), maxDrawnSteps, isAre(h.cut), headSteps, beforeStop, afterStop, maxDrawnSteps))
	}
	if h.noTL > 0 {
		v.Bounds = append(v.Bounds, fmt.Sprintf("%s drawn without a timeline: the page draws at most %d steps in all.",
			plural(h.noTL, "run is", "runs are"), maxPageSteps))
	}
	if h.notShown > 0 {
		v.Bounds = append(v.Bounds, fmt.Sprintf("%s after the first %d %s not on this page; the text and JSON outputs report every run.",
			plural(h.notShown, "run", "runs"), maxPageRuns, isAre(h.notShown)))
	}
	h.body.Reset()
	if err := pageTemplates.ExecuteTemplate(&h.body, "page", v); err != nil {
		// The templates are fixed, and their values plain: this is a bug.
		panic(err)
	}
}

func (h *htmlOutput) flush() error {
	_, err := h.f.Write(h.body.Bytes())
	if cerr := h.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sectionView is what the section template draws of a run.
type sectionView struct {
	R         *runReport
	Row       *htmlRow
	Labels    bool
	LoopStart int
	StepsText string
	NotDrawn  string
	TL        *timelineView
	Details   *detailsView
}

// section writes a run's section: its heading, what stopped it, its
// timeline and the stop's evidence.
func (h *htmlOutput) section(r *runReport, row *htmlRow, entry *labelEntry) {
	v := sectionView{R: r, Row: row, Labels: h.labels != nil, StepsText: plural(r.Steps, "step", "steps")}
	if entry != nil {
		v.LoopStart = entry.LoopStart
	}
	if tl := r.tl; tl != nil && tl.total > 0 {
		cols := tl.columns()
		n := 0
		for _, c := range cols {
			if c.step != nil {
				n++
			}
		}
		if h.drawn+n > maxPageSteps {
			h.noTL++
			v.NotDrawn = fmt.Sprintf("Timeline not drawn: the page already draws %d steps, and draws at most %d.", h.drawn, maxPageSteps)
		} else {
			h.drawn += n
			if n < tl.total {
				h.cut++
				v.NotDrawn = fmt.Sprintf("%d of the %d steps are drawn; the gaps in the timeline say how many they leave out.", n, tl.total)
			}
			v.TL = newTimelineView(r, cols, v.LoopStart)
		}
	}
	v.Details = newDetailsView(r)
	if err := pageTemplates.ExecuteTemplate(&h.body, "section", v); err != nil {
		panic(err) // fixed templates, plain values: a bug
	}
}

// detailsView is the panel of a stop's evidence and the warnings.
type detailsView struct {
	Summary  string
	Stop     *stopReport
	Evidence string
	Warnings []warningView
}

type warningView struct {
	Name, Detector, Times string
	FirstStep             int
}

func newDetailsView(r *runReport) *detailsView {
	if r.Stop == nil && len(r.Warnings) == 0 {
		return nil
	}
	d := &detailsView{Stop: r.Stop}
	switch {
	case r.Stop != nil && len(r.Warnings) > 0:
		d.Summary = "the stop's evidence, and the warnings"
	case r.Stop != nil:
		d.Summary = "the stop's evidence"
	default:
		d.Summary = "the warnings"
	}
	if s := r.Stop; s != nil && s.Evidence != nil {
		if ev, err := json.MarshalIndent(s.Evidence, "", "  "); err == nil {
			lines := strings.Split(string(ev), "\n")
			for i, l := range lines {
				lines[i] = escape.String(l)
			}
			d.Evidence = strings.Join(lines, "\n")
		}
	}
	for _, w := range r.Warnings {
		name := w.Code
		if w.Metric != "" {
			name += " " + w.Metric
		}
		d.Warnings = append(d.Warnings, warningView{Name: name, Detector: w.Detector, FirstStep: w.FirstStep, Times: plural(w.Count, "time", "times")})
	}
	return d
}

// The timeline's geometry, in pixels.
const (
	labelWidth = 132 // the column of lane labels
	axisHeight = 18
	markHeight = 8  // a call's mark
	markPitch  = 10 // from one call's mark to the next
	maxMarks   = 5  // calls drawn per step; more show as "+N"
	laneHeight = 12 // the text, input, finish and warning lanes
	meterH     = 26 // a counter's lane
	meterTop   = 4  // from a counter's lane to its limit line
	meterSpan  = 18 // from the limit line to zero
)

// stepWidth is the width of a step: wide for short runs, and at least 10
// pixels, so that a long run scrolls rather than squeezes.
func stepWidth(n int) int { return min(max(900/max(n, 1), 10), 28) }

// gapWidth is the width of a gap of steps not drawn.
func gapWidth(sw int) int { return max(3*sw, 24) }

// The shapes of a timeline, for the template.
type (
	timelineView struct {
		LabelWidth, Width, Height int
		Tools                     []toolView
		LaneLabels, MeterLabels   []svgText
		Bands                     []svgRect
		Limits                    []svgLimit
		After                     *svgRect
		Gaps                      []svgGap
		Ticks                     []svgTick
		Marks                     []svgRect
		Crosses                   []string // the paths that cross out failed calls
		Mores                     []svgTick
		Shapes                    []svgShape
		Meters                    []svgMeter
		Loop                      *svgLoop
		Stop                      *svgStop
		Hits                      []svgHit
	}
	toolView struct {
		Class, Name string
		Count, More int
	}
	svgText struct {
		X, Y        int
		Text, Limit string
	}
	svgRect struct {
		Class      string
		X, Y, W, H int
	}
	svgLimit struct{ X2, Y1, Y2 int }
	svgGap   struct {
		N, X, W, H, TX, TY int
		Title              string
	}
	svgTick  struct{ X, Y, N int }
	svgShape struct {
		Kind, Class, D string
		X, Y           int
	}
	svgMeter struct {
		Name, D string
		Hit     *svgTick
	}
	svgLoop struct{ Line, Step, X, Y1, Y2, TX, TY int }
	svgStop struct {
		Class, Title, D       string
		Step, Line, X, Y1, Y2 int
	}
	svgHit struct {
		Step, X, W, H int
		Title         string
	}
)

// newTimelineView lays out a run's timeline: a column of lane labels, and
// the lanes, which scroll horizontally, with a column per step drawn and one
// per gap of steps left out.
func newTimelineView(r *runReport, cols []column, loopStart int) *timelineView {
	tl := r.tl
	n := 0
	for _, c := range cols {
		if c.step != nil {
			n++
		}
	}
	sw := stepWidth(n)
	// The x position of each column, and the width of all of them.
	xs := make([]int, len(cols)+1)
	for i, c := range cols {
		w := sw
		if c.step == nil {
			w = gapWidth(sw)
		}
		xs[i+1] = xs[i] + w
	}
	lanesW := xs[len(cols)]
	v := &timelineView{LabelWidth: labelWidth, Width: lanesW + 24}

	// The tools, coloured in the order they are first called.
	colour := map[string]int{}
	var tools []string
	counts := map[string]int{}
	rows := 1
	for _, c := range cols {
		if s := c.step; s != nil {
			for _, c := range append(append([]callMark(nil), s.calls...), s.refused...) {
				if _, ok := colour[c.tool]; !ok {
					colour[c.tool] = len(tools)
					tools = append(tools, c.tool)
				}
				counts[c.tool]++
			}
			rows = max(rows, min(len(s.calls)+len(s.refused)+s.more, maxMarks))
		}
	}
	for i, t := range tools {
		if i == len(palette) {
			v.Tools = append(v.Tools, toolView{Class: "cx", More: len(tools) - i})
			break
		}
		v.Tools = append(v.Tools, toolView{Class: "c" + strconv.Itoa(i), Name: cut(t, 40), Count: counts[t]})
	}

	// The lanes, top down.
	type lane struct {
		label string
		y, h  int
	}
	y := axisHeight
	callsLane := lane{"calls", y, rows*markPitch + 4}
	y += callsLane.h
	textLane := lane{"text", y, laneHeight}
	y += laneHeight
	inputLane := lane{"user input", y, laneHeight}
	y += laneHeight
	finishLane := lane{"finish reason", y, laneHeight}
	y += laneHeight
	warnLane := lane{"warnings", y, laneHeight}
	y += laneHeight + 4
	meterTops := make([]int, len(tl.meters))
	for i := range tl.meters {
		meterTops[i] = y
		y += meterH
	}
	height := y + 4
	v.Height = height

	stopAt := -1 // the column of the stop's step
	for i, c := range cols {
		if s := c.step; s != nil && s.judged && s.stop != nil && r.Stop != nil && s.index == r.Stop.Step && s.line == r.Stop.Line {
			stopAt = i
		}
	}

	for _, l := range []lane{{"step", 0, axisHeight}, callsLane, textLane, inputLane, finishLane, warnLane} {
		v.LaneLabels = append(v.LaneLabels, svgText{X: labelWidth - 6, Y: l.y + min(l.h, 14) - 3, Text: l.label})
	}
	for i, m := range tl.meters {
		v.MeterLabels = append(v.MeterLabels, svgText{X: labelWidth - 6, Y: meterTops[i] + meterTop + meterSpan/2 + 4, Text: m.label, Limit: formatValue(m.limit, m.ratio)})
	}
	for _, l := range []lane{callsLane, inputLane, warnLane} {
		v.Bands = append(v.Bands, svgRect{Y: l.y, W: lanesW, H: l.h})
	}
	for i := range tl.meters {
		top := meterTops[i]
		v.Limits = append(v.Limits, svgLimit{X2: lanesW, Y1: top + meterTop, Y2: top + meterTop + meterSpan})
	}
	// The steps after the stop, which were not judged.
	if stopAt >= 0 && stopAt < len(cols)-1 {
		v.After = &svgRect{X: xs[stopAt+1], W: lanesW - xs[stopAt+1], H: height}
	}
	// The axis: a tick per step, a number every few steps.
	every := 1
	for _, e := range []int{1, 2, 5, 10, 20, 50, 100} {
		every = e
		if e*sw >= 22 {
			break
		}
	}
	for i, c := range cols {
		if c.step == nil {
			w := xs[i+1] - xs[i]
			v.Gaps = append(v.Gaps, svgGap{N: c.gap, X: xs[i], W: w, H: height, TX: xs[i] + w/2, TY: callsLane.y + 10,
				Title: plural(c.gap, "step", "steps") + " not drawn"})
			continue
		}
		if c.step.index%every == 0 {
			v.Ticks = append(v.Ticks, svgTick{X: xs[i] + sw/2, N: c.step.index})
		}
	}
	// The marks of each step.
	for i, c := range cols {
		s := c.step
		if s == nil {
			continue
		}
		x := xs[i]
		marks := append(append([]callMark(nil), s.calls...), s.refused...)
		total := len(marks) + s.more
		shown := len(marks)
		if total > maxMarks {
			shown = maxMarks - 1
		}
		for k := 0; k < shown; k++ {
			c := marks[k]
			class := "m " + colourClass(colour[c.tool])
			switch {
			case k >= len(s.calls):
				class += " r"
			case c.failed:
				class += " f"
			}
			if c.ignored {
				class += " ig"
			}
			v.Marks = append(v.Marks, svgRect{Class: class, X: x + 1, Y: callsLane.y + 2 + k*markPitch, W: sw - 2, H: markHeight})
			if c.failed && k < len(s.calls) {
				v.Crosses = append(v.Crosses, fmt.Sprintf("M%d %dl%d %d", x+2, callsLane.y+3+k*markPitch, sw-4, markHeight-2))
			}
		}
		if shown < total {
			v.Mores = append(v.Mores, svgTick{X: x + sw/2, Y: callsLane.y + 2 + shown*markPitch + 7, N: total - shown})
		}
		cx := x + sw/2
		if s.text != "" {
			class := "tx"
			if len(s.calls) > 0 {
				class = "tc"
			}
			v.Shapes = append(v.Shapes, svgShape{Kind: "circle", Class: class, X: cx, Y: textLane.y + 6})
		}
		if s.input != "" {
			v.Shapes = append(v.Shapes, svgShape{Kind: "path", Class: "in", D: fmt.Sprintf("M%d %dh8l-4 7z", cx-4, inputLane.y+2)})
		}
		if s.normal {
			v.Shapes = append(v.Shapes, svgShape{Kind: "rect", Class: "fin", X: cx - 3, Y: finishLane.y + 2})
		} else if f := rule.NormalizeFinishReason(s.finish); f != "" && f != guard.FinishToolCalls {
			v.Shapes = append(v.Shapes, svgShape{Kind: "rect", Class: "fin other", X: cx - 3, Y: finishLane.y + 2})
		}
		if len(s.warnings) > 0 {
			v.Shapes = append(v.Shapes, svgShape{Kind: "path", Class: "warn", D: fmt.Sprintf("M%d %dl4 8h-8z", cx, warnLane.y+2)})
		}
	}
	// The counters: across a gap, a counter keeps the value of the step
	// before it.
	for mi, m := range tl.meters {
		top := meterTops[mi] + meterTop
		zero := top + meterSpan
		yOf := func(v float64) string {
			ratio := min(v/m.limit, 1.2)
			if m.limit <= 0 {
				ratio = 0
			}
			return strconv.FormatFloat(float64(zero)-ratio*meterSpan, 'f', 1, 64)
		}
		var d strings.Builder
		fmt.Fprintf(&d, "M0 %d", zero)
		last := 0
		var hit *svgTick
	draw:
		for i, c := range cols {
			s := c.step
			switch {
			case s == nil:
				fmt.Fprintf(&d, "H%d", xs[i+1])
				continue
			case !s.judged || mi >= len(s.values):
				break draw
			}
			fmt.Fprintf(&d, "V%sH%d", yOf(s.values[mi]), xs[i+1])
			last = xs[i+1]
			if hit == nil && s.values[mi] >= m.limit {
				hit = &svgTick{X: xs[i] + sw/2, Y: top}
			}
		}
		if last == 0 {
			continue
		}
		v.Meters = append(v.Meters, svgMeter{Name: m.name, D: fmt.Sprintf("%sV%dZ", d.String(), zero), Hit: hit})
	}
	// The labelled start of the loop: the first step drawn on or after its
	// line.
	if loopStart > 0 {
		for i, c := range cols {
			if s := c.step; s != nil && s.line >= loopStart {
				x := xs[i]
				v.Loop = &svgLoop{Line: loopStart, Step: s.index, X: x, Y1: axisHeight - 4, Y2: height, TX: x + 2, TY: height - 2}
				break
			}
		}
	}
	// The stop.
	if stopAt >= 0 {
		s := cols[stopAt].step
		x := xs[stopAt] + sw/2
		class := "stop"
		if !s.stop.Stop || !guard.IsFault(*s.stop) {
			class = "stop normal"
		}
		v.Stop = &svgStop{Class: class, Title: verdictLine(s.stop), Step: s.index, Line: s.line, X: x, Y1: axisHeight - 2, Y2: height,
			D: fmt.Sprintf("M%d %dl5 4l-5 4z", x, axisHeight-2)}
	}
	// Hover: a column per step, with what happened in it.
	for i, c := range cols {
		if s := c.step; s != nil {
			v.Hits = append(v.Hits, svgHit{Step: s.index, X: xs[i], W: sw, H: height, Title: stepTitle(s, tl.meters)})
		}
	}
	return v
}

// stepTitle is a step's tooltip, escaped for a terminal (the template
// escapes it for the page): what it held and what the rules said.
func stepTitle(s *stepMark, meters []meter) string {
	var t strings.Builder
	fmt.Fprintf(&t, "step %d, line %d", s.index, s.line)
	if !s.judged {
		t.WriteString(" (after the stop: not judged)")
	}
	esc := escape.String
	for _, c := range s.calls {
		fmt.Fprintf(&t, "\n%s %s", esc(c.tool), esc(c.args))
		if c.failed {
			t.WriteString(" FAILED")
		}
		if c.ignored {
			t.WriteString(" (ignored)")
		}
	}
	for _, c := range s.refused {
		fmt.Fprintf(&t, "\nrefused: %s %s", esc(c.tool), esc(c.args))
	}
	if s.more > 0 {
		fmt.Fprintf(&t, "\nand %s more", plural(s.more, "call", "calls"))
	}
	if s.text != "" {
		fmt.Fprintf(&t, "\ntext: %s", esc(s.text))
	}
	if s.input != "" {
		fmt.Fprintf(&t, "\ninput: %s", esc(s.input))
	}
	if s.finish != "" {
		fmt.Fprintf(&t, "\nfinish: %s", esc(s.finish))
	}
	for _, w := range s.warnings {
		fmt.Fprintf(&t, "\nwarning %s: %s", esc(w.Code), esc(cut(w.Detail, 160)))
	}
	if s.stop != nil {
		fmt.Fprintf(&t, "\n%s", esc(verdictLine(s.stop)))
	}
	// The counters that are not at zero.
	sep := "\n"
	for i, m := range meters {
		if i < len(s.values) && s.values[i] != 0 {
			fmt.Fprintf(&t, "%s%s %s/%s", sep, m.label, formatValue(s.values[i], m.ratio), formatValue(m.limit, m.ratio))
			sep = ", "
		}
	}
	return t.String()
}

// verdictLine is a stop verdict on one line.
func verdictLine(v *guard.Verdict) string {
	kind := "STOP"
	if !guard.IsFault(*v) {
		kind = "normal finish"
	}
	return fmt.Sprintf("%s %s: %s", kind, v.Code, cut(oneLine(v.Detail), 240))
}

// formatValue writes a counter's value: a whole number, one decimal, or a
// percentage.
func formatValue(v float64, ratio bool) string {
	if ratio {
		return strconv.FormatFloat(v*100, 'f', 0, 64) + "%"
	}
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// palette holds the tools' colours, in the order tools are first called;
// red is left for failures and stops.
var palette = [...]string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
	"#9c755f", "#ff9da7", "#86bcb6", "#8cd17d", "#a0cbe8", "#d4a6c8"}

func colourClass(i int) string {
	if i >= len(palette) {
		return "cx"
	}
	return "c" + strconv.Itoa(i)
}

// htmlCSS is the page's style sheet.
var htmlCSS = func() string {
	var b strings.Builder
	b.WriteString(`
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 1.5em 3em;color:#222;background:#fff}
h1{font-size:1.4em;margin:.8em 0 .2em}h2{font-size:1.05em;margin:0 0 .2em;word-break:break-all}
code,pre{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:.5em;margin:.3em 0}
.inputs code{background:#f2f2f2;padding:0 .3em}.totals{color:#444}
table.summary{border-collapse:collapse;margin:1em 0 2em;font-size:13px}
table.summary th,table.summary td{border-bottom:1px solid #e4e4e4;padding:2px 8px;text-align:left;vertical-align:top}
table.summary th{background:#f4f4f4;position:sticky;top:0}
td.why{color:#555;max-width:42em}
tr.fault td:nth-child(6),b.fault{color:#c62828}tr.normal td:nth-child(6),b.normal{color:#2e7d32}tr.error td:nth-child(6),b.error{color:#8a6d00}
.o-caught{color:#2e7d32}.o-missed,.o-false-stop{color:#c62828}.o-early,.o-limit,.o-at-end{color:#8a6d00}
section.run{border-top:2px solid #ddd;padding:1em 0 .5em}
p.meta{margin:.1em 0;color:#444}p.why{margin:.1em 0 .4em;color:#333;word-break:break-word}
ul.tools{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.2em 1em;font-size:12px}
ul.tools i,.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
.tl{display:flex;align-items:flex-start;border:1px solid #e4e4e4}
.tl .labels{flex:none;background:#fafafa;border-right:1px solid #e4e4e4}
.labels text{font-size:11px;text-anchor:end;fill:#444}.labels .lim{fill:#999}
.scroll{overflow-x:auto;flex:1}
.lanes text{font-size:9px;fill:#666}.lanes .tick{text-anchor:middle}.lanes .more{text-anchor:middle;font-size:8px;fill:#333}
.band{fill:#fafafa}.limit{stroke:#c62828;stroke-dasharray:3 2;stroke-width:.8}.zero{stroke:#ccc;stroke-width:.8}
.after{fill:#999;opacity:.18}
.m{fill:currentColor}.m.r{fill:#fff;stroke:currentColor;stroke-width:1.5;stroke-dasharray:2 1}.m.f{stroke:#c62828;stroke-width:1.5}.m.ig{opacity:.35}
.x{stroke:#c62828;stroke-width:1.6}
.tx{fill:#555}.tc{fill:none;stroke:#777;stroke-width:1.2}.in{fill:#1f6fd1}
.fin{fill:#2e7d32}.fin.other{fill:#ef8a00}.warn{fill:#e6a700}
.meter{fill:#4e79a733;stroke:#4e79a7;stroke-width:1}.hit-limit{fill:#c62828}
.stop line{stroke:#c62828;stroke-width:2}.stop path{fill:#c62828}.stop.normal line{stroke:#2e7d32}.stop.normal path{fill:#2e7d32}
.loop-start line{stroke:#7b1fa2;stroke-width:1.5;stroke-dasharray:4 3}.loop-start text{fill:#7b1fa2;font-size:10px}
.hit{fill:transparent}.hit:hover{fill:#0000000d}
details.evidence{margin:.4em 0}details.evidence summary{cursor:pointer;color:#1f5fa8}
.legend{font-size:12px;color:#444;margin:0 0 1em}.legend span{margin-right:1.2em;white-space:nowrap}
.legend svg{vertical-align:-2px;margin-right:3px}
.cx{color:#bbb;background:#bbb}
.gap rect{fill:#eee;stroke:#bbb;stroke-dasharray:2 2}.gap text{text-anchor:middle;font-size:12px;fill:#555}
p.bound{margin:.2em 0;color:#8a6d00}
`)
	for i, c := range palette {
		fmt.Fprintf(&b, ".c%d{color:%s;background:%s}", i, c, c)
	}
	return b.String()
}()

// htmlLegend explains the marks of the timelines.
const htmlLegend = `<p class="legend">
<span><svg width="10" height="10"><rect class="m c0" width="10" height="8" y="1"/></svg>a tool call, coloured by tool</span>
<span><svg width="10" height="10"><rect class="m c0 f" width="10" height="8" y="1"/><path class="x" d="M1 2l8 6"/></svg>a failed call</span>
<span><svg width="10" height="10"><rect class="m c0 r" x="1" y="1" width="8" height="8"/></svg>a refused call</span>
<span><svg width="10" height="10"><circle class="tx" cx="5" cy="5" r="3.5"/></svg>text only</span>
<span><svg width="10" height="10"><circle class="tc" cx="5" cy="5" r="3.5"/></svg>text with calls</span>
<span><svg width="10" height="10"><path class="in" d="M1 1h8l-4 7z"/></svg>user input</span>
<span><svg width="10" height="10"><rect class="fin" x="1" y="1" width="8" height="8"/></svg>finish "stop"</span>
<span><svg width="10" height="10"><rect class="fin other" x="1" y="1" width="8" height="8"/></svg>another finish reason</span>
<span><svg width="10" height="10"><path class="warn" d="M5 1l4 8h-8z"/></svg>a warning</span>
<span><svg width="12" height="10"><line x1="6" x2="6" y1="0" y2="10" stroke="#c62828" stroke-width="2"/></svg>the stop</span>
<span><svg width="20" height="10"><line class="limit" x1="0" x2="20" y1="2" y2="2"/><path class="meter" d="M0 10V6H10V2H20V10Z"/></svg>a rule's counter and the value that stops</span>
<span>Hover a step for its calls, text and counters.</span>
</p>
`
