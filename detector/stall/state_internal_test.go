package stall

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
)

// TestSnapshotIsStateJSON: the state Snapshot writes by hand is what
// json.Marshal writes of state, fresh, going on, stalled, and with a full
// window.
func TestSnapshotIsStateJSON(t *testing.T) {
	d, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(d)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got, err := d.Snapshot(guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []byte("null")
		if d.stalled != 0 || d.seen.Len() != 0 {
			if want, err = json.Marshal(state{Stalled: d.stalled, Outcomes: d.seen.Encode()}); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: Snapshot (-json.Marshal +by hand):\n%s", when, diff)
		}
	}
	check("fresh")
	for i := range 3 {
		g.Check(guard.Step{Text: "same", ToolCalls: []guard.ToolCall{{Name: "search", Args: `{"q":1}`, Result: "r"}}})
		check(fmt.Sprintf("stalled, step %d", i))
	}
	if d.stalled == 0 {
		t.Fatal("three identical steps did not stall: the test never sees a stalled state")
	}
	for i := range DefaultWindow + 5 {
		g.Check(guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"q":%d}`, i), Result: "r"}}})
	}
	check("a full window")
}
