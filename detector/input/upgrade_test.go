package input_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
)

// TestUpgradeFromMain restores a snapshot that the release before this rule
// wrote (main at f571813, detector.Defaults(), a step told a test report and
// a search): under the new defaults it fails without AllowNewRules (no state
// for the input rule) and restores with it, the rule starting fresh, as
// docs/upgrading.md says: the report told before the restore does not count,
// so it stops at the third time it is told after it.
func TestUpgradeFromMain(t *testing.T) {
	snap, err := os.ReadFile(filepath.Join("testdata", "upgrade-f571813.snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = guard.Restore(snap, guard.Config{Rules: detector.Defaults()})
	var fe *guard.FingerprintError
	if !errors.As(err, &fe) || !slices.Equal(fe.Extra, []string{input.Name}) || len(fe.Changed)+len(fe.Missing) != 0 {
		t.Errorf("restoring under the new defaults without AllowNewRules: %v, want a FingerprintError with Extra [input] only", err)
	}
	g, err := guard.Restore(snap, guard.Config{Rules: detector.Defaults(), AllowNewRules: true})
	if err != nil {
		t.Fatalf("restoring under the new defaults with AllowNewRules: %v", err)
	}
	if s, err := g.Summary(t.Context()); err != nil || s.Steps != 2 {
		t.Errorf("restored run: %d steps, %v; want the 2 steps saved", s.Steps, err)
	}
	const report = "[Test Reports] An error occurred: module 'os' has no attribute 'setsid'"
	var got []string
	for _, text := range []string{"a", "b", "c"} {
		got = append(got, ruletest.Check(t, g, guard.Step{Text: text, Input: report}).Code)
	}
	if !slices.Equal(got, []string{"", "", input.Code}) {
		t.Errorf("codes after the restore = %q, want the third report told after it to stop with %s", got, input.Code)
	}
}
