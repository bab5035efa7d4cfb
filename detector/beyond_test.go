package detector_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// TestBuildBeyond covers the options beyond the reference: the stall and
// window rules, result-aware cycles, warnings and the guard's call keys.
func TestBuildBeyond(t *testing.T) {
	cap := func(o toollimit.Options) rule.Rule { return must[*toollimit.Rule](t)(toollimit.New(o)) }
	rep := func(o repeat.Options) rule.Rule { return must[*repeat.Rule](t)(repeat.New(o)) }
	osc := func(o oscillation.Options) rule.Rule { return must[*oscillation.Rule](t)(oscillation.New(o)) }
	nop := func(o noprogress.Options) rule.Rule { return must[*noprogress.Rule](t)(noprogress.New(o)) }
	win := func(o window.Options) rule.Rule { return must[*window.Rule](t)(window.New(o)) }
	sta := func(o stall.Options) rule.Rule { return must[*stall.Rule](t)(stall.New(o)) }
	same := func(o sameresult.Options) rule.Rule { return must[*sameresult.Rule](t)(sameresult.New(o)) }
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
	tests := []struct {
		name  string
		doc   string
		want  []rule.Rule
		guard guard.Config
	}{
		{"stall true", `{"stall": true}`, with(map[string]rule.Rule{"stall": sta(stall.Options{})}), guard.Config{}},
		{"stall empty object", `{"stall": {}}`, with(map[string]rule.Rule{"stall": sta(stall.Options{})}), guard.Config{}},
		{"stall options", `{"stall": {"threshold": 7, "warn": true}}`,
			with(map[string]rule.Rule{"stall": sta(stall.Options{Threshold: 7, Warn: true})}), guard.Config{}},
		{"stall false", `{"stall": false}`, with(nil), guard.Config{}},
		{"window true", `{"window": true}`, with(map[string]rule.Rule{"window": win(window.Options{})}), guard.Config{}},
		{"window options", `{"window": {"window": 8, "threshold": 3, "warn": true}}`,
			with(map[string]rule.Rule{"window": win(window.Options{Window: 8, Threshold: 3, Warn: true})}), guard.Config{}},
		{"window threshold equal to the window", `{"window": {"window": 4, "threshold": 4}}`,
			with(map[string]rule.Rule{"window": win(window.Options{Window: 4, Threshold: 4})}), guard.Config{}},
		{"window false", `{"window": false}`, with(nil), guard.Config{}},
		{"sameResult options", `{"sameResult": {"threshold": 3, "minBytes": 1024, "warn": true}}`,
			with(map[string]rule.Rule{"sameresult": same(sameresult.Options{Threshold: 3, MinBytes: 1024, Warn: true})}), guard.Config{}},
		{"sameResult smallest", `{"sameResult": {"threshold": 2, "minBytes": 1}}`,
			with(map[string]rule.Rule{"sameresult": same(sameresult.Options{Threshold: 2, MinBytes: 1})}), guard.Config{}},
		{"sameResult true", `{"sameResult": true}`, with(nil), guard.Config{}},
		{"sameResult explicit defaults", `{"sameResult": {"threshold": 4, "minBytes": 512, "warn": false}}`, with(nil), guard.Config{}},
		{"sameResult false", `{"sameResult": false}`, with(map[string]rule.Rule{"sameresult": nil}), guard.Config{}},
		{"repeatedInput false", `{"repeatedInput": false}`, with(map[string]rule.Rule{"input": nil}), guard.Config{}},
		{"repeatedInput", `{"repeatedInput": {"threshold": 2, "window": 4, "minBytes": 1, "warn": true}}`,
			with(map[string]rule.Rule{"input": must[*input.Rule](t)(input.New(input.Options{Threshold: 2, Window: 4, MinBytes: 1, Warn: true}))}), guard.Config{}},
		{"oscillation beyond", `{"oscillation": {"requireIdenticalResults": true, "warn": true}}`,
			with(map[string]rule.Rule{"oscillation": osc(oscillation.Options{RequireIdenticalResults: true, Warn: true})}), guard.Config{}},
		{"oscillation explicit false", `{"oscillation": {"requireIdenticalResults": false, "warn": false}}`, with(nil), guard.Config{}},
		{"repeat warn", `{"repeatedToolCall": {"warn": true}}`, with(map[string]rule.Rule{"repeat": rep(repeat.Options{Warn: true})}), guard.Config{}},
		{"noProgress warn", `{"noProgress": {"warn": true, "threshold": 4}}`,
			with(map[string]rule.Rule{"noprogress": nop(noprogress.Options{Warn: true, Threshold: 4})}), guard.Config{}},
		{"toolLimit warn", `{"toolLimit": {"warn": true}, "tools": {"search": {"maxCalls": 8}}}`,
			with(map[string]rule.Rule{"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"search": 8}, Warn: true})}), guard.Config{}},
		{"toolLimit without caps builds nothing", `{"toolLimit": {"warn": true}}`, with(nil), guard.Config{}},
		{"toolLimit false switches the caps off", `{"toolLimit": false, "tools": {"search": {"maxCalls": 8}}}`, with(nil), guard.Config{}},
		{"toolLimit true", `{"toolLimit": true, "tools": {"search": {"maxCalls": 8}}}`,
			with(map[string]rule.Rule{"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"search": 8}})}), guard.Config{}},
		{"dropArgs", `{"dropArgs": ["request_id", "timestamp"]}`, with(nil), guard.Config{DropArgs: []string{"request_id", "timestamp"}}},
		{"dropArgs empty", `{"dropArgs": []}`, with(nil), guard.Config{}},
		{"tool dropArgs", `{"dropArgs": ["ts"], "tools": {"search": {"dropArgs": ["nonce"], "ignore": false}, "read": {"dropArgs": []}}}`, with(nil),
			guard.Config{DropArgs: []string{"ts"}, Tools: map[string]guard.ToolOptions{"search": {DropArgs: []string{"nonce"}}}}},
		{"tool dropArgs beside other fields", `{"tools": {"think": {"dropArgs": ["id"], "ignore": true, "maxCalls": 2}}}`,
			with(map[string]rule.Rule{"toollimit": cap(toollimit.Options{MaxCalls: map[string]int{"think": 2}})}),
			guard.Config{Ignore: []string{"think"}, Tools: map[string]guard.ToolOptions{"think": {DropArgs: []string{"id"}}}}},
		{"everything", `{"stall": {"warn": true}, "window": {"warn": true}, "repeatedToolCall": {"warn": true},
			"oscillation": {"warn": true, "requireIdenticalResults": true}, "noProgress": {"warn": true}, "toolLimit": {"warn": true},
			"dropArgs": ["request_id"], "tools": {"search": {"maxCalls": 5, "dropArgs": ["page_token"]}}}`,
			with(map[string]rule.Rule{
				"stall":       sta(stall.Options{Warn: true}),
				"window":      win(window.Options{Warn: true}),
				"repeat":      rep(repeat.Options{Warn: true}),
				"oscillation": osc(oscillation.Options{Warn: true, RequireIdenticalResults: true}),
				"noprogress":  nop(noprogress.Options{Warn: true}),
				"toollimit":   cap(toollimit.Options{MaxCalls: map[string]int{"search": 5}, Warn: true}),
			}),
			guard.Config{DropArgs: []string{"request_id"}, Tools: map[string]guard.ToolOptions{"search": {DropArgs: []string{"page_token"}}}}},
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
			cfg.Rules = nil
			if diff := cmp.Diff(tt.guard, cfg); diff != "" {
				t.Errorf("Config without its rules (-want +got):\n%s", diff)
			}
			if _, err := guard.New(cfg); err != nil {
				t.Errorf("the built set makes no guard: %v", err)
			}
		})
	}
}

func TestBuildBeyondErrors(t *testing.T) {
	const (
		unknown  = "unknown option"
		atLeast2 = "must be a whole number >= 2"
		boolean  = "must be true or false"
		section  = "must be an object, true or false"
		strings_ = "must be an array of strings"
	)
	tests := []struct {
		name string
		doc  string
		want []problem
	}{
		{"stall threshold 1", `{"stall": {"threshold": 1}}`, []problem{{"stall", "stall.threshold", atLeast2 + ", not 1"}}},
		{"stall unknown option", `{"stall": {"treshold": 5}}`, []problem{{"stall", "stall.treshold", unknown + ` (did you mean "threshold"?)`}}},
		{"stall window is not an option", `{"stall": {"window": 5}}`, []problem{{"stall", "stall.window", unknown}}},
		{"stall warn string", `{"stall": {"warn": "yes"}}`, []problem{{"stall", "stall.warn", boolean}}},
		{"stall number", `{"stall": 5}`, []problem{{"stall", "stall", section}}},
		{"window window 1", `{"window": {"window": 1}}`, []problem{{"window", "window.window", atLeast2 + ", not 1"}}},
		{"window too large", `{"window": {"window": 257}}`, []problem{{"window", "window.window", "must be at most 256, not 257"}}},
		{"window threshold 1", `{"window": {"threshold": 1}}`, []problem{{"window", "window.threshold", atLeast2}}},
		{"window threshold over the window", `{"window": {"window": 4, "threshold": 5}}`, []problem{{"window", "window.threshold", "5 exceeds the window of 4 calls"}}},
		{"window default threshold over a small window", `{"window": {"window": 2}}`, []problem{{"window", "window.threshold", "3 exceeds the window of 2 calls"}}},
		{"window unknown option", `{"window": {"size": 4}}`, []problem{{"window", "window.size", unknown}}},
		{"window null", `{"window": null}`, []problem{{"window", "window", section + ", not null"}}},
		{"oscillation flag string", `{"oscillation": {"requireIdenticalResults": "yes"}}`, []problem{{"oscillation", "oscillation.requireIdenticalResults", boolean}}},
		{"oscillation misspelt flag", `{"oscillation": {"requireIdenticalResult": true}}`,
			[]problem{{"oscillation", "oscillation.requireIdenticalResult", unknown + ` (did you mean "requireIdenticalResults"?)`}}},
		{"repeatedFailure threshold 1", `{"repeatedFailure": {"threshold": 1}}`, []problem{{"failure", "repeatedFailure.threshold", atLeast2 + ", not 1"}}},
		{"repeatedFailure window 1", `{"repeatedFailure": {"window": 1}}`, []problem{{"failure", "repeatedFailure.window", atLeast2 + ", not 1"}}},
		{"repeatedFailure window too large", `{"repeatedFailure": {"window": 257}}`, []problem{{"failure", "repeatedFailure.window", "must be at most 256, not 257"}}},
		{"repeatedFailure warn string", `{"repeatedFailure": {"warn": "yes"}}`, []problem{{"failure", "repeatedFailure.warn", boolean}}},
		{"repeatedFailure misspelt", `{"repeatedFailure": {"treshold": 4}}`, []problem{{"failure", "repeatedFailure.treshold", unknown + ` (did you mean "threshold"?)`}}},
		{"sameResult threshold 1", `{"sameResult": {"threshold": 1}}`, []problem{{"sameresult", "sameResult.threshold", atLeast2 + ", not 1"}}},
		{"sameResult threshold too large", `{"sameResult": {"threshold": 1048577}}`, []problem{{"sameresult", "sameResult.threshold", "must be 0 (the default, 4) or from 2 to 1048576, not 1048577"}}},
		{"sameResult minBytes 0", `{"sameResult": {"minBytes": 0}}`, []problem{{"sameresult", "sameResult.minBytes", "must be a whole number >= 1, not 0"}}},
		{"sameResult minBytes too large", `{"sameResult": {"minBytes": 1073741825}}`, []problem{{"sameresult", "sameResult.minBytes", "must be 0 (the default, 512) or from 1 to 1073741824, not 1073741825"}}},
		{"sameResult warn string", `{"sameResult": {"warn": "yes"}}`, []problem{{"sameresult", "sameResult.warn", boolean}}},
		{"sameResult misspelt", `{"sameResult": {"minbytes": 100}}`, []problem{{"sameresult", "sameResult.minbytes", unknown + ` (did you mean "minBytes"?)`}}},
		{"sameResult window is not an option", `{"sameResult": {"window": 5}}`, []problem{{"sameresult", "sameResult.window", unknown}}},
		{"sameResult number", `{"sameResult": 4}`, []problem{{"sameresult", "sameResult", section}}},
		{"repeatedText threshold 1", `{"repeatedText": {"threshold": 1}}`, []problem{{"text", "repeatedText.threshold", atLeast2 + ", not 1"}}},
		{"repeatedText window too large", `{"repeatedText": {"window": 257}}`, []problem{{"text", "repeatedText.window", "must be at most 256, not 257"}}},
		{"repeatedText number", `{"repeatedText": 3}`, []problem{{"text", "repeatedText", section}}},
		{"repeatedRefusal threshold 1", `{"repeatedRefusal": {"threshold": 1}}`, []problem{{"refusal", "repeatedRefusal.threshold", atLeast2 + ", not 1"}}},
		{"repeatedRefusal window is not an option", `{"repeatedRefusal": {"window": 5}}`, []problem{{"refusal", "repeatedRefusal.window", unknown}}},
		{"repeat warn number", `{"repeatedToolCall": {"warn": 1}}`, []problem{{"repeat", "repeatedToolCall.warn", boolean}}},
		{"noProgress warn null", `{"noProgress": {"warn": null}}`, []problem{{"noprogress", "noProgress.warn", boolean}}},
		{"toolLimit unknown option", `{"toolLimit": {"warnAt": 0.5}, "tools": {"a": {"maxCalls": 1}}}`, []problem{{"toollimit", "toolLimit.warnAt", unknown}}},
		{"toolLimit checked without caps", `{"toolLimit": {"warn": 2}}`, []problem{{"toollimit", "toolLimit.warn", boolean}}},
		{"toolLimit string", `{"toolLimit": "on"}`, []problem{{"toollimit", "toolLimit", section}}},
		{"tool warn is not a field", `{"tools": {"a": {"warn": true}}}`, []problem{{"", "tools.a.warn", unknown}}},
		{"dropArgs string", `{"dropArgs": "request_id"}`, []problem{{"", "dropArgs", strings_ + ", not a string"}}},
		{"dropArgs number entry", `{"dropArgs": ["a", 1]}`, []problem{{"", "dropArgs[1]", "must be a string, not a number"}}},
		{"dropArgs empty entry", `{"dropArgs": [""]}`, []problem{{"", "dropArgs[0]", "must not be empty"}}},
		{"dropArgs twice", `{"dropArgs": ["a", "b", "a"]}`, []problem{{"", "dropArgs[2]", `"a" is listed twice`}}},
		{"tool dropArgs object", `{"tools": {"s": {"dropArgs": {}}}}`, []problem{{"", "tools.s.dropArgs", strings_ + ", not an object"}}},
		{"tool dropArgs misspelt", `{"tools": {"s": {"dropArg": ["x"]}}}`, []problem{{"", "tools.s.dropArg", unknown + ` (did you mean "dropArgs"?)`}}},
		{"dropArgs misspelt", `{"droppArgs": ["x"]}`, []problem{{"", "droppArgs", unknown + ` (did you mean "dropArgs"?)`}}},
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

// TestDropArgsKeys checks that dropped fields reach the guard: calls that
// differ only in them are the same call, and the fingerprint changes.
func TestDropArgsKeys(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"dropArgs": ["request_id"], "tools": {"search": {"dropArgs": ["nonce"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	call := func(args string) guard.Step {
		return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(args)}}}
	}
	var stops []bool
	for _, args := range []string{`{"q":1,"request_id":"a","nonce":1}`, `{"q":1,"request_id":"b","nonce":2}`, `{"q":1,"request_id":"c","nonce":3}`} {
		stops = append(stops, ruletest.Check(t, g, call(args)).Stop)
	}
	if diff := cmp.Diff([]bool{false, false, true}, stops); diff != "" {
		t.Errorf("stops (-want +got):\n%s", diff)
	}
	data := testutil.Snapshot(t, g, guard.SnapshotOptions{})
	plain, _ := detector.FromJSON([]byte(`{}`))
	if _, err := guard.Restore(data, plain); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("restored without the dropped fields: %v, want ErrOptionsChanged", err)
	}
}

// TestRegistryOwnsDropArgs: no entry may claim the guard's dropArgs.
func TestRegistryOwnsDropArgs(t *testing.T) {
	r := detector.NewRegistry()
	if err := r.Register(rule.Spec{Name: "mine", Keys: []string{detector.DropArgsKey}, Build: offBuild}); !errors.Is(err, detector.ErrRegistry) {
		t.Errorf("claiming the key dropArgs: %v", err)
	}
	if err := r.Register(rule.Spec{Name: "mine", ToolFields: []string{detector.DropArgsField}, Build: offBuild}); !errors.Is(err, detector.ErrRegistry) {
		t.Errorf("claiming the tool field dropArgs: %v", err)
	}
	cfg, err := r.Build([]byte(`{"dropArgs": ["id"], "tools": {"s": {"dropArgs": ["ts"]}}}`), detector.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := guard.Config{DropArgs: []string{"id"}, Tools: map[string]guard.ToolOptions{"s": {DropArgs: []string{"ts"}}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("an empty registry's guard options (-want +got):\n%s", diff)
	}
}

// TestNotDefault: the rules beyond the reference are not in the defaults.
func TestNotDefault(t *testing.T) {
	for _, d := range detector.Defaults() {
		if d.Name() == stall.Name || d.Name() == window.Name {
			t.Errorf("%s is in Defaults", d.Name())
		}
	}
}

// TestCountInWindowBounds: the largest window and the smallest threshold of
// the repeated-failure and repeated-text rules are accepted (257 and 1 are
// not: TestBuildBeyondErrors).
func TestCountInWindowBounds(t *testing.T) {
	for _, doc := range []string{
		`{"repeatedFailure": {"window": 256, "threshold": 2, "warn": true}}`,
		`{"repeatedText": {"window": 256, "threshold": 2, "warn": true}}`,
		`{"repeatedFailure": {"window": 2, "threshold": 2}, "repeatedText": {"window": 2, "threshold": 2}}`,
	} {
		cfg, err := detector.FromJSON([]byte(doc))
		if err != nil {
			t.Errorf("FromJSON(%s): %v", doc, err)
			continue
		}
		if _, err := guard.New(cfg); err != nil {
			t.Errorf("FromJSON(%s).New(): %v", doc, err)
		}
	}
}
