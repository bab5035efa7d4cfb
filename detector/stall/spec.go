package stall

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// Spec tells an options document how to build the rule: from "stall",
// {"threshold": N, "warn": b}, or true for the defaults. It is off unless
// the key is present.
func Spec() rule.Spec {
	return options.SectionSpec(Name, "stall", false, New, func(r *options.Reader, o *Options) map[string]options.Field {
		return map[string]options.Field{"threshold": r.SetInt(&o.Threshold, 2), "warn": r.SetBool(&o.Warn)}
	})
}
