package guardtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// cloneStep returns a deep copy of s: new slices, maps and pointed-to values
// all the way down, cycles kept as cycles. Functions and channels are shared;
// unexported fields are copied as they are.
func cloneStep(s rule.Step) rule.Step {
	var out rule.Step
	c := cloner{}
	reflect.ValueOf(&out).Elem().Set(c.clone(reflect.ValueOf(s)))
	return out
}

// cloneCalls returns a deep copy of calls.
func cloneCalls(calls []rule.ToolCall) []rule.ToolCall {
	return cloneStep(rule.Step{ToolCalls: calls}).ToolCalls
}

type visit struct {
	ptr unsafe.Pointer
	typ reflect.Type
	n   int // the length of a slice
}

type cloner map[visit]reflect.Value

func (c cloner) clone(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		key := visit{v.UnsafePointer(), v.Type(), 0}
		if done, ok := c[key]; ok {
			return done
		}
		n := reflect.New(v.Type().Elem())
		c[key] = n
		n.Elem().Set(c.clone(v.Elem()))
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		key := visit{v.UnsafePointer(), v.Type(), 0}
		if done, ok := c[key]; ok {
			return done
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		c[key] = n
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(it.Key(), c.clone(it.Value()))
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		key := visit{v.UnsafePointer(), v.Type(), v.Len()}
		if done, ok := c[key]; ok {
			return done
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		c[key] = n
		for i := range v.Len() {
			n.Index(i).Set(c.clone(v.Index(i)))
		}
		return n
	case reflect.Array:
		n := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			n.Index(i).Set(c.clone(v.Index(i)))
		}
		return n
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(c.clone(v.Elem()))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := range v.NumField() {
			if f := n.Field(i); f.CanSet() {
				f.Set(c.clone(v.Field(i)))
			}
		}
		return n
	}
	return v
}

// equalValues reports whether a and b are deeply equal, and if not, the path
// of the first difference. Unlike reflect.DeepEqual, NaN equals NaN (a copy
// of a step with a NaN cost is equal to it), and unexported fields are
// compared too.
func equalValues(a, b any) (path string, equal bool) {
	e := equaler{seen: map[[2]visit]bool{}}
	ok := e.equal(reflect.ValueOf(a), reflect.ValueOf(b))
	return e.path, ok
}

type equaler struct {
	seen map[[2]visit]bool
	path string
}

func (e *equaler) differ(path string) bool {
	e.path = path
	return false
}

func (e *equaler) equal(a, b reflect.Value) bool { return e.at(a, b, "") }

func (e *equaler) at(a, b reflect.Value, path string) bool {
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			return e.differ(path)
		}
		return true
	}
	if a.Type() != b.Type() {
		return e.differ(path)
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return e.differ(path)
			}
			return true
		}
		if a.Kind() == reflect.Slice && a.Len() != b.Len() {
			return e.differ(path)
		}
		if a.Kind() == reflect.Map && a.Len() != b.Len() {
			return e.differ(path)
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		key := [2]visit{{a.UnsafePointer(), a.Type(), lenOf(a)}, {b.UnsafePointer(), b.Type(), lenOf(b)}}
		if e.seen[key] {
			return true
		}
		e.seen[key] = true
	}
	switch a.Kind() {
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return e.differ(path)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return e.differ(path)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return e.differ(path)
		}
	case reflect.Float32, reflect.Float64:
		if !sameFloat(a.Float(), b.Float()) {
			return e.differ(path)
		}
	case reflect.Complex64, reflect.Complex128:
		if !sameFloat(real(a.Complex()), real(b.Complex())) || !sameFloat(imag(a.Complex()), imag(b.Complex())) {
			return e.differ(path)
		}
	case reflect.String:
		if a.String() != b.String() {
			return e.differ(path)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if a.Pointer() != b.Pointer() {
			return e.differ(path)
		}
	case reflect.Pointer:
		return e.at(a.Elem(), b.Elem(), path)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return e.differ(path)
			}
			return true
		}
		return e.at(a.Elem(), b.Elem(), path)
	case reflect.Slice, reflect.Array:
		for i := range a.Len() {
			if !e.at(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)) {
				return false
			}
		}
	case reflect.Map:
		for it := a.MapRange(); it.Next(); {
			bv := b.MapIndex(it.Key())
			p := fmt.Sprintf("%s[%#v]", path, printable(it.Key()))
			if !bv.IsValid() || !e.at(it.Value(), bv, p) {
				return e.differ(p)
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			p := path + "." + a.Type().Field(i).Name
			if path == "" {
				p = a.Type().Field(i).Name
			}
			if !e.at(a.Field(i), b.Field(i), p) {
				return false
			}
		}
	}
	return true
}

