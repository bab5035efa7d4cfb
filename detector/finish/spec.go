package finish

import (
	"encoding/json"
	"strconv"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// optionKey is the rule's key in an options document.
const optionKey = "finishReason"

// Spec tells an options document how to build the rule: from
// "finishReason", {"terminal": [...], "otherPolicy": p, "stopWithToolCalls":
// p}, true for the defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, Default: true, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	var o Options
	ms, on := r.OptionalSection(optionKey, in.Values)
	r.Fields(optionKey, ms, map[string]options.Field{
		"terminal": func(path string, raw json.RawMessage) {
			o.Terminal = r.Strings(path, raw)
			for i, t := range o.Terminal {
				if Normalize(t) == "" {
					r.Failf(path+"["+strconv.Itoa(i)+"]", "must name a finish reason, not %q (empty, or no reason once normalised)", t)
				}
			}
		},
		"otherPolicy": func(path string, raw json.RawMessage) {
			if s, ok := r.OneOf(path, raw, string(StopIfTextOnly), string(Stop), string(Continue)); ok {
				o.OtherPolicy = Policy(s)
			}
		},
		"stopWithToolCalls": func(path string, raw json.RawMessage) {
			if s, ok := r.OneOf(path, raw, string(Continue), string(Stop)); ok {
				o.StopWithToolCalls = Policy(s)
			}
		},
	})
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{"Terminal": optionKey + ".terminal", "OtherPolicy": optionKey + ".otherPolicy",
		"StopWithToolCalls": optionKey + ".stopWithToolCalls"})
}
