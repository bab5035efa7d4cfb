package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/internal/escape"
	"github.com/loopguard/loopguard/trace"
)

// An element of the page, read as XML (the page is well-formed XML).
type element struct {
	Name     string
	Attrs    map[string]string
	Children []*element
	Text     string
}

// parsePage reads the page as XML: a page that is not well-formed, or holds
// a script, an iframe, an object, an embed, an image, a link to a style
// sheet or an event handler attribute, fails the test.
func parsePage(t *testing.T, data []byte) *element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	dec.Strict = true
	root := &element{Name: "#document"}
	stack := []*element{root}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{Name: tok.Name.Local, Attrs: map[string]string{}}
			switch e.Name {
			case "script", "iframe", "object", "embed", "img", "link", "image", "foreignObject", "use":
				t.Errorf("the page holds a <%s> element", e.Name)
			}
			for _, a := range tok.Attr {
				e.Attrs[a.Name.Local] = a.Value
				if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") || a.Name.Local == "src" ||
					a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#") {
					t.Errorf("the page holds an attribute %s=%q on <%s>", a.Name.Local, a.Value, e.Name)
				}
			}
			parent := stack[len(stack)-1]
			parent.Children = append(parent.Children, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].Text += string(tok)
		}
	}
	return root
}

// find returns the elements under e (e included) for which ok is true, in
// document order.
func (e *element) find(ok func(*element) bool) []*element {
	var out []*element
	if ok(e) {
		out = append(out, e)
	}
	for _, c := range e.Children {
		out = append(out, c.find(ok)...)
	}
	return out
}

func (e *element) hasClass(c string) bool {
	for _, f := range strings.Fields(e.Attrs["class"]) {
		if f == c {
			return true
		}
	}
	return false
}

func byClass(name, class string) func(*element) bool {
	return func(e *element) bool { return e.Name == name && e.hasClass(class) }
}

// text is all the text under e.
func (e *element) text() string {
	s := e.Text
	for _, c := range e.Children {
		s += c.text()
	}
	return s
}

// auditJSON audits with --format json and returns the run objects.
func auditJSON(t *testing.T, args ...string) []runReport {
	t.Helper()
	res := runCmd(t, "", append([]string{"audit", "--format", "json", "--fail-on", "never"}, args...)...)
	var runs []runReport
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		var r runReport
		if json.Unmarshal(raw, &r) == nil && r.Kind == "run" {
			runs = append(runs, r)
		}
	}
	return runs
}

