package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/trace"
)

// The folders of the real traces, the hand-written transcripts and the
// audit's own fixtures.
const (
	traces      = "../../testdata/traces"
	transcripts = "../../testdata/transcripts"
	auditData   = "testdata/audit"
)

// checkGolden compares got with testdata/audit/NAME, or rewrites it with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join(auditData, name)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
	}
}

func TestAuditGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"traces.golden", []string{"audit", traces}, exitFailed},
		{"traces-text-actions.golden", []string{"audit", "--preset", "text-actions", traces}, exitFailed},
		{"traces-json.golden", []string{"audit", "--format", "json", traces}, exitFailed},
		{"transcripts.golden", []string{"audit", transcripts}, exitOK},
		{"transcripts-json.golden", []string{"audit", "--format=json", transcripts}, exitOK},
		{"warnings.golden", []string{"audit", "--config", auditData + "/warn.json", transcripts + "/openai-responses.jsonl", transcripts + "/anthropic-responses.jsonl"}, exitFailed},
		{"warnings-json.golden", []string{"audit", "--format", "json", "--config", auditData + "/warn.json", transcripts + "/openai-responses.jsonl"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, "", tt.args...)
			if res.code != tt.code || res.stderr != "" {
				t.Fatalf("run(%q) = %d, stderr %q; want %d and nothing", tt.args, res.code, res.stderr, tt.code)
			}
			checkGolden(t, tt.name, res.stdout)
			if !strings.Contains(tt.name, "json") {
				checkWidth(t, res.stdout)
			}
		})
	}
}

// manifestEntry is one run of testdata/traces/MANIFEST.json.
type manifestEntry struct {
	File  string `json:"file"`
	Steps int    `json:"steps"`
	Label string `json:"label"`
}

func readManifest(t *testing.T) map[string]manifestEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(traces, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []manifestEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]manifestEntry)
	for _, e := range entries {
		m[e.File] = e
	}
	return m
}

