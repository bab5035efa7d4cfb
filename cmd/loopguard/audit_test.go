package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
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
	if _, err := conf.build(); err != nil {
		t.Fatalf("options %s: %v", doc, err)
	}
	if preset != "" {
		p := presets[preset]
		if err := conf.withPreset(p.key, p.value); err != nil {
			t.Fatal(err)
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

// loopRule reports whether a stop comes from one of the rules that look for
// loops, as opposed to limits and the finish reason.
func loopRule(r guard.Reason) bool {
	return r == guard.ReasonRepeatedToolCall || r == guard.ReasonOscillation || r == guard.ReasonNoProgress
}

// TestRealTraces audits the real agent runs of testdata/traces with the
// default options, and with the text-actions preset. Which rule stops each
// run, and where, is pinned by traces.golden and traces-text-actions.golden.
//
// The labels are the manifest's, made by hand: a "loops" run must be stopped
// by a fault, and no "healthy" run may be stopped by a loop rule before its
// last step.
func TestRealTraces(t *testing.T) {
	manifest := readManifest(t)
	for _, preset := range []string{"", "text-actions"} {
		t.Run("preset="+preset, func(t *testing.T) {
			reports := auditTraces(t, "{}", preset)
			if len(reports) != len(manifest) {
				t.Fatalf("%d runs audited, the manifest has %d", len(reports), len(manifest))
			}
			var missedLoops, firstStepFinish []string
			for file, r := range reports {
				e, ok := manifest[file]
				if !ok {
					t.Fatalf("%s is not in the manifest", file)
				}
				if r.Steps != e.Steps {
					t.Errorf("%s: %d steps, the manifest says %d", file, r.Steps, e.Steps)
				}
				s := r.Stop
				if s != nil && s.Step == 0 && s.TextActions {
					firstStepFinish = append(firstStepFinish, file)
				}
				switch e.Label {
				case "loops":
					if s == nil || !s.Fault {
						missedLoops = append(missedLoops, file)
					}
				case "healthy":
					if s != nil && loopRule(s.Reason) && s.Step < r.Steps-1 {
						t.Errorf("%s (healthy) stopped by %s at step %d of %d", file, s.Reason, s.Step, r.Steps)
					}
				}
			}
			slices.Sort(missedLoops)
			slices.Sort(firstStepFinish)

			// The finding: mini-swe-agent reads its actions from the
			// model's text, so Gemini reports finish reason "stop" on
			// every step, and the default finish-reason rule ends all five
			// runs at their first step, the run that loops among them.
			var mini []string
			for file := range manifest {
				if strings.HasPrefix(file, "mini-") {
					mini = append(mini, file)
				}
			}
			slices.Sort(mini)
			wantFirst, wantMissed := mini, []string{"mini-gemini3pro-sympy-15976.jsonl"}
			if preset == "text-actions" {
				wantFirst, wantMissed = nil, nil
			}
			if diff := cmp.Diff(wantFirst, firstStepFinish); diff != "" {
				t.Errorf("runs ended at step 0 by a normal stop finish at a step with tool calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantMissed, missedLoops); diff != "" {
				t.Errorf("loops runs not stopped by a fault (-want +got):\n%s", diff)
			}
		})
	}
}

// TestThresholds measures the loop rules on the real traces under other
// thresholds, with the text-actions preset (which changes nothing for the
// runs without finish reasons). The table is pinned by thresholds.golden and
// copied into the README's "Choosing thresholds".
func TestThresholds(t *testing.T) {
	manifest := readManifest(t)
	count := map[string]int{}
	for _, e := range manifest {
		count[e.Label]++
	}
	settings := []struct{ name, doc string }{
		{"defaults", `{}`},
		{"repeatedToolCall.threshold 2", `{"repeatedToolCall": {"threshold": 2}}`},
		{"repeatedToolCall.threshold 4", `{"repeatedToolCall": {"threshold": 4}}`},
		{"oscillation.repeats 2", `{"oscillation": {"repeats": 2}}`},
		{"oscillation.repeats 4", `{"oscillation": {"repeats": 4}}`},
		{"noProgress.threshold 2", `{"noProgress": {"threshold": 2}}`},
		{"noProgress.threshold 4", `{"noProgress": {"threshold": 4}}`},
		{"maxSteps 150", `{"maxSteps": 150}`},
	}
	var loopsRuns []string
	for f, e := range manifest {
		if e.Label == "loops" {
			loopsRuns = append(loopsRuns, f)
		}
	}
	slices.Sort(loopsRuns)
	var b strings.Builder
	b.WriteString("| Options |")
	for _, f := range loopsRuns {
		fmt.Fprintf(&b, " `%s` |", strings.TrimSuffix(f, ".jsonl"))
	}
	fmt.Fprintf(&b, " `healthy` runs stopped by a loop rule (of %d) | `healthy` runs stopped by a limit | `unclear` runs stopped (of %d) |\n", count["healthy"], count["unclear"])
	b.WriteString("|" + strings.Repeat(" --- |", len(loopsRuns)+4) + "\n")
	for _, st := range settings {
		reports := auditTraces(t, st.doc, "text-actions")
		healthyLoop, healthyLimit, unclear := 0, 0, 0
		for f, r := range reports {
			s := r.Stop
			switch label := manifest[f].Label; {
			case label == "healthy" && s != nil && loopRule(s.Reason):
				healthyLoop++
			case label == "healthy" && s != nil:
				healthyLimit++
			case label == "unclear" && s != nil:
				unclear++
			}
		}
		fmt.Fprintf(&b, "| `%s` |", st.name)
		for _, f := range loopsRuns {
			switch s := reports[f].Stop; {
			case s == nil || !s.Fault:
				b.WriteString(" missed |")
			default:
				fmt.Fprintf(&b, " line %d |", s.Line)
			}
		}
		fmt.Fprintf(&b, " %d | %d | %d |\n", healthyLoop, healthyLimit, unclear)
	}
	checkGolden(t, "thresholds.golden", b.String())
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
		{name: "options file", args: []string{"audit", "--config", auditData + "/repeat5.json", loop}, code: exitFailed, out: "NO_PROGRESS"},
		{name: "preset with an options file", args: []string{"audit", "--preset", "text-actions", "--config", auditData + "/repeat5.json", traces + "/mini-gemini3pro-sympy-15976.jsonl"},
			code: exitOK, out: "no stop"},
		{name: "preset clashes with the options file", args: []string{"audit", "--preset", "text-actions", "--config", auditData + "/finish.json", loop},
			code: exitUsage, err: "--preset text-actions: the options file sets finishReason too; keep one of them"},
		{name: "unknown preset", args: []string{"audit", "--preset", "react", loop}, code: exitUsage, err: `unknown preset "react"`},
		{name: "bad options", args: []string{"audit", "--config", auditData + "/bad-options.json", loop}, code: exitUsage, err: "config: "},
		{name: "no path", args: []string{"audit"}, code: exitUsage, err: "no PATH to audit"},
		{name: "bad format", args: []string{"audit", "--format", "xml", loop}, code: exitUsage, err: "--format must be text or json"},
		{name: "bad fail-on", args: []string{"audit", "--fail-on", "all", loop}, code: exitUsage, err: "--fail-on must be fault, any or never"},
		{name: "bad input", args: []string{"audit", "--input", "gemini", loop}, code: exitUsage, err: "--input must be auto, steps, openai or anthropic"},
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
