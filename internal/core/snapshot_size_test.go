package core_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/internal/benchcpu"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// bigStep returns a step with a new 2 KB argument, a 3 KB result and 500
// characters of text.
func bigStep(i int) guard.Step {
	pad := func(n int) string { return strings.Repeat(fmt.Sprintf("%08d", i), n/8+1)[:n] }
	return guard.Step{
		Text: pad(500),
		ToolCalls: []guard.ToolCall{{
			Name:   "fetch",
			Args:   json.RawMessage(`{"body":"` + pad(2048-11) + `"}`),
			Result: pad(3072),
		}},
		FinishReason: "tool-calls",
		Usage:        guard.Usage{InputTokens: 2000, OutputTokens: 150, CostUSD: 0.001},
	}
}

func snapshotAfter(t testing.TB, steps int) []byte {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		testutil.Check(t, g, bigStep(i))
	}
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSnapshotSizeIsBounded: with default options, after 6,000 steps that
// each had a new 2 KB argument, a 3 KB result and 500 characters of text, the
// snapshot is at most 28 KB, and it stops growing once the no-progress
// window is full (but for the digits of its counters).
func TestSnapshotSizeIsBounded(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{0, 10, 1000, 1500, 6000} {
		sizes[n] = len(snapshotAfter(t, n))
	}
	t.Logf("snapshot bytes by steps: %v", sizes)
	if sizes[6000] > 28*1024 {
		t.Errorf("snapshot after 6000 steps is %d bytes, want at most %d", sizes[6000], 28*1024)
	}
	// Only the digits of counters and totals may grow.
	if sizes[6000]-sizes[1500] > 16 {
		t.Errorf("snapshot grew from %d bytes (1500 steps) to %d (6000 steps)", sizes[1500], sizes[6000])
	}
}

