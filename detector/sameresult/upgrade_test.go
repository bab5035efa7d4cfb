package sameresult_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/guard"
)

// TestSameResultUpgradeFromMain restores a snapshot that the release before
// this rule wrote (main at 9d9b9e6, detector.Defaults(), one search): under
// the new defaults it fails even with AllowNewRules, because the
// oscillation rule's default options changed too (sameResults 2), and it
// restores with AllowNewRules and the oscillation rule at the reference's
// reading (sameResults 3), as docs/upgrading.md says.
func TestSameResultUpgradeFromMain(t *testing.T) {
	snap, err := os.ReadFile(filepath.Join("testdata", "upgrade-9d9b9e6.snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = guard.Restore(snap, guard.Config{Rules: detector.Defaults(), AllowNewRules: true})
	var fe *guard.FingerprintError
	if !errors.As(err, &fe) || !slices.Equal(fe.Changed, []string{oscillation.Name}) || len(fe.Extra)+len(fe.Missing) != 0 {
		t.Errorf("restoring under the new defaults with AllowNewRules: %v, want a FingerprintError with Changed [oscillation] only", err)
	}
	cfg, err := detector.FromJSON([]byte(`{"oscillation": {"sameResults": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Restore(snap, cfg); !errors.As(err, &fe) || !slices.Equal(fe.Extra, []string{sameresult.Name}) {
		t.Errorf("restoring with sameResults 3, without AllowNewRules: %v, want a FingerprintError with Extra [sameresult]", err)
	}
	cfg.AllowNewRules = true
	g, err := guard.Restore(snap, cfg)
	if err != nil {
		t.Fatalf("restoring with sameResults 3 and AllowNewRules: %v", err)
	}
	if s, err := g.Summary(t.Context()); err != nil || s.Steps != 1 {
		t.Errorf("restored run: %d steps, %v; want the 1 step saved", s.Steps, err)
	}
}
