package stall

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
	d, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := d.NewState().(*state)
	check := func(when string) {
		t.Helper()
		got, err := st.Snapshot(rule.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []byte("null")
		if st.stalled != 0 || st.seen.Len() != 0 {
			if want, err = json.Marshal(saved{Stalled: st.stalled, Outcomes: st.seen.Encode()}); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: Snapshot (-json.Marshal +by hand):\n%s", when, diff)
		}
	}
	outcome := func(i int) *rule.Facts {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		return &rule.Facts{Index: i, Calls: []rule.Call{{Tool: "search", Outcome: canonical.HashBytes(buf[:])}}}
	}
	check("fresh")
	for i := range 3 {
		st.Observe(outcome(0))
		check(fmt.Sprintf("stalled, step %d", i))
	}
	if st.stalled == 0 {
		t.Fatal("three identical steps did not stall: the test never sees a stalled state")
	}
	for i := range DefaultWindow + 5 {
		st.Observe(outcome(i + 1))
	}
	check("a full window")
}
