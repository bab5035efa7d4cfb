// Package feedback holds what the model-facing texts of loopguard's rules
// share: how a tool's name, counts and lists of tools are written. Each
// rule's own sentences live in its package, beside the rule (the built-in
// rules' in detector/<rule>/feedback.go), and every rule writes them with
// these helpers, so that all texts read alike.
//
// A text is built from fixed sentences, counts, limits and the tool's name,
// and nothing else. It never repeats arguments, results, model text or
// provider strings: those can hold secrets or personal data, and this text is
// sent to a model and ends up in logs and transcripts. A tool name is used
// only when it looks like an ordinary identifier (see [ToolName]).
package feedback

import (
	"math"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/rule"
)

// MaxToolNameLen is the longest tool name the feedback repeats.
const MaxToolNameLen = rule.MaxPlainNameLen

// ThatTool is what the feedback says in place of a tool name it will not
// repeat.
const ThatTool = "that tool"

// ToolName returns name quoted in backticks when it looks like an ordinary
// identifier (1 to 64 ASCII letters, digits and '_', '.', ':', '/', '-'), and
// "that tool" otherwise. The model chooses tool names, so anything else could
// carry text that must not be repeated.
func ToolName(name string) string {
	if !SafeName(name) {
		return ThatTool
	}
	return "`" + name + "`"
}

// SafeName reports whether name may appear in feedback: whether it is a
// [rule.PlainName]. Snapshots taken without previews keep such names too,
// and hash the others.
func SafeName(name string) bool { return rule.PlainName(name) }

// Num writes a count or limit: whole numbers without a fraction, others
// rounded to at most four decimals, and "?" for NaN and infinities.
func Num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "?"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(math.Round(f*1e4)/1e4, 'f', -1, 64)
}

// Times writes how often something happened: "once", "twice", then "3
// times" (the count written by [Num]).
func Times(n float64) string {
	if n == 1 {
		return "once"
	}
	if n == 2 {
		return "twice"
	}
	return Num(n) + " times"
}

// Ordinal writes a rank: "1st", "2nd", "3rd", "4th", "11th", "21st" (the
// count written by [Num]).
func Ordinal(f float64) string {
	n := Num(f)
	switch {
	case strings.HasSuffix(n, "11"), strings.HasSuffix(n, "12"), strings.HasSuffix(n, "13"):
		return n + "th"
	case strings.HasSuffix(n, "1"):
		return n + "st"
	case strings.HasSuffix(n, "2"):
		return n + "nd"
	case strings.HasSuffix(n, "3"):
		return n + "rd"
	}
	return n + "th"
}

// Tools writes tool names as a list, each through [ToolName], each once and
// in order: "`a`", "`a` and `b`", "`a`, `b` and that tool"; [ThatTool] for
// none.
func Tools(names []string) string {
	seen := make(map[string]bool, len(names))
	var out []string
	for _, t := range names {
		n := ToolName(t)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	switch len(out) {
	case 0:
		return ThatTool
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}
