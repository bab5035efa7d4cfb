package canonical

import (
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// This file reads Go values into the canonical encoding, following the
// rules of encoding/json.Marshal, so that a value and its JSON encoding
// have the same canonical form.

// value encodes any Go value. Common types avoid reflection.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case nil:
		e.scalar(tagNull)
	case string:
		e.count++
		e.str(v)
	case bool:
		e.boolean(v)
	case float64:
		e.number(v)
	case int:
		e.number(float64(v))
	case int64:
		e.number(float64(v))
	case json.Number:
		e.jsonNumberValue(string(v))
	case json.RawMessage:
		e.rawMessage(v)
	case map[string]any:
		e.mapStringAny(v)
	case []any:
		e.sliceAny(v)
	default:
		e.reflectValue(reflect.ValueOf(v), false)
	}
}

func (e *encoder) boolean(b bool) {
	if b {
		e.scalar(tagTrue)
	} else {
		e.scalar(tagFalse)
	}
}

// str writes s as a string, or as opaque bytes if it is not UTF-8. The
// caller counts the value.
func (e *encoder) str(s string) { e.buf = appendStr(e.buf, s) }

// appendStr appends the encoding of the string s, or of opaque bytes if it
// is not UTF-8.
func appendStr(b []byte, s string) []byte {
	if !(len(s) <= 16 && isASCII(s)) && !utf8.ValidString(s) {
		return appendOpaque(b, tagInvalidUTF8, unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	b = append(b, tagString)
	b = append(b, s...)
	return append(b, stringEnd)
}

// isASCII reports whether s is ASCII: quicker than utf8.ValidString for
// short strings, such as names.
func isASCII(s string) bool {
	p := unsafe.Slice(unsafe.StringData(s), len(s))
	var or uint64
	for len(p) >= 8 {
		or |= binary.LittleEndian.Uint64(p)
		p = p[8:]
	}
	for _, c := range p {
		or |= uint64(c)
	}
	return or&msb == 0
}

// strBytes is str for a byte slice.
func (e *encoder) strBytes(b []byte) {
	e.str(unsafe.String(unsafe.SliceData(b), len(b)))
}

// rawMessage encodes JSON text embedded in a Go value; text that is not
// valid becomes opaque bytes. A nil RawMessage is null, as in encoding/json.
func (e *encoder) rawMessage(m json.RawMessage) {
	if m == nil {
		e.scalar(tagNull)
		return
	}
	if !e.jsonText(m) {
		e.opaque(tagInvalidJSON, m)
	}
}

// jsonNumberValue encodes a json.Number; the empty one is 0 as in
// encoding/json, and one that is not a JSON number is opaque.
func (e *encoder) jsonNumberValue(s string) {
	if s == "" {
		s = "0"
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	n := len(e.buf)
	if i, ok := e.jsonNumber(b, 0); !ok || i != len(b) {
		e.buf = e.buf[:n]
		e.opaque(tagInvalidJSON, b)
	}
}

func (e *encoder) mapStringAny(m map[string]any) {
	if m == nil {
		e.scalar(tagNull)
		return
	}
	if !e.pushRef(mapStringAnyType, uintptr(reflect.ValueOf(m).UnsafePointer()), 0) {
		return
	}
	defer e.popRef()
	if !e.open() {
		return
	}
	e.depth++
	e.buf = append(e.buf, tagObject)
	mark := len(e.members)
	if e.careful {
		e.sortedMapStringAny(m)
		return
	}
	e.expect(len(m))
	// A big string (a long text beside its type) is left out, and written
	// once the others are sorted, straight into its place (see
	// endObjectAround): sorting would move it.
	begin, big := len(e.buf), false
	var bigName, bigString string
	for k, v := range m {
		e.next()
		s, isString := v.(string)
		if isString && len(s) >= aroundMin && !big {
			e.count++
			big, bigName, bigString = true, k, s
			continue
		}
		e.reserve(64)
		start := len(e.buf)
		e.str(k)
		keyEnd := len(e.buf)
		if isString {
			e.count++
			e.str(s)
		} else {
			e.value(v)
		}
		e.addMember(start, keyEnd)
	}
	e.depth--
	if big {
		e.endObjectAround(begin, mark, bigName, bigString)
		return
	}
	e.endObject(mark, false)
}

func (e *encoder) sliceAny(s []any) {
	if s == nil {
		e.scalar(tagNull)
		return
	}
	if len(s) > 0 {
		if !e.pushRef(sliceAnyType, uintptr(unsafe.Pointer(&s[0])), len(s)) {
			return
		}
		defer e.popRef()
	}
	if !e.open() {
		return
	}
	e.expect(len(s))
	e.depth++
	e.buf = append(e.buf, tagArray)
	for _, v := range s {
		if !e.next() {
			break
		}
		e.reserve(64)
		e.value(v)
	}
	e.depth--
	e.buf = append(e.buf, tagArrayEnd)
}

var (
	mapStringAnyType  = reflect.TypeFor[map[string]any]()
	sliceAnyType      = reflect.TypeFor[[]any]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
)

// reflectValue encodes v; quoted is the ",string" option of the struct
// field v comes from.
func (e *encoder) reflectValue(v reflect.Value, quoted bool) {
	if !v.IsValid() {
		e.scalar(tagNull)
		return
	}
	t := v.Type()
	if t == rawMessageType {
		e.rawMessage(v.Bytes())
		return
	}
	ti := infoOf(t)
	if v.CanInterface() {
		switch {
		case ti.addrMarshaler && v.CanAddr():
			e.marshalJSON(v.Addr())
			return
		case ti.marshaler:
			e.marshalJSON(v)
			return
		case ti.addrTextMarshaler && v.CanAddr():
			e.marshalText(v.Addr())
			return
		case ti.textMarshaler:
			e.marshalText(v)
			return
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		if quoted {
			e.count++
			e.str(strconv.FormatBool(v.Bool()))
			return
		}
		e.boolean(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if quoted {
			e.count++
			e.str(strconv.FormatInt(v.Int(), 10))
			return
		}
		e.number(float64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if quoted {
			e.count++
			e.str(strconv.FormatUint(v.Uint(), 10))
			return
		}
		e.number(float64(v.Uint()))
	case reflect.Float32, reflect.Float64:
		e.float(v.Float(), t.Bits(), quoted)
	case reflect.String:
		s := v.String()
		switch {
		case t == numberType:
			if quoted {
				if s == "" {
					s = "0"
				}
				if isValidNumber(s) {
					e.count++
					e.str(s)
					return
				}
			}
			e.jsonNumberValue(s)
		case quoted && utf8.ValidString(s):
			b, _ := json.Marshal(s) // a string always marshals
			e.count++
			e.strBytes(b)
		default:
			e.count++
			e.str(s)
		}
	case reflect.Interface:
		if v.IsNil() {
			e.scalar(tagNull)
			return
		}
		e.reflectValue(v.Elem(), false)
	case reflect.Pointer:
		if v.IsNil() {
			e.scalar(tagNull)
			return
		}
		if !e.pushRef(t, uintptr(v.UnsafePointer()), 0) {
			return
		}
		if e.hops >= maxTextDepth {
			// A chain of 10,000 distinct pointers: cut it, to bound the
			// recursion.
			e.scalar(tagTooDeep)
		} else {
			e.hops++
			e.reflectValue(v.Elem(), quoted)
			e.hops--
		}
		e.popRef()
	case reflect.Struct:
		e.structValue(v, ti)
	case reflect.Map:
		e.mapValue(v, ti)
	case reflect.Slice:
		if v.IsNil() {
			e.scalar(tagNull)
			return
		}
		if ti.byteSlice {
			e.count++
			e.buf = append(e.buf, tagString)
			e.buf = base64.StdEncoding.AppendEncode(e.buf, v.Bytes())
			e.buf = append(e.buf, stringEnd)
			return
		}
		if v.Len() > 0 {
			if !e.pushRef(t, uintptr(v.UnsafePointer()), v.Len()) {
				return
			}
			defer e.popRef()
		}
		e.array(v)
	case reflect.Array:
		e.array(v)
	case reflect.Complex64, reflect.Complex128:
		e.opaque(tagUnsupported, fmt.Appendf(nil, "%s%v", t, v.Complex()))
	default: // Chan, Func, UnsafePointer
		e.opaque(tagUnsupported, []byte(t.String()))
	}
}

// float encodes a float64, or a float32 as encoding/json prints it: with
// the shortest decimal digits that identify the float32.
func (e *encoder) float(f float64, bits int, quoted bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.number(f)
		return
	}
	if quoted {
		e.count++
		e.strBytes(appendJSONFloat(nil, f, bits))
		return
	}
	if bits == 32 {
		var a [32]byte
		b := strconv.AppendFloat(a[:0], f, 'g', -1, 32)
		f, _ = strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	}
	e.number(f)
}

// appendJSONFloat prints a finite float as encoding/json does.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func (e *encoder) array(v reflect.Value) {
	if !e.open() {
		return
	}
	e.expect(v.Len())
	e.depth++
	e.buf = append(e.buf, tagArray)
	for i, n := 0, v.Len(); i < n; i++ {
		if !e.next() {
			break
		}
		e.reflectValue(v.Index(i), false)
	}
	e.depth--
	e.buf = append(e.buf, tagArrayEnd)
}

func (e *encoder) structValue(v reflect.Value, ti *typeInfo) {
	if !e.open() {
		return
	}
	e.depth++
	e.buf = append(e.buf, tagObject)
	mark := len(e.members)
	truncated := false
fields:
	for i := range ti.fields {
		f := &ti.fields[i]
		fv := v
		for _, x := range f.index {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue fields
				}
				fv = fv.Elem()
			}
			fv = fv.Field(x)
		}
		if f.omitEmpty && isEmptyValue(fv) || f.omitZero && isZero(fv, f) {
			continue
		}
		if !e.next() {
			truncated = true
			e.buf = e.buf[:len(e.buf)-1] // endObject writes the marker
			break
		}
		start := len(e.buf)
		e.buf = append(e.buf, f.key...)
		keyEnd := len(e.buf)
		e.reflectValue(fv, f.quoted)
		e.addMember(start, keyEnd)
	}
	e.depth--
	e.endObject(mark, truncated)
}

// mapValue encodes a map; in careful mode its members are visited in
// canonical order.
func (e *encoder) mapValue(v reflect.Value, ti *typeInfo) {
	if v.IsNil() {
		e.scalar(tagNull)
		return
	}
	if !ti.keysOK {
		e.opaque(tagUnsupported, []byte(v.Type().String()))
		return
	}
	if !e.pushRef(v.Type(), uintptr(v.UnsafePointer()), 0) {
		return
	}
	defer e.popRef()
	if !e.open() {
		return
	}
	start := len(e.buf)
	e.depth++
	e.buf = append(e.buf, tagObject)
	mark := len(e.members)
	if e.careful {
		if !e.sortedMap(v) {
			e.mapFailed(start, mark)
		}
		return
	}
	e.expect(v.Len())
	for it := v.MapRange(); it.Next(); {
		e.next()
		e.reserve(64)
		kstart := len(e.buf)
		if !e.mapKey(it.Key()) {
			e.mapFailed(start, mark)
			return
		}
		keyEnd := len(e.buf)
		e.reflectValue(it.Value(), false)
		e.addMember(kstart, keyEnd)
	}
	e.depth--
	e.endObject(mark, false)
}

func (e *encoder) mapFailed(start, mark int) {
	e.buf, e.members = e.buf[:start], e.members[:mark]
	e.depth--
	e.failed()
}

// sortedMapStringAny writes the members of m in canonical order, reading
// the values only as the value limit allows. The object is open.
func (e *encoder) sortedMapStringAny(m map[string]any) {
	keys, anys, mark := len(e.keys), len(e.anys), len(e.members)
	e.members = slices.Grow(e.members, len(m))
	e.anys = slices.Grow(e.anys, len(m))
	size := 0
	for k := range m {
		size += len(k) + 2 // one more pass, rather than a growing buffer
	}
	e.keys = slices.Grow(e.keys, size)
	for k, v := range m {
		start := len(e.keys)
		e.keys = appendStr(e.keys, k)
		e.members = append(e.members, member{start: start, end: len(e.anys)})
		e.anys = append(e.anys, v)
	}
	// Each member read counts a value at least: no more than the limit
	// allows need be sorted.
	ms := e.sortKeys(mark, e.maxValues-e.count)
	truncated := false
	for i := range ms { // the names of a map[string]any are distinct
		if !e.next() {
			truncated = true
			e.buf = e.buf[:len(e.buf)-1] // written below
			break
		}
		// Nested values may grow keys and anys, but never change what is
		// below their lengths here.
		e.buf = append(e.buf, ms[i].name(e.keys)...)
		e.value(e.anys[ms[i].end])
	}
	clear(e.anys[anys:]) // the pool must not keep the caller's values
	e.keys, e.anys, e.members = e.keys[:keys], e.anys[:anys], e.members[:mark]
	e.closeSorted(truncated)
}

// sortedMap writes the members of a map in canonical order, reading the
// values only as the value limit allows. The object is open.
func (e *encoder) sortedMap(v reflect.Value) bool {
	keys, vals, mark := len(e.keys), len(e.vals), len(e.members)
	defer func() {
		clear(e.vals[vals:]) // the pool must not keep the caller's values
		e.keys, e.vals, e.members = e.keys[:keys], e.vals[:vals], e.members[:mark]
	}()
	for it := v.MapRange(); it.Next(); {
		n := len(e.buf)
		if !e.mapKey(it.Key()) {
			return false
		}
		start := len(e.keys)
		if cap(e.keys)-start < len(e.buf)-n {
			e.keys = slices.Grow(e.keys, max(len(e.buf)-n, start)) // doubling
		}
		e.keys = append(e.keys, e.buf[n:]...)
		e.buf = e.buf[:n]
		if len(e.members) == cap(e.members) {
			e.growMembers()
		}
		e.members = append(e.members, member{start: start, end: len(e.vals)})
		if len(e.vals) == cap(e.vals) {
			e.vals = slices.Grow(e.vals, len(e.vals)) // doubling
		}
		e.vals = append(e.vals, it.Value())
	}
	ms := e.sortKeys(mark, len(e.vals)-vals) // sorted whole: names may repeat
	truncated := false
	for i := range ms {
		if i+1 < len(ms) && sameName(e.keys, &ms[i], &ms[i+1]) {
			continue // equal names: the last wins, as in endObject
		}
		if !e.next() {
			truncated = true
			e.buf = e.buf[:len(e.buf)-1] // written below
			break
		}
		e.buf = append(e.buf, ms[i].name(e.keys)...)
		e.reflectValue(e.vals[ms[i].end], false)
	}
	e.closeSorted(truncated)
	return true
}

// sortKeys sorts the members from members[mark], whose names are in keys,
// and returns them; only the first limit need be in order.
func (e *encoder) sortKeys(mark, limit int) []member {
	ms := e.members[mark:]
	for i := range ms {
		ms[i].prefix, ms[i].next = nameWords(e.keys, ms[i].start, nameEnd(e.keys, ms[i].start))
	}
	sortMembers(e.keys, ms, limit)
	return ms
}

// closeSorted closes an object written in canonical order.
func (e *encoder) closeSorted(truncated bool) {
	e.depth--
	if truncated {
		e.buf = append(e.buf, tagTruncated)
	}
	e.buf = append(e.buf, tagObjectEnd)
}

// mapKey writes a map key as encoding/json names it.
func (e *encoder) mapKey(k reflect.Value) bool {
	if k.Kind() == reflect.String {
		e.str(k.String())
		return true
	}
	if k.Type().Implements(textMarshalerType) {
		if k.Kind() == reflect.Pointer && k.IsNil() {
			e.str("")
			return true
		}
		b, err := callMarshalText(k)
		if err != nil {
			return false
		}
		e.strBytes(b)
		return true
	}
	var a [24]byte
	if k.CanInt() {
		e.strBytes(strconv.AppendInt(a[:0], k.Int(), 10))
	} else {
		e.strBytes(strconv.AppendUint(a[:0], k.Uint(), 10))
	}
	return true
}

// marshalJSON encodes the output of v's MarshalJSON; a nil pointer is null.
func (e *encoder) marshalJSON(v reflect.Value) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.scalar(tagNull)
		return
	}
	m, ok := v.Interface().(json.Marshaler)
	if !ok { // a nil interface
		e.scalar(tagNull)
		return
	}
	b, err := callMarshalJSON(m)
	if err != nil {
		e.failed()
		return
	}
	if !e.jsonText(b) {
		e.opaque(tagInvalidJSON, b)
	}
}

// marshalText encodes the output of v's MarshalText as a string.
func (e *encoder) marshalText(v reflect.Value) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.scalar(tagNull)
		return
	}
	b, err := callMarshalText(v)
	if err != nil {
		e.failed()
		return
	}
	e.count++
	e.strBytes(b)
}

// callMarshalJSON calls user code: a panic is an error.
func callMarshalJSON(m json.Marshaler) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("canonical: MarshalJSON panicked: %v", r)
		}
	}()
	return m.MarshalJSON()
}

// callMarshalText calls user code: a panic is an error.
func callMarshalText(v reflect.Value) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("canonical: MarshalText panicked: %v", r)
		}
	}()
	m, ok := v.Interface().(encoding.TextMarshaler)
	if !ok {
		return nil, fmt.Errorf("canonical: %s is not a TextMarshaler", v.Type())
	}
	return m.MarshalText()
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

func isValidNumber(s string) bool {
	var e encoder
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i, ok := e.jsonNumber(b, 0)
	return ok && i == len(b)
}
