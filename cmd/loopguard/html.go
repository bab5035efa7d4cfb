package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
)

// This file writes audit --html: one self-contained HTML page (inline CSS and
// SVG, no script, no external asset; a Content-Security-Policy forbids any)
// with the summary table and, per run, a timeline of its steps and the
// counter of each rule under it. Every text that comes from an input or a
// rule is escaped. The page is also well-formed XML, which its test reads.

// htmlOutput collects the runs of an audit into a page, and writes it to its
// file at the end.
type htmlOutput struct {
	f       *os.File
	labels  *labelSet // nil without --labels
	inputs  []string  // the PATHs, for the heading
	rows    []htmlRow
	body    bytes.Buffer // the sections of the runs
	maxStep int          // the most steps of a run
}

// An htmlRow is a run's row in the summary table.
type htmlRow struct {
	id                         int
	run, format                string
	steps, line                string
	result, class, why         string
	label, loop, outcome, lead string
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

// esc escapes text for HTML (and XML): first as for a terminal (control
// characters, bidirectional controls and invalid UTF-8 become Go escapes),
// then the markup characters. XML's non-characters are escaped too.
func esc(s string) string {
	s = escape.String(s)
	if strings.ContainsAny(s, "\uFFFE\uFFFF") {
		s = strings.NewReplacer("\uFFFE", `\ufffe`, "\uFFFF", `\uffff`).Replace(s)
	}
	return html.EscapeString(s)
}

func (h *htmlOutput) run(r *runReport) {
	id := len(h.rows) + 1
	row := htmlRow{id: id, run: r.Run, format: r.Format, steps: "-", line: "-"}
	var entry *labelEntry
	var lead *int
	if h.labels != nil {
		entry = h.labels.byKey[pathKey(r.Run)]
		row.outcome, lead = judge(entry, r)
		row.label, row.loop, row.lead = "-", "-", "-"
		if entry != nil {
			row.label, row.loop = entry.Label, loopText(entry)
		}
		switch {
		case lead != nil:
			row.lead = strconv.Itoa(*lead)
		case row.outcome == outcomeCaught:
			row.lead = "?"
		}
	}
	switch {
	case r.Error != nil:
		row.result, row.class, row.why = "unreadable", "error", r.Error.Message
		if r.Error.Line > 0 {
			row.line = strconv.Itoa(r.Error.Line)
		}
	case r.Empty:
		row.steps, row.result, row.class = "0", "empty: no steps", "error"
	case r.Stop == nil:
		row.steps, row.result, row.class = strconv.Itoa(r.Steps), "no stop", "clean"
	default:
		row.steps, row.line = strconv.Itoa(r.Steps), strconv.Itoa(r.Stop.Line)
		row.result, row.class, row.why = r.Stop.Code, "fault", r.Stop.Why
		if !r.Stop.Fault {
			row.result += " (normal)"
			row.class = "normal"
		}
	}
	h.rows = append(h.rows, row)
	h.section(id, r, &row, entry)
	if r.tl != nil {
		h.maxStep = max(h.maxStep, len(r.tl.steps))
	}
}

func (h *htmlOutput) summary(s *summary) {
	var b bytes.Buffer
	b.WriteString(htmlHead)
	title := fmt.Sprintf("loopguard audit: %s", plural(s.Runs, "run", "runs"))
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title), htmlCSS)
	fmt.Fprintf(&b, "<header><h1>%s</h1>\n<p class=\"inputs\">", esc(title))
	for i, in := range h.inputs {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "<code>%s</code>", esc(in))
	}
	fmt.Fprintf(&b, "</p>\n<p class=\"totals\">%d stopped on a fault, %d finished normally, %d clean", s.Faults, s.Finished, s.Clean)
	if s.Empty > 0 {
		fmt.Fprintf(&b, ", %d empty", s.Empty)
	}
	if s.Unreadable > 0 {
		fmt.Fprintf(&b, ", %d unreadable", s.Unreadable)
	}
	b.WriteString("</p></header>\n")
	h.table(&b)
	b.WriteString(htmlLegend)
	b.Write(h.body.Bytes())
	b.WriteString("</body>\n</html>\n")
	h.body.Reset()
	h.body.Write(b.Bytes())
}

