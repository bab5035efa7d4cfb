package noprogress

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// Spec tells an options document how to build the rule: from "noProgress",
// {"threshold": N, "warn": b}, true for the defaults or false for none. It
// is on by default.
func Spec() rule.Spec {
	return options.SectionSpec(Name, "noProgress", true, New, func(r *options.Reader, o *Options) map[string]options.Field {
		return map[string]options.Field{"threshold": r.SetInt(&o.Threshold, 2), "warn": r.SetBool(&o.Warn)}
	})
}
