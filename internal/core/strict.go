package core

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/loopguard/loopguard/internal/strictjson"
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
	k := keyChecker{data: data, presize: true}
	if err := k.check(t.Elem()); err != nil {
		return err
	}
	presize(reflect.ValueOf(v), &k)
	return json.Unmarshal(data, v)
}

// check checks the object keys of the JSON text against the type t that it
// will be decoded into (nil for any value): exact spelling, no duplicates
// and no key that no field reads. Values whose type decodes itself
// (json.Unmarshaler, TextUnmarshaler) are only checked for duplicate keys.
// It reads the text without decoding any value, and reports text that is not
// JSON as an error.
func (k *keyChecker) check(t reflect.Type) error {
	if err := k.value(t); err != nil {
		return err
	}
	if k.space(); k.i != len(k.data) {
		return k.invalid()
	}
	return nil
}

type keyChecker struct {
	data  []byte
	i     int
	depth int                        // arrays and objects open
	keys  strictjson.Keys            // of the objects open
	path  strictjson.Stack[pathStep] // to the value being checked

	// presize is set when sizes is wanted: the number of elements of each
	// array that sets a slice field of the top-level struct.
	presize bool
	sizes   strictjson.Stack[fieldSize]
	// top is the struct type of the top-level object, when the text is one
	// and v decodes into a struct (through pointers).
	top reflect.Type
	// n is the number of elements of the array value just checked, -1 for
	// another value.
	n int
}

// fieldSize is the number of elements of the array that a field sets.
type fieldSize struct {
	field, n int
}

// maxPresize is the most elements presize makes room for: beyond, the slice
// grows as encoding/json reads it, so that a long array of the wrong
// elements costs no more memory than it did.
const maxPresize = 4096

// presize makes room, in the value that v points to, for the elements of
// the arrays that set the slice fields of its top-level struct, so that
// encoding/json appends to them without growing them step by step. The
// result of decoding is the same: json.Unmarshal decodes into the struct a
// pointer already points to, and appends to a slice from length 0.
func presize(v reflect.Value, k *keyChecker) {
	if k.top == nil || k.sizes.Len() == 0 || v.IsNil() {
		return
	}
	e := v.Elem()
	for e.Kind() == reflect.Pointer {
		if e.IsNil() {
			e.Set(reflect.New(e.Type().Elem()))
		}
		e = e.Elem()
	}
	if e.Type() != k.top {
		return
	}
	for i := range k.sizes.Len() {
		fs := k.sizes.At(i)
		f := e.Field(fs.field)
		if f.Kind() == reflect.Slice && f.Cap() < fs.n && fs.n <= maxPresize {
			f.Set(reflect.MakeSlice(f.Type(), 0, fs.n))
		}
	}
}

// The keys of one object are looked up in a list up to a few, in a map
// beyond.
const listedKeys = strictjson.ListedKeys

// pathStep is one step of the path to the value being checked: a key, or for
// an array element its index (key nil).
type pathStep struct {
	key   []byte
	index int
}

// where returns the path of the value being checked, for an error.
func (k *keyChecker) where() string {
	var b strings.Builder
	for i := range k.path.Len() {
		p := k.path.At(i)
		switch {
		case p.key == nil:
			fmt.Fprintf(&b, "[%d]", p.index)
		case i > 0:
			b.WriteString("." + string(p.key))
		default:
			b.Write(p.key)
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
	name  string
	typ   reflect.Type
	index int
}

// fieldCache holds the fields of the struct types checked so far
// (reflect.Type to []field): listing them allocates (reflect.Type.Field
// does), and the same few state types are checked on every restore. Like
// encoding/json's own cache of fields, it only ever holds what a type
// determines.
var fieldCache sync.Map

// fieldsOf lists the JSON keys of struct type t, as encoding/json names its
// fields (embedded structs are not flattened: the states have none).
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	out := make([]field, 0, t.NumField())
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
		out = append(out, field{name, f.Type, i})
	}
	fs, _ := fieldCache.LoadOrStore(t, out)
	return fs.([]field)
}

func (k *keyChecker) invalid() error {
	return fmt.Errorf("guard: state: not valid JSON (at byte %d)", k.i)
}

func (k *keyChecker) space() { k.i = strictjson.SkipSpace(k.data, k.i) }

// str reads a string whose '"' is next and returns its raw contents and
// whether they hold an escape. Long runs without a quote or a backslash
// (such as base64 text) are skipped with bytes.IndexByte.
func (k *keyChecker) str() (raw []byte, escaped bool, err error) {
	start := k.i + 1
	for i := start; i < len(k.data); {
		q := bytes.IndexByte(k.data[i:], '"')
		if q < 0 {
			break
		}
		b := bytes.IndexByte(k.data[i:i+q], '\\')
		if b < 0 {
			k.i = i + q + 1
			return k.data[start : i+q], escaped, nil
		}
		escaped = true
		i += b + 2 // the backslash and the character it escapes
	}
	k.i = len(k.data)
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
		if k.depth++; k.depth > maxJSONDepth {
			return fmt.Errorf("guard: state: nested deeper than %d levels", maxJSONDepth)
		}
		defer func() { k.depth-- }()
	}
	switch k.data[k.i] {
	case '{':
		k.i++
		if k.depth == 1 && t != nil && t.Kind() == reflect.Struct && k.presize {
			k.top = t
		}
		err := k.object(t)
		k.n = -1
		return err
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
			k.path.Push(pathStep{index: n})
			err := k.value(elem)
			k.path.Truncate(k.path.Len() - 1)
			if err != nil {
				return err
			}
			if k.space(); k.i >= len(k.data) {
				return k.invalid()
			}
			c := k.data[k.i]
			k.i++
			if c == ']' {
				k.n = n + 1
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
	keys := k.keys.Open()
	defer k.keys.Close(keys)
	for {
		if k.space(); k.i >= len(k.data) || k.data[k.i] != '"' {
			return k.invalid()
		}
		key, escaped, err := k.str()
		if err != nil {
			return err
		}
		if escaped {
			var unquoted string
			if json.Unmarshal(k.data[k.i-len(key)-2:k.i], &unquoted) != nil {
				return k.invalid()
			}
			key = []byte(unquoted)
		}
		k.path.Push(pathStep{key: key})
		if k.keys.Add(&keys, key) {
			return fmt.Errorf("guard: state: key %q appears twice", k.where())
		}
		vt := elem
		at := -1 // the index of the struct field the key sets
		if isStruct {
			vt = nil
			known := false
			for _, f := range fields {
				if f.name == string(key) {
					vt, known, at = f.typ, true, f.index
					break
				}
			}
			if !known {
				for _, f := range fields {
					if strings.EqualFold(f.name, string(key)) {
						return fmt.Errorf("guard: state: key %q is not spelt %q", k.where(), f.name)
					}
				}
				return fmt.Errorf("guard: state: unknown key %q", k.where())
			}
		}
		if k.space(); k.i >= len(k.data) || k.data[k.i] != ':' {
			return k.invalid()
		}
		k.i++
		k.n = -1
		if err := k.value(vt); err != nil {
			return err
		}
		if at >= 0 && k.n > 0 && k.depth == 1 && k.top == t && t != nil {
			k.sizes.Push(fieldSize{field: at, n: k.n})
		}
		k.path.Truncate(k.path.Len() - 1)
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
