package detector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/internal/spell"
	"github.com/loopguard/loopguard/rule"
)

// This file holds the strict JSON reading that the registry and the built-in
// entries share: objects are read key by key (exact, case-sensitive names,
// duplicates rejected), and every problem is an *rule.OptionError that names
// its path in the document.

// errUnknown is the error of an option nobody reads.
var errUnknown = errors.New("unknown option")

// A member is one key of a JSON object and its value.
type member struct {
	key string
	val json.RawMessage
}

// readObject returns the members of the JSON object raw, sorted by key. A key
// that appears twice is an error: encoding/json would silently keep the last.
func readObject(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		ms = append(ms, member{key, val})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	return ms, nil
}

// kindOf names the JSON type of raw for error messages.
func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// isLiteral reports whether raw is the JSON literal lit (true, false, null).
func isLiteral(raw json.RawMessage, lit string) bool {
	return string(bytes.TrimSpace(raw)) == lit
}

// join makes the path of a key inside the object at path. Keys that are not
// plain identifiers are quoted, so that a tool named "a.b" cannot be mistaken
// for a nested key.
func join(path, key string) string {
	if !plainKey(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// A reader reads the options of one detector and gathers its problems.
type reader struct {
	det  string // the detector the options belong to ("" for the guard's own)
	errs []error
}

// fail records a problem with the option at path.
func (r *reader) fail(path string, err error) {
	r.errs = append(r.errs, &rule.OptionError{Detector: r.det, Field: path, Err: err})
}

func (r *reader) failf(path, format string, args ...any) {
	r.fail(path, fmt.Errorf(format, args...))
}

// err returns the problems found so far, joined, or nil.
func (r *reader) err() error { return errors.Join(r.errs...) }

// unknown records an option that nobody reads, suggesting the known name it
// was probably meant to be.
func (r *reader) unknown(path, key string, known []string) {
	if s := suggest(key, known); s != "" {
		r.fail(join(path, key), fmt.Errorf("%w (did you mean %q?)", errUnknown, s))
		return
	}
	r.fail(join(path, key), errUnknown)
}

// object reads the object at path; ok is false (and a problem recorded) when
// raw is not one.
func (r *reader) object(path string, raw json.RawMessage) ([]member, bool) {
	if kindOf(raw) != "an object" {
		r.failf(path, "must be an object, not %s", kindOf(raw))
		return nil, false
	}
	ms, err := readObject(raw)
	if err != nil {
		r.fail(path, err)
		return nil, false
	}
	return ms, true
}

// section reads a detector's section, which is true (defaults), false (off)
// or an object. It reports whether the detector is on, and the object's
// members. A wrong type counts as on, so that the other options are checked
// too.
func (r *reader) section(path string, raw json.RawMessage) (ms []member, on bool) {
	switch {
	case isLiteral(raw, "true"):
		return nil, true
	case isLiteral(raw, "false"):
		return nil, false
	case kindOf(raw) == "an object":
		ms, _ = r.object(path, raw)
		return ms, true
	}
	r.failf(path, "must be an object, true or false, not %s", kindOf(raw))
	return nil, true
}

// optionalSection reads the section of a detector that is on by default: an
// absent key is on with its defaults, and otherwise the key reads as
// [reader.section] reads it.
func (r *reader) optionalSection(key string, values map[string]json.RawMessage) ([]member, bool) {
	raw, present := values[key]
	if !present {
		return nil, true
	}
	return r.section(key, raw)
}

// boolean reads true or false.
func (r *reader) boolean(path string, raw json.RawMessage) bool {
	switch {
	case isLiteral(raw, "true"):
		return true
	case isLiteral(raw, "false"):
		return false
	}
	r.failf(path, "must be true or false, not %s", kindOf(raw))
	return false
}

// number reads a finite JSON number.
func (r *reader) number(path string, raw json.RawMessage, want string) (float64, bool) {
	var f float64
	if kindOf(raw) != "a number" {
		r.failf(path, "must be %s, not %s", want, kindOf(raw))
		return 0, false
	}
	if err := json.Unmarshal(raw, &f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		r.failf(path, "must be %s, not %s", want, bytes.TrimSpace(raw))
		return 0, false
	}
	return f, true
}

// integer reads a whole number that is at least min.
func (r *reader) integer(path string, raw json.RawMessage, min int) int {
	want := fmt.Sprintf("a whole number >= %d", min)
	f, ok := r.number(path, raw, want)
	if !ok {
		return 0
	}
	if f != math.Trunc(f) || f < float64(min) || f >= float64(math.MaxInt) {
		r.failf(path, "must be %s, not %s", want, rule.FormatNumber(f))
		return 0
	}
	return int(f)
}

// positive reads a number above zero.
func (r *reader) positive(path string, raw json.RawMessage) float64 {
	const want = "a positive number"
	f, ok := r.number(path, raw, want)
	if !ok {
		return 0
	}
	if f <= 0 {
		r.failf(path, "must be %s, not %s", want, rule.FormatNumber(f))
		return 0
	}
	return f
}

// ratio reads a number from 0 to 1.
func (r *reader) ratio(path string, raw json.RawMessage) float64 {
	const want = "a number from 0 to 1"
	f, ok := r.number(path, raw, want)
	if !ok {
		return 0
	}
	if f < 0 || f > 1 {
		r.failf(path, "must be %s, not %s", want, rule.FormatNumber(f))
		return 0
	}
	return f
}

// str reads a string.
func (r *reader) str(path string, raw json.RawMessage) (string, bool) {
	var s string
	if kindOf(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		r.failf(path, "must be a string, not %s", kindOf(raw))
		return "", false
	}
	return s, true
}

// stringList reads an array of strings. The result is never nil when the array
// is well formed, so that [] can mean "none".
func (r *reader) stringList(path string, raw json.RawMessage) []string {
	var items []json.RawMessage
	if kindOf(raw) != "an array" || json.Unmarshal(raw, &items) != nil {
		r.failf(path, "must be an array of strings, not %s", kindOf(raw))
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		if s, ok := r.str(fmt.Sprintf("%s[%d]", path, i), item); ok {
			out = append(out, s)
		}
	}
	return out
}

// suggest returns the known name that key was probably meant to be: one that
// differs only in case, or by at most two edits for names long enough for
// that to be telling. It returns "" when there is none.
func suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if len(k) < 5 {
			continue
		}
		if d := spell.Distance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
