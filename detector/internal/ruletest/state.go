package ruletest

import (
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// State is the state of a rule that keeps something of its run between
// steps, as the built-in ones do: saved with the run, checked against its
// counters on restore, and summarised.
type State interface {
	rule.State
	rule.Saver
	rule.Bounded
	rule.Summarizer
}

// Rule returns the rule newRule makes with options o, and fails t if they
// are invalid.
func Rule[R rule.Rule, O any](t TB, newRule func(O) (R, error), o O) R {
	t.Helper()
	r, err := newRule(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return r
}

// NewState returns a fresh state of r, and fails t if it is not a State.
func NewState(t TB, r rule.Rule) State {
	t.Helper()
	s, ok := r.NewState().(State)
	if !ok {
		t.Fatalf("a state of %s is not a Saver, Bounded and Summarizer", r.Name())
	}
	return s
}

// New returns a guard in memory with cfg's options and the rules rs (in
// place of cfg.Rules), and fails t if it cannot be built.
func New(t TB, cfg guard.Config, rs ...rule.Rule) *guard.Guard {
	t.Helper()
	cfg.Rules = rs
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatalf("guard.New: %v", err)
	}
	return g
}
