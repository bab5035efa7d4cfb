package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFixturesUpToDate checks that the committed fixtures in ../otlp are
// exactly what the program writes, and that nothing else is there: run
// "go run ." in this directory after changing a loop.
func TestFixturesUpToDate(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".jsonl") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	committed := filepath.Join("..", "otlp")
	want, got := names(dir), names(committed)
	if !slices.Equal(want, got) {
		t.Fatalf("../otlp holds %q, the program writes %q: run go run . in testdata/otlpgen", got, want)
	}
	for _, name := range want {
		w, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w, g) {
			t.Errorf("../otlp/%s is not what the program writes: run go run . in testdata/otlpgen", name)
		}
	}
}

// TestIDsAreHex checks that trace and span IDs are written in hex, as
// OTLP/JSON wants them, not in base64 as protobuf's JSON mapping writes
// bytes.
func TestIDsAreHex(t *testing.T) {
	for _, f := range fixtures() {
		out, err := f.otlp()
		if err != nil {
			t.Fatal(err)
		}
		ms := idFields.FindAllSubmatch(out, -1)
		if len(ms) == 0 {
			t.Fatalf("%s: no IDs", f.Name)
		}
		for _, m := range ms {
			id := string(m[2])
			if strings.Trim(id, "0123456789abcdef") != "" || len(id) != 16 && len(id) != 32 {
				t.Errorf("%s: %s %q is not a hex ID", f.Name, m[1], id)
			}
		}
	}
}
