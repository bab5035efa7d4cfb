package main

// These tests prove that a rule written outside the core, with only its
// exported packages (rule, guard, detector), takes part in everything a
// built-in rule does: the JSON options, snapshots, the model-facing feedback
// and the audit timeline's meters. Nothing outside this directory knows
// FailStreak.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// build builds the configuration of doc with FailStreak's Spec registered.
func build(t *testing.T, doc string) guard.Config {
	t.Helper()
	r, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.Build([]byte(doc), detector.BuildOptions{})
	if err != nil {
		t.Fatalf("Build(%s): %v", doc, err)
	}
	return cfg
}

// ruleNames returns the names of the configuration's rules, in order.
func ruleNames(cfg guard.Config) []string {
	var names []string
	for _, r := range cfg.Rules {
		names = append(names, r.Name())
	}
	return names
}

// streakRule returns the FailStreak of cfg, or nil.
func streakRule(cfg guard.Config) rule.Rule {
	for _, r := range cfg.Rules {
		if r.Name() == Name {
			return r
		}
	}
	return nil
}

func TestOptionsFromOutside(t *testing.T) {
	builtins := ruleNames(build(t, `{}`))
	tests := []struct {
		doc       string
		wantNames []string
		wantOpts  any // of FailStreak
	}{
		{`{}`, builtins, nil}, // off unless its key is present
		{`{"maxFailedCalls": false}`, builtins, nil},
		{`{"maxFailedCalls": 1}`, append(slices.Clone(builtins), Name), map[string]any{"threshold": 1.0}},
		{`{"maxFailedCalls": 4, "repeatedToolCall": false}`, append(slices.DeleteFunc(slices.Clone(builtins),
			func(n string) bool { return n == "repeat" }), Name), map[string]any{"threshold": 4.0}},
	}
	for _, tt := range tests {
		cfg := build(t, tt.doc)
		if diff := cmp.Diff(tt.wantNames, ruleNames(cfg)); diff != "" {
			t.Errorf("%s: rules (-want +got):\n%s", tt.doc, diff)
		}
		var opts any
		if r := streakRule(cfg); r != nil {
			data, err := json.Marshal(r.Options())
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &opts); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(tt.wantOpts, opts); diff != "" {
			t.Errorf("%s: FailStreak's options (-want +got):\n%s", tt.doc, diff)
		}
	}

	r, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct{ doc, want string }{
		{`{"maxFailedCalls": 0}`, "failstreak: option maxFailedCalls: must be at least 1"},
		{`{"maxFailedCalls": "3"}`, "failstreak: option maxFailedCalls: json: cannot unmarshal string into Go value of type int"},
		// Its errors join those of the built-ins, and a misspelling of its key
		// is caught like one of theirs.
		{`{"maxFailedCalls": 0, "maxSteps": 0}`, "budget: option maxSteps: must be a whole number >= 1, not 0\n" +
			"failstreak: option maxFailedCalls: must be at least 1"},
		{`{"maxFailedCall": 3}`, `option maxFailedCall: unknown option (did you mean "maxFailedCalls"?)`},
	}
	for _, tt := range bad {
		_, err := r.Build([]byte(tt.doc), detector.BuildOptions{})
		if err == nil || err.Error() != tt.want || !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("Build(%s) = %v, want an ErrInvalidOption %q", tt.doc, err, tt.want)
		}
	}
	var oe *rule.OptionError
	if _, err := r.Build([]byte(`{"maxFailedCalls": 0}`), detector.BuildOptions{}); !errors.As(err, &oe) ||
		oe.Detector != Name || oe.Field != OptionKey {
		t.Errorf("the error of maxFailedCalls 0 is %#v, want an OptionError of %s on %s", err, Name, OptionKey)
	}
	// The standard registry alone does not know the key: it comes with the
	// Spec.
	if _, err := detector.FromJSON([]byte(`{"maxFailedCalls": 3}`)); err == nil {
		t.Error("FromJSON read maxFailedCalls without FailStreak's Spec")
	}
}

