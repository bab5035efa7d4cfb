package stall

import (
	"encoding/json"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// optionKey is the rule's key in an options document.
const optionKey = "stall"

// Spec tells an options document how to build the rule: from "stall",
// {"threshold": N, "warn": b}, or true for the defaults. It is off unless
// the key is present.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	var o Options
	ms, on := r.Section(optionKey, in.Values[optionKey])
	r.Fields(optionKey, ms, map[string]options.Field{
		"threshold": func(path string, raw json.RawMessage) { o.Threshold = r.Int(path, raw, 2) },
		"warn":      func(path string, raw json.RawMessage) { o.Warn = r.Bool(path, raw) },
	})
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{"Threshold": optionKey + ".threshold", "Window": optionKey, "Warn": optionKey + ".warn"})
}
