package main

import (
	"strings"
	"testing"
)

// want is the program's output. A line ending in "..." need only start with
// what comes before: those are texts of the guard, whose wording may change.
const want = `the model asks for search {"query": "team offsite date"}
  ran it: 3 results
the model asks for send_email {"to": "ana@example.com", "subject": "Offsite"}
  ran it: sent
the model asks for send_email {"to": "bo@example.com", "subject": "Offsite"}
  ran it: sent
the model asks for send_email {"to": "cy@example.com", "subject": "Offsite"}
  refused (TOOL_CALL_CAP): That call was not run...
the model asks for search {"query": "offsite venue"}
  ran it: 3 results
the model asks for search {"query": "offsite venue"}
  ran it: 3 results
the model asks for search {"query": "offsite venue"}
  refused (REPEATED_TOOL_CALL): That call was not run...
5 steps recorded, 5 calls run
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
