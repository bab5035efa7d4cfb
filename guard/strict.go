package guard

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// UnmarshalState decodes a detector's state (JSON that the detector's
// Snapshot wrote) into v, as json.Unmarshal does but strictly, so that a
// detector's Restore accepts only what its Snapshot can write: every object
// key must be spelt exactly as the struct field it sets (encoding/json would
// take it in any case) and appear once (encoding/json would keep the last),
// a key that no field reads is an error, and the keys of a map appear once
// each. The built-in detectors read their states with it; a detector of your
// own may too.
func UnmarshalState(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return errors.New("guard: UnmarshalState needs a pointer")
	}
	if err := checkKeys(data, t.Elem(), false); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// checkKeys checks the object keys of the JSON text data against the type t
// that it will be decoded into (nil for any value): exact spelling, no
// duplicates and, unless unknown is set, no key that no field reads.
// Values whose type decodes itself (json.Unmarshaler, TextUnmarshaler) are
// only checked for duplicate keys. It reads the text without decoding any
// value, and reports text that is not JSON as an error.
func checkKeys(data []byte, t reflect.Type, unknown bool) error {
	k := keyChecker{data: data, unknown: unknown}
	if err := k.value(t); err != nil {
		return err
	}
	if k.space(); k.i != len(k.data) {
		return k.invalid()
	}
	return nil
}

type keyChecker struct {
	data    []byte
	i       int
	unknown bool
	depth   int      // arrays and objects open
	keys    []string // the keys of the objects open, in order
	path    []step   // to the value being checked
}

// Limits of the key checker: as deep as encoding/json reads, and the keys
// of one object looked up in a list up to a few, in a map beyond.
const (
	maxCheckDepth = 10_000
	listedKeys    = 16
)

// step is one step of the path to the value being checked: a key, or for an
// array element its index (key "").
type step struct {
	key   string
	index int
}

// where returns the path of the value being checked, for an error.
func (k *keyChecker) where() string {
	var b strings.Builder
	for i, p := range k.path {
		switch {
		case p.key == "":
			fmt.Fprintf(&b, "[%d]", p.index)
		case i > 0:
			b.WriteString("." + p.key)
		default:
			b.WriteString(p.key)
		}
	}
	return cutKey(b.String())
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether values of t decode themselves.
func decodesItself(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer {
		t = reflect.PointerTo(t)
	}
	return t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler)
}

// field is what a key of a struct's object may set.
type field struct {
	name string
	typ  reflect.Type
}

// fieldsOf lists the JSON keys of struct type t, as encoding/json names its
// fields (embedded structs are not flattened: the states have none).
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			tagName, _, _ := strings.Cut(tag, ",")
			if tagName == "-" && !strings.Contains(tag, ",") {
				continue
			}
			if tagName != "" {
				name = tagName
			}
		}
		out = append(out, field{name, f.Type})
	}
	return out
}

func (k *keyChecker) invalid() error {
	return fmt.Errorf("guard: state: not valid JSON (at byte %d)", k.i)
}

func (k *keyChecker) space() {
	for k.i < len(k.data) {
		switch k.data[k.i] {
		case ' ', '\t', '\n', '\r':
			k.i++
		default:
			return
		}
	}
}

// str reads a string whose '"' is next and returns its raw contents and
// whether they hold an escape.
func (k *keyChecker) str() (raw []byte, escaped bool, err error) {
	start := k.i + 1
	for i := start; i < len(k.data); i++ {
		switch k.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			k.i = i + 1
			return k.data[start:i], escaped, nil
		}
	}
	return nil, false, k.invalid()
}

// value checks the next value of the text, to be decoded into t (nil for
// any).
func (k *keyChecker) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		if decodesItself(t) {
			break
		}
		t = t.Elem()
	}
	if t != nil && (decodesItself(t) || t.Kind() == reflect.Interface) {
		t = nil
	}
	k.space()
	if k.i >= len(k.data) {
		return k.invalid()
	}
	switch k.data[k.i] {
	case '{', '[':
		if k.depth++; k.depth > maxCheckDepth {
			return fmt.Errorf("guard: state: nested deeper than %d levels", maxCheckDepth)
		}
		defer func() { k.depth-- }()
	}
	switch k.data[k.i] {
	case '{':
		k.i++
		return k.object(t)
	case '[':
		k.i++
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		if k.space(); k.i < len(k.data) && k.data[k.i] == ']' {
			k.i++
			return nil
		}
		for n := 0; ; n++ {
			k.path = append(k.path, step{index: n})
			err := k.value(elem)
			k.path = k.path[:len(k.path)-1]
			if err != nil {
				return err
			}
			if k.space(); k.i >= len(k.data) {
				return k.invalid()
			}
			c := k.data[k.i]
			k.i++
			if c == ']' {
				return nil
			}
			if c != ',' {
				return k.invalid()
			}
		}
	case '"':
		_, _, err := k.str()
		return err
	}
	// A number or a literal: json.Unmarshal checks it.
	for k.i < len(k.data) {
		switch k.data[k.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		k.i++
	}
	return nil
}

// object checks the members of an object whose '{' was read.
func (k *keyChecker) object(t reflect.Type) error {
	var fields []field
	var elem reflect.Type
	isStruct := t != nil && t.Kind() == reflect.Struct
	switch {
	case isStruct:
		fields = fieldsOf(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	if k.space(); k.i < len(k.data) && k.data[k.i] == '}' {
		k.i++
		return nil
	}
	first := len(k.keys)
	defer func() { k.keys = k.keys[:first] }()
	var seen map[string]bool // once the object has more than listedKeys keys
	for {
		if k.space(); k.i >= len(k.data) || k.data[k.i] != '"' {
			return k.invalid()
		}
		raw, escaped, err := k.str()
		if err != nil {
			return err
		}
		key := string(raw)
		if escaped {
			var unquoted string
			if json.Unmarshal(k.data[k.i-len(raw)-2:k.i], &unquoted) != nil {
				return k.invalid()
			}
			key = unquoted
		}
		k.path = append(k.path, step{key: key})
		where := k.where
		switch {
		case seen != nil:
			if seen[key] {
				return fmt.Errorf("guard: state: key %q appears twice", where())
			}
			seen[key] = true
		case slices.Contains(k.keys[first:], key):
			return fmt.Errorf("guard: state: key %q appears twice", where())
		case len(k.keys)-first == listedKeys:
			seen = make(map[string]bool, 2*listedKeys)
			for _, old := range k.keys[first:] {
				seen[old] = true
			}
			seen[key] = true
		default:
			k.keys = append(k.keys, key)
		}
		vt := elem
		if isStruct {
			vt = nil
			known := false
			for _, f := range fields {
				if f.name == key {
					vt, known = f.typ, true
					break
				}
			}
			if !known {
				for _, f := range fields {
					if strings.EqualFold(f.name, key) {
						return fmt.Errorf("guard: state: key %q is not spelt %q", where(), f.name)
					}
				}
				if !k.unknown {
					return fmt.Errorf("guard: state: unknown key %q", where())
				}
			}
		}
		if k.space(); k.i >= len(k.data) || k.data[k.i] != ':' {
			return k.invalid()
		}
		k.i++
		if err := k.value(vt); err != nil {
			return err
		}
		k.path = k.path[:len(k.path)-1]
		if k.space(); k.i >= len(k.data) {
			return k.invalid()
		}
		c := k.data[k.i]
		k.i++
		if c == '}' {
			return nil
		}
		if c != ',' {
			return k.invalid()
		}
	}
}

func cutKey(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
