package detector

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/rule"
)

// The option names of the built-in detectors, as the reference spells them.
const (
	keyFinish      = "finishReason"
	keyMaxSteps    = "maxSteps"
	keyBudget      = "budget"
	keyRepeat      = "repeatedToolCall"
	keyOscillation = "oscillation"
	keyNoProgress  = "noProgress"
	keyToolLimit   = "toolLimit"
	keyWindow      = "window"
	keyStall       = "stall"
	keyFailure     = "repeatedFailure"
	keyRefusal     = "repeatedRefusal"
	keyText        = "repeatedText"

	fieldMaxCalls        = "maxCalls"
	fieldRepeatThreshold = "repeatThreshold"
	fieldPolling         = "polling"
	fieldWarn            = "warn"
	fieldSameCall        = "sameCall"
)

// DefaultMaxSteps is the step limit of the default set. The reference's is
// 50; resolved coding runs in testdata/traces take up to 129 steps, and the
// harnesses' own caps are 100 to 250, so the default set allows 150. A step
// limit is a safety net: the pattern rules stop loops long before it.
const DefaultMaxSteps = 150

type builtin struct {
	name  string
	entry Entry
}

// builtins returns the entries of the built-in detectors, in priority order.
func builtins() []builtin {
	return []builtin{
		{finish.Name, Entry{Keys: []string{keyFinish}, Default: true, Build: buildFinish}},
		{budget.Name, Entry{Keys: []string{keyMaxSteps, keyBudget}, Default: true, Build: buildBudget}},
		{toollimit.Name, Entry{Keys: []string{keyToolLimit}, ToolFields: []string{fieldMaxCalls}, Build: buildToolLimit}},
		{refusal.Name, Entry{Keys: []string{keyRefusal}, Default: true, Build: buildRefusal}},
		{repeat.Name, Entry{Keys: []string{keyRepeat}, ToolFields: []string{fieldRepeatThreshold, fieldPolling}, Default: true, Build: buildRepeat}},
		{failure.Name, Entry{Keys: []string{keyFailure}, Default: true, Build: buildFailure}},
		{window.Name, Entry{Keys: []string{keyWindow}, Build: buildWindow}},
		{oscillation.Name, Entry{Keys: []string{keyOscillation}, Default: true, Build: buildOscillation}},
		{noprogress.Name, Entry{Keys: []string{keyNoProgress}, Default: true, Build: buildNoProgress}},
		{text.Name, Entry{Keys: []string{keyText}, Default: true, Build: buildText}},
		{stall.Name, Entry{Keys: []string{keyStall}, Build: buildStall}},
	}
}

// fields maps the Go names of a detector's options to their paths in the
// options document, so that an error from the detector's constructor names
// the option as the user wrote it.
type fields map[string]string

// built returns the detector, or the constructor's error with its fields
// renamed to their JSON paths. A nil *T is returned as a nil interface.
func built[T rule.Rule](d T, err error, names fields) (rule.Rule, error) {
	if err != nil {
		return nil, rename(err, names)
	}
	return d, nil
}

// rename rewrites the Field of every *rule.OptionError in err whose leading
// Go name is known.
func rename(err error, names fields) error {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range multi.Unwrap() {
			out = append(out, rename(e, names))
		}
		return errors.Join(out...)
	}
	var oe *rule.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	head, rest := oe.Field, ""
	if i := strings.IndexAny(head, ".["); i >= 0 {
		head, rest = head[:i], head[i:]
	}
	path, ok := names[head]
	if !ok {
		return err
	}
	return &rule.OptionError{Detector: oe.Detector, Field: path + rest, Err: oe.Err}
}

