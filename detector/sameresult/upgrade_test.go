package sameresult_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/guard"
)

// TestSameResultUpgradeFromMain restores a snapshot that the release before
// this rule wrote (main at 9d9b9e6, detector.Defaults(), one search): under
// the new defaults it fails without AllowNewRules (no state for sameresult,
// nor for the repeated-input rule added after it)
// and restores with it, the oscillation state taken as saved under the
// rule's prior options (rule.Successor), as docs/upgrading.md says.
func TestSameResultUpgradeFromMain(t *testing.T) {
	snap, err := os.ReadFile(filepath.Join("testdata", "upgrade-9d9b9e6.snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = guard.Restore(snap, guard.Config{Rules: detector.Defaults()})
	var fe *guard.FingerprintError
	if !errors.As(err, &fe) || !slices.Equal(fe.Extra, []string{sameresult.Name, input.Name}) || len(fe.Changed)+len(fe.Missing) != 0 {
		t.Errorf("restoring under the new defaults without AllowNewRules: %v, want a FingerprintError with Extra [sameresult input] only", err)
	}
	g, err := guard.Restore(snap, guard.Config{Rules: detector.Defaults(), AllowNewRules: true})
	if err != nil {
		t.Fatalf("restoring under the new defaults with AllowNewRules: %v", err)
	}
	if s, err := g.Summary(t.Context()); err != nil || s.Steps != 1 {
		t.Errorf("restored run: %d steps, %v; want the 1 step saved", s.Steps, err)
	}
}
