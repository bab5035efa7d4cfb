package detector_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

// upgradePrevious is the default set of the release before issue 22's
// rules: no sameResult, and an oscillation rule that compared no results.
const upgradePrevious = `{"sameResult": false, "oscillation": {"sameResults": 3}}`

// upgradeSteps are n searches for new topics with new results, which no
// rule stops.
func upgradeSteps(from, n int) []guard.Step {
	var out []guard.Step
	for i := from; i < from+n; i++ {
		out = append(out, guard.Step{ToolCalls: []guard.ToolCall{{Name: "search",
			Args: json.RawMessage(fmt.Sprintf(`{"q":"topic %d"}`, i)), Result: fmt.Sprintf("page %d", i)}}})
	}
	return out
}

// TestUpgradeFromThePreviousDefaults: a run saved under the previous
// default set restores under the new one with AllowNewRules (sameresult
// starts fresh, the oscillation state is taken as its own: it was saved
// under the rule's prior options), and fails without it; a changed option
// of a rule is an error still.
func TestUpgradeFromThePreviousDefaults(t *testing.T) {
	before, err := detector.FromJSON([]byte(upgradePrevious))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(before)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range upgradeSteps(0, 3) {
		if v := ruletest.Check(t, g, s); v.Stop {
			t.Fatalf("the run stopped before the upgrade: %s", v.Code)
		}
	}
	snap := testutil.Snapshot(t, g, guard.SnapshotOptions{})

	_, err = guard.Restore(snap, guard.Config{Rules: detector.Defaults()})
	var fe *guard.FingerprintError
	if !errors.As(err, &fe) || !slices.Equal(fe.Extra, []string{"sameresult"}) || len(fe.Changed) != 0 {
		t.Errorf("restore under the new defaults without AllowNewRules: %v, want only Extra [sameresult]", err)
	}
	r, err := guard.Restore(snap, guard.Config{Rules: detector.Defaults(), AllowNewRules: true})
	if err != nil {
		t.Fatalf("restore under the new defaults with AllowNewRules: %v", err)
	}
	for _, s := range upgradeSteps(3, 3) {
		if v := ruletest.Check(t, r, s); v.Stop {
			t.Errorf("the restored run stopped: %s", v.Code)
		}
	}

	osc, err := detector.FromJSON([]byte(`{"sameResult": false, "oscillation": {"repeats": 4}}`))
	if err != nil {
		t.Fatal(err)
	}
	osc.AllowNewRules = true
	_, err = guard.Restore(snap, osc)
	if !errors.As(err, &fe) || !slices.Equal(fe.Changed, []string{"oscillation"}) {
		t.Errorf("restore with other oscillation repeats: %v, want Changed [oscillation]", err)
	}
}
