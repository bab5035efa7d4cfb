package repeat

import (
	"encoding/json"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// The rule's key and tool fields in an options document.
const (
	optionKey            = "repeatedToolCall"
	fieldRepeatThreshold = "repeatThreshold"
	fieldPolling         = "polling"
)

// Spec tells an options document how to build the rule: from
// "repeatedToolCall" ({"threshold": N, "requireIdenticalResults": b,
// "ignoreErrors": b, "countNewResults": b, "countAcrossTurns": b, "warn": b}, true for the defaults or false for none)
// and the tool fields tools.<name>.repeatThreshold (N) and
// tools.<name>.polling (true, false or {"maxIdenticalResults": N}). It is on
// by default.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, ToolFields: []string{fieldRepeatThreshold, fieldPolling},
		Default: true, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	var o Options
	ms, on := r.OptionalSection(optionKey, in.Values)
	r.Fields(optionKey, ms, map[string]options.Field{
		"threshold":               r.SetInt(&o.Threshold, 2),
		"requireIdenticalResults": r.SetBool(&o.RequireIdenticalResults),
		"ignoreErrors":            r.SetBool(&o.IgnoreErrors),
		"countNewResults":         r.SetBool(&o.CountNewResults),
		"countAcrossTurns":        r.SetBool(&o.CountAcrossTurns),
		"warn":                    r.SetBool(&o.Warn),
	})
	for _, tool := range options.SortedKeys(in.Tools) {
		var p ToolPolicy
		for _, field := range options.SortedKeys(in.Tools[tool]) {
			raw, path := in.Tools[tool][field], options.Join(options.Join(options.ToolsKey, tool), field)
			switch field {
			case fieldRepeatThreshold:
				p.RepeatThreshold = r.Int(path, raw, 2)
			case fieldPolling:
				p.Polling, p.MaxIdenticalResults = readPolling(r, path, raw)
			}
		}
		if p != (ToolPolicy{}) { // a policy that changes nothing is left out
			if o.Tools == nil {
				o.Tools = make(map[string]ToolPolicy)
			}
			o.Tools[tool] = p
		}
	}
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{
		"Threshold":               optionKey + ".threshold",
		"RequireIdenticalResults": optionKey + ".requireIdenticalResults",
		"IgnoreErrors":            optionKey + ".ignoreErrors",
		"CountNewResults":         optionKey + ".countNewResults",
		"Warn":                    optionKey + ".warn",
		"Tools":                   options.ToolsKey,
	})
}

// readPolling reads a polling policy: true, false or {"maxIdenticalResults":
// N}.
func readPolling(r *options.Reader, path string, raw json.RawMessage) (polling bool, maxIdentical int) {
	if options.Kind(raw) != "an object" {
		if options.Kind(raw) != "a boolean" {
			r.Failf(path, "must be true, false or an object, not %s", options.Kind(raw))
			return false, 0
		}
		return r.Bool(path, raw), 0
	}
	ms, ok := r.Object(path, raw)
	if !ok {
		return false, 0
	}
	r.Fields(path, ms, map[string]options.Field{"maxIdenticalResults": r.SetInt(&maxIdentical, 2)})
	return true, maxIdentical
}
