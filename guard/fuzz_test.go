package guard_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

// FuzzRestore feeds arbitrary bytes to Restore: it must return an error or a
// guard that works, never panic. The seeds are real snapshots.
func FuzzRestore(f *testing.F) {
	clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
	g, err := guard.Options{Ignore: []string{"think"}}.New(allDetectors(f, clock)...)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 12 {
		seed, err := g.Snapshot(guard.SnapshotOptions{Redact: i%5 == 4})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
		g.Check(bigStep(i % 4))
		g.Check(guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Call("write", `{}`), testutil.Q("x")}})
	}
	def, _ := guard.New(detector.Defaults()...)
	def.Check(bigStep(1))
	seed, _ := def.Snapshot(guard.SnapshotOptions{})
	f.Add(seed)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`null`))

	f.Fuzz(func(t *testing.T, data []byte) {
		clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
		r, err := guard.Options{Ignore: []string{"think"}}.Restore(data, allDetectors(t, clock)...)
		if err != nil {
			return
		}
		// A restored guard must work: check, preflight, save again.
		for i := range 4 {
			r.Preflight(testutil.Q("x"), testutil.Call("read", `{"q":1}`))
			r.Check(guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Q("x")}, Usage: guard.Usage{TotalTokens: int64(i)}})
		}
		again, err := r.Snapshot(guard.SnapshotOptions{})
		if err != nil {
			t.Fatalf("snapshot of a restored guard: %v", err)
		}
		if !json.Valid(again) {
			t.Fatalf("invalid snapshot: %s", again)
		}
	})
}
