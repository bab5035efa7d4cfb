package sameresult

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// OptionKey is the rule's key in an options document.
const OptionKey = "sameResult"

// Spec tells an options document how to build the rule: from "sameResult",
// {"threshold": N, "minBytes": M, "warn": b}, true for the defaults or false
// for none. It is on by default.
func Spec() rule.Spec {
	return options.SectionSpec(Name, OptionKey, true, New, func(r *options.Reader, o *Options) map[string]options.Field {
		return map[string]options.Field{
			"threshold": r.SetInt(&o.Threshold, 2),
			"minBytes":  r.SetInt(&o.MinBytes, 1),
			"warn":      r.SetBool(&o.Warn),
		}
	})
}
