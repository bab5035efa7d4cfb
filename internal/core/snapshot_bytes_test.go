package core_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestSnapshotBytesAsEncodingJSON checks that Snapshot, which writes its
// envelope by hand, writes the bytes encoding/json wrote for it: the same
// keys in the same order, compact.
func TestSnapshotBytesAsEncodingJSON(t *testing.T) {
	type record struct {
		Name        string          `json:"name"`
		Fingerprint string          `json:"fingerprint"`
		State       json.RawMessage `json:"state"`
	}
	type envelope struct {
		Version         int             `json:"version"`
		Steps           int             `json:"steps"`
		ToolCalls       int             `json:"toolCalls"`
		FailedToolCalls int             `json:"failedToolCalls"`
		Totals          json.RawMessage `json:"totals"`
		Guard           string          `json:"guard"`
		FirstStop       json.RawMessage `json:"firstStop,omitempty"`
		Detectors       []record        `json:"detectors"`
	}
	rapid.Check(t, func(t *rapid.T) {
		g, err := guard.New(withRules(guard.Config{Ignore: []string{"think"}}, detector.Defaults()...))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rapid.SliceOfN(testutil.StepGen(), 0, 30).Draw(t, "steps") {
			rcheck(t, g, s)
		}
		previews := rapid.Bool().Draw(t, "previews")
		got, err := g.Snapshot(t.Context(), guard.SnapshotOptions{Previews: previews})
		if err != nil {
			t.Fatal(err)
		}
		var e envelope
		if err := json.Unmarshal(got, &e); err != nil {
			t.Fatalf("%v:\n%s", err, got)
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Snapshot wrote\n%s\nencoding/json writes\n%s", got, want)
		}
	})
}
