package detector_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// hostile reports the first character of s that a terminal could act on.
func hostile(s string) (rune, bool) {
	for _, r := range s {
		if r == '\n' {
			continue // Explain's own line breaks
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return r, true
		}
	}
	return 0, false
}

// strings of a JSON-able value, through its JSON form.
func jsonStrings(t *testing.T, v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			out = append(out, x)
		}
	}
	walk(x)
	return out
}

// TestModelChosenStringsAreEscaped: tool names, finish reasons, text and
// arguments that carry terminal escape sequences, or run to 10 MiB, reach
// no detail, evidence, warning, Explain or log line raw or whole: every
// built-in rule escapes them and cuts names to 256 bytes.
func TestModelChosenStringsAreEscaped(t *testing.T) {
	esc := "\x1b]0;owned\x07\x1b[2J\u202e\u009b\x7f"
	huge := strings.Repeat("n", 10<<20) + esc
	cfg, err := detector.FromJSON([]byte(`{"repeatedToolCall": {"warn": true}, "oscillation": {"maxPeriod": 2, "repeats": 2, "warn": true},
		"noProgress": {"warn": true}, "window": {"window": 4, "threshold": 2, "warn": true},
		"finishReason": {"otherPolicy": "stop"}, "toolLimit": {"warn": true},
		"tools": {"cap\u001b[31m": {"maxCalls": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"q":"` + "\u202e\u009b\x7f" + `x"}`)
	call := func(name string) guard.ToolCall { return guard.ToolCall{Name: name, Args: args} }
	runs := map[string][]guard.Step{
		"oscillation": {
			{ToolCalls: []guard.ToolCall{call("a" + esc)}}, {ToolCalls: []guard.ToolCall{call("b" + esc)}},
			{ToolCalls: []guard.ToolCall{call("a" + esc)}}, {ToolCalls: []guard.ToolCall{call("b" + esc)}},
		},
		"repeat and window": {
			{ToolCalls: []guard.ToolCall{call(huge)}}, {ToolCalls: []guard.ToolCall{call(huge)}}, {ToolCalls: []guard.ToolCall{call(huge)}},
		},
		"tool limit": {
			{ToolCalls: []guard.ToolCall{call("cap\x1b[31m")}}, {ToolCalls: []guard.ToolCall{call("cap\x1b[31m")}},
		},
		"finish": {{Text: "done", FinishReason: huge}},
		"no progress": {
			{Text: "same " + esc}, {Text: "same " + esc}, {Text: "same " + esc},
		},
	}
	for name, run := range runs {
		g, err := guard.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stopped := false
		for i, s := range run {
			d := ruletest.Preflight(t, g, s.ToolCalls...)
			v := ruletest.Check(t, g, s)
			stopped = stopped || v.Stop
			for _, x := range []guard.Verdict{v, d.Verdict()} {
				texts := append(jsonStrings(t, x), guard.Explain(x))
				var buf bytes.Buffer
				slog.New(slog.NewTextHandler(&buf, nil)).Info("step", "verdict", x)
				texts = append(texts, buf.String())
				for _, text := range texts {
					if r, ok := hostile(text); ok {
						t.Errorf("%s, step %d: %U in %.200q", name, i, r, text)
					}
					if len(text) > 8<<10 {
						t.Errorf("%s, step %d: %d bytes in %.200q", name, i, len(text), text)
					}
				}
				for _, s := range jsonStrings(t, x.Evidence) {
					if len(s) > 2*rule.MaxNameLen+2*rule.PreviewLen {
						t.Errorf("%s, step %d: evidence of %d bytes: %.200q", name, i, len(s), s)
					}
				}
			}
		}
		if !stopped {
			t.Errorf("%s: the run never stops: the test shows nothing", name)
		}
	}
}
