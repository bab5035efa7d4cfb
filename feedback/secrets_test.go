package feedback_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
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
	for _, want := range []string{"REPEATED_TOOL_CALL", "TOOL_CALL_CAP", "FINISH_OTHER", "BUDGET_TOTAL_TOKENS", "MAX_STEPS"} {
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