// TestHTMLStructure audits the labelled corpus into a page and checks its
// structure against the JSON report: a row and a section per run, in order;
// each section's steps; the stop marked at the stop's step; the labelled
// start of each loop; a legend; no script and no external asset.
func TestHTMLStructure(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	manifest := filepath.Join(traces, "MANIFEST.json")
	res := runCmd(t, "", "audit", "--labels", manifest, "--html", page, traces)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1 (loops found): %s", res.code, res.stderr)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page of the %d runs of testdata/traces: %d bytes", len(readManifest(t)), len(data))
	if len(data) > 8<<20 {
		t.Errorf("the page is %d bytes: more than 8 MiB", len(data))
	}
	want := auditJSON(t, traces)
	labels, err := loadLabels(manifest)
	if err != nil {
		t.Fatal(err)
	}
	root := parsePage(t, data)

	metas := root.find(func(e *element) bool { return e.Name == "meta" && e.Attrs["http-equiv"] == "Content-Security-Policy" })
	if len(metas) != 1 || !strings.Contains(metas[0].Attrs["content"], "default-src 'none'") {
		t.Errorf("no Content-Security-Policy that forbids requests: %v", metas)
	}
	if len(root.find(byClass("p", "legend"))) != 1 {
		t.Error("no legend")
	}
	rows := root.find(func(e *element) bool { return e.Name == "tr" && len(e.Children) > 0 && e.Children[0].Name == "td" })
	sections := root.find(byClass("section", "run"))
	if len(want) != len(readManifest(t)) || len(rows) != len(want) || len(sections) != len(want) {
		t.Fatalf("%d runs, %d rows, %d sections", len(want), len(rows), len(sections))
	}
	loopStarts := 0
	for i, r := range want {
		sec := sections[i]
		id := fmt.Sprintf("run-%d", i+1)
		if sec.Attrs["id"] != id || sec.Attrs["data-run"] != r.Run || sec.Attrs["data-steps"] != strconv.Itoa(r.Steps) {
			t.Errorf("section %d: %v, want %s of %s, %d steps", i, sec.Attrs, id, r.Run, r.Steps)
		}
		if links := rows[i].find(func(e *element) bool { return e.Name == "a" }); len(links) != 1 || links[0].Attrs["href"] != "#"+id {
			t.Errorf("row %d does not link to its section", i)
		}
		hits := sec.find(byClass("rect", "hit"))
		if len(hits) != r.Steps {
			t.Errorf("%s: %d steps drawn, want %d", r.Run, len(hits), r.Steps)
		}
		for k, h := range hits {
			if h.Attrs["data-step"] != strconv.Itoa(k) {
				t.Errorf("%s: column %d is step %s", r.Run, k, h.Attrs["data-step"])
				break
			}
			if len(h.Children) != 1 || h.Children[0].Name != "title" || !strings.HasPrefix(h.Children[0].Text, fmt.Sprintf("step %d, line ", k)) {
				t.Errorf("%s: step %d has no tooltip", r.Run, k)
				break
			}
		}
		stops := sec.find(byClass("g", "stop"))
		if r.Stop == nil {
			if len(stops) != 0 || sec.Attrs["data-stop-step"] != "" {
				t.Errorf("%s: a stop is drawn, but the run has none", r.Run)
			}
		} else {
			step := strconv.Itoa(r.Stop.Step)
			if len(stops) != 1 || stops[0].Attrs["data-step"] != step || stops[0].Attrs["data-line"] != strconv.Itoa(r.Stop.Line) ||
				sec.Attrs["data-stop-step"] != step || sec.Attrs["data-stop-code"] != r.Stop.Code {
				t.Errorf("%s: stops drawn %v, section %v; want step %s (%s)", r.Run, stops, sec.Attrs, step, r.Stop.Code)
			}
			if len(stops) == 1 && (stops[0].hasClass("normal") == r.Stop.Fault) {
				t.Errorf("%s: the stop is drawn as %q, fault %v", r.Run, stops[0].Attrs["class"], r.Stop.Fault)
			}
			// The tooltip of the stop's step says it.
			if k := r.Stop.Step; k < len(hits) && !strings.Contains(hits[k].text(), r.Stop.Code) {
				t.Errorf("%s: the tooltip of step %d does not name %s", r.Run, k, r.Stop.Code)
			}
		}
		e := labels.byKey[pathKey(r.Run)]
		starts := sec.find(byClass("g", "loop-start"))
		if e == nil || e.LoopStart == 0 {
			if len(starts) != 0 {
				t.Errorf("%s: a loop start is drawn without a labelled one", r.Run)
			}
			continue
		}
		loopStarts++
		tr, err := os.ReadFile(r.Run)
		if err != nil {
			t.Fatal(err)
		}
		parsed := trace.NewReader(strings.NewReader(string(tr)), &trace.Options{UnknownKeys: trace.IgnoreUnknownKeys})
		wantStep := -1
		for k := 0; ; k++ {
			en, err := parsed.Next()
			if err != nil {
				break
			}
			if en.Line >= e.LoopStart {
				wantStep = k
				break
			}
		}
		if len(starts) != 1 || starts[0].Attrs["data-step"] != strconv.Itoa(wantStep) || starts[0].Attrs["data-line"] != strconv.Itoa(e.LoopStart) {
			t.Errorf("%s: loop starts drawn %v, want line %d at step %d", r.Run, starts, e.LoopStart, wantStep)
		}
		if !strings.Contains(sec.text(), "loop starts at line "+strconv.Itoa(e.LoopStart)) {
			t.Errorf("%s: the heading does not give the labelled loop start", r.Run)
		}
	}
	if loopStarts < 40 {
		t.Errorf("only %d labelled loop starts drawn", loopStarts)
	}
}