func buildFinish(in Input) (rule.Rule, error) {
	r := &reader{det: finish.Name}
	var o finish.Options
	raw, present := in.Values[keyFinish]
	on := true
	if present {
		var ms []member
		ms, on = r.section(keyFinish, raw)
		for _, m := range ms {
			path := join(keyFinish, m.key)
			switch m.key {
			case "terminal":
				o.Terminal = r.stringList(path, m.val)
				for i, t := range o.Terminal {
					if finish.Normalize(t) == "" {
						r.failf(path+"["+strconv.Itoa(i)+"]", "must name a finish reason, not %q (empty, or no reason once normalised)", t)
					}
				}
			case "otherPolicy":
				if s, ok := r.str(path, m.val); ok {
					switch p := finish.Policy(s); p {
					case finish.StopIfTextOnly, finish.Stop, finish.Continue:
						o.OtherPolicy = p
					default:
						r.failf(path, "must be %q, %q or %q, not %q", finish.StopIfTextOnly, finish.Stop, finish.Continue, s)
					}
				}
			case "stopWithToolCalls":
				if s, ok := r.str(path, m.val); ok {
					switch p := finish.Policy(s); p {
					case finish.Stop, finish.Continue:
						o.StopWithToolCalls = p
					default:
						r.failf(path, "must be %q or %q, not %q", finish.Continue, finish.Stop, s)
					}
				}
			default:
				r.unknown(keyFinish, m.key, []string{"otherPolicy", "stopWithToolCalls", "terminal"})
			}
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := finish.New(o)
	return built(d, err, fields{"Terminal": keyFinish + ".terminal", "OtherPolicy": keyFinish + ".otherPolicy",
		"StopWithToolCalls": keyFinish + ".stopWithToolCalls"})
}

// The budget's limits, by their names in the document.
var budgetLimits = []string{"maxCostUsd", "maxDurationMs", "maxInputTokens", "maxOutputTokens", "maxTotalTokens"}

func buildBudget(in Input) (rule.Rule, error) {
	r := &reader{det: budget.Name}
	o := budget.Options{MaxSteps: DefaultMaxSteps, Now: in.Now}
	stepsOn, budgetOn := true, true
	if raw, ok := in.Values[keyMaxSteps]; ok {
		switch {
		case isLiteral(raw, "true"):
		case isLiteral(raw, "false"):
			o.MaxSteps, stepsOn = 0, false
		default:
			o.MaxSteps = r.integer(keyMaxSteps, raw, 1)
		}
	}
	limits := 0
	if raw, ok := in.Values[keyBudget]; ok {
		var ms []member
		ms, budgetOn = r.section(keyBudget, raw)
		for _, m := range ms {
			path := join(keyBudget, m.key)
			var dst *budget.Limit
			switch m.key {
			case "maxTotalTokens":
				dst = &o.MaxTotalTokens
			case "maxInputTokens":
				dst = &o.MaxInputTokens
			case "maxOutputTokens":
				dst = &o.MaxOutputTokens
			case "maxCostUsd":
				dst = &o.MaxCostUSD
			case "maxDurationMs":
				dst = &o.MaxDurationMs
			case "warnAt":
				o.WarnAt = r.ratio(path, m.val)
				continue
			default:
				r.unknown(keyBudget, m.key, append(budgetLimits, "warnAt"))
				continue
			}
			*dst = readLimit(r, path, m.val)
			limits++
		}
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	if !budgetOn {
		o.MaxTotalTokens, o.MaxInputTokens, o.MaxOutputTokens, o.MaxCostUSD, o.MaxDurationMs = budget.Limit{}, budget.Limit{}, budget.Limit{}, budget.Limit{}, budget.Limit{}
		o.WarnAt, limits = 0, 0
	}
	if !stepsOn && limits == 0 {
		return nil, nil // nothing left to limit
	}
	d, err := budget.New(o)
	return built(d, err, fields{
		"MaxSteps":        keyMaxSteps,
		"MaxTotalTokens":  keyBudget + ".maxTotalTokens",
		"MaxInputTokens":  keyBudget + ".maxInputTokens",
		"MaxOutputTokens": keyBudget + ".maxOutputTokens",
		"MaxCostUSD":      keyBudget + ".maxCostUsd",
		"MaxDurationMs":   keyBudget + ".maxDurationMs",
		"WarnAt":          keyBudget + ".warnAt",
	})
}

// readLimit reads a budget limit: a positive number, or {"limit": N,
// "warnAt": R}.
func readLimit(r *reader, path string, raw json.RawMessage) budget.Limit {
	if kindOf(raw) != "an object" {
		return budget.Limit{Value: r.positive(path, raw)}
	}
	ms, ok := r.object(path, raw)
	if !ok {
		return budget.Limit{}
	}
	var l budget.Limit
	hasLimit := false
	for _, m := range ms {
		switch m.key {
		case "limit":
			l.Value, hasLimit = r.positive(join(path, m.key), m.val), true
		case "warnAt":
			l.WarnAt = r.ratio(join(path, m.key), m.val)
		default:
			r.unknown(path, m.key, []string{"limit", "warnAt"})
		}
	}
	if !hasLimit {
		r.failf(join(path, "limit"), "missing: a limit object needs a positive limit")
	}
	return l
}

// buildToolLimit builds the caps of tools.<name>.maxCalls; "toolLimit" holds
// the options of all caps ({"warn": true}), or false to switch them off.
func buildToolLimit(in Input) (rule.Rule, error) {
	r := &reader{det: toollimit.Name}
	var o toollimit.Options
	on := true
	if raw, ok := in.Values[keyToolLimit]; ok {
		var ms []member
		ms, on = r.section(keyToolLimit, raw)
		for _, m := range ms {
			path := join(keyToolLimit, m.key)
			switch m.key {
			case fieldWarn:
				o.Warn = r.boolean(path, m.val)
			default:
				r.unknown(keyToolLimit, m.key, []string{fieldWarn})
			}
		}
	}
	caps := make(map[string]int, len(in.Tools))
	for _, tool := range sortedMapKeys(in.Tools) {
		if raw, ok := in.Tools[tool][fieldMaxCalls]; ok {
			caps[tool] = r.integer(join(join(ToolsKey, tool), fieldMaxCalls), raw, 0)
		}
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	if len(caps) == 0 || !on {
		return nil, nil
	}
	o.MaxCalls = caps
	d, err := toollimit.New(o)
	return built(d, err, fields{"MaxCalls": ToolsKey, "Warn": keyToolLimit + ".warn"})
}

func buildRepeat(in Input) (rule.Rule, error) {
	r := &reader{det: repeat.Name}
	var o repeat.Options
	on := true
	if raw, ok := in.Values[keyRepeat]; ok {
		var ms []member
		ms, on = r.section(keyRepeat, raw)
		for _, m := range ms {
			path := join(keyRepeat, m.key)
			switch m.key {
			case "threshold":
				o.Threshold = r.integer(path, m.val, 2)
			case "requireIdenticalResults":
				o.RequireIdenticalResults = r.boolean(path, m.val)
			case "ignoreErrors":
				o.IgnoreErrors = r.boolean(path, m.val)
			case fieldWarn:
				o.Warn = r.boolean(path, m.val)
			default:
				r.unknown(keyRepeat, m.key, []string{"ignoreErrors", "requireIdenticalResults", "threshold", fieldWarn})
			}
		}
	}
	for _, tool := range sortedMapKeys(in.Tools) {
		tpath := join(ToolsKey, tool)
		var p repeat.ToolPolicy
		for _, field := range sortedMapKeys(in.Tools[tool]) {
			raw, path := in.Tools[tool][field], join(tpath, field)
			switch field {
			case fieldRepeatThreshold:
				p.RepeatThreshold = r.integer(path, raw, 2)
			case fieldPolling:
				p.Polling, p.MaxIdenticalResults = readPolling(r, path, raw)
			}
		}
		if p != (repeat.ToolPolicy{}) { // a policy that changes nothing is left out
			if o.Tools == nil {
				o.Tools = make(map[string]repeat.ToolPolicy)
			}
			o.Tools[tool] = p
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := repeat.New(o)
	return built(d, err, fields{
		"Threshold":               keyRepeat + ".threshold",
		"RequireIdenticalResults": keyRepeat + ".requireIdenticalResults",
		"IgnoreErrors":            keyRepeat + ".ignoreErrors",
		"Warn":                    keyRepeat + ".warn",
		"Tools":                   ToolsKey,
	})
}

// readPolling reads a polling policy: true, false or {"maxIdenticalResults":
// N}.
func readPolling(r *reader, path string, raw json.RawMessage) (polling bool, maxIdentical int) {
	if kindOf(raw) != "an object" {
		if kindOf(raw) != "a boolean" {
			r.failf(path, "must be true, false or an object, not %s", kindOf(raw))
			return false, 0
		}
		return r.boolean(path, raw), 0
	}
	ms, ok := r.object(path, raw)
	if !ok {
		return false, 0
	}
	for _, m := range ms {
		if m.key == "maxIdenticalResults" {
			maxIdentical = r.integer(join(path, m.key), m.val, 2)
			continue
		}
		r.unknown(path, m.key, []string{"maxIdenticalResults"})
	}
	return true, maxIdentical
}

func buildOscillation(in Input) (rule.Rule, error) {
	r := &reader{det: oscillation.Name}
	var o oscillation.Options
	on := true
	if raw, ok := in.Values[keyOscillation]; ok {
		var ms []member
		ms, on = r.section(keyOscillation, raw)
		for _, m := range ms {
			path := join(keyOscillation, m.key)
			switch m.key {
			case "maxPeriod":
				if o.MaxPeriod = r.integer(path, m.val, 2); o.MaxPeriod > oscillation.MaxMaxPeriod {
					r.failf(path, "must be at most %d, not %d", oscillation.MaxMaxPeriod, o.MaxPeriod)
				}
			case "repeats":
				o.Repeats = r.integer(path, m.val, 2)
			case "requireIdenticalResults":
				o.RequireIdenticalResults = r.boolean(path, m.val)
			case fieldWarn:
				o.Warn = r.boolean(path, m.val)
			default:
				r.unknown(keyOscillation, m.key, []string{"maxPeriod", "repeats", "requireIdenticalResults", fieldWarn})
			}
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := oscillation.New(o)
	return built(d, err, fields{"MaxPeriod": keyOscillation + ".maxPeriod", "Repeats": keyOscillation + ".repeats",
		"RequireIdenticalResults": keyOscillation + ".requireIdenticalResults", "Warn": keyOscillation + ".warn"})
}

func buildNoProgress(in Input) (rule.Rule, error) {
	r := &reader{det: noprogress.Name}
	var o noprogress.Options
	on := true
	if raw, ok := in.Values[keyNoProgress]; ok {
		var ms []member
		ms, on = r.section(keyNoProgress, raw)
		for _, m := range ms {
			path := join(keyNoProgress, m.key)
			switch m.key {
			case "threshold":
				o.Threshold = r.integer(path, m.val, 2)
			case fieldWarn:
				o.Warn = r.boolean(path, m.val)
			default:
				r.unknown(keyNoProgress, m.key, []string{"threshold", fieldWarn})
			}
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := noprogress.New(o)
	return built(d, err, fields{"Threshold": keyNoProgress + ".threshold", "Window": keyNoProgress, "Warn": keyNoProgress + ".warn"})
}

// buildWindow builds the windowed repeat rule, which is off unless "window"
// is present: true for its defaults, or {"window": N, "threshold": M,
// "warn": b, "compare": "outcome" | "call"}.
func buildWindow(in Input) (rule.Rule, error) {
	r := &reader{det: window.Name}
	var o window.Options
	ms, on := r.section(keyWindow, in.Values[keyWindow])
	for _, m := range ms {
		path := join(keyWindow, m.key)
		switch m.key {
		case "window":
			if o.Window = r.integer(path, m.val, 2); o.Window > window.MaxWindow {
				r.failf(path, "must be at most %d, not %d", window.MaxWindow, o.Window)
			}
		case "threshold":
			o.Threshold = r.integer(path, m.val, 2)
		case fieldWarn:
			o.Warn = r.boolean(path, m.val)
		case "compare":
			if s, ok := r.str(path, m.val); ok {
				switch s {
				case window.CompareOutcome, window.CompareCall:
					o.Compare = s
				default:
					r.failf(path, "must be %q or %q, not %q", window.CompareOutcome, window.CompareCall, s)
				}
			}
		default:
			r.unknown(keyWindow, m.key, []string{"compare", "threshold", fieldWarn, "window"})
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := window.New(o)
	return built(d, err, fields{"Window": keyWindow + ".window", "Threshold": keyWindow + ".threshold", "Warn": keyWindow + ".warn",
		"Compare": keyWindow + ".compare"})
}

// buildFailure builds the repeated-failure rule: absent or true for its
// defaults, {"threshold": N, "window": M, "warn": b}, or false.
func buildFailure(in Input) (rule.Rule, error) {
	r := &reader{det: failure.Name}
	ms, on := r.optionalSection(keyFailure, in.Values)
	var o failure.Options
	var rest []member
	for _, m := range ms {
		if m.key == fieldSameCall {
			o.SameCall = r.integer(join(keyFailure, m.key), m.val, 2)
			continue
		}
		rest = append(rest, m)
	}
	o.Threshold, o.Window, o.Warn = r.countInWindow(keyFailure, rest, failure.MaxWindow, fieldSameCall)
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := failure.New(o)
	return built(d, err, fields{"Window": keyFailure + ".window", "Threshold": keyFailure + ".threshold",
		"SameCall": keyFailure + "." + fieldSameCall, "Warn": keyFailure + ".warn"})
}

// buildText builds the repeated-text rule: absent or true for its defaults,
// {"threshold": N, "window": M, "warn": b}, or false.
func buildText(in Input) (rule.Rule, error) {
	r := &reader{det: text.Name}
	ms, on := r.optionalSection(keyText, in.Values)
	var o text.Options
	o.Threshold, o.Window, o.Warn = r.countInWindow(keyText, ms, text.MaxWindow)
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := text.New(o)
	return built(d, err, fields{"Window": keyText + ".window", "Threshold": keyText + ".threshold", "Warn": keyText + ".warn"})
}

// countInWindow reads the section key of a rule that counts repeats within
// a window: "threshold" (at least 2), "window" (2 to maxWindow) and "warn";
// more are the rule's other keys, read by its caller, for the message of an
// unknown key.
func (r *reader) countInWindow(key string, ms []member, maxWindow int, more ...string) (threshold, window int, warn bool) {
	for _, m := range ms {
		path := join(key, m.key)
		switch m.key {
		case "window":
			if window = r.integer(path, m.val, 2); window > maxWindow {
				r.failf(path, "must be at most %d, not %d", maxWindow, window)
			}
		case "threshold":
			threshold = r.integer(path, m.val, 2)
		case fieldWarn:
			warn = r.boolean(path, m.val)
		default:
			known := append([]string{"threshold", fieldWarn, "window"}, more...)
			slices.Sort(known)
			r.unknown(key, m.key, known)
		}
	}
	return threshold, window, warn
}

// buildRefusal builds the repeated-refusal rule: absent or true for its
// defaults, {"threshold": N, "warn": b}, or false.
func buildRefusal(in Input) (rule.Rule, error) {
	r := &reader{det: refusal.Name}
	var o refusal.Options
	ms, on := r.optionalSection(keyRefusal, in.Values)
	for _, m := range ms {
		path := join(keyRefusal, m.key)
		switch m.key {
		case "threshold":
			o.Threshold = r.integer(path, m.val, 2)
		case fieldWarn:
			o.Warn = r.boolean(path, m.val)
		default:
			r.unknown(keyRefusal, m.key, []string{"threshold", fieldWarn})
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := refusal.New(o)
	return built(d, err, fields{"Threshold": keyRefusal + ".threshold", "Warn": keyRefusal + ".warn"})
}

// buildStall builds the stall rule, which is off unless "stall" is present:
// true for its defaults, or {"threshold": N, "warn": b}.
func buildStall(in Input) (rule.Rule, error) {
	r := &reader{det: stall.Name}
	var o stall.Options
	ms, on := r.section(keyStall, in.Values[keyStall])
	for _, m := range ms {
		path := join(keyStall, m.key)
		switch m.key {
		case "threshold":
			o.Threshold = r.integer(path, m.val, 2)
		case fieldWarn:
			o.Warn = r.boolean(path, m.val)
		default:
			r.unknown(keyStall, m.key, []string{"threshold", fieldWarn})
		}
	}
	if err := r.err(); err != nil || !on {
		return nil, err
	}
	d, err := stall.New(o)
	return built(d, err, fields{"Threshold": keyStall + ".threshold", "Window": keyStall, "Warn": keyStall + ".warn"})
}
