// Package ruletest holds what the tests of the rule packages under detector
// share now that a rule's run state lives inside its guard: reading one
// rule's state out of a guard's snapshot, making a fresh state that is a
// Saver, and checking steps from rapid's properties as well as from tests.
package ruletest

import (
	"context"
	"encoding/json"
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
