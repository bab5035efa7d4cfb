package text

import (
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// Spec tells an options document how to build the rule: from
// "repeatedText", {"threshold": N, "window": M, "long": L, "longBytes": B,
// "warn": b}, true for the
// defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return options.SectionSpec(Name, "repeatedText", true, New, func(r *options.Reader, o *Options) map[string]options.Field {
		fields := r.WindowFields(&o.Threshold, &o.Window, &o.Warn, MaxWindow)
		fields["long"] = r.SetInt(&o.Long, 2)
		fields["longBytes"] = r.SetInt(&o.LongBytes, 1)
		return fields
	})
}
