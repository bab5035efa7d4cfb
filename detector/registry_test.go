package detector_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// described is what a test compares of a detector: its name, its options and
// the fingerprint of those options.
type described struct {
	Name        string
	Options     any
	Fingerprint string
}

func describe(ds []rule.Rule) []described {
	out := make([]described, 0, len(ds))
	for _, d := range ds {
		out = append(out, described{d.Name(), d.Options(), rule.Fingerprint(d).String()})
	}
	slices.SortFunc(out, func(a, b described) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// must builds a detector with a subpackage's constructor, for the want side
// of a table.
func must[T rule.Rule](t *testing.T) func(T, error) rule.Rule {
	return func(d T, err error) rule.Rule {
		t.Helper()
		if err != nil {
			t.Fatalf("building the expected detector: %v", err)
		}
		return d
	}
}

func TestEmptyDocumentIsDefaults(t *testing.T) {
	for _, doc := range []string{`{}`, ` { } `, "{\n}\n"} {
		cfg, err := detector.FromJSON([]byte(doc))
		if err != nil {
			t.Fatalf("FromJSON(%q): %v", doc, err)
		}
		if diff := cmp.Diff(describe(detector.Defaults()), describe(cfg.Rules)); diff != "" {
			t.Errorf("FromJSON(%q) differs from Defaults() (-want +got):\n%s", doc, diff)
		}
		cfg.Rules = nil
		if diff := cmp.Diff(guard.Config{}, cfg); diff != "" {
			t.Errorf("FromJSON(%q) without its rules (-want +got):\n%s", doc, diff)
		}
	}
}

func TestDefaults(t *testing.T) {
	got := describe(detector.Defaults())
	want := describe([]rule.Rule{
		must[*finish.Rule](t)(finish.New(finish.Options{Terminal: []string{"stop", "length", "content-filter", "error"}, OtherPolicy: finish.StopIfTextOnly})),
		must[*budget.Rule](t)(budget.New(budget.Options{MaxSteps: 150})),
		must[*refusal.Rule](t)(refusal.New(refusal.Options{Threshold: 3})),
		must[*repeat.Rule](t)(repeat.New(repeat.Options{Threshold: 3})),
		must[*failure.Rule](t)(failure.New(failure.Options{Threshold: 5, Window: 10, SameCall: 3})),
		must[*sameresult.Rule](t)(sameresult.New(sameresult.Options{Threshold: 4, MinBytes: 512})),
		must[*input.Rule](t)(input.New(input.Options{Threshold: 3, Window: 10, MinBytes: 64})),
		must[*oscillation.Rule](t)(oscillation.New(oscillation.Options{MaxPeriod: 3, Repeats: 3})),
		must[*noprogress.Rule](t)(noprogress.New(noprogress.Options{Threshold: 3})),
		must[*text.Rule](t)(text.New(text.Options{Threshold: 3, Window: 10})),
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Defaults() (-want +got):\n%s", diff)
	}
	if _, err := guard.New(guard.Config{Rules: detector.Defaults()}); err != nil {
		t.Errorf("guard.New with Defaults(): %v", err)
	}
}

func TestBuild(t *testing.T) {
	fin := func(o finish.Options) rule.Rule { return must[*finish.Rule](t)(finish.New(o)) }
	bud := func(o budget.Options) rule.Rule { return must[*budget.Rule](t)(budget.New(o)) }
	cap := func(o toollimit.Options) rule.Rule { return must[*toollimit.Rule](t)(toollimit.New(o)) }
	rep := func(o repeat.Options) rule.Rule { return must[*repeat.Rule](t)(repeat.New(o)) }
	osc := func(o oscillation.Options) rule.Rule { return must[*oscillation.Rule](t)(oscillation.New(o)) }
	nop := func(o noprogress.Options) rule.Rule { return must[*noprogress.Rule](t)(noprogress.New(o)) }
	fail := func(o failure.Options) rule.Rule { return must[*failure.Rule](t)(failure.New(o)) }
	// with returns the defaults with some detectors replaced (by name) or,
	// for a name mapped to nil, removed.
	with := func(changes map[string]rule.Rule) []rule.Rule {
		var out []rule.Rule
		for _, d := range detector.Defaults() {
			if c, ok := changes[d.Name()]; ok {
				if c != nil {
					out = append(out, c)
				}
				delete(changes, d.Name())
				continue
			}
			out = append(out, d)
		}
		for _, c := range changes {
			out = append(out, c)
		}
		return out
	}
	off := rule.Rule(nil)

	tests := []struct {
		name   string
		doc    string
		want   []rule.Rule
		ignore []string
	}{
		{"maxSteps number", `{"maxSteps": 10}`, with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: 10})}), nil},
		{"maxSteps one", `{"maxSteps": 1}`, with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: 1})}), nil},
		{"maxSteps whole float", `{"maxSteps": 20.0}`, with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: 20})}), nil},
		{"maxSteps true", `{"maxSteps": true}`, with(nil), nil},
		{"maxSteps false alone", `{"maxSteps": false}`, with(map[string]rule.Rule{"budget": off}), nil},
		{"maxSteps false keeps budgets", `{"maxSteps": false, "budget": {"maxCostUsd": 2}}`,
			with(map[string]rule.Rule{"budget": bud(budget.Options{MaxCostUSD: budget.Limit{Value: 2}})}), nil},
		{"budget false keeps maxSteps", `{"budget": false}`, with(nil), nil},
		{"budget true", `{"budget": true}`, with(nil), nil},
		{"budget false drops its limits", `{"maxSteps": 7, "budget": false}`, with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: 7})}), nil},
		{"maxSteps and budget false", `{"maxSteps": false, "budget": false}`, with(map[string]rule.Rule{"budget": off}), nil},
		{"every budget", `{"budget": {"maxTotalTokens": 1000, "maxInputTokens": 800, "maxOutputTokens": 200.5,
			"maxCostUsd": 0.25, "maxDurationMs": 60000, "warnAt": 0.8}}`,
			with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: detector.DefaultMaxSteps,
				MaxTotalTokens: budget.Limit{Value: 1000}, MaxInputTokens: budget.Limit{Value: 800},
				MaxOutputTokens: budget.Limit{Value: 200.5}, MaxCostUSD: budget.Limit{Value: 0.25},
				MaxDurationMs: budget.Limit{Value: 60000}, WarnAt: 0.8})}), nil},
		{"budget limit objects", `{"budget": {"maxTotalTokens": {"limit": 1000, "warnAt": 0.5}, "maxCostUsd": {"limit": 3}, "warnAt": 1}}`,
			with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: detector.DefaultMaxSteps,
				MaxTotalTokens: budget.Limit{Value: 1000, WarnAt: 0.5}, MaxCostUSD: budget.Limit{Value: 3}, WarnAt: 1})}), nil},
		{"budget warnAt zero", `{"budget": {"maxCostUsd": {"limit": 1, "warnAt": 0}, "warnAt": 0}}`,
			with(map[string]rule.Rule{"budget": bud(budget.Options{MaxSteps: detector.DefaultMaxSteps, MaxCostUSD: budget.Limit{Value: 1}})}), nil},

		{"failure sameCall", `{"repeatedFailure": {"sameCall": 2, "threshold": 4}}`,
			with(map[string]rule.Rule{"failure": fail(failure.Options{SameCall: 2, Threshold: 4})}), nil},
		{"failure sameCall at the threshold", `{"repeatedFailure": {"sameCall": 5}}`,
			with(map[string]rule.Rule{"failure": fail(failure.Options{SameCall: 5})}), nil},
		{"repeat options", `{"repeatedToolCall": {"threshold": 5, "requireIdenticalResults": true, "ignoreErrors": true}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{Threshold: 5, RequireIdenticalResults: true, IgnoreErrors: true})}), nil},
		{"repeat counts new output", `{"repeatedToolCall": {"countNewResults": true}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{CountNewResults: true})}), nil},
		{"repeat counts across turns", `{"repeatedToolCall": {"countAcrossTurns": true}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{CountAcrossTurns: true})}), nil},
		{"repeat threshold two", `{"repeatedToolCall": {"threshold": 2}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{Threshold: 2})}), nil},
		{"repeat explicit defaults", `{"repeatedToolCall": {"threshold": 3, "requireIdenticalResults": false, "ignoreErrors": false, "countNewResults": false, "countAcrossTurns": false}}`, with(nil), nil},
		{"repeat true", `{"repeatedToolCall": true}`, with(nil), nil},
		{"repeat empty object", `{"repeatedToolCall": {}}`, with(nil), nil},
		{"repeat false", `{"repeatedToolCall": false}`, with(map[string]rule.Rule{"repeat": off}), nil},
		{"repeat false ignores tool fields", `{"repeatedToolCall": false, "tools": {"deploy": {"repeatThreshold": 2}}}`,
			with(map[string]rule.Rule{"repeat": off}), nil},
		{"tool repeatThreshold", `{"tools": {"deploy": {"repeatThreshold": 2}}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{Tools: map[string]repeat.ToolPolicy{"deploy": {RepeatThreshold: 2}}})}), nil},
		{"tool polling true", `{"tools": {"job": {"polling": true}}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{Tools: map[string]repeat.ToolPolicy{"job": {Polling: true}}})}), nil},
		{"tool polling object", `{"tools": {"job": {"polling": {"maxIdenticalResults": 6}, "repeatThreshold": 4}}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{Tools: map[string]repeat.ToolPolicy{"job": {Polling: true, MaxIdenticalResults: 6, RepeatThreshold: 4}}})}), nil},
		{"tool polling empty object", `{"tools": {"job": {"polling": {}}}}`,
			with(map[string]rule.Rule{"repeat": rep(repeat.Options{Tools: map[string]repeat.ToolPolicy{"job": {Polling: true}}})}), nil},
		{"tool polling false", `{"tools": {"job": {"polling": false}}}`, with(nil), nil},

		{"maxCalls", `{"tools": {"search": {"maxCalls": 8}, "rm": {"maxCalls": 0}}}`,
			with(map[string]rule.Rule{"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"search": 8, "rm": 0}})}), nil},
		{"maxCalls beside other fields", `{"tools": {"search": {"maxCalls": 3, "repeatThreshold": 2, "ignore": false}}}`,
			with(map[string]rule.Rule{
				"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"search": 3}}),
				"repeat":    rep(repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {RepeatThreshold: 2}}}),
			}), nil},
		{"maxCalls under an odd tool name", `{"tools": {"my tool.v2": {"maxCalls": 1}}}`,
			with(map[string]rule.Rule{"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"my tool.v2": 1}})}), nil},

		{"ignore", `{"tools": {"think": {"ignore": true}, "note": {"ignore": true}, "search": {"ignore": false}}}`, with(nil), []string{"note", "think"}},
		{"ignore beside a cap", `{"tools": {"think": {"ignore": true, "maxCalls": 1}}}`,
			with(map[string]rule.Rule{"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"think": 1}})}), []string{"think"}},
		{"empty tools", `{"tools": {}}`, with(nil), nil},
		{"tool without fields", `{"tools": {"search": {}}}`, with(nil), nil},

		{"oscillation options", `{"oscillation": {"maxPeriod": 4, "repeats": 2}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{MaxPeriod: 4, Repeats: 2})}), nil},
		{"oscillation maxPeriod only", `{"oscillation": {"maxPeriod": 2}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{MaxPeriod: 2})}), nil},
		{"oscillation longest maxPeriod", `{"oscillation": {"maxPeriod": 256}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{MaxPeriod: 256})}), nil},
		{"oscillation sameResults", `{"oscillation": {"repeats": 4, "sameResults": 3}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{Repeats: 4, SameResults: 3})}), nil},
		{"oscillation sameResults at repeats", `{"oscillation": {"sameResults": 3}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{SameResults: 3})}), nil},
		{"oscillation longPeriod", `{"oscillation": {"longPeriod": 8}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{LongPeriod: 8})}), nil},
		{"oscillation longPeriod off", `{"oscillation": {"longPeriod": 3}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{LongPeriod: 3})}), nil},
		{"oscillation longPeriod at its default", `{"oscillation": {"longPeriod": 16}}`, with(nil), nil},
		{"oscillation false", `{"oscillation": false}`, with(map[string]rule.Rule{"oscillation": off}), nil},
		{"oscillation true", `{"oscillation": true}`, with(nil), nil},

		{"noProgress threshold", `{"noProgress": {"threshold": 4}}`,
			with(map[string]rule.Rule{"noprogress": nop(noprogress.Options{Threshold: 4})}), nil},
		{"noProgress false", `{"noProgress": false}`, with(map[string]rule.Rule{"noprogress": off}), nil},

		{"finish options", `{"finishReason": {"terminal": ["stop", "max_tokens"], "otherPolicy": "continue"}}`,
			with(map[string]rule.Rule{"finish": fin(finish.Options{Terminal: []string{"stop", "max_tokens"}, OtherPolicy: finish.Continue})}), nil},
		{"finish no terminal reasons", `{"finishReason": {"terminal": []}}`,
			with(map[string]rule.Rule{"finish": fin(finish.Options{Terminal: []string{}})}), nil},
		{"finish policy stop", `{"finishReason": {"otherPolicy": "stop"}}`,
			with(map[string]rule.Rule{"finish": fin(finish.Options{OtherPolicy: finish.Stop})}), nil},
		{"finish reference reading", `{"finishReason": {"stopWithToolCalls": "stop"}}`,
			with(map[string]rule.Rule{"finish": fin(finish.Options{StopWithToolCalls: finish.Stop})}), nil},
		{"finish stopWithToolCalls continue is the default", `{"finishReason": {"stopWithToolCalls": "continue"}}`, with(nil), nil},
		{"finish explicit defaults", `{"finishReason": {"terminal": ["stop", "length", "content-filter", "error"], "otherPolicy": "stop-if-text-only"}}`, with(nil), nil},
		{"finish false", `{"finishReason": false}`, with(map[string]rule.Rule{"finish": off}), nil},

		{"everything off", `{"maxSteps": false, "budget": false, "repeatedToolCall": false, "oscillation": false, "noProgress": false, "finishReason": false,
			"repeatedRefusal": false, "repeatedFailure": false, "repeatedText": false, "sameResult": false, "repeatedInput": false}`, nil, nil},
		{"the reference's full document", `{"maxSteps": 50, "repeatedToolCall": {"threshold": 3, "requireIdenticalResults": false,
			"ignoreErrors": false}, "oscillation": {"maxPeriod": 3, "repeats": 3}, "noProgress": {"threshold": 3},
			"finishReason": {"terminal": ["stop", "length", "content-filter", "error"], "otherPolicy": "stop-if-text-only"},
			"budget": {"maxTotalTokens": 1, "maxInputTokens": 1, "maxOutputTokens": 1, "maxCostUsd": 1, "maxDurationMs": 1, "warnAt": 0.8},
			"tools": {"search": {"maxCalls": 8, "repeatThreshold": 2, "polling": {"maxIdenticalResults": 6}, "ignore": false}}}`,
			with(map[string]rule.Rule{
				"budget": bud(budget.Options{MaxSteps: 50, MaxTotalTokens: budget.Limit{Value: 1}, MaxInputTokens: budget.Limit{Value: 1},
					MaxOutputTokens: budget.Limit{Value: 1}, MaxCostUSD: budget.Limit{Value: 1}, MaxDurationMs: budget.Limit{Value: 1}, WarnAt: 0.8}),
				"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"search": 8}}),
				"repeat":    rep(repeat.Options{Tools: map[string]repeat.ToolPolicy{"search": {RepeatThreshold: 2, Polling: true, MaxIdenticalResults: 6}}}),
			}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := detector.FromJSON([]byte(tt.doc))
			if err != nil {
				t.Fatalf("FromJSON: %v", err)
			}
			if diff := cmp.Diff(describe(tt.want), describe(cfg.Rules)); diff != "" {
				t.Errorf("detectors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.ignore, cfg.Ignore); diff != "" {
				t.Errorf("Guard.Ignore (-want +got):\n%s", diff)
			}
			if _, err := guard.New(cfg); err != nil {
				t.Errorf("the built set makes no guard: %v", err)
			}
		})
	}
}

