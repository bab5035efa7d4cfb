package toollimit

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// The rule's key and tool field in an options document.
const (
	optionKey     = "toolLimit"
	fieldMaxCalls = "maxCalls"
)

// Spec tells an options document how to build the rule: the caps are the
// tool field tools.<name>.maxCalls (a whole number >= 0), and "toolLimit"
// holds the options of all caps ({"warn": true}), or false to switch them
// off. The rule is built only when some tool has a cap.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, ToolFields: []string{fieldMaxCalls}, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	var o Options
	ms, on := r.OptionalSection(optionKey, in.Values)
	r.Fields(optionKey, ms, map[string]options.Field{"warn": r.SetBool(&o.Warn)})
	caps := make(map[string]int, len(in.Tools))
	for _, tool := range options.SortedKeys(in.Tools) {
		if raw, ok := in.Tools[tool][fieldMaxCalls]; ok {
			caps[tool] = r.Int(options.Join(options.Join(options.ToolsKey, tool), fieldMaxCalls), raw, 0)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(caps) == 0 || !on {
		return nil, nil
	}
	o.MaxCalls = caps
	d, err := New(o)
	return options.Built(d, err, options.Names{"MaxCalls": options.ToolsKey, "Warn": optionKey + ".warn"})
}