// TestGoldenSnapshot pins the snapshot format: the snapshot of a known run
// must not change, and a guard restored from the pinned bytes goes on as the
// original does. A change of format must raise guard.SnapshotVersion and keep
// reading the old files. A rule's state may gain an optional field within a
// version when files without it read as before: the repeat rule's "last"
// (the newest result's loose hash) is one; testdata/snapshot-v1-c7a843e.json
// is the file as it was before, and TestGoldenSnapshotUnderTheNewRepeat reads
// it.
func TestGoldenSnapshot(t *testing.T) {
	run := func(g *guard.Guard, from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			s := guard.Step{Text: "Looking it up", FinishReason: "tool-calls",
				ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"q":"loop %d"}`, i%2)), Result: "nothing"}},
				Usage:     guard.Usage{InputTokens: 100, OutputTokens: 10}}
			b, _ := json.Marshal(testutil.Check(t, g, s))
			out = append(out, string(b))
		}
		return out
	}
	g, err := guard.New(guard.Config{Rules: v1Detectors(t)})
	if err != nil {
		t.Fatal(err)
	}
	run(g, 0, 3)
	got, err := g.Snapshot(t.Context(), guard.SnapshotOptions{Previews: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "snapshot-v1.golden.json")
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Errorf("the snapshot format changed (raise SnapshotVersion and keep reading version 1):\n got: %s\nwant: %s", got, want)
	}
	restored, err := guard.Restore(want, guard.Config{Rules: v1Detectors(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The golden file is older than firstStop: it restores with none.
	if fs := testutil.Summary(t, restored).FirstStop; fs != nil {
		t.Errorf("restored from the golden file (no firstStop), FirstStop = %+v", fs)
	}
	if a, b := run(g, 3, 8), run(restored, 3, 8); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("restored from the golden file, the guard answers differently:\n orig: %v\nrestored: %v", a, b)
	}
	// Both stopped at the same step since, and save the same first stop.
	a, b := testutil.Summary(t, g).FirstStop, testutil.Summary(t, restored).FirstStop
	if a == nil || b == nil || a.Code != b.Code || a.Detector != b.Detector {
		t.Errorf("first stops after the golden run: orig %+v, restored %+v; want the same stop", a, b)
	}
	sa, sb := testutil.Snapshot(t, g, guard.SnapshotOptions{Previews: true}), testutil.Snapshot(t, restored, guard.SnapshotOptions{Previews: true})
	if !bytes.Equal(sa, sb) || !bytes.Contains(sa, []byte(`"firstStop":{"step":`)) {
		t.Errorf("snapshots after the golden run differ or hold no firstStop:\n orig: %s\nrestored: %s", sa, sb)
	}
}

// v1Detectors returns the detectors the golden file was saved with: the
// default set when it was written. The default set may grow; the file pins
// the format.
func v1Detectors(t *testing.T) []guard.Rule {
	t.Helper()
	fin, err1 := finish.New(finish.Options{})
	bud, err2 := budget.New(budget.Options{MaxSteps: 50})
	rep, err3 := repeat.New(repeat.Options{})
	// The oscillation rule did not compare results yet (SameResults at
	// Repeats is that reading, and fingerprints as it did).
	osc, err4 := oscillation.New(oscillation.Options{SameResults: oscillation.DefaultRepeats})
	nop, err5 := noprogress.New(noprogress.Options{})
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	return []guard.Rule{fin, bud, rep, osc, nop}
}

// TestGoldenSnapshotUnderTheNewOscillation: the golden file, saved before
// the oscillation rule compared results, restores under the rule's new
// default (its prior options are the file's), and not under other repeats.
func TestGoldenSnapshotUnderTheNewOscillation(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "snapshot-v1-c7a843e.json"))
	if err != nil {
		t.Fatal(err)
	}
	rules := v1Detectors(t)
	for _, tt := range []struct {
		name string
		o    oscillation.Options
		ok   bool
	}{
		{"the new default", oscillation.Options{}, true},
		{"other repeats", oscillation.Options{Repeats: 4}, false},
	} {
		osc, err := oscillation.New(tt.o)
		if err != nil {
			t.Fatal(err)
		}
		rules[3] = osc
		_, err = guard.Restore(want, guard.Config{Rules: rules})
		if ok := err == nil; ok != tt.ok {
			t.Errorf("%s: restore error %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// BenchmarkSnapshot and BenchmarkRestore measure saving and restoring a
// default guard after 10, 1,000 and 6,000 big steps.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{10, 1000, 6000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			g, _ := guard.New(guard.Config{Rules: detector.Defaults()})
			for i := range n {
				testutil.Check(b, g, bigStep(i))
			}
			var size int
			b.ReportAllocs()
			cpu := benchcpu.Start(b)
			for b.Loop() {
				data, err := g.Snapshot(b.Context(), guard.SnapshotOptions{})
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			cpu.Stop()
			b.ReportMetric(float64(size), "bytes")
		})
	}
}

func BenchmarkRestore(b *testing.B) {
	for _, n := range []int{10, 1000, 6000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			data := snapshotAfter(b, n)
			b.ReportAllocs()
			cpu := benchcpu.Start(b)
			for b.Loop() {
				if _, err := guard.Restore(data, guard.Config{Rules: detector.Defaults()}); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Stop()
			b.ReportMetric(float64(len(data)), "bytes")
		})
	}
}

// maxDefaultSnapshot is the largest snapshot of a guard with default options
// (detector.Defaults(), guard.Config{}) taken without previews: every count
// at its largest (math.MaxInt, and 2^62 where a detector caps it first),
// costUsd and durationMs in their longest forms, 64 step indexes of 19
// digits in the repeat rule, three calls of 64-character tool names (the
// longest kept without previews) with previews in the oscillation rule, a
// full no-progress window of 1024 outcomes, and four outcomes for each step
// in the repeated-text window.
// repeatN returns s n times, separated by commas.
func repeatN(s string, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return strings.Join(out, ",")
}

func maxDefaultSnapshot(t testing.TB) []byte {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	base, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(base, &env); err != nil {
		t.Fatal(err)
	}
	var records []map[string]json.RawMessage
	if err := json.Unmarshal(env["detectors"], &records); err != nil {
		t.Fatal(err)
	}
	maxInt, maxCount := strconv.Itoa(math.MaxInt), strconv.Itoa(1<<62)
	env["steps"], env["toolCalls"], env["failedToolCalls"] = json.RawMessage(maxInt), json.RawMessage(maxInt), json.RawMessage(maxInt)
	env["totals"] = json.RawMessage(`{"inputTokens":` + maxInt + `,"outputTokens":` + maxInt + `,"totalTokens":` + maxInt +
		`,"costUsd":0.0000012345678901234567,"durationMs":2100991375754.3628}`)
	hash := func(i int) string { return fmt.Sprintf("%032x", i+1) }
	var steps []string
	for i := range 64 {
		steps = append(steps, strconv.Itoa(math.MaxInt-64+i))
	}
	name := strings.Repeat("t", 64)
	var keys, counts []string
	for i := range 64 {
		keys, counts = append(keys, `"`+hash(100+i)+`"`), append(counts, strconv.Itoa(1<<30))
	}
	var tools []string // 64 tools refused since they last ran
	for i := range 64 {
		tools = append(tools, `"`+hash(200+i)+`"`)
	}
	refusalState := `{"keys":[` + strings.Join(keys, ",") + `],"counts":[` + strings.Join(counts, ",") +
		`],"tools":[` + strings.Join(tools, ",") + `],"toolCounts":[` + strings.Join(counts, ",") + `]}`
	var outcomes []byte
	for i := range 1024 {
		var sum [16]byte
		binary.BigEndian.PutUint64(sum[8:], uint64(i+1))
		outcomes = append(outcomes, sum[:]...)
	}
	var textOutcomes []string // four per step in the text rule's window
	for i := range 10 {
		var b []byte
		for j := range 4 {
			var sum [16]byte
			binary.BigEndian.PutUint64(sum[8:], uint64(2000+4*i+j))
			b = append(b, sum[:]...)
		}
		textOutcomes = append(textOutcomes, `"`+base64.RawStdEncoding.EncodeToString(b)+`"`)
	}
	states := map[string]string{
		"repeat": `{"sig":"` + hash(0) + `","count":` + maxCount + `,"steps":[` + strings.Join(steps, ",") + `],"last":"ffffffffffffffff"}`,
		"oscillation": `{"calls":[{"key":"` + hash(1) + `","outcome":"` + hash(9) + `","tool":"` + name + `","preview":"[redacted]"},{"key":"` + hash(2) +
			`","outcome":"` + hash(10) + `","tool":"` + name + `","preview":"[redacted]"},{"key":"` + hash(1) + `","outcome":"` + hash(9) + `","tool":"` + name +
			`","preview":"[redacted]"}],"runs":[` + maxCount + `,` + maxCount + `],"same":[` + maxCount + `,` + maxCount + `],"fresh":` + maxCount + `}`,
		"noprogress": `{"stalled":` + maxCount + `,"text":"` + hash(3) + `","outcomes":"` + base64.RawStdEncoding.EncodeToString(outcomes) + `"}`,
		"refusal":    refusalState,
		"failure": `{"tools":[` + repeatN(`"`+hash(4)+`"`, 10) + `],"ops":[` + repeatN(`"`+hash(5)+`"`, 10) +
			`],"failures":[` + repeatN(`"`+hash(6)+`"`, 10) + `],"steps":[` + strings.Join(steps[54:], ",") + `]}`,
		"text": `{"texts":[` + repeatN(`"`+hash(7)+`"`, 10) + `],"steps":[` + strings.Join(steps[54:], ",") + `],"outcomes":[` +
			strings.Join(textOutcomes, ",") + `],"lastInput":"` + hash(8) + `"}`,
		"input":      `{"inputs":[` + repeatN(`"`+hash(12)+`"`, 10) + `],"steps":[` + strings.Join(steps[54:], ",") + `]}`,
		"sameresult": `{"tool":"` + hash(9) + `","result":"` + hash(10) + `","key":"` + hash(11) + `","count":` + strconv.Itoa(sameresult.MaxThreshold) + `}`,
	}
	for _, r := range records {
		var n string
		json.Unmarshal(r["name"], &n)
		if s, ok := states[n]; ok {
			r["state"] = json.RawMessage(s)
		}
	}
	env["detectors"], _ = json.Marshal(records)
	doc, _ := json.Marshal(env)
	// Restore accepts exactly what Snapshot can write: this is a snapshot
	// a guard with default options can write.
	r, err := guard.Restore(doc, guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatalf("the largest snapshot does not restore: %v\n%s", err, doc)
	}
	data, err := r.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSnapshotSizeBound pins the bound docs/snapshots.md states.
func TestSnapshotSizeBound(t *testing.T) {
	data := maxDefaultSnapshot(t)
	t.Logf("largest snapshot with default options: %d bytes", len(data))
	if len(data) != 34_603 {
		t.Errorf("the largest snapshot with default options is %d bytes; docs/snapshots.md says 34,603", len(data))
	}
}

// TestGoldenSnapshotUnderTheNewRepeat: the golden file, saved before the
// repeat rule told a poll's new output from a repeat, restores under the
// rule's new default (which fingerprints as the old one did), its newest
// result unknown, so that the next same call counts as it did; not under
// the reference's reading (CountNewResults) or another threshold.
func TestGoldenSnapshotUnderTheNewRepeat(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "snapshot-v1-c7a843e.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    repeat.Options
		ok   bool
	}{
		{"the new default", repeat.Options{}, true},
		{"the reference's reading", repeat.Options{CountNewResults: true}, false},
		{"another threshold", repeat.Options{Threshold: 4}, false},
	} {
		rules := v1Detectors(t)
		rep, err := repeat.New(tt.o)
		if err != nil {
			t.Fatal(err)
		}
		rules[2] = rep
		g, err := guard.Restore(want, guard.Config{Rules: rules})
		if ok := err == nil; ok != tt.ok {
			t.Fatalf("%s: restore error %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil {
			continue
		}
		// The file's run of "loop 0" calls is 1 long; two more same calls
		// with new output: the first counts (its predecessor's result is
		// unknown), the second starts the run again.
		var stops []bool
		for _, r := range []string{"first", "second"} {
			v := testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":"loop 0"}`), Result: r + " page"}}})
			stops = append(stops, v.Stop)
		}
		if stops[0] || stops[1] {
			t.Errorf("%s: stops after the restore %v, want none", tt.name, stops)
		}
		// A third same call with the second's output is the run's second.
		v := testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":"loop 0"}`), Result: "second page"}}})
		if v.Stop {
			t.Errorf("%s: the run's second same output stopped: %v", tt.name, v)
		}
		v = testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":"loop 0"}`), Result: "second page"}}})
		if !v.Stop || v.Code != repeat.Code {
			t.Errorf("%s: the run's third same output: %v, want a %s stop", tt.name, v, repeat.Code)
		}
	}
}
