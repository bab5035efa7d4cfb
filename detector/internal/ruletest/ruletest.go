// Package ruletest holds what the tests of the rule packages under detector
// share now that a rule's run state lives inside its guard: reading one
// rule's state out of a guard's snapshot, making a fresh state that is a
// Saver, and checking steps from rapid's properties as well as from tests.
package ruletest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// StateOf returns the state of the rule called name in g's snapshot taken
// with o (JSON null for a fresh state), and fails t if there is none.
func StateOf(t testing.TB, g *guard.Guard, name string, o guard.SnapshotOptions) string {
	t.Helper()
	data, err := g.Snapshot(context.Background(), o)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	var env struct {
		Detectors []struct {
			Name  string          `json:"name"`
			State json.RawMessage `json:"state"`
		} `json:"detectors"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for _, r := range env.Detectors {
		if r.Name == name {
			return string(r.State)
		}
	}
	t.Fatalf("no state of %s in the snapshot %s", name, data)
	return ""
}

// Saver returns a fresh state of r, and fails t if it is not a Saver.
func Saver(t testing.TB, r rule.Rule) rule.Saver {
	t.Helper()
	s, ok := r.NewState().(rule.Saver)
	if !ok {
		t.Fatalf("a state of %s is not a rule.Saver", r.Name())
	}
	return s
}

// TB is what Check and Preflight need of a *testing.T, a *testing.B or a
// *rapid.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Check is g.Check with a background context; it fails t on an error (a
// guard in memory returns none).
func Check(t TB, g *guard.Guard, s guard.Step) guard.Verdict {
	t.Helper()
	v, err := g.Check(context.Background(), s)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return v
}

// Preflight is g.Preflight as Check is g.Check.
func Preflight(t TB, g *guard.Guard, calls ...guard.ToolCall) guard.Decision {
	t.Helper()
	d, err := g.Preflight(context.Background(), calls...)
	if err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	return d
}

// Pair returns two guards built from cfg, for tests that two guards of one
// configuration keep their runs apart; it fails t if either cannot be built.
func Pair(t testing.TB, cfg guard.Config) (*guard.Guard, *guard.Guard) {
	t.Helper()
	g1, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g1, g2
}

// RestoreNullIsFresh checks that a fresh state of r, restored from the state
// of r in g's snapshot and then from JSON null, snapshots as null again.
func RestoreNullIsFresh(t testing.TB, r rule.Rule, g *guard.Guard) {
	t.Helper()
	st := Saver(t, r)
	if err := st.Restore([]byte(StateOf(t, g, r.Name(), guard.SnapshotOptions{}))); err != nil {
		t.Fatal(err)
	}
	if err := st.Restore([]byte("null")); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != "null" {
		t.Errorf("after Restore(null), the state is %s, want null", got)
	}
}

// RejectsKeeping checks that a state of r restored from running refuses
// each of bad and is left as it was: its snapshot is running still.
func RejectsKeeping(t testing.TB, r rule.Rule, running string, bad []string) {
	t.Helper()
	for _, s := range bad {
		st := Saver(t, r)
		if err := st.Restore([]byte(running)); err != nil {
			t.Fatalf("Restore(%s): %v", running, err)
		}
		if err := st.Restore([]byte(s)); err == nil {
			t.Errorf("Restore(%s) succeeded", s)
		}
		if got, _ := st.Snapshot(guard.SnapshotOptions{}); string(got) != running {
			t.Errorf("after Restore(%s) failed, the state is %s, want %s", s, got, running)
		}
	}
}

// ResetIsFresh checks that a guard made by newGuard, run over seq and then
// Reset, gives on seq the verdicts that a fresh guard gives.
func ResetIsFresh(t testing.TB, newGuard func() *guard.Guard, seq []guard.Step) {
	t.Helper()
	checkAll := func(g *guard.Guard) []guard.Verdict {
		out := make([]guard.Verdict, len(seq))
		for i, s := range seq {
			out[i] = Check(t, g, s)
		}
		return out
	}
	want := checkAll(newGuard())
	g := newGuard()
	checkAll(g)
	if err := g.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := checkAll(g); !reflect.DeepEqual(want, got) {
		t.Errorf("after Reset:\n%+v\nfresh:\n%+v", got, want)
	}
}
