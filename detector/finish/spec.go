package finish

import (
	"encoding/json"
	"strconv"

	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// Spec tells an options document how to build the rule: from
// "finishReason", {"terminal": [...], "otherPolicy": p, "stopWithToolCalls":
// p}, true for the defaults or false for none. It is on by default.
func Spec() rule.Spec {
	return options.SectionSpec(Name, "finishReason", true, New, func(r *options.Reader, o *Options) map[string]options.Field {
		return map[string]options.Field{
			"terminal": func(path string, raw json.RawMessage) {
				o.Terminal = r.Strings(path, raw)
				for i, t := range o.Terminal {
					if Normalize(t) == "" {
						r.Failf(path+"["+strconv.Itoa(i)+"]", "must name a finish reason, not %q (empty, or no reason once normalised)", t)
					}
				}
			},
			"otherPolicy":       options.SetOneOf(r, &o.OtherPolicy, StopIfTextOnly, Stop, Continue),
			"stopWithToolCalls": options.SetOneOf(r, &o.StopWithToolCalls, Continue, Stop),
		}
	})
}
