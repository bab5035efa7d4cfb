package main

import (
	"strings"
	"testing"
)

// want is the program's output. A line ending in "..." need only start with
// what comes before: those are texts of the guard, whose wording may change.
const want = `step 0: the model calls search {"query": "weather in Atlantis today"} -> no results
        guard: go on
step 1: the model calls search {"query": "weather in Atlantis today"} -> no results
        guard: go on
step 2: the model calls search {"query": "weather in Atlantis today"} -> refused: That call was not run: it would have been the 3rd call in a row to ` + "`search`" + `...
        guard: go on
step 3: the model calls search {"query": "weather in Atlantis today"} -> refused: That call was not run...
        guard: go on
step 4: the model calls search {"query": "weather in Atlantis today"} -> refused: That call was not run...
        guard: stop: repeated-refusal (REPEATED_REFUSAL): the call search({"query":"weather in Atlantis today"}) was refused 3 times...
feedback to the model: You have asked 3 times for a call to ` + "`search`" + ` that is not allowed to run...
the model answers: I could not find a weather report for Atlantis: searches for it return nothing.
`

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	matchLines(t, want, out.String())
}

func matchLines(t *testing.T, want, got string) {
	t.Helper()
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	if len(w) != len(g) {
		t.Fatalf("%d lines, want %d:\n%s", len(g), len(w), got)
	}
	for i := range w {
		if p, ok := strings.CutSuffix(w[i], "..."); ok && strings.HasPrefix(g[i], p) || w[i] == g[i] {
			continue
		}
		t.Errorf("line %d:\n got %s\nwant %s", i+1, g[i], w[i])
	}
}