func (h *htmlOutput) flush() error {
	_, err := h.f.Write(h.body.Bytes())
	if cerr := h.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// table writes the summary table: a row per run, linked to its section.
func (h *htmlOutput) table(b *bytes.Buffer) {
	b.WriteString("<table class=\"summary\">\n<thead><tr><th>#</th><th>run</th><th>format</th><th>steps</th><th>line</th><th>result</th>")
	if h.labels != nil {
		b.WriteString("<th>label</th><th>loop start</th><th>outcome</th><th>lead</th>")
	}
	b.WriteString("<th>why</th></tr></thead>\n<tbody>\n")
	for _, r := range h.rows {
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%d</td><td><a href=\"#run-%d\">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>",
			r.class, r.id, r.id, esc(r.run), esc(r.format), r.steps, r.line, esc(r.result))
		if h.labels != nil {
			fmt.Fprintf(b, "<td>%s</td><td>%s</td><td class=\"o-%s\">%s</td><td>%s</td>", esc(r.label), esc(r.loop), esc(r.outcome), esc(r.outcome), esc(r.lead))
		}
		fmt.Fprintf(b, "<td class=\"why\">%s</td></tr>\n", esc(cut(r.why, 160)))
	}
	b.WriteString("</tbody>\n</table>\n")
}

// section writes a run's section: its heading, what stopped it, its
// timeline and the stop's evidence.
func (h *htmlOutput) section(id int, r *runReport, row *htmlRow, entry *labelEntry) {
	b := &h.body
	fmt.Fprintf(b, "<section class=\"run %s\" id=\"run-%d\" data-run=\"%s\" data-steps=\"%d\"", row.class, id, esc(r.Run), r.Steps)
	if s := r.Stop; s != nil {
		fmt.Fprintf(b, " data-stop-step=\"%d\" data-stop-line=\"%d\" data-stop-code=\"%s\" data-fault=\"%t\"", s.Step, s.Line, esc(s.Code), s.Fault)
	}
	fmt.Fprintf(b, ">\n<h2><a href=\"#run-%d\">#%d</a> %s</h2>\n<p class=\"meta\">", id, id, esc(r.Run))
	if r.Format != "" {
		fmt.Fprintf(b, "format %s, ", esc(r.Format))
	}
	fmt.Fprintf(b, "%s: <b class=\"%s\">%s</b>", plural(r.Steps, "step", "steps"), row.class, esc(row.result))
	if s := r.Stop; s != nil {
		fmt.Fprintf(b, " at step %d (line %d)", s.Step, s.Line)
	}
	if h.labels != nil {
		fmt.Fprintf(b, "; label <b>%s</b>", esc(row.label))
		if entry != nil && entry.LoopStart > 0 {
			fmt.Fprintf(b, ", loop starts at line %d", entry.LoopStart)
		}
		fmt.Fprintf(b, "; outcome <b class=\"o-%s\">%s</b>", esc(row.outcome), esc(row.outcome))
		if row.lead != "-" {
			fmt.Fprintf(b, ", lead %s", esc(row.lead))
		}
	}
	b.WriteString("</p>\n")
	if row.why != "" {
		fmt.Fprintf(b, "<p class=\"why\">%s</p>\n", esc(row.why))
	}
	if r.tl != nil && len(r.tl.steps) > 0 {
		loopStart := 0
		if entry != nil {
			loopStart = entry.LoopStart
		}
		drawTimeline(b, r, loopStart)
	}
	details(b, r)
	b.WriteString("</section>\n")
}

