package budget

import (
	"encoding/json"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// DefaultMaxSteps is the step limit that [Spec] builds when the options
// document sets none. The reference's is 50; resolved coding runs in
// testdata/traces take up to 129 steps, and the harnesses' own caps are 100
// to 250, so the default set allows 150. A step limit is a safety net: the
// pattern rules stop loops long before it.
const DefaultMaxSteps = 150

// The rule's keys in an options document.
const (
	keyMaxSteps = "maxSteps"
	keyBudget   = "budget"
)

// Spec tells an options document how to build the rule: from "maxSteps" (a
// whole number, true for [DefaultMaxSteps] or false for none) and "budget"
// ({"maxTotalTokens": L, "maxInputTokens": L, "maxOutputTokens": L,
// "maxCostUsd": L, "maxDurationMs": L, "warnAt": R}, where a limit L is a
// positive number or {"limit": N, "warnAt": R}; false for none). It is on by
// default, with the step limit only; the rule is left out when neither a
// step limit nor a budget is left. Input.Now is the clock of the duration
// budget.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{keyMaxSteps, keyBudget}, Default: true, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	o := Options{MaxSteps: DefaultMaxSteps, Now: in.Now}
	stepsOn := true
	if raw, ok := in.Values[keyMaxSteps]; ok {
		switch {
		case options.IsLiteral(raw, "true"):
		case options.IsLiteral(raw, "false"):
			o.MaxSteps, stepsOn = 0, false
		default:
			o.MaxSteps = r.Int(keyMaxSteps, raw, 1)
		}
	}
	limits := 0
	limit := func(dst *Limit) options.Field {
		return func(path string, raw json.RawMessage) {
			*dst = readLimit(r, path, raw)
			limits++
		}
	}
	ms, budgetOn := r.OptionalSection(keyBudget, in.Values)
	r.Fields(keyBudget, ms, map[string]options.Field{
		"maxTotalTokens":  limit(&o.MaxTotalTokens),
		"maxInputTokens":  limit(&o.MaxInputTokens),
		"maxOutputTokens": limit(&o.MaxOutputTokens),
		"maxCostUsd":      limit(&o.MaxCostUSD),
		"maxDurationMs":   limit(&o.MaxDurationMs),
		"warnAt":          func(path string, raw json.RawMessage) { o.WarnAt = r.Ratio(path, raw) },
	})
	if err := r.Err(); err != nil {
		return nil, err
	}
	if !budgetOn {
		o.MaxTotalTokens, o.MaxInputTokens, o.MaxOutputTokens, o.MaxCostUSD, o.MaxDurationMs = Limit{}, Limit{}, Limit{}, Limit{}, Limit{}
		o.WarnAt, limits = 0, 0
	}
	if !stepsOn && limits == 0 {
		return nil, nil // nothing left to limit
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{
		"MaxSteps":        keyMaxSteps,
		"MaxTotalTokens":  keyBudget + ".maxTotalTokens",
		"MaxInputTokens":  keyBudget + ".maxInputTokens",
		"MaxOutputTokens": keyBudget + ".maxOutputTokens",
		"MaxCostUSD":      keyBudget + ".maxCostUsd",
		"MaxDurationMs":   keyBudget + ".maxDurationMs",
		"WarnAt":          keyBudget + ".warnAt",
	})
}

// readLimit reads a budget limit: a positive number, or {"limit": N,
// "warnAt": R}.
func readLimit(r *options.Reader, path string, raw json.RawMessage) Limit {
	if options.Kind(raw) != "an object" {
		return Limit{Value: r.Positive(path, raw)}
	}
	ms, ok := r.Object(path, raw)
	if !ok {
		return Limit{}
	}
	var l Limit
	hasLimit := false
	r.Fields(path, ms, map[string]options.Field{
		"limit":  func(path string, raw json.RawMessage) { l.Value, hasLimit = r.Positive(path, raw), true },
		"warnAt": func(path string, raw json.RawMessage) { l.WarnAt = r.Ratio(path, raw) },
	})
	if !hasLimit {
		r.Failf(options.Join(path, "limit"), "missing: a limit object needs a positive limit")
	}
	return l
}
