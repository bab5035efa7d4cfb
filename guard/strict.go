package guard

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
// only checked for duplicate keys.
func checkKeys(data []byte, t reflect.Type, unknown bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	k := keyChecker{dec: dec, unknown: unknown}
	if err := k.value(t, ""); err != nil {
		return err
	}
	return nil
}

type keyChecker struct {
	dec     *json.Decoder
	unknown bool
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

// value checks the next value of the stream, to be decoded into t (nil for
// any). path names it in errors.
func (k *keyChecker) value(t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		if decodesItself(t) {
			break
		}
		t = t.Elem()
	}
	if t != nil && (decodesItself(t) || t.Kind() == reflect.Interface) {
		t = nil
	}
	tok, err := k.dec.Token()
	if err != nil {
		return fmt.Errorf("guard: state: %v", err)
	}
	switch tok {
	case json.Delim('{'):
		return k.object(t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; k.dec.More(); i++ {
			if err := k.value(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := k.dec.Token() // ']'
		return err
	}
	return nil
}

// object checks the members of an object whose '{' was read.
func (k *keyChecker) object(t reflect.Type, path string) error {
	var fields []field
	var elem reflect.Type
	isStruct := t != nil && t.Kind() == reflect.Struct
	switch {
	case isStruct:
		fields = fieldsOf(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := make(map[string]bool)
	for k.dec.More() {
		tok, err := k.dec.Token()
		if err != nil {
			return fmt.Errorf("guard: state: %v", err)
		}
		key, _ := tok.(string)
		at := strings.TrimPrefix(path+"."+key, ".")
		if seen[key] {
			return fmt.Errorf("guard: state: key %q appears twice", cutKey(at))
		}
		seen[key] = true
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
						return fmt.Errorf("guard: state: key %q is not spelt %q", cutKey(at), f.name)
					}
				}
				if !k.unknown {
					return fmt.Errorf("guard: state: unknown key %q", cutKey(at))
				}
			}
		}
		if err := k.value(vt, at); err != nil {
			return err
		}
	}
	_, err := k.dec.Token() // '}'
	return err
}

func cutKey(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
