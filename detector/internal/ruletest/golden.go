package ruletest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/rule"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Golden compares got, followed by a newline, with the file
// testdata/name.golden, and rewrites the file instead when the test runs
// with -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("%s:\n got: %s\nwant: %s", name, got, want)
	}
}

// GoldenFeedback compares the model-facing texts of a stop of a rule that
// judges calls in preflight with their golden files: text(rule.PhaseCheck)
// with testdata/name.check.golden, and text(rule.PhasePreflight), which must
// say that the call was not run, with testdata/name.preflight.golden.
func GoldenFeedback(t testing.TB, name string, text func(rule.Phase) string) {
	t.Helper()
	Golden(t, name+".check", text(rule.PhaseCheck))
	refused := text(rule.PhasePreflight)
	if !strings.HasPrefix(refused, "That call was not run") {
		t.Errorf("%s: a refusal must say the call was not run: %q", name, refused)
	}
	Golden(t, name+".preflight", refused)
}
