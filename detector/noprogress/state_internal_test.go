package noprogress

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/rule"
)

// TestSnapshotIsStateJSON: the state Snapshot writes by hand is what
// json.Marshal writes of saved, fresh, going on, stalled, and with a full
// window.
func TestSnapshotIsStateJSON(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := r.NewState().(*state)
	check := func(when string) {
		t.Helper()
		got, err := d.Snapshot(rule.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []byte("null")
		if d.stalled != 0 || d.seen.Len() != 0 {
			s := saved{Stalled: d.stalled, Outcomes: d.seen.Encode()}
			if d.stalled > 0 {
				text := d.text
				s.Text = &text
			}
			if want, err = json.Marshal(s); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: Snapshot (-json.Marshal +by hand):\n%s", when, diff)
		}
	}
	// outcome returns the facts of a step with text and one call whose
	// outcome is the i-th.
	outcome := func(text string, i int) *rule.Facts {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		return &rule.Facts{TextHash: canonical.HashString(text), HasText: text != "",
			Calls: []rule.Call{{Tool: "search", Outcome: canonical.HashBytes(b[:])}}}
	}
	check("fresh")
	for i := range 3 {
		d.Observe(outcome("same", 0))
		check(fmt.Sprintf("stalled, step %d", i))
	}
	if d.stalled == 0 {
		t.Fatal("three identical steps did not stall: the test never sees a stalled state")
	}
	for i := range DefaultWindow + 5 {
		d.Observe(outcome("", i+1))
	}
	if d.seen.Len() != DefaultWindow {
		t.Fatalf("%d outcomes remembered, want a full window of %d", d.seen.Len(), DefaultWindow)
	}
	check("a full window")
}
