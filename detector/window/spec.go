package window

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// Spec tells an options document how to build the rule: from "window",
// {"window": N, "threshold": M, "warn": b, "compare": "outcome" | "call"}, or
// true for the defaults. It is off unless the key is present.
func Spec() rule.Spec {
	return options.SectionSpec(Name, "window", false, New, func(r *options.Reader, o *Options) map[string]options.Field {
		return map[string]options.Field{
			"window":    r.SetIntRange(&o.Window, 2, MaxWindow),
			"threshold": r.SetInt(&o.Threshold, 2),
			"warn":      r.SetBool(&o.Warn),
			"compare":   options.SetOneOf(r, &o.Compare, CompareOutcome, CompareCall),
		}
	})
}
