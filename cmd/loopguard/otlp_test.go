package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOTLPSameVerdicts audits the OTLP fixtures, made by the OpenTelemetry
// SDK (testdata/otlpgen), beside the same loops given as step lines: each
// run must give the same verdicts (the same stop at the same step, with the
// same evidence, and the same warnings), under the default options and under
// options that warn and set budgets. Only the lines differ: a span's line is
// not a step line's.
func TestOTLPSameVerdicts(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "otlp")
	warnAll := filepath.Join(t.TempDir(), "warn.json")
	err := os.WriteFile(warnAll, []byte(`{"repeatedToolCall": {"warn": true}, "oscillation": {"warn": true},
		"noProgress": {"warn": true}, "repeatedFailure": {"warn": true}, "repeatedText": {"warn": true},
		"stall": {"warn": true}, "window": {"warn": true},
		"budget": {"maxTotalTokens": 2500, "maxOutputTokens": {"limit": 400, "warnAt": 0.25}, "warnAt": 0.5}}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, config := range []string{"", warnAll} {
		args := []string{"audit", "--format", "json", "--fail-on", "never"}
		if config != "" {
			args = append(args, "--config", config)
		}
		res := runCmd(t, "", append(args, dir)...)
		if res.code != exitOK {
			t.Fatalf("audit exited %d: %s", res.code, res.stderr)
		}
		for _, name := range []string{"search-names-only", "varied-search-names-only"} {
			note := name + ".otlp.json:1: run 4c000000000000000000000000000001: no tool call arguments"
			if !strings.Contains(res.stderr, note) {
				t.Errorf("standard error does not say %q:\n%s", note, res.stderr)
			}
		}
		if n := strings.Count(res.stderr, "\n"); n != 2 || strings.Contains(res.stderr, "--strict") {
			t.Errorf("standard error: want the two notes of the runs without arguments, got:\n%s", res.stderr)
		}
		runs := map[string]runReport{}
		dec := json.NewDecoder(strings.NewReader(res.stdout))
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			var r runReport
			if json.Unmarshal(raw, &r) != nil || r.Kind != "run" {
				continue
			}
			runs[filepath.Base(r.Run)] = r
		}
		compared, stops, warnings := 0, 0, 0
		for name, r := range runs {
			file, run, _ := strings.Cut(name, "#")
			base, ok := strings.CutSuffix(file, ".otlp.json")
			if !ok {
				continue
			}
			if r.Format != "otlp" {
				t.Errorf("%s: format %q", name, r.Format)
			}
			stepsName := base + ".steps.jsonl"
			if run != "" {
				stepsName = base + "." + run + ".steps.jsonl"
			}
			want, ok := runs[stepsName]
			if !ok {
				t.Errorf("%s: no %s", name, stepsName)
				continue
			}
			compared++
			if r.Stop != nil {
				stops++
			}
			warnings += len(r.Warnings)
			for _, rep := range []*runReport{&r, &want} {
				rep.Run, rep.Format = "", ""
				if rep.Stop != nil {
					rep.Stop.Line = 0
				}
			}
			if diff := cmp.Diff(want, r, cmp.AllowUnexported(runReport{})); diff != "" {
				t.Errorf("config %q: %s and %s differ (-steps +otlp):\n%s", config, name, stepsName, diff)
			}
		}
		if compared != 10 || stops != 10 {
			t.Errorf("config %q: %d runs compared, %d stopped; want 10 and 10", config, compared, stops)
		}
		if config != "" && warnings < 8 {
			t.Errorf("config %q: %d warnings: the warnings were hardly compared", config, warnings)
		}
	}
}

// TestReplayOTLPRuns replays a file of two conversations: each line names
// its run, a stop on a fault ends its run only, and the next run starts
// again at step 0 with a fresh guard.
func TestReplayOTLPRuns(t *testing.T) {
	res := runCmd(t, "", "replay", filepath.Join("..", "..", "testdata", "otlp", "support.otlp.json"))
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		head, _, _ := strings.Cut(l, ": stop: ")
		head, _, _ = strings.Cut(head, ": go on")
		got = append(got, head)
	}
	want := []string{
		"line 1: run conv-support-7: step 0",
		"line 3: run conv-support-7: step 1", // a normal finish: the run goes on
		"line 5: run conv-support-7: step 2",
		"line 7: run conv-support-7: step 3",
		"line 9: run conv-support-7: step 4", // each reply starts the lookups' run again
		"line 11: run conv-support-7: step 5",
		"line 13: run conv-support-7: step 6", // REPEATED_TEXT: the rest of the run is not replayed
		"line 17: run conv-orders-3: step 0",
		"line 19: run conv-orders-3: step 1",
		"line 21: run conv-orders-3: step 2",
		"line 23: run conv-orders-3: step 3",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.stdout, "step 6: stop: repeated-text") {
		t.Errorf("the first run's stop is missing:\n%s", res.stdout)
	}
}
