package guard

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/loopguard/loopguard/canonical"
)

// failWhen marks results as failures by their text. It is built once, in
// New, from Options.FailWhen and ToolOptions.FailWhen.
type failWhen struct {
	all   []*regexp.Regexp
	tools map[string][]*regexp.Regexp // per tool, including all
}

// compileFailWhen compiles the FailWhen patterns; it returns nil when there
// are none, and an *OptionError for each pattern that does not compile.
func compileFailWhen(o *Options) (*failWhen, []error) {
	var errs []error
	compile := func(field string, patterns []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for i, p := range patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				errs = append(errs, &OptionError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err})
				continue
			}
			out = append(out, re)
		}
		return out
	}
	fw := &failWhen{all: compile("FailWhen", o.FailWhen)}
	for _, name := range sortedKeys(o.Tools) {
		if t := o.Tools[name]; len(t.FailWhen) > 0 {
			if fw.tools == nil {
				fw.tools = make(map[string][]*regexp.Regexp)
			}
			fw.tools[name] = append(slices.Clip(fw.all), compile(fmt.Sprintf("Tools[%q].FailWhen", name), t.FailWhen)...)
		}
	}
	if len(fw.all) == 0 && fw.tools == nil {
		return nil, errs
	}
	return fw, errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fails reports whether a result of tool reads as a failure.
func (fw *failWhen) fails(tool string, result any) bool {
	res := fw.all
	if t, ok := fw.tools[tool]; ok {
		res = t
	}
	if len(res) == 0 || result == nil {
		return false
	}
	text := resultText(result)
	for _, re := range res {
		if re.MatchString(text) {
			return true
		}
	}
	return false
}

// Bounds of a failure's signature: how much of the error and of the result
// is read, and which of the arguments' strings are taken out of them.
const (
	failureTextMax = 2048 // bytes of normalised text kept, of each part
	failureReadMax = 8192 // bytes of each part read
	echoMin        = 4    // the shortest argument string taken out
	echoLineMin    = 12   // the shortest line of an argument taken out
	echoMax        = 32   // the most argument strings taken out
	echoArgsMax    = 64 << 10
)

// failureSum returns the signature of a failed call: a hash of its tool's
// name and the normalised text of its error and result (see
// [Call.Failure]).
func failureSum(scratch []byte, tc *ToolCall) ([]byte, canonical.Sum) {
	echoes := argStrings(tc.Args)
	b := scratch[:0]
	b = append(b, kindFailure)
	b = appendUvarintString(b, tc.Name)
	if tc.Err != nil {
		b = appendFailureText(b, errorText(tc.Err), echoes)
	}
	b = append(b, 0)
	if tc.Result != nil {
		b = appendFailureText(b, resultText(tc.Result), echoes)
	}
	return b, canonical.HashBytes(b)
}

func appendUvarintString(b []byte, s string) []byte {
	var n [10]byte
	i := 0
	for x := uint64(len(s)); ; i++ {
		if x < 0x80 {
			n[i] = byte(x)
			i++
			break
		}
		n[i] = byte(x) | 0x80
		x >>= 7
	}
	b = append(b, n[:i]...)
	return append(b, s...)
}

// argStrings returns the strings of a call's arguments that a failure's text
// may echo: every string value of at least echoMin bytes and every line of
// one of at least echoLineMin bytes, longest first, at most echoMax.
func argStrings(args any) []string {
	var raw []byte
	switch a := args.(type) {
	case nil:
		return nil
	case json.RawMessage:
		raw = a
	case string:
		raw, _ = json.Marshal(a)
	default:
		var err error
		if raw, err = marshalSafe(a); err != nil {
			return nil
		}
	}
	if len(raw) > echoArgsMax {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 || len(out) >= 4*echoMax {
			return
		}
		switch x := v.(type) {
		case string:
			if len(x) >= echoMin {
				out = append(out, x)
			}
			if strings.Contains(x, "\n") {
				for _, line := range strings.Split(x, "\n") {
					if line = strings.TrimSpace(line); len(line) >= echoLineMin && line != x {
						out = append(out, line)
					}
				}
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k], depth+1)
			}
		}
	}
	walk(v, 0)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	out = slices.Compact(out)
	if len(out) > echoMax {
		out = out[:echoMax]
	}
	return out
}

