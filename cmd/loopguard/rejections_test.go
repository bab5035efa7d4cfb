package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/trace"
)

// rejectionsStrippedCopy copies the runs of testdata/traces and their
// manifest into a new folder with the "error" field of every tool call left
// out, as harnesses that report a rejected edit in an ordinary observation
// log them; it returns the folder.
func rejectionsStrippedCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(traces, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			var step map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &step); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if raw, ok := step["toolCalls"]; ok && string(raw) != "null" {
				var calls []map[string]json.RawMessage
				if err := json.Unmarshal(raw, &calls); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				for _, c := range calls {
					delete(c, "error")
				}
				if step["toolCalls"], err = json.Marshal(calls); err != nil {
					t.Fatal(err)
				}
			}
			b, err := json.Marshal(step)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(out.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	manifest, err := os.ReadFile(filepath.Join(traces, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST.json"), manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRejectionsWithoutErrors audits the real runs with their error fields
// left out: the harnesses' rejections are then what marks a rejected edit as
// a failure. With the defaults, OpenHands' eight rejected edits of App.tsx
// (openhands-resolver-darkmode, labelled from line 5) stop at line 9, as they
// do with the error fields, and its str_replace_editor's "No replacement was
// performed" stops ponyc-4588; with "rejections": false neither stops. No
// healthy run stops before its last step either way, and no other run's
// stop moves.
func TestRejectionsWithoutErrors(t *testing.T) {
	dir := rejectionsStrippedCopy(t)
	labels, err := loadLabels(filepath.Join(dir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	stops := map[string]map[string]int{} // options -> run -> stop line (0: none)
	for _, doc := range []string{`{}`, `{"rejections": false}`} {
		conf := &guardConfig{registry: detector.Standard(), doc: []byte(doc)}
		if _, err := conf.build(nil); err != nil {
			t.Fatal(err)
		}
		a := &auditor{conf: conf, read: readOptions{keys: trace.WarnUnknownKeys, maxSize: defaultMaxSize}}
		stops[doc] = map[string]int{}
		a.run(a.collect([]string{dir}, os.Stderr), func(r *runReport) {
			if r.skipped {
				return
			}
			if r.Error != nil {
				t.Fatalf("%s: %+v", r.Run, r.Error)
			}
			file := filepath.Base(r.Run)
			e := labels.lookup(r.Run)
			if outcome, _ := judge(e, r); outcome == outcomeFalseStop && !knownFalseStops[file] {
				t.Errorf("%s: %s (healthy) stopped at line %d by %s, before its last step", doc, file, r.Stop.Line, r.Stop.Detector)
			}
			if r.Stop != nil && r.Stop.Fault {
				stops[doc][file] = r.Stop.Line
			}
			if file == "openhands-resolver-darkmode.jsonl" && doc == `{}` &&
				(r.Stop == nil || r.Stop.Line != 9 || r.Stop.Detector != "failure") {
				t.Errorf("darkmode without errors: stop %+v, want line 9 by the failure rule", r.Stop)
			}
		})
	}
	if len(stops[`{}`]) < len(labels.byKey)/5 {
		t.Fatalf("%d runs stopped: the copy was not audited", len(stops[`{}`]))
	}
	moved := map[string][2]int{}
	for file, line := range stops[`{}`] {
		if off := stops[`{"rejections": false}`][file]; off != line {
			moved[file] = [2]int{line, off}
		}
	}
	for file, off := range stops[`{"rejections": false}`] {
		if _, ok := stops[`{}`][file]; !ok {
			moved[file] = [2]int{0, off}
		}
	}
	want := map[string][2]int{
		"openhands-resolver-darkmode.jsonl": {9, 0},
		"openhands-llama4-ponyc-4588.jsonl": {18, 0},
		// CrewAI's "I tried reusing the same input" is no new output: without
		// it, the repeated calls' results change and start the run again.
		"crewai-repeated-tool-usage-b.jsonl":    {3, 4},
		"crewai-repeated-tool-usage-c.jsonl":    {3, 4},
		"crewai-repeated-tool-usage-gpt4.jsonl": {3, 0},
	}
	if diff := cmp.Diff(want, moved); diff != "" {
		t.Errorf("runs whose stop line moves when the rejections are off, [on, off] (-want +got):\n%s", diff)
	}
}
