package window

import (
	"encoding/json"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// optionKey is the rule's key in an options document.
const optionKey = "window"

// Spec tells an options document how to build the rule: from "window",
// {"window": N, "threshold": M, "warn": b, "compare": "outcome" | "call"}, or
// true for the defaults. It is off unless the key is present.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	var o Options
	ms, on := r.Section(optionKey, in.Values[optionKey])
	r.Fields(optionKey, ms, map[string]options.Field{
		"window":    func(path string, raw json.RawMessage) { o.Window = r.IntRange(path, raw, 2, MaxWindow) },
		"threshold": func(path string, raw json.RawMessage) { o.Threshold = r.Int(path, raw, 2) },
		"warn":      func(path string, raw json.RawMessage) { o.Warn = r.Bool(path, raw) },
		"compare": func(path string, raw json.RawMessage) {
			if s, ok := r.OneOf(path, raw, CompareOutcome, CompareCall); ok {
				o.Compare = s
			}
		},
	})
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{"Window": optionKey + ".window", "Threshold": optionKey + ".threshold",
		"Warn": optionKey + ".warn", "Compare": optionKey + ".compare"})
}
