package canonical

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrInvalid is returned by Transform for text that is not valid JSON.
var ErrInvalid = errors.New("canonical: invalid JSON text")

// Transform returns the RFC 8785 (JCS) canonical form of the JSON text src:
// no whitespace, object members sorted by the UTF-16 code units of their
// names (the last of equal names wins), strings minimally escaped, numbers
// printed as ECMAScript prints doubles.
//
// It returns ErrInvalid if src is not valid JSON text: if it breaks the
// grammar of RFC 8259, holds bytes that are not UTF-8, has a number beyond
// the range of float64 or nests deeper than 10,000 levels. As in
// encoding/json, a \u escape of an unpaired surrogate stands for U+FFFD.
func Transform(src []byte) ([]byte, error) {
	e := getEncoder()
	defer putEncoder(e)
	e.maxDepth = maxTextDepth
	e.maxValues = int(^uint(0) >> 1)
	e.sizeFor(src)
	var ok bool
	if p := e.try(func(e *encoder) { ok = e.jsonText(src) }); p != nil {
		return nil, fmt.Errorf("canonical: internal error: %v", p) // a bug
	}
	if !ok {
		return nil, ErrInvalid
	}
	out, _ := appendText(make([]byte, 0, len(e.buf)+len(e.buf)/4), e.buf)
	return out, nil
}

// Append appends the canonical text of the Go value v to dst: the RFC 8785
// form of v's JSON encoding, with markers for what JSON cannot express (see
// the package documentation). A json.RawMessage is taken as JSON text.
func Append(dst []byte, v any) []byte {
	e := getEncoder()
	defer putEncoder(e)
	e.run(func(e *encoder) { e.value(v) })
	dst, _ = appendText(dst, e.buf)
	return dst
}

// Hash returns the Sum of the Go value v. Values whose JSON encodings are
// equal JSON values have equal sums: Hash(v) == HashJSON(b) when b is the
// output of json.Marshal(v) (for the values json.Marshal accepts whose
// strings are UTF-8), so a struct and the map of its fields hash alike.
// Hash never fails and never panics; see the package documentation for the
// values JSON cannot express. A json.RawMessage (or a pointer to one) is
// taken as JSON text; a string is a JSON string, never parsed; Hash(nil) is
// the Sum of null. Hash of a string, a json.RawMessage or a map[string]any
// does not allocate.
func Hash(v any) Sum {
	switch v := v.(type) {
	case json.RawMessage:
		if v != nil {
			return HashJSON(v)
		}
	case *json.RawMessage:
		if v != nil && *v != nil {
			return HashJSON(*v)
		}
	}
	e := getEncoder()
	defer putEncoder(e)
	e.run(func(e *encoder) { e.value(v) })
	return sumFrom(murmur3(e.buf))
}

// HashJSON returns the Sum of the JSON text src, which equals the Sum of
// the value it encodes: HashJSON(src) == Hash(v) when json.Unmarshal(src,
// &v) succeeds and src is valid (see Transform). It never fails: text that
// is not valid, including empty text, is hashed as tagged opaque bytes,
// which differ from every valid value.
func HashJSON(src []byte) Sum {
	e := getEncoder()
	defer putEncoder(e)
	return e.hashJSON(src)
}

// hashJSON is HashJSON with the encoder e.
func (e *encoder) hashJSON(src []byte) Sum {
	e.sizeFor(src)
	e.run(func(e *encoder) {
		if !e.jsonTextCut(src) {
			e.opaque(tagInvalidJSON, src)
		}
	})
	return sumFrom(murmur3(e.buf))
}