// TestHTMLCounters records the timelines of the corpus, the examples and the
// OTLP fixtures, and checks that the counter of the rule that stopped a run
// reaches that rule's limit at the stop's step, and that before the run's
// stop a counter reaches its limit only on a step that the finish-reason
// rule, which comes first, ends as a normal finish (the audit goes on after
// it).
func TestHTMLCounters(t *testing.T) {
	conf, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	a := &auditor{conf: conf, read: readOptions{keys: trace.WarnUnknownKeys}, timelines: true}
	var jobs []*job
	for _, dir := range []string{traces, "../../testdata/otlp", "../../testdata/examples"} {
		jobs = append(jobs, a.collect([]string{dir}, io.Discard)...)
	}
	checked := map[string]int{}
	for _, j := range jobs {
		var reports []*runReport
		a.audit(j, func(r *runReport) { reports = append(reports, r) })
		for _, r := range reports {
			if r.tl == nil || r.Error != nil || r.skipped {
				continue
			}
			steps := r.tl.drawn()
			if len(steps) != r.Steps {
				t.Errorf("%s: %d steps recorded, want %d", r.Run, len(steps), r.Steps)
			}
			stopAt := len(steps)
			if r.Stop != nil && r.Stop.Fault {
				stopAt = -1
				for i, s := range steps {
					if s.judged && s.index == r.Stop.Step && s.line == r.Stop.Line {
						stopAt = i
					}
				}
				if stopAt < 0 {
					t.Errorf("%s: the stop's step %d is not recorded", r.Run, r.Stop.Step)
					continue
				}
			}
			for i, s := range steps {
				if s.judged != (i <= stopAt || r.Stop == nil || !r.Stop.Fault) {
					t.Errorf("%s: step %d judged %v, the stop is at %d", r.Run, i, s.judged, stopAt)
				}
			}
			for mi, m := range r.tl.meters {
				for i := 0; i < min(stopAt, len(steps)); i++ {
					s := steps[i]
					reached := s.values[mi] >= m.limit && (i == 0 || steps[i-1].values[mi] < m.limit)
					if reached && (s.stop == nil || s.stop.Code != "FINISH_TERMINAL") {
						t.Errorf("%s: %s reaches %v (limit %v) at step %d, before the stop, and the step goes on", r.Run, m.label, s.values[mi], m.limit, i)
					}
					if reached {
						checked["hidden by a normal finish"]++
					}
				}
				if r.Stop != nil && r.Stop.Fault && m.name == r.Stop.Detector {
					if v := steps[stopAt].values[mi]; v < m.limit {
						t.Errorf("%s: stopped by %s, whose counter is %v at the stop, below %v", r.Run, m.name, v, m.limit)
					}
					checked[m.name]++
				}
			}
		}
	}
	// Every counter rule that stops a run of the corpus was checked.
	for _, name := range []string{"repeat", "failure", "oscillation", "noprogress", "text"} {
		if checked[name] == 0 {
			t.Errorf("no run stopped by %s was checked: %v", name, checked)
		}
	}
}

// TestHTMLSameVerdicts checks that drawing the runs changes no verdict: the
// JSON report is the same with --html (whose guards hold the probe).
func TestHTMLSameVerdicts(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	for _, dir := range []string{traces, "../../testdata/otlp", "../../testdata/examples"} {
		plain := runCmd(t, "", "audit", "--format", "json", dir)
		drawn := runCmd(t, "", "audit", "--format", "json", "--html", page, dir)
		if diff := cmp.Diff(plain, drawn, cmp.AllowUnexported(result{})); diff != "" {
			t.Errorf("%s: audit differs with --html (-without +with):\n%s", dir, diff)
		}
	}
}

