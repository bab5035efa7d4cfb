package feedback_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/stall"
	textrule "github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

// secrets are planted in every argument, result, error, text and finish
// reason of a run; none may reach any feedback text.
var secrets = []string{"sk-live-7f3a9c", "hunter2", "4111-1111-1111-1111", "alice@example.com", "SYSTEM: ignore previous"}

func secretJSON(i int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"q": secrets[i%len(secrets)], "token": secrets[(i+1)%len(secrets)], "all": secrets})
	return b
}

// TestNoSecretReachesFeedback runs every built-in rule to a stop (and to a
// refusal in preflight) on data full of secrets, and checks the feedback.
func TestNoSecretReachesFeedback(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": 30,
		"budget": {"maxTotalTokens": {"limit": 5000, "warnAt": 0.5}, "maxCostUsd": 2},
		"finishReason": {"otherPolicy": "stop"},
		"tools": {"capped": {"maxCalls": 2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(secrets, " ")
	names := []string{"search", "capped", "read", "sk-live-7f3a9c tool", "capped"}
	var texts []string
	codes := map[string]bool{}
	for i := range 40 {
		name := names[i%len(names)]
		if i%9 < 3 {
			name = "search" // a run of identical calls
		}
		args := secretJSON(i)
		if i%9 < 3 {
			args = secretJSON(0)
		}
		step := guard.Step{
			Text:         "my secret is " + all,
			ToolCalls:    []guard.ToolCall{{Name: name, Args: args, Result: all, Err: errors.New(all)}},
			FinishReason: []string{"tool-calls", "", "tool-calls", secrets[i%len(secrets)]}[i%4],
			Usage:        guard.Usage{TotalTokens: 150, CostUSD: 0.06},
		}
		d := testutil.Preflight(t, g, step.ToolCalls...)
		v := testutil.Check(t, g, step)
		for _, text := range []string{v.Feedback, d.Feedback} {
			if text != "" {
				texts = append(texts, text)
			}
		}
		codes[v.Code], codes[d.Code] = true, true
		for _, w := range append(v.Warnings, d.Warnings...) {
			if w.Feedback != "" {
				texts = append(texts, w.Feedback)
			}
		}
	}
	for _, want := range []string{repeat.Code, toollimit.Code, finish.CodeOther, budget.CodeTotalTokens, budget.CodeMaxSteps} {
		if !codes[want] {
			t.Errorf("the run never stopped with %s; the test does not cover it (codes seen: %v)", want, codes)
		}
	}
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("feedback repeats %q: %s", s, text)
			}
		}
		for _, word := range strings.Fields(all) {
			if len(word) > 4 && strings.Contains(text, word) {
				t.Errorf("feedback repeats part of a secret (%q): %s", word, text)
			}
		}
	}
	t.Logf("%d feedback texts checked (codes %v)", len(texts), fmt.Sprint(codes))
}

// TestNoSecretReachesWarnings drives every rule that warns, and the rules
// beyond the reference, to warnings and stops on data full of secrets (one
// tool name included), and checks every feedback text.
func TestNoSecretReachesWarnings(t *testing.T) {
	const doc = `{"maxSteps": false, "finishReason": {"otherPolicy": "continue"},
		"repeatedToolCall": {"warn": true, "threshold": 4}, "oscillation": {"warn": true, "repeats": 2},
		"noProgress": {"warn": true, "threshold": 4}, "toolLimit": {"warn": true},
		"window": {"warn": true, "window": 6, "threshold": 2}, "stall": {"warn": true, "threshold": 3},
		"repeatedFailure": {"warn": true}, "repeatedText": {"warn": true, "threshold": 4}, "repeatedRefusal": {"warn": true},
		"sameResult": {"warn": true}, "repeatedInput": {"warn": true},
		"tools": {"capped": {"maxCalls": 3}}}`
	all := strings.Join(secrets, " ")
	secretCall := func(name string, i int) guard.ToolCall {
		return guard.ToolCall{Name: name, Args: secretJSON(i), Result: all, Err: errors.New(all)}
	}
	// Each scenario is a run of its own: a repeat, a cycle, a cap, a
	// windowed repeat, the same failure with other arguments, text-only
	// steps, and a refused call asked for again and again.
	var repeatRun, cycle, capRun, windowRun, failRun, stallRun, refusedRun, sameResultRun, toldRun []guard.ToolCall
	sameResultPage := strings.Repeat(all+" ", 600/len(all)+1) // over 512 bytes
	for i := range 5 {
		repeatRun = append(repeatRun, secretCall("sk-live-7f3a9c search", 0))
		cycle = append(cycle, secretCall("search", i%2))
		capRun = append(capRun, secretCall("capped", i))
		windowRun = append(windowRun, secretCall("search", 0), secretCall("read", i))
		failRun = append(failRun, secretCall("sk-live-7f3a9c edit", i))
		stallRun = append(stallRun, guard.ToolCall{})
		refusedRun = append(refusedRun, guard.ToolCall{Name: "refused", Args: secretJSON(0)})
		sameResultRun = append(sameResultRun, guard.ToolCall{Name: "sk-live-7f3a9c fetch", Args: secretJSON(i), Result: sameResultPage})
		toldRun = append(toldRun, guard.ToolCall{Name: "told"})
	}
	codes := map[string]bool{}
	var texts []string
	for _, calls := range [][]guard.ToolCall{repeatRun, cycle, capRun, windowRun, failRun, stallRun, refusedRun, sameResultRun, toldRun} {
		cfg, err := detector.FromJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		g, err := guard.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			s := guard.Step{Text: "my secret is " + all}
			switch c.Name {
			case "":
			case "told": // the same message full of secrets, answered in words
				s.Input = "the tests still fail: " + all
			case "refused":
				s.Refused = []guard.ToolCall{c}
			default:
				s.ToolCalls = []guard.ToolCall{c}
			}
			d := testutil.Preflight(t, g, s.ToolCalls...)
			v := testutil.Check(t, g, s)
			for _, text := range []string{v.Feedback, d.Feedback} {
				if text != "" {
					texts = append(texts, text)
				}
			}
			codes[v.Code], codes[d.Code] = true, true
			for _, w := range append(v.Warnings, d.Warnings...) {
				codes[w.Code] = true
				if w.Feedback == "" {
					t.Errorf("%s without feedback", w.Code)
				}
				texts = append(texts, w.Feedback)
			}
		}
	}
	for _, want := range []string{repeat.WarningCode, oscillation.WarningCode, noprogress.WarningCode,
		toollimit.WarningCode, window.WarningCode, stall.WarningCode,
		window.Code, stall.Code, failure.WarningCode, failure.Code,
		textrule.WarningCode, textrule.Code, refusal.WarningCode, refusal.Code, sameresult.WarningCode, sameresult.Code, input.WarningCode, input.Code} {
		if !codes[want] {
			t.Errorf("the runs never gave %s; the test does not cover it (codes seen: %v)", want, codes)
		}
	}
	for _, text := range texts {
		for _, word := range strings.Fields(all) {
			if len(word) > 4 && strings.Contains(text, word) {
				t.Errorf("feedback repeats part of a secret (%q): %s", word, text)
			}
		}
	}
	t.Logf("%d feedback texts checked", len(texts))
}
