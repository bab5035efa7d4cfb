package text

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// optionKey is the rule's key in an options document.
const optionKey = "repeatedText"

// Spec tells an options document how to build the rule: from
// "repeatedText", {"threshold": N, "window": M, "warn": b}, true for the
// defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, Default: true, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	ms, on := r.OptionalSection(optionKey, in.Values)
	var w options.Window
	r.Fields(optionKey, ms, r.WindowFields(&w, MaxWindow))
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(Options{Threshold: w.Threshold, Window: w.Window, Warn: w.Warn})
	return options.Built(d, err, options.Names{"Window": optionKey + ".window", "Threshold": optionKey + ".threshold", "Warn": optionKey + ".warn"})
}
