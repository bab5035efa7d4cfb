package detector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/loopguard/loopguard/internal/strictjson"
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
	read, err := strictjson.Object(raw)
	if err != nil {
		return nil, err
	}
	var ms []member
	for _, m := range read {
		ms = append(ms, member{m.Key, m.Value})
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	return ms, nil
}

// kindOf names the JSON type of raw for error messages.
func kindOf(raw json.RawMessage) string { return strictjson.Kind(raw) }

// isLiteral reports whether raw is the JSON literal lit (true, false, null).
func isLiteral(raw json.RawMessage, lit string) bool { return strictjson.IsLiteral(raw, lit) }

// join makes the path of a key inside the object at path (see
// [strictjson.Join]).
func join(path, key string) string { return strictjson.Join(path, key) }

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
		if s, ok := r.str(strictjson.Index(path, i), item); ok {
			out = append(out, s)
		}
	}
	return out
}

// suggest returns the known name that key was probably meant to be (see
// [strictjson.Suggest]), or "".
func suggest(key string, known []string) string { return strictjson.Suggest(key, known) }
