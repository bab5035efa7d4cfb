package oscillation

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// Spec tells an options document how to build the rule: from "oscillation",
// {"longPeriod": N, "maxPeriod": N, "repeats": N, "requireIdenticalResults": b,
// "sameResults": N, "warn": b},
// true for the defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return options.SectionSpec(Name, "oscillation", true, New, func(r *options.Reader, o *Options) map[string]options.Field {
		return map[string]options.Field{
			"longPeriod":              r.SetIntRange(&o.LongPeriod, 2, MaxMaxPeriod),
			"maxPeriod":               r.SetIntRange(&o.MaxPeriod, 2, MaxMaxPeriod),
			"repeats":                 r.SetInt(&o.Repeats, 2),
			"requireIdenticalResults": r.SetBool(&o.RequireIdenticalResults),
			"sameResults":             r.SetInt(&o.SameResults, 2),
			"warn":                    r.SetBool(&o.Warn),
		}
	})
}