// appendFailureText appends the normalised form of a failure's text to dst:
// the arguments' strings it echoes taken out (a run of them, separated only
// by white space, counts as one), lower-cased, numbers, hex ids and
// temporary names made '#', runs of white space made one space. At most
// failureReadMax bytes of s are read and failureTextMax written.
func appendFailureText(dst []byte, s string, echoes []string) []byte {
	if len(s) > failureReadMax {
		s = s[:failureReadMax]
	}
	for _, e := range echoes {
		if strings.Contains(s, e) {
			s = strings.ReplaceAll(s, e, "\x00")
		}
	}
	start := len(dst)
	space := false
	for i := 0; i < len(s) && len(dst)-start < failureTextMax; {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			space = true
			i++
			continue
		case isAlnum(c):
			j := i
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if space && len(dst) > start {
				dst = append(dst, ' ')
			}
			space = false
			dst = appendToken(dst, s[i:j])
			i = j
			continue
		}
		if c == 0 && len(dst) > start && dst[len(dst)-1] == 0 {
			// Runs of echoed strings (the lines of one argument) read
			// as one, however many lines the argument had.
			space = false
			i++
			continue
		}
		if space && len(dst) > start {
			dst = append(dst, ' ')
		}
		space = false
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		dst = append(dst, s[i:i+size]...)
		i += size
	}
	if len(dst)-start > failureTextMax {
		dst = dst[:start+failureTextMax]
	}
	return dst
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// appendToken appends a word of letters, digits and '_', lower-cased, with
// its variable parts made '#': a hex id (at least 6 hex digits, one of them
// a decimal digit, or 0x...) or a temporary name (tmp...) becomes "#", and
// every run of digits elsewhere becomes one '#'.
func appendToken(dst []byte, t string) []byte {
	if isHexID(t) {
		return append(dst, '#')
	}
	if len(t) > 3 && strings.EqualFold(t[:3], "tmp") {
		return append(dst, "tmp#"...)
	}
	digits := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if '0' <= c && c <= '9' {
			if !digits {
				dst = append(dst, '#')
			}
			digits = true
			continue
		}
		digits = false
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func isHexID(t string) bool {
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t = t[2:]
		for i := 0; i < len(t); i++ {
			if !isHex(t[i]) {
				return false
			}
		}
		return true
	}
	if len(t) < 6 {
		return false
	}
	digit := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !isHex(c) {
			return false
		}
		if '0' <= c && c <= '9' {
			digit = true
		}
	}
	return digit
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// opOf returns the operation named by the top-level "command" or "action"
// field of a call's arguments, if it is a short word (see [Call.Op]).
func opOf(args any) (op string) {
	defer func() {
		if recover() != nil {
			op = ""
		}
	}()
	var fields struct {
		Command json.RawMessage `json:"command"`
		Action  json.RawMessage `json:"action"`
	}
	switch a := args.(type) {
	case nil:
		return ""
	case json.RawMessage:
		if json.Unmarshal(a, &fields) != nil {
			return ""
		}
	case map[string]any:
		return word(a["command"], a["action"])
	case map[string]string:
		return word(a["command"], a["action"])
	default:
		raw, err := json.Marshal(a)
		if err != nil || json.Unmarshal(raw, &fields) != nil {
			return ""
		}
	}
	var cmd, act string
	_ = json.Unmarshal(fields.Command, &cmd)
	_ = json.Unmarshal(fields.Action, &act)
	return word(cmd, act)
}

// word returns the first of vs that is a string of 1 to 32 ASCII letters,
// digits, '_' or '-', or "".
func word(vs ...any) string {
	for _, v := range vs {
		s, ok := v.(string)
		if !ok || len(s) == 0 || len(s) > 32 {
			continue
		}
		okWord := true
		for i := 0; i < len(s); i++ {
			if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
				okWord = false
				break
			}
		}
		if okWord {
			return s
		}
	}
	return ""
}
