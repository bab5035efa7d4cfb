package failure

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// The rule's key in an options document, and its field beyond those of a
// count within a window.
const (
	optionKey     = "repeatedFailure"
	fieldSameCall = "sameCall"
)

// Spec tells an options document how to build the rule: from
// "repeatedFailure", {"threshold": N, "window": M, "sameCall": K, "warn": b},
// true for the defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{optionKey}, Default: true, Build: build}
}

func build(in rule.Input) (rule.Rule, error) {
	r := options.NewReader(Name)
	ms, on := r.OptionalSection(optionKey, in.Values)
	var o Options
	fields := r.WindowFields(&o.Threshold, &o.Window, &o.Warn, MaxWindow)
	fields[fieldSameCall] = r.SetInt(&o.SameCall, 2)
	// sameCall is read before the other keys, so that its problem is
	// reported first, as it always was.
	var rest []options.Member
	for _, m := range ms {
		if m.Key == fieldSameCall {
			fields[fieldSameCall](options.Join(optionKey, m.Key), m.Value)
			continue
		}
		rest = append(rest, m)
	}
	r.Fields(optionKey, rest, fields)
	if err := r.Err(); err != nil || !on {
		return nil, err
	}
	d, err := New(o)
	return options.Built(d, err, options.Names{"Window": optionKey + ".window", "Threshold": optionKey + ".threshold",
		"SameCall": optionKey + "." + fieldSameCall, "Warn": optionKey + ".warn"})
}
