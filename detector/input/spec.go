package input

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// OptionKey is the rule's key in an options document.
const OptionKey = "repeatedInput"

// Spec tells an options document how to build the rule: from
// "repeatedInput", {"threshold": N, "window": M, "minBytes": B, "warn": b},
// true for the defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return options.SectionSpec(Name, OptionKey, true, New, func(r *options.Reader, o *Options) map[string]options.Field {
		fields := r.WindowFields(&o.Threshold, &o.Window, &o.Warn, MaxWindow)
		fields["minBytes"] = r.SetIntRange(&o.MinBytes, 1, MaxMinBytes)
		return fields
	})
}
