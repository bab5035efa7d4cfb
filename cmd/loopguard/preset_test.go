package main

import (
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/rule"
)

// TestTextActionsPresetIsFinishTextActions: the audit's --preset text-actions
// and the Go preset finish.TextActions are the same options.
func TestTextActionsPresetIsFinishTextActions(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"finishReason": ` + textActionsFinish + `}`))
	if err != nil {
		t.Fatal(err)
	}
	want, err := finish.New(finish.TextActions())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cfg.Rules {
		if d.Name() == finish.Name {
			if got := rule.Fingerprint(d); got != rule.Fingerprint(want) {
				t.Errorf("the preset's finish options %v differ from finish.TextActions() %v", d.Options(), want.Options())
			}
			return
		}
	}
	t.Fatal("the preset built no finish rule")
}
