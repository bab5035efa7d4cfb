package oscillation_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/guard"
)

// TestSameResultsPolling pins what the package doc says of polling tools:
// repeat's tools.<name>.polling does not reach this rule, so polls of two
// jobs in turn with unchanged results stop at the second round (the fourth
// call; the third goes on), and with sameResults 3 at the third (the
// sixth; the fifth goes on).
func TestSameResultsPolling(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want int // the call that stops, 1-based
	}{
		{`{"tools": {"status": {"polling": {"maxIdenticalResults": 6}}}}`, 4},
		{`{"tools": {"status": {"polling": {"maxIdenticalResults": 6}}}, "oscillation": {"sameResults": 3}}`, 6},
	} {
		cfg, err := detector.FromJSON([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		g, err := guard.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := range tc.want {
			job := []string{"a", "b"}[i%2]
			// Texts of their own, so that no-progress does not stop first.
			v := ruletest.Check(t, g, guard.Step{Text: "Checking job " + job + fmt.Sprint(i) + ".", FinishReason: "tool-calls", ToolCalls: []guard.ToolCall{{
				Name: "status", Args: json.RawMessage(`{"job": "` + job + `"}`), Result: "pending"}}})
			got = append(got, v.Code)
		}
		want := make([]string, tc.want)
		want[tc.want-1] = oscillation.Code
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: codes per call (-want +got):\n%s", tc.doc, diff)
		}
	}
}
