package core_test

import (
	"bytes"
	"strings"
	"testing"

	guard "github.com/loopguard/loopguard/internal/core"
)

// TestRestoreDepthBoundary: a snapshot nested guard.MaxSnapshotDepth levels
// deep restores, one level more does not. The levels are the envelope, the
// detectors' array, a record, the probe's state and arrays inside it.
func TestRestoreDepthBoundary(t *testing.T) {
	g := mustNew(t, guard.Config{}, &probe{name: "p"})
	snap, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(snap, []byte(`"state":{"count":0}`)) {
		t.Fatalf("the probe's state is not where the test looks: %s", snap)
	}
	nested := func(arrays int) []byte {
		state := `"state":{"count":0,"x":` + strings.Repeat("[", arrays) + strings.Repeat("]", arrays) + `}`
		return bytes.Replace(snap, []byte(`"state":{"count":0}`), []byte(state), 1)
	}
	const around = 4 // envelope, detectors, record, state
	if _, err := guard.Restore(nested(guard.MaxSnapshotDepth-around), guard.Config{Rules: []guard.Rule{&probe{name: "p"}}}); err != nil {
		t.Errorf("a snapshot %d levels deep: %v", guard.MaxSnapshotDepth, err)
	}
	_, err = guard.Restore(nested(guard.MaxSnapshotDepth-around+1), guard.Config{Rules: []guard.Rule{&probe{name: "p"}}})
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 32 levels") {
		t.Errorf("a snapshot %d levels deep: %v, want an error that says it is too deep", guard.MaxSnapshotDepth+1, err)
	}
}

// TestUnmarshalStateDepthBoundary: UnmarshalState reads text nested as deep
// as encoding/json does (10,000 levels), and refuses one level more.
func TestUnmarshalStateDepthBoundary(t *testing.T) {
	nested := func(levels int) []byte {
		arrays := levels - 1 // the object around them is a level
		return []byte(`{"raw":` + strings.Repeat("[", arrays) + strings.Repeat("]", arrays) + `}`)
	}
	var got *testState
	if err := guard.UnmarshalState(nested(10_000), &got); err != nil {
		t.Errorf("10,000 levels: %v", err)
	}
	if err := guard.UnmarshalState(nested(10_001), &got); err == nil || !strings.Contains(err.Error(), "nested deeper than 10000 levels") {
		t.Errorf("10,001 levels: %v, want an error that says it is too deep", err)
	}
}