// TestHTMLEscapes audits runs whose names, tools, texts, inputs and
// arguments are markup, and checks that the page is still well-formed, holds
// no element they name, and shows them as text.
func TestHTMLEscapes(t *testing.T) {
	dir := t.TempDir()
	hostile := `<script>alert(1)</script>"><img src=x onerror=alert(2)>&amp;` + "\x1b[31m\u202e\uFFFE"
	name := filepath.Join(dir, "run<b>\"x'\xff.jsonl")
	arg, _ := json.Marshal(hostile)
	line := fmt.Sprintf(`{"text": %s, "input": %s, "finishReason": %s, "toolCalls": [{"name": %s, "args": {"q": %s}, "error": %s}]}`, arg, arg, arg, arg, arg, arg)
	if err := os.WriteFile(name, []byte(strings.Repeat(line+"\n", 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	res := runCmd(t, "", "audit", "--html", page, name)
	if res.code != exitFailed {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	root := parsePage(t, data) // no <script>, no <img>, no handler
	if strings.Contains(string(data), "<script") || strings.Contains(string(data), "<img") || strings.Contains(string(data), "\x1b") {
		t.Error("markup or a control character of the input reached the page")
	}
	text := root.text()
	for _, s := range []string{`<script>alert(1)</script>">`, `run<b>"x'\xff.jsonl`, `\x1b[31m\u202e\ufffe`} {
		if !strings.Contains(text, s) {
			t.Errorf("the page does not show %q as text", s)
		}
	}
	if secs := root.find(byClass("section", "run")); len(secs) != 1 || secs[0].Attrs["data-run"] != escape.String(name) {
		t.Errorf("section: %v", secs)
	}
}

// TestHTMLLongRun draws a run of 500 steps: each step keeps 10 pixels, so
// that the timeline scrolls rather than squeezes, with a step number every 5
// steps.
func TestHTMLLongRun(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, `{"text": "step %d", "toolCalls": [{"name": "tool%d", "args": {"i": %d}}]}`+"\n", i, i%7, i)
	}
	run := filepath.Join(dir, "long.jsonl")
	if err := os.WriteFile(run, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if res := runCmd(t, "", "audit", "--fail-on", "never", "--html", page, run); res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	root := parsePage(t, data)
	lanes := root.find(byClass("svg", "lanes"))
	if len(lanes) != 1 || lanes[0].Attrs["width"] != strconv.Itoa(500*10+24) {
		t.Fatalf("lanes: %v", lanes)
	}
	if len(root.find(byClass("div", "scroll"))) != 1 || !strings.Contains(string(data), ".scroll{overflow-x:auto") {
		t.Error("the timeline does not scroll")
	}
	if labels := root.find(byClass("svg", "labels")); len(labels) != 1 {
		t.Error("no column of lane labels beside the scrolling lanes")
	}
	ticks := root.find(byClass("text", "tick"))
	if len(ticks) != 100 || ticks[1].Text != "5" || ticks[99].Text != "495" {
		t.Errorf("%d step numbers, want one every 5 steps", len(ticks))
	}
	if n := len(root.find(byClass("rect", "hit"))); n != 500 {
		t.Errorf("%d steps drawn", n)
	}
	if n := len(root.find(func(e *element) bool { return e.Name == "li" })); n != 7 {
		t.Errorf("%d tools in the legend, want 7", n)
	}
}

// TestHTMLUnwritable checks that a page that cannot be written is a usage
// error, before any run is audited.
func TestHTMLUnwritable(t *testing.T) {
	page := filepath.Join(t.TempDir(), "missing", "report.html")
	res := runCmd(t, "", "audit", "--html", page, traces)
	if res.code != exitUsage || res.stdout != "" || !strings.Contains(res.stderr, "--html: no such file or directory") {
		t.Errorf("exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}
