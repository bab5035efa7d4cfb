// Package options reads the JSON options document of package detector's
// registry strictly, for the registry itself and for the Build functions of
// the rules' specs (detector/<rule>.Spec): objects are read key by key
// (exact, case-sensitive names, duplicates rejected), and every problem is a
// *rule.OptionError that names its path in the document.
package options

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

// ToolsKey is the top-level key of the per-tool policies (detector.ToolsKey),
// where errors about the tool fields of a rule start their paths.
const ToolsKey = "tools"

// errUnknown is the error of an option nobody reads.
var errUnknown = errors.New("unknown option")

// A Member is one key of a JSON object and its value.
type Member = strictjson.Member

// Object returns the members of the JSON object raw, sorted by key. A key
// that appears twice is an error: encoding/json would silently keep the last.
func Object(raw json.RawMessage) ([]Member, error) {
	ms, err := strictjson.Object(raw)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	return ms, nil
}

// Kind names the JSON type of raw for error messages ("an object").
func Kind(raw json.RawMessage) string { return strictjson.Kind(raw) }

// IsLiteral reports whether raw is the JSON literal lit (true, false, null).
func IsLiteral(raw json.RawMessage, lit string) bool { return strictjson.IsLiteral(raw, lit) }

// Join makes the path of a key inside the object at path (see
// [strictjson.Join]).
func Join(path, key string) string { return strictjson.Join(path, key) }

// SortedKeys returns the keys of m, sorted.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A Reader reads the options of one rule and gathers its problems.
type Reader struct {
	rule string // the rule the options belong to ("" for the guard's own)
	errs []error
}

// NewReader returns a reader whose errors name the rule (its Name, "" for
// the guard's own options).
func NewReader(rule string) *Reader { return &Reader{rule: rule} }

// Fail records a problem with the option at path.
func (r *Reader) Fail(path string, err error) {
	r.errs = append(r.errs, &rule.OptionError{Detector: r.rule, Field: path, Err: err})
}

// Failf records a problem with the option at path, formatted as by
// [fmt.Errorf].
func (r *Reader) Failf(path, format string, args ...any) {
	r.Fail(path, fmt.Errorf(format, args...))
}

// Errs returns the problems found so far, in the order they were found.
func (r *Reader) Errs() []error { return slices.Clone(r.errs) }

// Err returns the problems found so far, joined, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

// Unknown records an option that nobody reads, suggesting the known name it
// was probably meant to be.
func (r *Reader) Unknown(path, key string, known []string) {
	if s := strictjson.Suggest(key, known); s != "" {
		r.Fail(Join(path, key), fmt.Errorf("%w (did you mean %q?)", errUnknown, s))
		return
	}
	r.Fail(Join(path, key), errUnknown)
}

// Object reads the object at path; ok is false (and a problem recorded) when
// raw is not one.
func (r *Reader) Object(path string, raw json.RawMessage) ([]Member, bool) {
	if Kind(raw) != "an object" {
		r.Failf(path, "must be an object, not %s", Kind(raw))
		return nil, false
	}
	ms, err := Object(raw)
	if err != nil {
		r.Fail(path, err)
		return nil, false
	}
	return ms, true
}

// Section reads a rule's section, which is true (defaults), false (off) or
// an object. It reports whether the rule is on, and the object's members. A
// wrong type counts as on, so that the other options are checked too.
func (r *Reader) Section(path string, raw json.RawMessage) (ms []Member, on bool) {
	switch {
	case IsLiteral(raw, "true"):
		return nil, true
	case IsLiteral(raw, "false"):
		return nil, false
	case Kind(raw) == "an object":
		ms, _ = r.Object(path, raw)
		return ms, true
	}
	r.Failf(path, "must be an object, true or false, not %s", Kind(raw))
	return nil, true
}