// details writes the stop's evidence and the warnings, in a details panel.
func details(b *bytes.Buffer, r *runReport) {
	if r.Stop == nil && len(r.Warnings) == 0 {
		return
	}
	b.WriteString("<details class=\"evidence\"><summary>")
	switch {
	case r.Stop != nil && len(r.Warnings) > 0:
		b.WriteString("the stop's evidence, and the warnings")
	case r.Stop != nil:
		b.WriteString("the stop's evidence")
	default:
		b.WriteString("the warnings")
	}
	b.WriteString("</summary>\n")
	if s := r.Stop; s != nil {
		fmt.Fprintf(b, "<p>%s (%s, detector %s) at step %d, line %d</p>\n", esc(s.Code), esc(string(s.Reason)), esc(s.Detector), s.Step, s.Line)
		if s.Evidence != nil {
			if ev, err := json.MarshalIndent(s.Evidence, "", "  "); err == nil {
				lines := strings.Split(string(ev), "\n")
				for i, l := range lines {
					lines[i] = esc(l)
				}
				fmt.Fprintf(b, "<pre>%s</pre>\n", strings.Join(lines, "\n"))
			}
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("<ul class=\"warnings\">\n")
		for _, w := range r.Warnings {
			name := w.Code
			if w.Metric != "" {
				name += " " + w.Metric
			}
			fmt.Fprintf(b, "<li>%s (%s): from step %d, %s</li>\n", esc(name), esc(w.Detector), w.FirstStep, plural(w.Count, "time", "times"))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</details>\n")
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

// drawTimeline writes a run's timeline: a column of lane labels, and the
// lanes in an SVG that scrolls horizontally.
func drawTimeline(b *bytes.Buffer, r *runReport, loopStart int) {
	tl := r.tl
	n := len(tl.steps)
	sw := stepWidth(n)
	width := n*sw + 24

	// The tools, coloured in the order they are first called.
	colour := map[string]int{}
	var tools []string
	counts := map[string]int{}
	rows := 1
	for _, s := range tl.steps {
		for _, c := range append(append([]callMark(nil), s.calls...), s.refused...) {
			if _, ok := colour[c.tool]; !ok {
				colour[c.tool] = len(tools)
				tools = append(tools, c.tool)
			}
			counts[c.tool]++
		}
		rows = max(rows, min(len(s.calls)+len(s.refused), maxMarks))
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

	stopAt := -1 // the x position of the stop's step
	for i, s := range tl.steps {
		if s.judged && s.stop != nil && r.Stop != nil && s.index == r.Stop.Step && s.line == r.Stop.Line {
			stopAt = i
		}
	}

	// Legend of the tools.
	if len(tools) > 0 {
		b.WriteString("<ul class=\"tools\">")
		for i, t := range tools {
			if i == len(palette) {
				fmt.Fprintf(b, "<li><i class=\"cx\"></i>%d more tools</li>", len(tools)-i)
				break
			}
			fmt.Fprintf(b, "<li><i class=\"c%d\"></i>%s &#215;%d</li>", i, esc(cut(t, 40)), counts[t])
		}
		b.WriteString("</ul>\n")
	}

	b.WriteString("<div class=\"tl\">")
	// The labels.
	fmt.Fprintf(b, "<svg class=\"labels\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">", labelWidth, height, labelWidth, height)
	for _, l := range []lane{{"step", 0, axisHeight}, callsLane, textLane, inputLane, finishLane, warnLane} {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">%s</text>", labelWidth-6, l.y+min(l.h, 14)-3, l.label)
	}
	for i, m := range tl.meters {
		limit := formatValue(m.limit, m.ratio)
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">%s <tspan class=\"lim\">(%s)</tspan></text>", labelWidth-6, meterTops[i]+meterTop+meterSpan/2+4, esc(m.label), limit)
	}
	b.WriteString("</svg>")

	// The lanes.
	fmt.Fprintf(b, "<div class=\"scroll\"><svg class=\"lanes\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">", width, height, width, height)
	// Lane backgrounds.
	for _, l := range []lane{callsLane, inputLane, warnLane} {
		fmt.Fprintf(b, "<rect class=\"band\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>", l.y, n*sw, l.h)
	}
	for i := range tl.meters {
		top := meterTops[i]
		fmt.Fprintf(b, "<line class=\"limit\" x1=\"0\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/><line class=\"zero\" x1=\"0\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>",
			n*sw, top+meterTop, top+meterTop, n*sw, top+meterTop+meterSpan, top+meterTop+meterSpan)
	}
	// The steps after the stop, which were not judged.
	if stopAt >= 0 && stopAt < n-1 {
		fmt.Fprintf(b, "<rect class=\"after\" x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\"><title>after the stop: not judged</title></rect>", (stopAt+1)*sw, (n-stopAt-1)*sw, height)
	}
	// The axis: a tick per step, a number every few steps.
	every := 1
	for _, e := range []int{1, 2, 5, 10, 20, 50, 100} {
		every = e
		if e*sw >= 22 {
			break
		}
	}
	for i, s := range tl.steps {
		x := i*sw + sw/2
		if s.index%every == 0 {
			fmt.Fprintf(b, "<text class=\"tick\" x=\"%d\" y=\"11\">%d</text>", x, s.index)
		}
	}
	// The marks of each step.
	for i, s := range tl.steps {
		x := i * sw
		marks := append(append([]callMark(nil), s.calls...), s.refused...)
		shown := len(marks)
		if shown > maxMarks {
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
			fmt.Fprintf(b, "<rect class=\"%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", class, x+1, callsLane.y+2+k*markPitch, sw-2, markHeight)
			if c.failed && k < len(s.calls) {
				fmt.Fprintf(b, "<path class=\"x\" d=\"M%d %dl%d %d\"/>", x+2, callsLane.y+3+k*markPitch, sw-4, markHeight-2)
			}
		}
		if shown < len(marks) {
			fmt.Fprintf(b, "<text class=\"more\" x=\"%d\" y=\"%d\">+%d</text>", x+sw/2, callsLane.y+2+shown*markPitch+7, len(marks)-shown)
		}
		cx := x + sw/2
		if s.text != "" {
			class := "tx"
			if len(s.calls) > 0 {
				class = "tc"
			}
			fmt.Fprintf(b, "<circle class=\"%s\" cx=\"%d\" cy=\"%d\" r=\"3.5\"/>", class, cx, textLane.y+6)
		}
		if s.input != "" {
			fmt.Fprintf(b, "<path class=\"in\" d=\"M%d %dh8l-4 7z\"/>", cx-4, inputLane.y+2)
		}
		if s.normal {
			fmt.Fprintf(b, "<rect class=\"fin\" x=\"%d\" y=\"%d\" width=\"7\" height=\"7\"/>", cx-3, finishLane.y+2)
		} else if f := guard.NormalizeFinishReason(s.finish); f != "" && f != guard.FinishToolCalls {
			fmt.Fprintf(b, "<rect class=\"fin other\" x=\"%d\" y=\"%d\" width=\"7\" height=\"7\"/>", cx-3, finishLane.y+2)
		}
		if len(s.warnings) > 0 {
			fmt.Fprintf(b, "<path class=\"warn\" d=\"M%d %dl4 8h-8z\"/>", cx, warnLane.y+2)
		}
	}
	// The counters.
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
		reached := -1
		for i, s := range tl.steps {
			if !s.judged || mi >= len(s.values) {
				break
			}
			fmt.Fprintf(&d, "V%sH%d", yOf(s.values[mi]), (i+1)*sw)
			last = (i + 1) * sw
			if reached < 0 && s.values[mi] >= m.limit {
				reached = i
			}
		}
		if last == 0 {
			continue
		}
		fmt.Fprintf(&d, "V%d", zero)
		fmt.Fprintf(b, "<path class=\"meter\" data-meter=\"%s\" d=\"%sZ\"/>", esc(m.name), d.String())
		if reached >= 0 {
			fmt.Fprintf(b, "<circle class=\"hit-limit\" cx=\"%d\" cy=\"%d\" r=\"3\"/>", reached*sw+sw/2, top)
		}
	}
	// The labelled start of the loop: the first step on or after its line.
	if loopStart > 0 {
		for i, s := range tl.steps {
			if s.line >= loopStart {
				x := i * sw
				fmt.Fprintf(b, "<g class=\"loop-start\" data-line=\"%d\" data-step=\"%d\"><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/><text x=\"%d\" y=\"%d\">loop (line %d)</text></g>",
					loopStart, s.index, x, x, axisHeight-4, height, x+2, height-2, loopStart)
				break
			}
		}
	}
	// The stop.
	if stopAt >= 0 {
		s := tl.steps[stopAt]
		x := stopAt*sw + sw/2
		class := "stop"
		if !s.stop.Stop || !guard.IsFault(*s.stop) {
			class = "stop normal"
		}
		fmt.Fprintf(b, "<g class=\"%s\" data-step=\"%d\" data-line=\"%d\"><title>%s</title><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/><path d=\"M%d %dl5 4l-5 4z\"/></g>",
			class, s.index, s.line, esc(verdictLine(s.stop)), x, x, axisHeight-2, height, x, axisHeight-2)
	}
	// Hover: a column per step, with what happened in it.
	for i, s := range tl.steps {
		fmt.Fprintf(b, "<rect class=\"hit\" data-step=\"%d\" x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\"><title>%s</title></rect>",
			s.index, i*sw, sw, height, stepTitle(&s, tl.meters))
	}
	b.WriteString("</svg></div></div>\n")
}

// stepTitle is a step's tooltip, escaped: what it held and what the rules
// said.
func stepTitle(s *stepMark, meters []meter) string {
	var t strings.Builder
	fmt.Fprintf(&t, "step %d, line %d", s.index, s.line)
	if !s.judged {
		t.WriteString(" (after the stop: not judged)")
	}
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

// htmlHead opens the page. The policy allows inline styles only: no
// script, no request of any kind.
const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<meta name="generator" content="loopguard audit --html"/>
`

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