func lenOf(v reflect.Value) int {
	if v.Kind() == reflect.Slice {
		return v.Len()
	}
	return 0
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// printable returns a map key for a path: its value when it can be read.
func printable(k reflect.Value) any {
	if k.CanInterface() {
		return k.Interface()
	}
	return k.String()
}

// normalised returns v as encoding/json reads it back: every field, so that
// typed evidence and evidence restored from JSON compare equal, and so do a
// text that is not UTF-8 and the same text with its bad bytes replaced (JSON
// cannot tell them apart). A verdict that cannot be written as JSON is
// returned as it is.
func normalised(v rule.Verdict) any {
	type plain rule.Verdict
	b, err := json.Marshal(plain(v))
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// sameVerdict reports whether a and b are equal as JSON documents.
func sameVerdict(a, b rule.Verdict) bool {
	return reflect.DeepEqual(a, b) || reflect.DeepEqual(normalised(a), normalised(b))
}

func sameDecision(a, b guard.Decision) bool {
	return a.Allow == b.Allow && sameVerdict(a.Verdict(), b.Verdict())
}

// sameJSON reports whether a and b are the same JSON value: equal bytes, or
// the same value written another way (keys in another order, escapes).
// Numbers must be written alike.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, oka := decodeJSON(a)
	vb, okb := decodeJSON(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

func decodeJSON(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return nil, false
	}
	return v, true
}

// sameStop reports whether a and b decide the same way: the same stop, the
// same rule.
func sameStop(a, b rule.Verdict) bool {
	return a.Stop == b.Stop && a.Reason == b.Reason && a.Code == b.Code && a.Detector == b.Detector
}

// showVerdict writes every field of v.
func showVerdict(v rule.Verdict) string {
	type plain rule.Verdict
	b, err := json.Marshal(plain(v))
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func showDecision(d guard.Decision) string {
	type plain guard.Decision
	b, err := json.Marshal(plain(d))
	if err != nil {
		return fmt.Sprintf("%+v", d)
	}
	return string(b)
}

// maxShown is the most bytes of a snapshot, step or value a message quotes.
const maxShown = 600

func cut(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:maxShown], len(s))
}

// showBytes quotes a snapshot.
func showBytes(b []byte) string { return cut(string(b)) }

// showStep writes a step in loopguard's JSON shape (values that cannot be
// written as JSON are left out, and usage numbers that JSON cannot hold are
// written apart).
func showStep(s rule.Step) (out string) {
	defer func() {
		if recover() != nil {
			out = cut(fmt.Sprintf("%+v", s))
		}
	}()
	b, err := json.Marshal(s)
	if err != nil {
		u := s.Usage
		s.Usage = rule.Usage{}
		if b, err = json.Marshal(s); err != nil {
			return cut(fmt.Sprintf("%+v", s))
		}
		return cut(fmt.Sprintf("%s with usage %+v", b, u))
	}
	return cut(string(b))
}

func showCalls(calls []rule.ToolCall) string {
	s := showStep(rule.Step{ToolCalls: calls})
	if i := strings.Index(s, `"toolCalls":`); i >= 0 {
		s = strings.TrimSuffix(s[i+len(`"toolCalls":`):], "}")
	}
	return s
}

func showRun(run []rule.Step) string {
	if len(run) == 0 {
		return "  (no steps)"
	}
	var b strings.Builder
	for i, s := range run {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  step %d: %s", i, showStep(s))
	}
	return b.String()
}

func showJSON(v any) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("(cannot be written as JSON: %v)", r)
		}
	}()
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(cannot be written as JSON: %v)", err)
	}
	return cut(string(b))
}