// OptionalSection reads the section key of a rule that is on by default: an
// absent key is on with its defaults, and otherwise the key reads as
// [Reader.Section] reads it.
func (r *Reader) OptionalSection(key string, values map[string]json.RawMessage) ([]Member, bool) {
	raw, present := values[key]
	if !present {
		return nil, true
	}
	return r.Section(key, raw)
}

// A Field reads the value raw of the option at path.
type Field func(path string, raw json.RawMessage)

// Fields reads the members ms of the object at path: each by the Field of
// its key, in the order of ms. A key without one is unknown, and its error
// suggests the nearest of the keys of fields.
func (r *Reader) Fields(path string, ms []Member, fields map[string]Field) {
	for _, m := range ms {
		read, ok := fields[m.Key]
		if !ok {
			r.Unknown(path, m.Key, SortedKeys(fields))
			continue
		}
		read(Join(path, m.Key), m.Value)
	}
}

// Bool reads true or false.
func (r *Reader) Bool(path string, raw json.RawMessage) bool {
	switch {
	case IsLiteral(raw, "true"):
		return true
	case IsLiteral(raw, "false"):
		return false
	}
	r.Failf(path, "must be true or false, not %s", Kind(raw))
	return false
}

// number reads a finite JSON number.
func (r *Reader) number(path string, raw json.RawMessage, want string) (float64, bool) {
	var f float64
	if Kind(raw) != "a number" {
		r.Failf(path, "must be %s, not %s", want, Kind(raw))
		return 0, false
	}
	if err := json.Unmarshal(raw, &f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		r.Failf(path, "must be %s, not %s", want, bytes.TrimSpace(raw))
		return 0, false
	}
	return f, true
}

// Int reads a whole number that is at least min.
func (r *Reader) Int(path string, raw json.RawMessage, min int) int {
	want := fmt.Sprintf("a whole number >= %d", min)
	f, ok := r.number(path, raw, want)
	if !ok {
		return 0
	}
	if f != math.Trunc(f) || f < float64(min) || f >= float64(math.MaxInt) {
		r.Failf(path, "must be %s, not %s", want, rule.FormatNumber(f))
		return 0
	}
	return int(f)
}

// IntRange reads a whole number from min to max.
func (r *Reader) IntRange(path string, raw json.RawMessage, min, max int) int {
	n := r.Int(path, raw, min)
	if n > max {
		r.Failf(path, "must be at most %d, not %d", max, n)
	}
	return n
}

// Positive reads a number above zero.
func (r *Reader) Positive(path string, raw json.RawMessage) float64 {
	return r.within(path, raw, "a positive number", func(f float64) bool { return f > 0 })
}

// Ratio reads a number from 0 to 1.
func (r *Reader) Ratio(path string, raw json.RawMessage) float64 {
	return r.within(path, raw, "a number from 0 to 1", func(f float64) bool { return f >= 0 && f <= 1 })
}

// within reads a number for which ok holds; want says which in errors.
func (r *Reader) within(path string, raw json.RawMessage, want string, ok func(float64) bool) float64 {
	f, read := r.number(path, raw, want)
	if !read {
		return 0
	}
	if !ok(f) {
		r.Failf(path, "must be %s, not %s", want, rule.FormatNumber(f))
		return 0
	}
	return f
}

// Str reads a string.
func (r *Reader) Str(path string, raw json.RawMessage) (string, bool) {
	var s string
	if Kind(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		r.Failf(path, "must be a string, not %s", Kind(raw))
		return "", false
	}
	return s, true
}

