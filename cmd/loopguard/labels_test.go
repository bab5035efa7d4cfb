package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// labelsData is the folder of the labelled fixture: one run per outcome, a
// manifest with an entry whose file is absent, a run the manifest does not
// name, and options with maxSteps 8.
const labelsData = "testdata/labels"

// stopAt is a stop by reason at a 1-based line, which is also its step + 1.
func stopAt(reason guard.Reason, line int, fault bool) *stopReport {
	return &stopReport{Step: line - 1, Line: line, Reason: reason, Fault: fault}
}

func TestJudge(t *testing.T) {
	pattern := func(line int) *stopReport { return stopAt(repeat.ReasonRepeatedToolCall, line, true) }
	loops := func(start int) *labelEntry { return &labelEntry{Label: labelLoops, LoopStart: start} }
	healthy := &labelEntry{Label: labelHealthy}
	unclear := &labelEntry{Label: labelUnclear}
	lead := func(n int) *int { return &n }
	tests := []struct {
		name    string
		entry   *labelEntry
		report  runReport
		outcome string
		lead    *int
	}{
		// loops: the boundary at loop_start.
		{"pattern stop at loop_start-1 is early", loops(5), runReport{Steps: 9, Stop: pattern(4)}, outcomeEarly, lead(-1)},
		{"pattern stop at loop_start is caught with lead 0", loops(5), runReport{Steps: 9, Stop: pattern(5)}, outcomeCaught, lead(0)},
		{"pattern stop after loop_start", loops(5), runReport{Steps: 9, Stop: pattern(8)}, outcomeCaught, lead(3)},
		{"pattern stop at line 1, loop_start 1", loops(1), runReport{Steps: 9, Stop: pattern(1)}, outcomeCaught, lead(0)},
		{"no loop_start: caught, lead unknown", loops(0), runReport{Steps: 9, Stop: pattern(2)}, outcomeCaught, nil},
		{"a custom rule is a pattern", loops(2), runReport{Steps: 9, Stop: stopAt("my-rule", 4, true)}, outcomeCaught, lead(2)},
		{"the default custom reason is a pattern", loops(2), runReport{Steps: 9, Stop: stopAt(rule.ReasonCustom, 2, true)}, outcomeCaught, lead(0)},
		{"oscillation", loops(2), runReport{Steps: 9, Stop: stopAt(oscillation.ReasonOscillation, 3, true)}, outcomeCaught, lead(1)},
		{"no-progress", loops(2), runReport{Steps: 9, Stop: stopAt(noprogress.ReasonNoProgress, 3, true)}, outcomeCaught, lead(1)},
		{"max-steps is a limit", loops(2), runReport{Steps: 9, Stop: stopAt(budget.ReasonMaxSteps, 8, true)}, outcomeLimit, nil},
		{"budget is a limit", loops(2), runReport{Steps: 9, Stop: stopAt(budget.ReasonBudget, 8, true)}, outcomeLimit, nil},
		{"tool-limit is a limit", loops(2), runReport{Steps: 9, Stop: stopAt(toollimit.ReasonToolLimit, 8, true)}, outcomeLimit, nil},
		{"a limit before loop_start is a limit", loops(5), runReport{Steps: 9, Stop: stopAt(budget.ReasonMaxSteps, 1, true)}, outcomeLimit, nil},
		{"a finish-reason fault is missed", loops(2), runReport{Steps: 9, Stop: stopAt(finish.ReasonFinishReason, 8, true)}, outcomeMissed, nil},
		{"a normal finish is missed", loops(2), runReport{Steps: 9, Stop: stopAt(finish.ReasonFinishReason, 1, false)}, outcomeMissed, nil},
		{"no stop is missed", loops(2), runReport{Steps: 9}, outcomeMissed, nil},
		{"no stop, no loop_start", loops(0), runReport{Steps: 9}, outcomeMissed, nil},

		// healthy: the boundary at the last step.
		{"fault stop at the last step is at end", healthy, runReport{Steps: 9, Stop: pattern(9)}, outcomeAtEnd, nil},
		{"fault stop at the step before the last is false", healthy, runReport{Steps: 9, Stop: pattern(8)}, outcomeFalseStop, nil},
		{"a limit before the last step is false", healthy, runReport{Steps: 9, Stop: stopAt(budget.ReasonMaxSteps, 8, true)}, outcomeFalseStop, nil},
		{"a limit at the last step is at end", healthy, runReport{Steps: 9, Stop: stopAt(budget.ReasonMaxSteps, 9, true)}, outcomeAtEnd, nil},
		{"a finish-reason fault before the end is false", healthy, runReport{Steps: 9, Stop: stopAt(finish.ReasonFinishReason, 3, true)}, outcomeFalseStop, nil},
		{"a normal finish before the end is clean", healthy, runReport{Steps: 9, Stop: stopAt(finish.ReasonFinishReason, 1, false)}, outcomeClean, nil},
		{"no stop is clean", healthy, runReport{Steps: 9}, outcomeClean, nil},
		{"one step, stopped at it", healthy, runReport{Steps: 1, Stop: pattern(1)}, outcomeAtEnd, nil},
		{"the last step, not the last line, counts", healthy, runReport{Steps: 3, Stop: &stopReport{Step: 2, Line: 7, Reason: noprogress.ReasonNoProgress, Fault: true}}, outcomeAtEnd, nil},

		// unclear: reported, not scored.
		{"unclear stopped", unclear, runReport{Steps: 9, Stop: pattern(2)}, outcomeStopped, nil},
		{"unclear stopped by a limit", unclear, runReport{Steps: 9, Stop: stopAt(budget.ReasonMaxSteps, 9, true)}, outcomeStopped, nil},
		{"unclear finished", unclear, runReport{Steps: 9, Stop: stopAt(finish.ReasonFinishReason, 2, false)}, outcomeFinished, nil},
		{"unclear not stopped", unclear, runReport{Steps: 9}, outcomeClean, nil},

		// not scored at all.
		{"not in the manifest", nil, runReport{Steps: 9, Stop: pattern(2)}, outcomeUnlabelled, nil},
		{"unreadable", loops(2), runReport{Error: &inputError{Line: 3, Message: "bad"}}, outcomeUnreadable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcome, lead := judge(tt.entry, &tt.report)
			if outcome != tt.outcome {
				t.Errorf("outcome %q, want %q", outcome, tt.outcome)
			}
			if diff := cmp.Diff(tt.lead, lead); diff != "" {
				t.Errorf("lead (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLeadScore(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	i := func(n int) *int { return &n }
	tests := []struct {
		leads []int
		want  leadScore
	}{
		{nil, leadScore{List: []int{}}},
		{[]int{4}, leadScore{Known: 1, Median: f(4), Mean: f(4), Max: i(4), List: []int{4}}},
		{[]int{3, 0}, leadScore{Known: 2, Median: f(1.5), Mean: f(1.5), Max: i(3), List: []int{0, 3}}},
		{[]int{5, 0, 1}, leadScore{Known: 3, Median: f(1), Mean: f(2), Max: i(5), List: []int{0, 1, 5}}},
		{[]int{0, 0, 1}, leadScore{Known: 3, Median: f(0), Mean: f(0.33), Max: i(1), List: []int{0, 0, 1}}},
		{[]int{2, 0, 0, 0}, leadScore{Known: 4, Median: f(0), Mean: f(0.5), Max: i(2), List: []int{0, 0, 0, 2}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, newLeadScore(tt.leads)); diff != "" {
			t.Errorf("newLeadScore(%v) (-want +got):\n%s", tt.leads, diff)
		}
	}
}

func TestParseLabels(t *testing.T) {
	dir := filepath.FromSlash("some/dir")
	path := filepath.Join(dir, "MANIFEST.json")
	abs, err := filepath.Abs("/tmp/run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	absJSON, _ := json.Marshal(abs)
	set, err := parseLabels(path, []byte(`[
		{"file": "a.jsonl", "label": "loops", "loop_start": 7, "harness": "swe-agent", "why": "ignored", "stats": {"x": 1}},
		{"file": "sub/b.jsonl", "label": "healthy", "loop_start": null, "harness": null},
		{"file": `+string(absJSON)+`, "label": "unclear"}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []labelEntry
	for _, e := range set.entries {
		got = append(got, labelEntry{N: e.N, File: e.File, Label: e.Label, LoopStart: e.LoopStart, Harness: e.Harness, path: e.path})
	}
	want := []labelEntry{
		{N: 1, File: "a.jsonl", Label: "loops", LoopStart: 7, Harness: "swe-agent", path: filepath.Join(dir, "a.jsonl")},
		{N: 2, File: "sub/b.jsonl", Label: "healthy", path: filepath.Join(dir, "sub", "b.jsonl")},
		{N: 3, File: abs, Label: "unclear", path: abs},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(labelEntry{})); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if e := set.lookup(filepath.Join(dir, ".", "sub", "..", "a.jsonl")); e == nil || e.N != 1 || !e.seen {
		t.Errorf("lookup of another spelling of a.jsonl = %+v", e)
	}
	if e := set.lookup(filepath.Join(dir, "b.jsonl")); e != nil {
		t.Errorf("lookup of b.jsonl outside sub/ = %+v", e)
	}

	bad := []struct {
		name, doc   string
		entry       int
		file, field string
		msg         string
	}{
		{"not JSON", `[{"file": }]`, 0, "", "", "invalid character"},
		{"not an array", `{"file": "a.jsonl"}`, 0, "", "", "not a JSON array of entries"},
		{"an entry that is no object", `[{"file": "a.jsonl", "label": "loops"}, 3]`, 2, "", "", "not a JSON object"},
		{"null entry", `[null]`, 1, "", "", "not a JSON object"},
		{"no file", `[{"label": "loops"}]`, 1, "", "file", "want the run's path"},
		{"empty file", `[{"file": "", "label": "loops"}]`, 1, "", "file", "want the run's path"},
		{"no label", `[{"file": "a.jsonl"}]`, 1, "a.jsonl", "label", "want loops, healthy or unclear"},
		{"unknown label", `[{"file": "a.jsonl", "label": "loop"}]`, 1, "a.jsonl", "label", `want loops, healthy or unclear, not "loop"`},
		{"label in capitals", `[{"file": "a.jsonl", "label": "Loops"}]`, 1, "a.jsonl", "label", `not "Loops"`},
		{"loop_start 0", `[{"file": "a.jsonl", "label": "loops", "loop_start": 0}]`, 1, "a.jsonl", "loop_start", "want a line number from 1, or null; not 0"},
		{"loop_start negative", `[{"file": "a.jsonl", "label": "loops", "loop_start": -2}]`, 1, "a.jsonl", "loop_start", "not -2"},
		{"loop_start fraction", `[{"file": "a.jsonl", "label": "loops", "loop_start": 2.5}]`, 1, "a.jsonl", "loop_start", "not 2.5"},
		{"loop_start string", `[{"file": "a.jsonl", "label": "loops", "loop_start": "3"}]`, 1, "a.jsonl", "loop_start", `not "3"`},
		{"harness number", `[{"file": "a.jsonl", "label": "loops", "harness": 3}]`, 1, "a.jsonl", "harness", "want a string, not 3"},
		{"the same run twice", `[{"file": "a.jsonl", "label": "loops"}, {"file": "./x/../a.jsonl", "label": "healthy"}]`, 2, "./x/../a.jsonl", "file", "the same run as entry 1"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseLabels(path, []byte(tt.doc))
			var me *manifestError
			if !errors.As(err, &me) {
				t.Fatalf("error %v, want a *manifestError", err)
			}
			if me.Path != path || me.Entry != tt.entry || me.File != tt.file || me.Field != tt.field {
				t.Errorf("error fields: path %q entry %d file %q field %q; want %q %d %q %q", me.Path, me.Entry, me.File, me.Field, path, tt.entry, tt.file, tt.field)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("error %q does not start with %q or does not hold %q", err, path+": ", tt.msg)
			}
		})
	}
	if _, err := loadLabels("no-such-manifest.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("loadLabels of a missing file: %v", err)
	}
	if set, err := loadLabels(""); set != nil || err != nil {
		t.Errorf(`loadLabels("") = %v, %v; want nil, nil`, set, err)
	}
}

func TestManifestErrorText(t *testing.T) {
	err := &manifestError{Path: "M.json", Entry: 3, File: "a.jsonl", Field: "label", Err: errors.New("want loops")}
	if got, want := err.Error(), "M.json: entry 3 (a.jsonl): label: want loops"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestAuditLabelsGolden pins the scores of the fixture, one run per outcome,
// in text and JSON, and the table of the bundled real traces that CI prints.
func TestAuditLabelsGolden(t *testing.T) {
	fixture := []string{"--config", labelsData + "/options.json", "--labels", labelsData + "/MANIFEST.json", labelsData}
	warnings := "loopguard audit: warning: 1 run is not in " + labelsData + "/MANIFEST.json\n" +
		"loopguard audit: warning: 1 entry in " + labelsData + "/MANIFEST.json is not among the inputs\n"
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"labels.golden", append([]string{"audit"}, fixture...), exitFailed, warnings},
		{"labels-json.golden", append([]string{"audit", "--format", "json"}, fixture...), exitFailed, warnings},
		{"traces-labels.golden", []string{"audit", "--labels", traces + "/MANIFEST.json", traces}, exitFailed, ""},
		{"traces-labels-text-actions.golden", []string{"audit", "--preset", "text-actions", "--labels", traces + "/MANIFEST.json", traces}, exitFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, "", tt.args...)
			if res.code != tt.code {
				t.Errorf("exit status %d, want %d", res.code, tt.code)
			}
			if diff := cmp.Diff(tt.stderr, res.stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			checkGolden(t, tt.name, res.stdout)
		})
	}
}

// TestAuditLabelsTail checks that the scores are the last lines of the text
// output, which "| tail" shows.
func TestAuditLabelsTail(t *testing.T) {
	res := runCmd(t, "", "audit", "--config", labelsData+"/options.json", "--labels", labelsData+"/MANIFEST.json", labelsData)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) < 12 {
		t.Fatalf("%d lines of output", len(lines))
	}
	tail := strings.Join(lines[len(lines)-12:], "\n")
	for _, want := range []string{
		"16 runs: 10 stopped on a fault",
		"loops    7 runs: 3 caught, 1 early, 1 stopped by a limit, 2 missed",
		"median 1, mean 1, max 2; each: 0 2",
		"healthy  5 runs: 2 false stops (max-steps 1, repeated-tool-call 1), 1 stopped at their last step, 2 clean",
		"unclear  3 runs, not scored: 1 stopped on a fault, 1 finished normally, 1 clean",
	} {
		if !strings.Contains(tail, want) {
			t.Errorf("the last 12 lines do not hold %q:\n%s", want, tail)
		}
	}
	if !strings.HasPrefix(lines[len(lines)-1], "unclear  ") {
		t.Errorf("last line %q, want the unclear runs", lines[len(lines)-1])
	}
}

// TestAuditLabelsExit checks that --labels keeps the exit status of --fail-on,
// and that only a bad manifest or an unreadable input is an error.
func TestAuditLabelsExit(t *testing.T) {
	manifest := labelsData + "/MANIFEST.json"
	missed := labelsData + "/loops-missed.jsonl"       // loops, no stop
	caught := labelsData + "/loops-caught.jsonl"       // loops, a fault
	finished := labelsData + "/unclear-finished.jsonl" // a normal finish
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broken := write("broken.jsonl", `{"text": "a"}`+"\n"+`{"text": `+"\n")
	brokenManifest := write("M.json", `[{"file": "broken.jsonl", "label": "loops", "loop_start": 1}]`)
	badManifest := write("bad.json", `[{"file": "broken.jsonl", "label": "loopy"}]`)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		out    string // a line the output must hold
		stderr string // what stderr must hold; "" for nothing at all
	}{
		{name: "a missed loop is no fault", args: []string{"audit", "--labels", manifest, missed}, code: exitOK,
			out: "missed", stderr: "entries in " + manifest + " are not among the inputs"},
		{name: "a caught loop fails as a fault", args: []string{"audit", "--labels", manifest, caught}, code: exitFailed, out: "caught", stderr: "not among the inputs"},
		{name: "fail on never", args: []string{"audit", "--fail-on", "never", "--labels", manifest, caught}, code: exitOK, out: "caught", stderr: "not among the inputs"},
		{name: "fail on any", args: []string{"audit", "--fail-on", "any", "--labels", manifest, finished}, code: exitFailed, out: "finished", stderr: "not among the inputs"},
		{name: "standard input is unlabelled", stdin: `{"text": "a"}`, args: []string{"audit", "--labels", manifest, "-"}, code: exitOK,
			out: "unlabelled", stderr: "loopguard audit: warning: 1 run is not in " + manifest + "\n"},
		{name: "unreadable labelled run", args: []string{"audit", "--labels", brokenManifest, broken}, code: exitUsage,
			out: "unreadable  unreadable", stderr: broken + ":2: invalid JSON"},
		{name: "bad manifest", args: []string{"audit", "--labels", badManifest, broken}, code: exitUsage,
			stderr: "loopguard audit: --labels: " + badManifest + `: entry 1 (broken.jsonl): label: want loops, healthy or unclear, not "loopy"`},
		{name: "no manifest", args: []string{"audit", "--labels", filepath.Join(dir, "none.json"), caught}, code: exitUsage,
			stderr: "loopguard audit: --labels: open " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{name: "help", args: []string{"help", "audit"}, code: exitOK, out: "Scoring with --labels MANIFEST.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, tt.stdin, tt.args...)
			if res.code != tt.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", res.code, tt.code, res.stderr)
			}
			if !strings.Contains(res.stdout, tt.out) {
				t.Errorf("stdout does not hold %q:\n%s", tt.out, res.stdout)
			}
			if !strings.Contains(res.stderr, tt.stderr) || (tt.stderr == "") != (res.stderr == "") {
				t.Errorf("stderr %q, want it to hold %q", res.stderr, tt.stderr)
			}
		})
	}
}

// TestAuditLabelsPaths checks that a run is matched to its entry however
// its path is spelled.
func TestAuditLabelsPaths(t *testing.T) {
	abs, err := filepath.Abs(labelsData + "/loops-caught.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{labelsData + "/loops-caught.jsonl", "./" + labelsData + "/../labels/loops-caught.jsonl", abs} {
		res := runCmd(t, "", "audit", "--format", "json", "--labels", labelsData+"/MANIFEST.json", p)
		var r labelledRunJSON
		if err := json.NewDecoder(strings.NewReader(res.stdout)).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Label != labelLoops || r.Outcome != outcomeCaught || r.Lead == nil || *r.Lead != 2 {
			t.Errorf("%s: label %q, outcome %q, lead %v; want loops, caught, 2", p, r.Label, r.Outcome, r.Lead)
		}
	}
}

// labelledRunJSON reads back the fields --labels adds to a run object.
type labelledRunJSON struct {
	Kind, Run, Label, Harness, Outcome string
	LoopStart                          int
	Lead                               *int
}

// TestTracesManifest checks that testdata/traces/MANIFEST.json names every
// bundled trace once and nothing else, so that the CI table scores them all.
func TestTracesManifest(t *testing.T) {
	res := runCmd(t, "", "audit", "--format", "json", "--fail-on", "never", "--labels", traces+"/MANIFEST.json", traces)
	if res.code != exitOK || res.stderr != "" {
		t.Fatalf("exit status %d, stderr:\n%s", res.code, res.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	runs := 0
	for dec.More() {
		var r labelledRunJSON
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Kind == "run" && (r.Label == "" || r.Outcome == outcomeUnlabelled || r.Outcome == outcomeUnreadable):
			t.Errorf("%s: label %q, outcome %q", r.Run, r.Label, r.Outcome)
		case r.Kind == "run":
			runs++
		case r.Kind == "missing":
			t.Errorf("%s is in the manifest, not among the traces", r.Run)
		}
	}
	if entries := len(readManifest(t)); runs != entries {
		t.Errorf("%d runs scored, the manifest has %d entries", runs, entries)
	}
}

// TestReadmeLabelsExample checks that docs/audit.md ("Scoring against your
// labels") shows the last 12 lines of the scores of the bundled runs as the
// command prints them today.
func TestReadmeLabelsExample(t *testing.T) {
	readme, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, "", "audit", "--labels", traces+"/MANIFEST.json", traces)
	lines := strings.SplitAfter(res.stdout, "\n")
	tail := strings.Join(lines[len(lines)-13:], "") // the last element is empty
	cmd := "$ go run ./cmd/loopguard audit --labels testdata/traces/MANIFEST.json testdata/traces | tail -12\n"
	if !strings.Contains(string(readme), cmd+tail+"```") {
		t.Errorf("docs/audit.md does not show, after %q, the output:\n%s", cmd, tail)
	}
}

// hostileRune returns the first character of out that a terminal could act
// on (a newline ends a line, and is allowed), if any; invalid UTF-8 is
// utf8.RuneError.
func hostileRune(out string) (rune, bool) {
	if !utf8.ValidString(out) {
		return utf8.RuneError, true
	}
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp)) {
			return r, true
		}
	}
	return 0, false
}

// TestLabelsTablesEscaped gives --labels a run whose file name and harness
// set the terminal's title, clear the screen and write fake rows, and
// manifest entries with NUL, tabs and U+202E: the tables (runs, rules,
// harnesses) and standard error must show every one of them escaped.
func TestLabelsTablesEscaped(t *testing.T) {
	dir := t.TempDir()
	evil := "evil\x1b]0;pwned\x07\r\x1b[2J\nfake\trow\u202e.jsonl"
	loop := strings.Repeat(`{"toolCalls": [{"name": "s", "args": {}}]}`+"\n", 3)
	if err := os.WriteFile(filepath.Join(dir, evil), []byte(loop), 0o644); err != nil {
		t.Skipf("this file system does not take such a name: %v", err)
	}
	harness := "h\x1b[2J\r\nx\x00\u202e\tfake"
	manifest, _ := json.Marshal([]map[string]any{
		{"file": evil, "label": "loops", "harness": harness},
		{"file": "missing\x00\u202e\t\x1b[1A.jsonl", "label": "healthy", "harness": "\x9b2J"},
	})
	mpath := filepath.Join(dir, "MANIFEST\x1b[2J.json")
	if err := os.WriteFile(mpath, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, "", "audit", "--labels", mpath, filepath.Join(dir, evil))
	if res.code != exitFailed {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	for what, out := range map[string]string{"stdout": res.stdout, "stderr": res.stderr} {
		if r, bad := hostileRune(out); bad {
			t.Errorf("%s holds %q:\n%s", what, r, out)
		}
	}
	for _, want := range []string{
		`evil\x1b]0;pwned\a\r\x1b[2J\nfake\trow\u202e.jsonl  loops`,
		`missing\x00\u202e\t\x1b[1A.jsonl`,
		`h\x1b[2J\r\nx\x00\u202e\tfake  1/1`,
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, `MANIFEST\x1b[2J.json`) {
		t.Errorf("stderr does not name the manifest escaped:\n%s", res.stderr)
	}
	// One row per run, and a line per table's heading: no fake rows.
	if n := strings.Count(res.stdout, "\n"); n != 17 {
		t.Errorf("%d lines:\n%s", n, res.stdout)
	}
}