// auditTraces audits the real traces with an options document (and preset)
// and returns the reports by file name.
func auditTraces(t *testing.T, doc, preset string) map[string]*runReport {
	t.Helper()
	conf := &guardConfig{registry: detector.Standard(), doc: []byte(doc)}
	if _, err := conf.build(nil); err != nil {
		t.Fatalf("options %s: %v", doc, err)
	}
	if preset != "" {
		for _, o := range presets[preset] {
			if err := conf.withPreset(o.key, o.value); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := &auditor{conf: conf, read: readOptions{keys: trace.WarnUnknownKeys, maxSize: defaultMaxSize}}
	jobs := a.collect([]string{traces}, os.Stderr)
	out := make(map[string]*runReport)
	a.run(jobs, func(r *runReport) {
		if r.skipped {
			return
		}
		if r.Error != nil {
			t.Fatalf("%s: %+v", r.Run, r.Error)
		}
		out[filepath.Base(r.Run)] = r
	})
	return out
}

// scoreTraces audits the real traces with an options document (and preset)
// and scores each run against the manifest's labels, as audit --labels does.
func scoreTraces(t *testing.T, doc, preset string) (outcomes map[string]map[string]int, leads []int, reports map[string]*runReport) {
	t.Helper()
	labels, err := loadLabels(traces + "/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	reports = auditTraces(t, doc, preset)
	outcomes = map[string]map[string]int{}
	for file, r := range reports {
		e := labels.lookup(filepath.Join(traces, file))
		if e == nil {
			t.Fatalf("%s is not in the manifest", file)
		}
		outcome, lead := judge(e, r)
		if outcomes[e.Label] == nil {
			outcomes[e.Label] = map[string]int{}
		}
		outcomes[e.Label][outcome]++
		if outcome == outcomeCaught && lead != nil {
			leads = append(leads, *lead)
		}
	}
	return outcomes, leads, reports
}

// knownFalseStops are the healthy runs of testdata/traces that the defaults
// (and the text-actions preset) still stop before their last step: they came
// with set A and set B and the runs added for issue 22, labelled before any
// rule ran on them. Each must still stop, so that the list empties as the
// rules stop stopping them. The fresh batch, drawn at random from sources
// outside the corpus, brought five; one is left: a CrewAI cassette in which
// the harness sent one search three times in a row and ran it once, and the
// model answered in words between (docs/thresholds.md, "Runs never seen").
var knownFalseStops = map[string]bool{
	"crewai-gpt4omini-lite-agent-structured-output.jsonl": true,
}

// knownEarlyStops are the loops of testdata/traces that the defaults (and
// the text-actions preset) stop before their labelled start, each with the
// line of that stop: a KnowAgent ALFWorld run gives up at line 21 and
// restates its long action path on every other step from line 22, labelled
// a loop from line 28, where the restatements become pairs. Each must still
// stop there, so that the list empties as the rules stop doing so. (Another
// KnowAgent run, which writes its action path on a step of its own after
// each command, was stopped 19 lines before its loop until a step of text
// alone right after a new result became a comment: docs/thresholds.md.)
var knownEarlyStops = map[string]int{
	"knowagent-llama2-13b-d0-clean-potato-microwave-6.jsonl": 24,
}

// TestRealTraces audits the real agent runs of testdata/traces, labelled by
// hand, with the default options and with the text-actions preset: no
// healthy run may be stopped before its last step (by any rule, the step
// limit included) but those of knownFalseStops, no loop may be stopped
// before it starts, and the default set catches at least the loops it
// caught when it was chosen. Which rule
// stops each run, and where, is pinned by traces-labels.golden.
func TestRealTraces(t *testing.T) {
	manifest := readManifest(t)
	for _, preset := range []string{"", "text-actions"} {
		t.Run("preset="+preset, func(t *testing.T) {
			outcomes, _, reports := scoreTraces(t, "{}", preset)
			if len(reports) != len(manifest) {
				t.Fatalf("%d runs audited, the manifest has %d", len(reports), len(manifest))
			}
			for file, r := range reports {
				if e := manifest[file]; r.Steps != e.Steps {
					t.Errorf("%s: %d steps, the manifest says %d", file, r.Steps, e.Steps)
				}
			}
			labels, err := loadLabels(traces + "/MANIFEST.json")
			if err != nil {
				t.Fatal(err)
			}
			stopped := 0
			for file, r := range reports {
				outcome, _ := judge(labels.lookup(filepath.Join(traces, file)), r)
				switch {
				case outcome == outcomeFalseStop && !knownFalseStops[file]:
					t.Errorf("%s (healthy) stopped at line %d, before its last step", file, r.Stop.Line)
				case outcome == outcomeFalseStop:
					stopped++
				case knownFalseStops[file]:
					t.Errorf("%s is no longer stopped before its end (%s): take it off knownFalseStops", file, outcome)
				}
			}
			if n := outcomes["healthy"][outcomeFalseStop]; n != stopped {
				t.Errorf("%d healthy runs stopped before their last step, %d of them known", n, stopped)
			}
			early := 0
			for file, r := range reports {
				outcome, _ := judge(labels.lookup(filepath.Join(traces, file)), r)
				switch line, known := knownEarlyStops[file]; {
				case outcome == outcomeEarly && !known:
					t.Errorf("%s (loops) stopped at line %d, before its loop starts", file, r.Stop.Line)
				case outcome == outcomeEarly && r.Stop.Line != line:
					t.Errorf("%s stopped at line %d, knownEarlyStops says %d", file, r.Stop.Line, line)
				case outcome == outcomeEarly:
					early++
				case known:
					t.Errorf("%s is no longer stopped before its loop starts (%s): take it off knownEarlyStops", file, outcome)
				}
			}
			if n := outcomes["loops"][outcomeEarly]; n != early {
				t.Errorf("%d loops stopped before they start, %d of them known", n, early)
			}
			if n := outcomes["loops"][outcomeCaught]; n < 36 {
				t.Errorf("%d loops caught, want at least 36", n)
			}
		})
	}
}

// TestThresholds scores the default set, the steps that led to it from the
// reference's reading, and other thresholds on the labelled real traces. The
// table is pinned by thresholds.golden and shown in docs/thresholds.md
// ("Choosing thresholds"), which must hold it as it is.
func TestThresholds(t *testing.T) {
	manifest := readManifest(t)
	count := map[string]int{}
	for _, e := range manifest {
		count[e.Label]++
	}
	// Each step from the reference's reading to the defaults adds one
	// difference; the oscillation rule compares no results before the
	// sameResults step, the repeated-input rule is off before its step, and
	// the repeat rule counts new output before its step, the text rule tells
	// no long text apart before its step, the repeat rule counts across
	// turns of a conversation before its step, and the oscillation rule
	// looks for no long cycle before the last.
	const counts = `"repeatedToolCall": {"countNewResults": true, "countAcrossTurns": true}`
	const across = `"repeatedToolCall": {"countAcrossTurns": true}`
	const short = `"repeatedText": {"long": 3}, `
	const noLong = `"oscillation": {"longPeriod": 3}`
	const noSame = `"oscillation": {"sameResults": 3}, "repeatedInput": false, ` + counts
	const reference = `"maxSteps": 50, "finishReason": {"stopWithToolCalls": "stop"}, "repeatedRefusal": false, "repeatedFailure": false, "repeatedText": false, "sameResult": false, ` + noSame
	settings := []struct{ name, doc string }{
		{"the reference's reading", `{` + reference + `}`},
		{"+ a normal `stop` with tool calls goes on", `{"maxSteps": 50, "repeatedRefusal": false, "repeatedFailure": false, "repeatedText": false, "sameResult": false, ` + noSame + `}`},
		{"+ `maxSteps` 150", `{"repeatedRefusal": false, "repeatedFailure": false, "repeatedText": false, "sameResult": false, ` + noSame + `}`},
		{"+ `repeatedFailure` (5 in 10 calls)", `{"repeatedRefusal": false, "repeatedText": false, "repeatedFailure": {"sameCall": 5}, "sameResult": false, ` + noSame + `}`},
		{"+ `repeatedText` (3 in 10 steps), `repeatedRefusal`", `{` + short + `"repeatedFailure": {"sameCall": 5}, "sameResult": false, ` + noSame + `}`},
		{"+ `repeatedFailure.sameCall` 3 (4 from two calls in turn)", `{` + short + `"sameResult": false, ` + noSame + `}`},
		{"+ `sameResult` (4 calls, 512 bytes)", `{` + short + noSame + `}`},
		{"+ `oscillation.sameResults` 2 (two rounds of one tool's calls with the same results, no new input)", `{` + short + noLong + `, "repeatedInput": false, ` + counts + `}`},
		{"+ `repeatedInput` (the same input of 64 bytes on 3 steps within 10, answered in words)", `{` + short + noLong + `, ` + counts + `}`},
		{"+ a same call with new output starts its run again (`repeatedToolCall.countNewResults` false)", `{` + short + noLong + `, ` + across + `}`},
		{"+ a text of 200 bytes again, with a step between, stops at its second time (`repeatedText.long` 2, `longBytes` 200)", `{` + noLong + `, ` + across + `}`},
		{"+ an answer in words and new input between same calls start their run again (`repeatedToolCall.countAcrossTurns` false)", `{` + noLong + `}`},
		{"+ a cycle of 4 to 16 calls whose results repeat, with no new input, stops at its second round (`oscillation.longPeriod` 16): **the defaults**", `{}`},
		{"`oscillation.longPeriod` 8", `{"oscillation": {"longPeriod": 8}}`},
		{"`oscillation.longPeriod` 32", `{"oscillation": {"longPeriod": 32}}`},
		{"`repeatedText.longBytes` 100", `{"repeatedText": {"longBytes": 100}}`},
		{"`repeatedText.longBytes` 500", `{"repeatedText": {"longBytes": 500}}`},
		{"`repeatedInput.threshold` 2", `{"repeatedInput": {"threshold": 2}}`},
		{"`repeatedInput.minBytes` 16", `{"repeatedInput": {"minBytes": 16}}`},
		{"`repeatedInput.minBytes` 256", `{"repeatedInput": {"minBytes": 256}}`},
		{"`repeatedInput.window` 20", `{"repeatedInput": {"window": 20}}`},
		{"`repeatedFailure.sameCall` 2 (3 from two calls)", `{"repeatedFailure": {"sameCall": 2}}`},
		{"`repeatedFailure.sameCall` 4 (two calls off)", `{"repeatedFailure": {"sameCall": 4}}`},
		{"`repeatedFailure.threshold` 3", `{"repeatedFailure": {"threshold": 3}}`},
		{"`repeatedFailure.threshold` 4", `{"repeatedFailure": {"threshold": 4}}`},
		{"`repeatedFailure.threshold` 6", `{"repeatedFailure": {"threshold": 6}}`},
		{"`repeatedText.threshold` 2", `{"repeatedText": {"threshold": 2}}`},
		{"`repeatedText.threshold` 4", `{"repeatedText": {"threshold": 4}}`},
		{"`repeatedToolCall.threshold` 2", `{"repeatedToolCall": {"threshold": 2}}`},
		{"`repeatedToolCall.threshold` 4", `{"repeatedToolCall": {"threshold": 4}}`},
		{"`oscillation.repeats` 2", `{"oscillation": {"repeats": 2}}`},
		{"`noProgress.threshold` 2", `{"noProgress": {"threshold": 2}}`},
		{"`noProgress.threshold` 4", `{"noProgress": {"threshold": 4}}`},
		{"`sameResult.threshold` 3", `{"sameResult": {"threshold": 3}}`},
		{"`sameResult.threshold` 5", `{"sameResult": {"threshold": 5}}`},
		{"`sameResult.minBytes` 1 (any result)", `{"sameResult": {"minBytes": 1}}`},
		{"`sameResult.minBytes` 256", `{"sameResult": {"minBytes": 256}}`},
		{"`sameResult.minBytes` 1024", `{"sameResult": {"minBytes": 1024}}`},
		{"`maxSteps` 50", `{"maxSteps": 50}`},
		{"+ `window` (outcomes)", `{"window": true}`},
		{"+ `window` comparing calls", `{"window": {"compare": "call"}}`},
		{"+ `stall`", `{"stall": true}`},
		{"+ `failWhen` `^No more results` (ReAct's Wikipedia tool answers so)", `{"failWhen": ["^No more results"]}`},
		{"`rejections` false (only errors and `failWhen` mark failures)", `{"rejections": false}`},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| Options | `loops` caught (of %d) | early | by a limit | missed | median lead | `healthy` stopped before their end (of %d) | `unclear` stopped (of %d) |\n",
		count["loops"], count["healthy"], count["unclear"])
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, st := range settings {
		outcomes, leads, _ := scoreTraces(t, st.doc, "")
		lead := "-"
		if l := newLeadScore(leads); l.Median != nil {
			lead = formatNumber(*l.Median)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %d | %d |\n", st.name,
			outcomes["loops"][outcomeCaught], outcomes["loops"][outcomeEarly], outcomes["loops"][outcomeLimit],
			outcomes["loops"][outcomeMissed], lead, outcomes["healthy"][outcomeFalseStop], outcomes["unclear"][outcomeStopped])
	}
	checkGolden(t, "thresholds.golden", b.String())
	doc, err := os.ReadFile("../../docs/thresholds.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), b.String()) {
		t.Errorf("docs/thresholds.md does not hold the table of thresholds.golden (rewrite it from there)")
	}
}

func TestAuditErrors(t *testing.T) {
	good := traces + "/reflexion-hotpotqa-t1-a102.jsonl"
	res := runCmd(t, "", "audit", auditData+"/bad-steps.jsonl", good, auditData+"/bad-openai.json",
		auditData+"/bad-anthropic.jsonl", auditData+"/not-json.jsonl", "no-such-file.jsonl")
	if res.code != exitUsage {
		t.Errorf("exit status %d, want %d", res.code, exitUsage)
	}
	wantErr := auditData + "/bad-steps.jsonl:3: invalid JSON: unexpected end of JSON input\n" +
		auditData + "/bad-openai.json:4: a result for tool_call_id \"call_2\", which no earlier call has\n" +
		auditData + "/bad-anthropic.jsonl:2: invalid JSON: invalid character '\\n' in string literal\n" +
		auditData + "/not-json.jsonl:1: invalid JSON: invalid character 'h' in literal true (expecting 'r')\n" +
		"no-such-file.jsonl: no such file or directory\n"
	if diff := cmp.Diff(wantErr, res.stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	checkGolden(t, "errors.golden", res.stdout)
}

func TestAuditFlags(t *testing.T) {
	loop := traces + "/reflexion-hotpotqa-t1-a102.jsonl" // a fault
	fin := transcripts + "/openai-responses.jsonl"       // a normal finish
	clean := traces + "/reflexion-hotpotqa-t1-a000.jsonl"
	steps, err := os.ReadFile(loop)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string // a line the output must hold
		err   string // what stderr must hold
	}{
		{name: "fail on fault", args: []string{"audit", loop}, code: exitFailed, out: "REPEATED_TOOL_CALL"},
		{name: "a normal finish is no fault", args: []string{"audit", fin, clean}, code: exitOK, out: "2 runs: 0 stopped on a fault, 1 finished normally, 1 clean"},
		{name: "fail on any stop", args: []string{"audit", "--fail-on", "any", fin}, code: exitFailed},
		{name: "fail on nothing", args: []string{"audit", "--fail-on=never", loop}, code: exitOK},
		{name: "clean runs pass any", args: []string{"audit", "--fail-on", "any", clean}, code: exitOK, out: "no stop"},
		{name: "standard input", stdin: string(steps), args: []string{"audit", "-"}, code: exitFailed, out: "<stdin>"},
		{name: "forced input format", args: []string{"audit", "--input", "anthropic", fin}, code: exitUsage,
			err: "openai-responses.jsonl:2: not an Anthropic message: no role"},
		{name: "forced input format that fits", args: []string{"audit", "--input", "openai", fin}, code: exitOK},
		{name: "options file", args: []string{"audit", "--config", auditData + "/repeat5.json", loop}, code: exitFailed, out: "REPEATED_FAILURE"},
		{name: "preset with an options file", args: []string{"audit", "--preset", "text-actions", "--config", auditData + "/repeat5.json", traces + "/mini-gemini3pro-sympy-15976.jsonl"},
			code: exitOK, out: "no stop"},
		{name: "preset clashes with the options file", args: []string{"audit", "--preset", "text-actions", "--config", auditData + "/finish.json", loop},
			code: exitUsage, err: "--preset text-actions: the options file sets finishReason too; keep one of them"},
		{name: "preset clashes with the options file on repeatedInput", args: []string{"audit", "--preset", "text-actions", "--config", auditData + "/repeated-input.json", loop},
			code: exitUsage, err: "--preset text-actions: the options file sets repeatedInput too; keep one of them"},
		{name: "preset turns the repeated-input rule off", args: []string{"audit", "--preset", "text-actions", traces + "/chatdev-timer.jsonl"},
			code: exitOK, out: "no stop"},
		{name: "without the preset the same run stops on it", args: []string{"audit", traces + "/chatdev-timer.jsonl"},
			code: exitFailed, out: "REPEATED_INPUT"},
		{name: "unknown preset", args: []string{"audit", "--preset", "react", loop}, code: exitUsage, err: `unknown preset "react"`},
		{name: "bad options", args: []string{"audit", "--config", auditData + "/bad-options.json", loop}, code: exitUsage, err: "config: "},
		{name: "no path", args: []string{"audit"}, code: exitUsage, err: "no PATH to audit"},
		{name: "bad format", args: []string{"audit", "--format", "xml", loop}, code: exitUsage, err: "--format must be text or json"},
		{name: "bad fail-on", args: []string{"audit", "--fail-on", "all", loop}, code: exitUsage, err: "--fail-on must be fault, any or never"},
		{name: "bad input", args: []string{"audit", "--input", "gemini", loop}, code: exitUsage, err: "--input must be auto, steps, openai, responses, anthropic or otlp"},
		{name: "help", args: []string{"help", "audit"}, code: exitOK, out: "Usage: loopguard audit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCmd(t, tt.stdin, tt.args...)
			if res.code != tt.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", res.code, tt.code, res.stderr)
			}
			if tt.out != "" && !strings.Contains(res.stdout, tt.out) {
				t.Errorf("stdout does not hold %q:\n%s", tt.out, res.stdout)
			}
			if tt.err != "" && !strings.Contains(res.stderr, tt.err) {
				t.Errorf("stderr does not hold %q:\n%s", tt.err, res.stderr)
			}
			if tt.err == "" && res.stderr != "" {
				t.Errorf("stderr: %s", res.stderr)
			}
		})
	}
}

// TestAuditOrder checks that the reports come in the order of the paths
// whatever the workers do, and that a run is read once per path.
func TestAuditOrder(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 200 {
		name := filepath.Join(dir, fmt.Sprintf("run-%03d.jsonl", i))
		step := fmt.Sprintf(`{"text": "step", "toolCalls": [{"name": "t%d", "args": {}}]}`, i)
		if err := os.WriteFile(name, []byte(strings.Repeat(step+"\n", 1+i%7)), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s %d", name, 1+i%7))
	}
	res := runCmd(t, "", "audit", "--format", "json", "--fail-on", "never", dir)
	if res.code != exitOK {
		t.Fatalf("exit status %d: %s", res.code, res.stderr)
	}
	var got []string
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	for dec.More() {
		var r struct {
			Kind, Run string
			Steps     int
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "run" {
			got = append(got, fmt.Sprintf("%s %d", r.Run, r.Steps))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// TestAuditFormats checks that --input and detection agree on each
// transcript.
func TestAuditFormats(t *testing.T) {
	for _, f := range []struct {
		file   string
		format trace.Format
	}{
		{"openai-messages.json", trace.OpenAI},
		{"openai-responses.jsonl", trace.OpenAI},
		{"anthropic-request.json", trace.Anthropic},
		{"anthropic-responses.jsonl", trace.Anthropic},
		{"responses-input.json", trace.Responses},
		{"responses-objects.jsonl", trace.Responses},
	} {
		auto := runCmd(t, "", "audit", "--format", "json", transcripts+"/"+f.file)
		forced := runCmd(t, "", "audit", "--format", "json", "--input", f.format.String(), transcripts+"/"+f.file)
		if auto.code != exitOK || forced.code != exitOK || auto.stdout != forced.stdout {
			t.Errorf("%s: auto %d %q\nforced %d %q", f.file, auto.code, auto.stdout, forced.code, forced.stdout)
		}
		if !strings.Contains(auto.stdout, `"format":"`+f.format.String()+`"`) {
			t.Errorf("%s: not read as %v: %s", f.file, f.format, auto.stdout)
		}
	}
}

func TestProgress(t *testing.T) {
	if p := newProgress(new(strings.Builder), 10); p != nil {
		t.Error("a progress line on a writer that is no terminal")
	}
	var nothing *progress
	nothing.tick() // a nil progress does nothing
	nothing.clear()

	var b strings.Builder
	p := &progress{w: &b, total: 2}
	p.tick()
	p.clear()
	p.clear()
	if want := "\raudit: 1/2 runs\r\033[K"; b.String() != want {
		t.Errorf("progress wrote %q, want %q", b.String(), want)
	}
}