// OneOf reads a string that must be one of allowed; ok is false (and a
// problem recorded) otherwise. The message lists allowed in their order:
// "must be "a" or "b", not "c"".
func (r *Reader) OneOf(path string, raw json.RawMessage, allowed ...string) (s string, ok bool) {
	s, ok = r.Str(path, raw)
	if !ok {
		return "", false
	}
	if slices.Contains(allowed, s) {
		return s, true
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	list := quoted[len(quoted)-1]
	if len(quoted) > 1 {
		list = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + list
	}
	r.Failf(path, "must be %s, not %q", list, s)
	return "", false
}

// Strings reads an array of strings. The result is never nil when the array
// is well formed, so that [] can mean "none".
func (r *Reader) Strings(path string, raw json.RawMessage) []string {
	var items []json.RawMessage
	if Kind(raw) != "an array" || json.Unmarshal(raw, &items) != nil {
		r.Failf(path, "must be an array of strings, not %s", Kind(raw))
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		if s, ok := r.Str(strictjson.Index(path, i), item); ok {
			out = append(out, s)
		}
	}
	return out
}

// SetBool returns the Field that reads true or false into dst.
func (r *Reader) SetBool(dst *bool) Field {
	return func(path string, raw json.RawMessage) { *dst = r.Bool(path, raw) }
}

// SetInt returns the Field that reads a whole number of at least min into
// dst.
func (r *Reader) SetInt(dst *int, min int) Field {
	return func(path string, raw json.RawMessage) { *dst = r.Int(path, raw, min) }
}

// SetIntRange returns the Field that reads a whole number from min to max
// into dst.
func (r *Reader) SetIntRange(dst *int, min, max int) Field {
	return func(path string, raw json.RawMessage) { *dst = r.IntRange(path, raw, min, max) }
}

// SetOneOf returns the Field that reads one of the strings allowed into dst
// (see [Reader.OneOf]).
func SetOneOf[S ~string](r *Reader, dst *S, allowed ...S) Field {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return func(path string, raw json.RawMessage) {
		if s, ok := r.OneOf(path, raw, names...); ok {
			*dst = S(s)
		}
	}
}

// WindowFields returns the fields of a rule that counts repeats within a
// window: "threshold" (at least 2), "window" (2 to maxWindow) and "warn". A
// rule with more keys adds its own to the map.
func (r *Reader) WindowFields(threshold, window *int, warn *bool, maxWindow int) map[string]Field {
	return map[string]Field{
		"threshold": r.SetInt(threshold, 2),
		"window":    r.SetIntRange(window, 2, maxWindow),
		"warn":      r.SetBool(warn),
	}
}

// SectionSpec returns the spec of a rule whose options are the one section
// key of the document: true for its defaults, false for none, or an object
// whose members fields reads into the options O, from which newRule makes the
// rule. The rule is on by default (also without the key) when byDefault is
// set. An error of newRule on the option Threshold names key.threshold (the
// Go name of each field is its key with the first letter upper-cased).
func SectionSpec[O any, R rule.Rule](name, key string, byDefault bool, newRule func(O) (R, error),
	fields func(r *Reader, o *O) map[string]Field) rule.Spec {
	build := func(in rule.Input) (rule.Rule, error) {
		r := NewReader(name)
		var o O
		ms, on := r.OptionalSection(key, in.Values)
		fs := fields(r, &o)
		r.Fields(key, ms, fs)
		if err := r.Err(); err != nil || !on {
			return nil, err
		}
		names := make(Names, len(fs))
		for k := range fs {
			names[strings.ToUpper(k[:1])+k[1:]] = Join(key, k)
		}
		d, err := newRule(o)
		return Built(d, err, names)
	}
	return rule.Spec{Name: name, Keys: []string{key}, Default: byDefault, Build: build}
}

// Names maps the Go names of a rule's options to their paths in the options
// document, so that an error from the rule's constructor names the option as
// the user wrote it.
type Names map[string]string

// Built returns the rule, or the constructor's error with its fields renamed
// to their paths in the document by names.
func Built[T rule.Rule](d T, err error, names Names) (rule.Rule, error) {
	if err != nil {
		return nil, rename(err, names)
	}
	return d, nil
}

// rename rewrites the Field of every *rule.OptionError in err whose leading
// Go name is known.
func rename(err error, names Names) error {
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