func TestSnapshotFromOutside(t *testing.T) {
	ctx := context.Background()
	cfg := build(t, `{"maxFailedCalls": 3}`)
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"a", "b"} {
		if _, err := g.Check(ctx, failing(tool)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := g.Snapshot(ctx, guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Detectors []struct {
			Name  string          `json:"name"`
			State json.RawMessage `json:"state"`
		} `json:"detectors"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	var order []string
	for _, d := range env.Detectors {
		states[d.Name] = string(d.State)
		order = append(order, d.Name)
	}
	if diff := cmp.Diff(ruleNames(cfg), order); diff != "" {
		t.Errorf("the snapshot's states (-rules +snapshot):\n%s", diff)
	}
	if got, want := states[Name], `{"streak":2,"tool":"b"}`; got != want {
		t.Errorf("the state of %s in the snapshot is %s, want %s", Name, got, want)
	}

	// A guard restored from it with the same document goes on with the
	// streak: the third failure stops.
	restored, err := guard.Restore(data, build(t, `{"maxFailedCalls": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := restored.Check(ctx, failing("c"))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Stop || v.Detector != Name {
		t.Errorf("the restored run's third failure: %v, want a stop by %s", v, Name)
	}
	// Its options are in the snapshot's fingerprint.
	if _, err := guard.Restore(data, build(t, `{"maxFailedCalls": 4}`)); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("Restore with maxFailedCalls 4 = %v, want ErrOptionsChanged", err)
	}
}

func TestFeedbackFromOutside(t *testing.T) {
	ctx := context.Background()
	const text = "Your last 2 tool calls all failed. Stop retrying: tell the user what is failing, or try a different approach."
	g, err := guard.New(build(t, `{"maxFailedCalls": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	var v guard.Verdict
	for _, tool := range []string{"a", "b"} {
		if v, err = g.Check(ctx, failing(tool)); err != nil {
			t.Fatal(err)
		}
	}
	if !v.Stop || v.Code != Code || v.Feedback != text {
		t.Fatalf("the stop: %v, feedback %q; want %s with %q", v, v.Feedback, Code, text)
	}
	// The run stopped for a fault: every later call is refused with the
	// stop, and the model reads the stop's feedback.
	want := guard.Decision{Reason: rule.ReasonCustom, Code: Code, Detector: Name, Detail: "the run stopped at step 1",
		Feedback: "That call was not run. " + text}
	_, d, err := g.StartCall(ctx, guard.ToolCall{Name: "charge_card"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("StartCall after the stop (-want +got):\n%s", diff)
	}
	ds, err := g.Begin().Preflight(ctx, guard.ToolCall{Name: "charge_card"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]guard.Decision{want}, ds); diff != "" {
		t.Errorf("a turn's Preflight after the stop (-want +got):\n%s", diff)
	}
}

func TestMeterFromOutside(t *testing.T) {
	ctx := context.Background()
	cfg := build(t, `{"maxFailedCalls": 3}`)
	// The timeline finds a rule's meter by the interface alone, as for the
	// built-in rules.
	mr, ok := streakRule(cfg).(rule.Metered)
	if !ok {
		t.Fatalf("the configuration's %s is not a rule.Metered", Name)
	}
	m, ok := mr.Meter()
	if !ok {
		t.Fatal("FailStreak has no meter")
	}
	if m.Label != "fail streak" || m.Limit != 3 || m.Ratio {
		t.Errorf("meter %q, limit %v, ratio %v; want \"fail streak\", 3, false", m.Label, m.Limit, m.Ratio)
	}
	if got := m.Read(nil, rule.Counters{}); got != 0 {
		t.Errorf("Read of no summary = %v, want 0", got)
	}

	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fine := guard.Step{ToolCalls: []guard.ToolCall{{Name: "a", Result: "fine"}}}
	steps := []guard.Step{failing("a"), failing("b"), fine, failing("c"), failing("d"), failing("e")}
	var got []float64
	for _, s := range steps {
		if _, err := g.Check(ctx, s); err != nil {
			t.Fatal(err)
		}
		sum, err := g.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := rule.Counters{Steps: sum.Steps, ToolCalls: sum.ToolCalls, FailedToolCalls: sum.FailedToolCalls, Totals: sum.Totals}
		got = append(got, m.Read(sum.Detectors[Name], c))
	}
	// The last failure reaches the limit: the step that stops the run.
	if diff := cmp.Diff([]float64{1, 2, 0, 1, 2, 3}, got); diff != "" {
		t.Errorf("the meter after each step (-want +got):\n%s", diff)
	}
}
