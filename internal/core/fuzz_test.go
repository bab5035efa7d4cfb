package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// FuzzRestore feeds arbitrary bytes to Restore: it must return an error or a
// guard that works, never panic. The seeds are real snapshots.
func FuzzRestore(f *testing.F) {
	addRestoreSeeds(f)

	f.Fuzz(func(t *testing.T, data []byte) {
		clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
		opts := guard.Config{Ignore: []string{"think"}}
		r, err := guard.Restore(data, withRules(opts, allDetectors(t, clock)...))
		if err != nil {
			return
		}
		// What Restore accepts is what Snapshot writes: the counters agree,
		// and saving at once gives a snapshot that restores to the same.
		s := testutil.Summary(t, r)
		if s.Steps < 0 || s.ToolCalls < 0 || s.FailedToolCalls < 0 || s.FailedToolCalls > s.ToolCalls {
			t.Fatalf("restored impossible counters %+v", s)
		}
		first, err := r.Snapshot(t.Context(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatalf("snapshot of a restored guard: %v", err)
		}
		r2, err := guard.Restore(first, withRules(opts, allDetectors(t, clock)...))
		if err != nil {
			t.Fatalf("Restore accepted\n%s\nbut not the restored guard's own snapshot: %v\n%s", data, err, first)
		}
		if second, _ := r2.Snapshot(t.Context(), guard.SnapshotOptions{}); !bytes.Equal(first, second) {
			t.Fatalf("a snapshot does not restore to itself:\n%s\n%s", first, second)
		}
		// A restored guard must work: check, preflight, save again, restore.
		for i := range 4 {
			testutil.Preflight(t, r, testutil.Q("x"), testutil.Call("read", `{"q":1}`))
			testutil.Check(t, r, guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Q("x"), testutil.Call("write", `{}`)},
				Usage: guard.Usage{TotalTokens: int64(i)}})

		}
		again, err := r.Snapshot(t.Context(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatalf("snapshot of a restored guard: %v", err)
		}
		if !json.Valid(again) {
			t.Fatalf("invalid snapshot: %s", again)
		}
		if _, err := guard.Restore(again, withRules(opts, allDetectors(t, clock)...)); err != nil {
			t.Fatalf("Restore accepted\n%s\nbut not the snapshot of the guard 4 steps later: %v\n%s", data, err, again)
		}
	})
}

// addRestoreSeeds adds real snapshots, and hostile edits of one, as seeds.
func addRestoreSeeds(f *testing.F) {
	clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
	g, err := guard.New(withRules(guard.Config{Ignore: []string{"think"}}, allDetectors(f, clock)...))
	if err != nil {
		f.Fatal(err)
	}
	for i := range 12 {
		seed, err := g.Snapshot(f.Context(), guard.SnapshotOptions{Previews: i%5 != 4})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
		testutil.Check(f, g, bigStep(i%4))
		testutil.Check(f, g, guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Call("write", `{}`), testutil.Q("x")}})
	}
	def, _ := guard.New(guard.Config{Rules: detector.Defaults()})
	testutil.Check(f, def, bigStep(1))
	seed, _ := def.Snapshot(f.Context(), guard.SnapshotOptions{})
	f.Add(seed)
	// Hostile seeds of issue 12: counts at their largest, keys in
	// another case, states that contradict the counters.
	max := fmt.Sprint(math.MaxInt)
	for _, edit := range [][2]string{
		{`"steps":1,`, `"steps":` + max + `,`},
		{`"toolCalls":1,`, `"toolCalls":` + max + `,`},
		{`"steps":1,`, `"steps":1,"STEPS":2,`},
		{`"steps":1,`, `"steps":1,"steps":2,`},
		{`"steps":1,`, `"steps":0,`},
		{`"name":"finish",`, `"name":"finish","Name":"budget",`},
	} {
		f.Add(bytes.Replace(seed, []byte(edit[0]), []byte(edit[1]), 1))
	}
	// A first stop, and malformed ones.
	for _, fs := range []string{`{"step":0,"reason":"r","code":"C","detector":"d"}`,
		`{"step":-1,"reason":"r","code":"C"}`, `{"step":0,"reason":"r","code":""}`, `[]`,
		`{"step":0,"step":0,"reason":"r","code":"C"}`} {
		f.Add(bytes.Replace(seed, []byte(`"detectors":`), []byte(`"firstStop":`+fs+`,"detectors":`), 1))
	}
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`null`))
}

// FuzzRestoreAgreesWithReference holds Restore, which reads a snapshot in one
// pass, to the Restore of before, which read it with encoding/json four
// times over: on any bytes, both accept or both refuse, and what both accept
// restores to the same guard.
func FuzzRestoreAgreesWithReference(f *testing.F) {
	addRestoreSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
		opts := guard.Config{Ignore: []string{"think"}}
		got, err := guard.Restore(data, withRules(opts, allDetectors(t, clock)...))
		want, werr := guard.ReferenceRestore(data, withRules(opts, allDetectors(t, clock)...))
		if (err == nil) != (werr == nil) {
			t.Fatalf("Restore: %v\nthe reference: %v\nsnapshot: %q", err, werr, data)
		}
		if err != nil {
			if !errors.Is(err, guard.ErrInvalidState) && !errors.Is(err, guard.ErrOptionsChanged) {
				t.Fatalf("Restore: %v, neither ErrInvalidState nor ErrOptionsChanged", err)
			}
			return
		}
		a, _ := got.Snapshot(t.Context(), guard.SnapshotOptions{Previews: true})
		b, _ := want.Snapshot(t.Context(), guard.SnapshotOptions{Previews: true})
		if !bytes.Equal(a, b) {
			t.Fatalf("restored differently:\n%s\n%s", a, b)
		}
	})
}
