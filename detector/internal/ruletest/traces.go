package ruletest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/loopguard/loopguard/guard"
)

// A Trace is one labelled real run of testdata/traces: its file, its label
// in MANIFEST.json ("loops", "healthy" or "unclear") and its steps.
type Trace struct {
	File, Label string
	Steps       []guard.Step
}

// Traces reads every run that testdata/traces/MANIFEST.json lists, for a
// test of a package two levels below the module's root (detector/<rule>),
// and fails t on any error.
func Traces(t testing.TB) []Trace {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "traces")
	var manifest []struct {
		File  string
		Label string
	}
	data, err := os.ReadFile(filepath.Join(dir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatal(err)
	}
	out := make([]Trace, 0, len(manifest))
	for _, m := range manifest {
		f, err := os.Open(filepath.Join(dir, m.File))
		if err != nil {
			t.Fatal(err)
		}
		tr := Trace{File: m.File, Label: m.Label}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for line := 1; sc.Scan(); line++ {
			var s guard.Step
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				f.Close()
				t.Fatalf("%s:%d: %v", m.File, line, err)
			}
			tr.Steps = append(tr.Steps, s)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", m.File, err)
		}
		out = append(out, tr)
	}
	return out
}

// FirstStop checks every step with g and returns the line (1-based) of the
// first that stops, or 0 when none does.
func FirstStop(t TB, g *guard.Guard, steps []guard.Step) int {
	t.Helper()
	first := 0
	for i, s := range steps {
		if Check(t, g, s).Stop && first == 0 {
			first = i + 1
		}
	}
	return first
}

// FirstStops replays every run of testdata/traces through a guard of its
// own (newGuard's) and checks where each first stops: a run that want
// names at want's line (1-based; 0 for none), and any other healthy run
// nowhere. It fails when fewer than 100 healthy runs were read, and
// returns how many runs stopped.
func FirstStops(t testing.TB, traces []Trace, newGuard func() *guard.Guard, want map[string]int) (stopped int) {
	t.Helper()
	healthy := 0
	for _, tr := range traces {
		got := FirstStop(t, newGuard(), tr.Steps)
		if got != 0 {
			stopped++
		}
		if tr.Label == "healthy" {
			healthy++
		}
		switch w, ok := want[tr.File]; {
		case ok && got != w:
			t.Errorf("%s (%s): first stop at line %d, want %d (0: none)", tr.File, tr.Label, got, w)
		case !ok && tr.Label == "healthy" && got != 0:
			t.Errorf("%s (healthy) stops at line %d", tr.File, got)
		}
	}
	if healthy < 100 {
		t.Errorf("only %d healthy runs found", healthy)
	}
	return stopped
}
