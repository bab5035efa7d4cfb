package oscillation

import (
	"encoding/json"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// optionKey is the rule's key in an options document.
const optionKey = "oscillation"

// Spec tells an options document how to build the rule: from "oscillation",
// {"maxPeriod": N, "repeats": N, "requireIdenticalResults": b, "warn": b},
// true for the defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, Default: true, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	var o Options
	ms, on := r.OptionalSection(optionKey, in.Values)
	r.Fields(optionKey, ms, map[string]options.Field{
		"maxPeriod":               func(path string, raw json.RawMessage) { o.MaxPeriod = r.IntRange(path, raw, 2, MaxMaxPeriod) },
		"repeats":                 func(path string, raw json.RawMessage) { o.Repeats = r.Int(path, raw, 2) },
		"requireIdenticalResults": func(path string, raw json.RawMessage) { o.RequireIdenticalResults = r.Bool(path, raw) },
		"warn":                    func(path string, raw json.RawMessage) { o.Warn = r.Bool(path, raw) },
	})
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{"MaxPeriod": optionKey + ".maxPeriod", "Repeats": optionKey + ".repeats",
		"RequireIdenticalResults": optionKey + ".requireIdenticalResults", "Warn": optionKey + ".warn"})
}