// problem is one *guard.OptionError, as a test compares it.
type problem struct{ Detector, Field, Err string }

// problems flattens a joined error into its option errors. An error that is
// not an option error is returned as a problem with only Err set.
func problems(err error) []problem {
	var out []problem
	var walk func(error)
	walk = func(err error) {
		if m, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range m.Unwrap() {
				walk(e)
			}
			return
		}
		var oe *guard.OptionError
		if errors.As(err, &oe) {
			out = append(out, problem{oe.Detector, oe.Field, oe.Err.Error()})
			return
		}
		out = append(out, problem{Err: err.Error()})
	}
	walk(err)
	return out
}

func TestBuildErrors(t *testing.T) {
	const (
		unknown    = "unknown option"
		atLeast2   = "must be a whole number >= 2"
		atLeast1   = "must be a whole number >= 1"
		atLeast0   = "must be a whole number >= 0"
		positive   = "must be a positive number"
		ratio      = "must be a number from 0 to 1"
		boolean    = "must be true or false"
		section    = "must be an object, true or false"
		mustObject = "must be an object"
	)
	tests := []struct {
		name string
		doc  string
		want []problem // Err is a prefix of the error's text
	}{
		// Unknown keys, at every level, with exact case.
		{"unknown top-level key", `{"maxStep": 3}`, []problem{{"", "maxStep", unknown + ` (did you mean "maxSteps"?)`}}},
		{"top-level key in the wrong case", `{"MaxSteps": 3}`, []problem{{"", "MaxSteps", unknown + ` (did you mean "maxSteps"?)`}}},
		{"unrelated top-level key", `{"colour": "blue"}`, []problem{{"", "colour", unknown}}},
		{"odd top-level key", `{"a b": 1}`, []problem{{"", `["a b"]`, unknown}}},
		{"misspelt tool field", `{"tools": {"search": {"maxcalls": 8}}}`, []problem{{"", "tools.search.maxcalls", unknown + ` (did you mean "maxCalls"?)`}}},
		{"unknown tool field", `{"tools": {"search": {"timeout": 8}}}`, []problem{{"", "tools.search.timeout", unknown}}},
		{"tool field under an odd name", `{"tools": {"a.b": {"maxcall": 1}}}`, []problem{{"", `tools["a.b"].maxcall`, unknown}}},
		{"unknown repeat option", `{"repeatedToolCall": {"thresold": 3}}`, []problem{{"repeat", "repeatedToolCall.thresold", unknown + ` (did you mean "threshold"?)`}}},
		{"unknown oscillation option", `{"oscillation": {"period": 3}}`, []problem{{"oscillation", "oscillation.period", unknown}}},
		{"unknown noProgress option", `{"noProgress": {"window": 3}}`, []problem{{"noprogress", "noProgress.window", unknown}}},
		{"unknown finish option", `{"finishReason": {"terminals": []}}`, []problem{{"finish", "finishReason.terminals", unknown + ` (did you mean "terminal"?)`}}},
		{"unknown budget option", `{"budget": {"maxSteps": 3}}`, []problem{{"budget", "budget.maxSteps", unknown}}},
		{"unknown limit option", `{"budget": {"maxCostUsd": {"limit": 1, "warn": 0.5}}}`, []problem{{"budget", "budget.maxCostUsd.warn", unknown}}},
		{"unknown polling option", `{"tools": {"job": {"polling": {"maxIdentical": 3}}}}`, []problem{{"repeat", "tools.job.polling.maxIdentical", unknown}}},
		{"duplicate key", `{"maxSteps": 3, "maxSteps": 4}`, []problem{{Err: `invalid option: the options are not a JSON object: key "maxSteps" appears twice`}}},
		{"duplicate nested key", `{"oscillation": {"repeats": 3, "repeats": 4}}`, []problem{{"oscillation", "oscillation", `key "repeats" appears twice`}}},

		// maxSteps.
		{"maxSteps zero", `{"maxSteps": 0}`, []problem{{"budget", "maxSteps", atLeast1 + ", not 0"}}},
		{"maxSteps negative", `{"maxSteps": -1}`, []problem{{"budget", "maxSteps", atLeast1}}},
		{"maxSteps fraction", `{"maxSteps": 1.5}`, []problem{{"budget", "maxSteps", atLeast1 + ", not 1.5"}}},
		{"maxSteps string", `{"maxSteps": "50"}`, []problem{{"budget", "maxSteps", atLeast1 + ", not a string"}}},
		{"maxSteps null", `{"maxSteps": null}`, []problem{{"budget", "maxSteps", atLeast1 + ", not null"}}},
		{"maxSteps huge", `{"maxSteps": 1e300}`, []problem{{"budget", "maxSteps", atLeast1}}},
		{"maxSteps out of range", `{"maxSteps": 1e999}`, []problem{{"budget", "maxSteps", atLeast1}}},

		// budget.
		{"budget string", `{"budget": "lots"}`, []problem{{"budget", "budget", section}}},
		{"budget zero limit", `{"budget": {"maxCostUsd": 0}}`, []problem{{"budget", "budget.maxCostUsd", positive + ", not 0"}}},
		{"budget negative limit", `{"budget": {"maxTotalTokens": -5}}`, []problem{{"budget", "budget.maxTotalTokens", positive}}},
		{"budget string limit", `{"budget": {"maxInputTokens": "5"}}`, []problem{{"budget", "budget.maxInputTokens", positive + ", not a string"}}},
		{"budget false limit", `{"budget": {"maxOutputTokens": false}}`, []problem{{"budget", "budget.maxOutputTokens", positive}}},
		{"budget zero limit object", `{"budget": {"maxDurationMs": {"limit": 0}}}`, []problem{{"budget", "budget.maxDurationMs.limit", positive}}},
		{"budget limit object without limit", `{"budget": {"maxDurationMs": {"warnAt": 0.5}}}`, []problem{{"budget", "budget.maxDurationMs.limit", "missing"}}},
		{"budget limit warnAt above 1", `{"budget": {"maxCostUsd": {"limit": 1, "warnAt": 1.5}}}`, []problem{{"budget", "budget.maxCostUsd.warnAt", ratio + ", not 1.5"}}},
		{"budget warnAt above 1", `{"budget": {"warnAt": 1.01}}`, []problem{{"budget", "budget.warnAt", ratio}}},
		{"budget warnAt negative", `{"budget": {"warnAt": -0.1}}`, []problem{{"budget", "budget.warnAt", ratio}}},
		{"budget warnAt string", `{"budget": {"warnAt": "80%"}}`, []problem{{"budget", "budget.warnAt", ratio + ", not a string"}}},

		// repeatedFailure.
		{"failure sameCall 1", `{"repeatedFailure": {"sameCall": 1}}`, []problem{{"failure", "repeatedFailure.sameCall", atLeast2 + ", not 1"}}},
		{"failure sameCall over the threshold", `{"repeatedFailure": {"sameCall": 4, "threshold": 3}}`,
			[]problem{{"failure", "repeatedFailure.sameCall", "4 exceeds the threshold of 3"}}},

		// repeatedToolCall and its tool fields.
		{"repeat threshold 1", `{"repeatedToolCall": {"threshold": 1}}`, []problem{{"repeat", "repeatedToolCall.threshold", atLeast2 + ", not 1"}}},
		{"repeat threshold 0", `{"repeatedToolCall": {"threshold": 0}}`, []problem{{"repeat", "repeatedToolCall.threshold", atLeast2}}},
		{"repeat threshold fraction", `{"repeatedToolCall": {"threshold": 2.5}}`, []problem{{"repeat", "repeatedToolCall.threshold", atLeast2}}},
		{"repeat threshold string", `{"repeatedToolCall": {"threshold": "3"}}`, []problem{{"repeat", "repeatedToolCall.threshold", atLeast2 + ", not a string"}}},
		{"repeat flag string", `{"repeatedToolCall": {"requireIdenticalResults": "true"}}`, []problem{{"repeat", "repeatedToolCall.requireIdenticalResults", boolean}}},
		{"repeat flag number", `{"repeatedToolCall": {"ignoreErrors": 1}}`, []problem{{"repeat", "repeatedToolCall.ignoreErrors", boolean}}},
		{"repeat turns flag string", `{"repeatedToolCall": {"countAcrossTurns": "yes"}}`, []problem{{"repeat", "repeatedToolCall.countAcrossTurns", boolean}}},
		{"repeat section number", `{"repeatedToolCall": 3}`, []problem{{"repeat", "repeatedToolCall", section}}},
		{"repeat section null", `{"repeatedToolCall": null}`, []problem{{"repeat", "repeatedToolCall", section + ", not null"}}},
		{"tool repeatThreshold 1", `{"tools": {"deploy": {"repeatThreshold": 1}}}`, []problem{{"repeat", "tools.deploy.repeatThreshold", atLeast2}}},
		{"tool repeatThreshold checked when repeat is off", `{"repeatedToolCall": false, "tools": {"deploy": {"repeatThreshold": 1}}}`,
			[]problem{{"repeat", "tools.deploy.repeatThreshold", atLeast2}}},
		{"tool polling number", `{"tools": {"job": {"polling": 6}}}`, []problem{{"repeat", "tools.job.polling", "must be true, false or an object"}}},
		{"tool polling maxIdenticalResults 1", `{"tools": {"job": {"polling": {"maxIdenticalResults": 1}}}}`, []problem{{"repeat", "tools.job.polling.maxIdenticalResults", atLeast2}}},

		// tools and their registry-read fields.
		{"tools array", `{"tools": []}`, []problem{{"", "tools", mustObject + ", not an array"}}},
		{"tool policy number", `{"tools": {"search": 8}}`, []problem{{"", "tools.search", mustObject + ", not a number"}}},
		{"tool ignore string", `{"tools": {"think": {"ignore": "yes"}}}`, []problem{{"", "tools.think.ignore", boolean}}},
		{"maxCalls negative", `{"tools": {"search": {"maxCalls": -1}}}`, []problem{{"toollimit", "tools.search.maxCalls", atLeast0 + ", not -1"}}},
		{"maxCalls fraction", `{"tools": {"search": {"maxCalls": 0.5}}}`, []problem{{"toollimit", "tools.search.maxCalls", atLeast0}}},
		{"maxCalls true", `{"tools": {"search": {"maxCalls": true}}}`, []problem{{"toollimit", "tools.search.maxCalls", atLeast0 + ", not a boolean"}}},

		// A constructor's own error comes through, renamed to the JSON path.
		{"tool name too long for a cap", `{"tools": {"` + strings.Repeat("a", 300) + `": {"maxCalls": 1}}}`,
			[]problem{{"toollimit", `tools["` + strings.Repeat("a", 32) + `..."]`, "tool name is longer than 256 bytes"}}},

		// oscillation and noProgress.
		{"oscillation maxPeriod 1", `{"oscillation": {"maxPeriod": 1}}`, []problem{{"oscillation", "oscillation.maxPeriod", atLeast2}}},
		{"oscillation maxPeriod too long", `{"oscillation": {"maxPeriod": 257}}`, []problem{{"oscillation", "oscillation.maxPeriod", "must be at most 256, not 257"}}},
		{"oscillation repeats 1", `{"oscillation": {"repeats": 1}}`, []problem{{"oscillation", "oscillation.repeats", atLeast2}}},
		{"oscillation sameResults 1", `{"oscillation": {"sameResults": 1}}`, []problem{{"oscillation", "oscillation.sameResults", atLeast2 + ", not 1"}}},
		{"oscillation sameResults over repeats", `{"oscillation": {"sameResults": 4}}`,
			[]problem{{"oscillation", "oscillation.sameResults", "4 exceeds the repeats of 3"}}},
		{"oscillation longPeriod 1", `{"oscillation": {"longPeriod": 1}}`, []problem{{"oscillation", "oscillation.longPeriod", atLeast2}}},
		{"oscillation longPeriod too long", `{"oscillation": {"longPeriod": 257}}`, []problem{{"oscillation", "oscillation.longPeriod", "must be at most 256, not 257"}}},
		{"oscillation longPeriod a string", `{"oscillation": {"longPeriod": "16"}}`, []problem{{"oscillation", "oscillation.longPeriod", "must be a whole number >= 2, not a string"}}},
		{"oscillation longPeriod without sameResults", `{"oscillation": {"longPeriod": 8, "sameResults": 3}}`,
			[]problem{{"oscillation", "oscillation.longPeriod", "8 looks for cycles that stop at SameResults rounds, but SameResults is Repeats (3): set SameResults below Repeats, or LongPeriod to 0"}}},
		{"oscillation array", `{"oscillation": [3, 3]}`, []problem{{"oscillation", "oscillation", section + ", not an array"}}},
		{"noProgress threshold 1", `{"noProgress": {"threshold": 1}}`, []problem{{"noprogress", "noProgress.threshold", atLeast2}}},
		{"noProgress string", `{"noProgress": "off"}`, []problem{{"noprogress", "noProgress", section}}},

		// finishReason.
		{"finish unknown policy", `{"finishReason": {"otherPolicy": "halt"}}`, []problem{{"finish", "finishReason.otherPolicy", `must be "stop-if-text-only", "stop" or "continue", not "halt"`}}},
		{"finish policy in the wrong case", `{"finishReason": {"otherPolicy": "Stop"}}`, []problem{{"finish", "finishReason.otherPolicy", "must be"}}},
		{"finish terminal string", `{"finishReason": {"terminal": "stop"}}`, []problem{{"finish", "finishReason.terminal", "must be an array of strings, not a string"}}},
		{"finish terminal number entry", `{"finishReason": {"terminal": ["stop", 1]}}`, []problem{{"finish", "finishReason.terminal[1]", "must be a string, not a number"}}},
		{"finish terminal blank entry", `{"finishReason": {"terminal": [" "]}}`, []problem{{"finish", "finishReason.terminal[0]", `must name a finish reason, not " " (empty, or no reason once normalised)`}}},
		{"finish terminal no reason", `{"finishReason": {"terminal": ["pause_turn"]}}`, []problem{{"finish", "finishReason.terminal[0]", `must name a finish reason, not "pause_turn" (empty, or no reason once normalised)`}}},
		{"finish stopWithToolCalls", `{"finishReason": {"stopWithToolCalls": "stop-if-text-only"}}`, []problem{{"finish", "finishReason.stopWithToolCalls", `must be "continue" or "stop", not "stop-if-text-only"`}}},

		// Every problem is reported, in a stable order.
		{"several problems", `{"tools": {"b": {"maxCalls": -1, "x": 1}, "a": {"maxcalls": 1}}, "zzz": 1, "oscillation": {"repeats": 1, "maxPeriod": 0}, "maxSteps": 0}`,
			[]problem{
				{"", "tools.a.maxcalls", unknown},
				{"", "tools.b.x", unknown},
				{"", "zzz", unknown},
				{"budget", "maxSteps", atLeast1},
				{"toollimit", "tools.b.maxCalls", atLeast0},
				{"oscillation", "oscillation.maxPeriod", atLeast2},
				{"oscillation", "oscillation.repeats", atLeast2},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := detector.FromJSON([]byte(tt.doc))
			if err == nil {
				t.Fatalf("FromJSON(%s) = %d detectors, want an error", tt.doc, len(cfg.Rules))
			}
			if !errors.Is(err, guard.ErrInvalidOption) {
				t.Errorf("errors.Is(%v, guard.ErrInvalidOption) = false", err)
			}
			got := problems(err)
			// Compare the error texts by prefix: cut each to the length
			// of the wanted one.
			for i := range got {
				if i < len(tt.want) && strings.HasPrefix(got[i].Err, tt.want[i].Err) {
					got[i].Err = tt.want[i].Err
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromJSON(%s) problems (-want +got):\n%s\nerror: %v", tt.doc, diff, err)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	_, err := detector.FromJSON([]byte(`{"tools": {"search": {"maxcalls": 8}}}`))
	want := `option tools.search.maxcalls: unknown option (did you mean "maxCalls"?)`
	if err == nil || err.Error() != want {
		t.Errorf("FromJSON error = %v, want %s", err, want)
	}
	_, err = detector.FromJSON([]byte(`{"repeatedToolCall": {"threshold": 1}}`))
	want = `repeat: option repeatedToolCall.threshold: must be a whole number >= 2, not 1`
	if err == nil || err.Error() != want {
		t.Errorf("FromJSON error = %v, want %s", err, want)
	}
}

func TestNotAnObject(t *testing.T) {
	for _, doc := range []string{``, ` `, `null`, `[]`, `"{}"`, `3`, `{`, `{"maxSteps": }`, `{} {}`, `{}x`, "\xff"} {
		_, err := detector.FromJSON([]byte(doc))
		if err == nil {
			t.Errorf("FromJSON(%q) = nil error, want one", doc)
			continue
		}
		if !errors.Is(err, guard.ErrInvalidOption) || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("FromJSON(%q) = %v, want an invalid-option error about the JSON object", doc, err)
		}
	}
}

func TestStandardRegistries(t *testing.T) {
	want := []string{"finish", "budget", "toollimit", "refusal", "repeat", "failure", "window", "sameresult", "oscillation", "noprogress", "text", "stall", "input"}
	if diff := cmp.Diff(want, detector.Standard().Names()); diff != "" {
		t.Errorf("Standard().Names() (-want +got):\n%s", diff)
	}
	if got := detector.NewRegistry().Names(); len(got) != 0 {
		t.Errorf("NewRegistry().Names() = %v, want none", got)
	}
	// Registries are values: adding to one leaves the others alone.
	a, b := detector.Standard(), detector.Standard()
	if err := a.Register(rule.Spec{Name: "mine", Keys: []string{"mine"}, Build: offBuild}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Build([]byte(`{"mine": 1}`), detector.BuildOptions{}); err != nil {
		t.Errorf("a.Build: %v", err)
	}
	if _, err := b.Build([]byte(`{"mine": 1}`), detector.BuildOptions{}); err == nil {
		t.Errorf("b.Build read a key registered on a")
	}
	// Every build makes new rules.
	c1, _ := detector.FromJSON([]byte(`{}`))
	c2, _ := detector.FromJSON([]byte(`{}`))
	d1, d2 := c1.Rules, c2.Rules
	for i := range d1 {
		if d1[i] == d2[i] {
			t.Errorf("two builds share the %s rule", d1[i].Name())
		}
	}
}

func offBuild(rule.Input) (rule.Rule, error) { return nil, nil }

func TestEmptyRegistry(t *testing.T) {
	r := detector.NewRegistry()
	cfg, err := r.Build([]byte(`{"tools": {"think": {"ignore": true}}}`), detector.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Rules) != 0 || !slices.Equal(cfg.Ignore, []string{"think"}) {
		t.Errorf("Build = %d detectors, Ignore %v; want none and [think]", len(cfg.Rules), cfg.Ignore)
	}
	_, err = r.Build([]byte(`{"maxSteps": 3, "tools": {"s": {"maxCalls": 1}}}`), detector.BuildOptions{})
	want := []problem{{"", "maxSteps", "unknown option"}, {"", "tools.s.maxCalls", "unknown option"}}
	if diff := cmp.Diff(want, problems(err)); diff != "" {
		t.Errorf("an empty registry knows no key (-want +got):\n%s", diff)
	}
}

func TestRegisterErrors(t *testing.T) {
	build := func(rule.Input) (rule.Rule, error) { return nil, nil }
	tests := []struct {
		spec rule.Spec
		want string
	}{
		{rule.Spec{Name: "", Keys: []string{"x"}, Build: build}, "invalid detector name"},
		{rule.Spec{Name: "9lives", Keys: []string{"x"}, Build: build}, "invalid detector name"},
		{rule.Spec{Name: "repeat", Keys: []string{"x"}, Build: build}, "the name is taken"},
		{rule.Spec{Name: "mine", Keys: []string{"x"}}, "Build is nil"},
		{rule.Spec{Name: "mine", Build: build}, "would never be built"},
		{rule.Spec{Name: "mine", Keys: []string{"maxSteps"}, Build: build}, `key "maxSteps" is read by "budget"`},
		{rule.Spec{Name: "mine", Keys: []string{"tools"}, Build: build}, `key "tools" is the registry's own`},
		{rule.Spec{Name: "mine", Keys: []string{""}, Build: build}, "empty key"},
		{rule.Spec{Name: "mine", Keys: []string{"a", "a"}, Build: build}, `key "a" is listed twice`},
		{rule.Spec{Name: "mine", ToolFields: []string{"polling"}, Build: build}, `tool field "polling" is read by "repeat"`},
		{rule.Spec{Name: "mine", ToolFields: []string{"ignore"}, Build: build}, `tool field "ignore" is the registry's own`},
		{rule.Spec{Name: "mine", ToolFields: []string{""}, Build: build}, "empty tool field"},
		{rule.Spec{Name: "mine", ToolFields: []string{"w", "w"}, Build: build}, `tool field "w" is listed twice`},
	}
	for _, tt := range tests {
		r := detector.Standard()
		err := r.Register(tt.spec)
		if err == nil || !errors.Is(err, detector.ErrRegistry) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Register(%+v) = %v, want an ErrRegistry error containing %q", tt.spec, err, tt.want)
		}
		if diff := cmp.Diff(detector.Standard().Names(), r.Names()); diff != "" {
			t.Errorf("a failed Register changed the registry (-want +got):\n%s", diff)
		}
	}
	// A Default spec needs no keys.
	if err := detector.Standard().Register(rule.Spec{Name: "always", Default: true, Build: build}); err != nil {
		t.Errorf("Register of a Default spec without keys: %v", err)
	}
}

// weigher is a custom rule for the registry tests: it stops a run when the
// weighted number of calls reaches a limit.
type weigher struct {
	limit   float64
	weights map[string]float64
	now     time.Time
}

// weight is a run's state of the weigher: the weighted calls so far.
type weight struct {
	w     *weigher
	total float64
}

func (w *weigher) Name() string  { return "weigher" }
func (w *weigher) Priority() int { return rule.PriorityCustom }
func (w *weigher) Options() any {
	return map[string]any{"limit": w.limit, "weights": w.weights}
}
func (w *weigher) NewState() rule.State { return &weight{w: w} }
func (s *weight) Observe(f *rule.Facts) {
	for _, c := range f.Calls {
		if wt, ok := s.w.weights[c.Tool]; ok {
			s.total += wt
		} else {
			s.total++
		}
	}
}
func (s *weight) Verdict() guard.Verdict {
	if s.total >= s.w.limit {
		return guard.Verdict{Stop: true, Reason: "weight", Code: "WEIGHT", Detail: fmt.Sprintf("weight %v", s.total)}
	}
	return guard.Verdict{}
}
func (s *weight) Preflight(*rule.Facts) guard.Verdict { return guard.Verdict{} }
func (s *weight) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	return json.Marshal(s.total)
}
func (s *weight) Restore(b []byte) error { return json.Unmarshal(b, &s.total) }

// weigherSpec reads {"weights": {"limit": N}} and tools.<name>.weight.
var weigherSpec = rule.Spec{
	Name:       "weigher",
	Keys:       []string{"weights"},
	ToolFields: []string{"weight"},
	Build: func(in rule.Input) (rule.Rule, error) {
		w := &weigher{limit: 10, weights: map[string]float64{}}
		if in.Now != nil {
			w.now = in.Now()
		}
		if raw, ok := in.Values["weights"]; ok {
			if string(raw) == "false" {
				return nil, nil
			}
			var o map[string]float64
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, &guard.OptionError{Detector: "weigher", Field: "weights", Err: err}
			}
			for k, v := range o {
				if k != "limit" {
					return nil, &guard.OptionError{Detector: "weigher", Field: "weights." + k, Err: errors.New("unknown option")}
				}
				w.limit = v
			}
		}
		for tool, fields := range in.Tools {
			if err := json.Unmarshal(fields["weight"], new(float64)); err != nil {
				return nil, errors.New("a weight must be a number") // not an OptionError: the registry wraps it
			}
			var wt float64
			json.Unmarshal(fields["weight"], &wt)
			w.weights[tool] = wt
		}
		return w, nil
	},
}

// quiet is a rule that never says anything, and its own state: it keeps
// nothing.
type quiet string

func (q quiet) Name() string                      { return string(q) }
func (quiet) Priority() int                       { return rule.PriorityCustom }
func (quiet) Options() any                        { return nil }
func (q quiet) NewState() rule.State              { return q }
func (quiet) Observe(*rule.Facts)                 {}
func (quiet) Verdict() guard.Verdict              { return guard.Verdict{} }
func (quiet) Preflight(*rule.Facts) guard.Verdict { return guard.Verdict{} }

func TestInputOff(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name string
		in   rule.Input
		want bool
	}{
		{"no key", rule.Input{}, false},
		{"false", rule.Input{Values: map[string]json.RawMessage{"a": raw("false")}}, true},
		{"false with spaces", rule.Input{Values: map[string]json.RawMessage{"a": raw(" false ")}}, true},
		{"every key false", rule.Input{Values: map[string]json.RawMessage{"a": raw("false"), "b": raw("false")}}, true},
		{"one key false, one not", rule.Input{Values: map[string]json.RawMessage{"a": raw("false"), "b": raw("3")}}, false},
		{"true", rule.Input{Values: map[string]json.RawMessage{"a": raw("true")}}, false},
		{"an object", rule.Input{Values: map[string]json.RawMessage{"a": raw(`{"on": false}`)}}, false},
		{"false with a tool field", rule.Input{Values: map[string]json.RawMessage{"a": raw("false")},
			Tools: map[string]map[string]json.RawMessage{"search": {"w": raw("1")}}}, false},
	}
	for _, tt := range tests {
		if got := tt.in.Off(); got != tt.want {
			t.Errorf("%s: Off() = %v, want %v", tt.name, got, tt.want)
		}
	}

	// An entry that follows the convention is off with false, on without.
	r := detector.Standard()
	err := r.Register(rule.Spec{Name: "textlimit", Keys: []string{"maxTextChars"}, Build: func(in rule.Input) (rule.Rule, error) {
		if in.Off() {
			return nil, nil
		}
		return quiet("textlimit"), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]int{`{"maxTextChars": false}`: len(detector.Defaults()), `{"maxTextChars": 10}`: len(detector.Defaults()) + 1} {
		cfg, err := r.Build([]byte(doc), detector.BuildOptions{})
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if len(cfg.Rules) != want {
			t.Errorf("%s: %d rules; want %d", doc, len(cfg.Rules), want)
		}
	}
}

func TestCustomEntry(t *testing.T) {
	r := detector.Standard()
	if err := r.Register(weigherSpec); err != nil {
		t.Fatal(err)
	}
	frozen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// Without its keys, a non-Default entry is not built.
	cfg, err := r.Build([]byte(`{}`), detector.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(describe(detector.Defaults()), describe(cfg.Rules)); diff != "" {
		t.Errorf("{} with a custom entry (-want +got):\n%s", diff)
	}

	// Its key and its tool field are read, beside the built-ins' on the
	// same tool; the clock is passed on.
	cfg, err = r.Build([]byte(`{"weights": {"limit": 4}, "maxSteps": 9, "tools": {"search": {"weight": 2.5, "maxCalls": 3, "ignore": true}}}`),
		detector.BuildOptions{Now: func() time.Time { return frozen }})
	if err != nil {
		t.Fatal(err)
	}
	var w *weigher
	names := []string{}
	for _, d := range cfg.Rules {
		names = append(names, d.Name())
		if d, ok := d.(*weigher); ok {
			w = d
		}
	}
	if diff := cmp.Diff([]string{"finish", "budget", "toollimit", "refusal", "repeat", "failure", "sameresult", "oscillation", "noprogress", "text", "input", "weigher"}, names); diff != "" {
		t.Fatalf("detectors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"limit": 4.0, "weights": map[string]float64{"search": 2.5}}, w.Options()); diff != "" {
		t.Errorf("custom options (-want +got):\n%s", diff)
	}
	if !w.now.Equal(frozen) {
		t.Errorf("custom Input.Now gave %v, want %v", w.now, frozen)
	}
	if diff := cmp.Diff([]string{"search"}, cfg.Ignore); diff != "" {
		t.Errorf("Ignore (-want +got):\n%s", diff)
	}

	// The custom detector works in a guard beside the built-ins.
	cfg, err = r.Build([]byte(`{"weights": {"limit": 4}, "tools": {"search": {"weight": 2}}}`), detector.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	step := func(q string) guard.Step {
		return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":"` + q + `"}`), Result: q}}, FinishReason: "tool-calls"}
	}
	if v := ruletest.Check(t, g, step("a")); v.Stop {
		t.Fatalf("first step stopped: %v", guard.Explain(v))
	}
	if v := ruletest.Check(t, g, step("b")); !v.Stop || v.Code != "WEIGHT" || v.Detector != "weigher" {
		t.Errorf("second step = %v, want a WEIGHT stop by weigher", guard.Explain(v))
	}

	// Switched off by its own key.
	cfg, err = r.Build([]byte(`{"weights": false}`), detector.BuildOptions{})
	if err != nil || len(cfg.Rules) != len(detector.Defaults()) {
		t.Errorf("weights:false built %d detectors (err %v), want the defaults only", len(cfg.Rules), err)
	}

	// Unknown keys are still rejected, at every level, and the entry's own
	// errors come through; a plain error is wrapped in an OptionError.
	_, err = r.Build([]byte(`{"weight": {}, "weights": {"limt": 3}, "tools": {"search": {"wieght": 1, "maxCalls": 1}, "read": {"weight": "heavy"}}}`), detector.BuildOptions{})
	want := []problem{
		{"", "tools.search.wieght", `unknown option (did you mean "weight"?)`},
		{"", "weight", `unknown option (did you mean "weights"?)`},
		{"weigher", "weights.limt", "unknown option"},
	}
	if diff := cmp.Diff(want, problems(err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	_, err = r.Build([]byte(`{"tools": {"read": {"weight": "heavy"}}}`), detector.BuildOptions{})
	want = []problem{{"weigher", "tools.read", "a weight must be a number"}}
	if diff := cmp.Diff(want, problems(err)); diff != "" {
		t.Errorf("a plain error from Build (-want +got):\n%s", diff)
	}
	if !errors.Is(err, guard.ErrInvalidOption) {
		t.Errorf("a plain error from Build is not wrapped as an invalid option: %v", err)
	}
}

func TestEntryNameMismatch(t *testing.T) {
	r := detector.NewRegistry()
	if err := r.Register(rule.Spec{Name: "other", Default: true, Build: func(rule.Input) (rule.Rule, error) { return &weigher{}, nil }}); err != nil {
		t.Fatal(err)
	}
	_, err := r.Build([]byte(`{}`), detector.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), `entry "other" built a detector named "weigher"`) {
		t.Errorf("Build = %v, want an error about the name", err)
	}
}

// TestFrozenClock checks that BuildOptions.Now reaches the budget: with a
// clock that jumps an hour per reading, a one-second duration budget is spent
// at once, while a frozen clock counts only the durations steps report.
func TestFrozenClock(t *testing.T) {
	doc := []byte(`{"maxSteps": false, "noProgress": false, "repeatedText": false, "budget": {"maxDurationMs": 1000}}`)
	step := guard.Step{Text: "thinking", FinishReason: "tool-calls", Usage: guard.Usage{Duration: 10 * time.Millisecond}}

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ticks int
	jumping := func() time.Time { ticks++; return t0.Add(time.Duration(ticks) * time.Hour) }
	cfg, err := detector.Standard().Build(doc, detector.BuildOptions{Now: jumping})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := ruletest.Check(t, g, step); !v.Stop || v.Reason != budget.ReasonBudget {
		t.Errorf("with a jumping clock: %v, want a budget stop", guard.Explain(v))
	}

	cfg, err = detector.Standard().Build(doc, detector.BuildOptions{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	g, err = guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 99 {
		if v := ruletest.Check(t, g, step); v.Stop {
			t.Fatalf("with a frozen clock, step %d: %v", i, guard.Explain(v))
		}
	}
	if v := ruletest.Check(t, g, step); !v.Stop || v.Reason != budget.ReasonBudget {
		t.Errorf("with a frozen clock, after 1000 ms of steps: %v, want a budget stop", guard.Explain(v))
	}
}

func FuzzFromJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"maxSteps": 3}`, `{"tools": {"a": {"maxCalls": 0, "ignore": true, "polling": {"maxIdenticalResults": 2}}}}`,
		`{"budget": {"maxCostUsd": {"limit": 1, "warnAt": 0.5}}}`, `{"finishReason": {"terminal": ["x"]}}`,
		`{"maxSteps": 1e999}`, `{"tools": {"": {"": 1}}}`, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		cfg, err := detector.FromJSON(doc)
		if err != nil {
			if !errors.Is(err, guard.ErrInvalidOption) {
				t.Errorf("FromJSON(%q) = %v, not an invalid option", doc, err)
			}
			return
		}
		if _, err := guard.New(cfg); err != nil {
			t.Errorf("FromJSON(%q) built a set that makes no guard: %v", doc, err)
		}
	})
}
