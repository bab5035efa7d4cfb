package canonical

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// The value limit cuts values in canonical order. These tests lower the
// limit so that small values are cut, and compare what the encoder writes
// with a plain reference encoder.

// encodeWithLimit returns the canonical encoding that f writes with the
// value limit set to limit.
func encodeWithLimit(limit int, f func(e *encoder)) []byte {
	e := getEncoder()
	defer putEncoder(e)
	e.maxValues = limit
	e.run(f)
	return bytes.Clone(e.buf)
}

// refEncoder is the reference: it visits a decoded JSON value in canonical
// order (names sorted by reference UTF-16 comparison) and counts values as
// the package documents.
type refEncoder struct {
	b            []byte
	count, limit int
}

func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func (r *refEncoder) value(v any, depth int) {
	r.count++
	switch v := v.(type) {
	case nil:
		r.b = append(r.b, tagNull)
	case bool:
		r.b = append(r.b, map[bool]byte{true: tagTrue, false: tagFalse}[v])
	case float64:
		if v == 0 {
			v = 0 // -0 too
		}
		r.b = binary.LittleEndian.AppendUint64(append(r.b, tagNumber), math.Float64bits(v))
	case string:
		r.b = append(append(append(r.b, tagString), v...), stringEnd)
	case []any:
		if depth >= MaxDepth {
			r.b = append(r.b, tagTooDeep)
			return
		}
		r.b = append(r.b, tagArray)
		for _, x := range v {
			if r.count >= r.limit {
				r.b = append(r.b, tagTruncated)
				break
			}
			r.value(x, depth+1)
		}
		r.b = append(r.b, tagArrayEnd)
	case map[string]any:
		if depth >= MaxDepth {
			r.b = append(r.b, tagTooDeep)
			return
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, utf16Compare)
		r.b = append(r.b, tagObject)
		for _, k := range keys {
			if r.count >= r.limit {
				r.b = append(r.b, tagTruncated)
				break
			}
			r.b = append(append(append(r.b, tagString), k...), stringEnd)
			r.value(v[k], depth+1)
		}
		r.b = append(r.b, tagObjectEnd)
	default:
		panic("unexpected value")
	}
}

func refEncode(v any, limit int) []byte {
	r := refEncoder{limit: limit}
	r.value(v, 0)
	return r.b
}

// Named types take the reflection path.
type (
	reflMap   map[string]any
	reflSlice []any
)

// reflected returns v with its maps and slices in named types.
func reflected(v any) any {
	switch v := v.(type) {
	case []any:
		s := make(reflSlice, len(v))
		for i, x := range v {
			s[i] = reflected(x)
		}
		return s
	case map[string]any:
		m := make(reflMap, len(v))
		for k, x := range v {
			m[k] = reflected(x)
		}
		return m
	}
	return v
}

// TestPropertyCut: whatever the limit, JSON text (in any spelling, with
// duplicate names), the value it decodes into, the same through reflection
// and JSON text inside a Go value are cut as the reference cuts them.
func TestPropertyCut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0)
		src := render(t, nil, v)
		limit := rapid.IntRange(0, 60).Draw(t, "limit")
		want := refEncode(v, limit)
		check := func(what string, got []byte) {
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, limit %d: %s", what, limit, firstDiff(got, want))
			}
		}
		check("HashJSON", encodeWithLimit(limit, func(e *encoder) { e.jsonTextCut(src) }))
		check("Hash", encodeWithLimit(limit, func(e *encoder) { e.value(v) }))
		check("Hash(reflected)", encodeWithLimit(limit, func(e *encoder) { e.value(reflected(v)) }))
		wrapped := []any{json.RawMessage(src)}
		want = refEncode([]any{v}, limit)
		check("Hash([]any{RawMessage})", encodeWithLimit(limit, func(e *encoder) { e.value(wrapped) }))
	})
}

// bigName draws a member name that shares a long prefix with many others,
// so that the radix sort goes several words deep, with characters whose
// UTF-16 order differs from their UTF-8 order and NUL bytes at the end.
func bigName(t *rapid.T) string {
	prefix := rapid.SampledFrom([]string{"", "a", "aaaaaaaa", "aaaaaaaaaaaaaaa", "é", "\uffff", "\U0001F602aaaaa"}).Draw(t, "prefix")
	tail := rapid.StringOfN(rapid.RuneFrom([]rune("ab\x00é\uffff\U0001F602")), 0, 12, -1).Draw(t, "tail")
	return prefix + tail
}

// TestPropertyBigObjects: objects with hundreds of members, past the size
// at which members are radix-sorted, come out in UTF-16 order with the last
// of equal names, from JSON text and from Go maps, whole and cut.
func TestPropertyBigObjects(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(radixMin-10, 3*radixMin).Draw(t, "members")
		m := make(map[string]any, n)
		var src strings.Builder
		src.WriteByte('{')
		for i := range n {
			k := bigName(t)
			if i > 0 {
				src.WriteByte(',')
			}
			m[k] = float64(i)
			src.Write(Append(nil, k))
			src.WriteString(":")
			src.WriteString(strconv.Itoa(i))
		}
		src.WriteByte('}')
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, utf16Compare)
		var want strings.Builder
		want.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				want.WriteByte(',')
			}
			want.Write(Append(nil, k))
			want.WriteString(":" + strconv.Itoa(int(m[k].(float64))))
		}
		want.WriteByte('}')
		got, err := Transform([]byte(src.String()))
		if err != nil || string(got) != want.String() {
			t.Fatalf("Transform: %v, %s", err, firstDiff(got, []byte(want.String())))
		}
		if got := Append(nil, m); string(got) != want.String() {
			t.Fatalf("Append: %s", firstDiff(got, []byte(want.String())))
		}
		limit := rapid.IntRange(0, len(m)+2).Draw(t, "limit")
		ref := refEncode(m, limit)
		for what, got := range map[string][]byte{
			"HashJSON":        encodeWithLimit(limit, func(e *encoder) { e.jsonTextCut([]byte(src.String())) }),
			"Hash":            encodeWithLimit(limit, func(e *encoder) { e.value(m) }),
			"Hash(reflected)": encodeWithLimit(limit, func(e *encoder) { e.value(reflMap(m)) }),
		} {
			if !bytes.Equal(got, ref) {
				t.Fatalf("%s, limit %d: %s", what, limit, firstDiff(got, ref))
			}
		}
	})
}

// firstDiff describes where got and want first differ.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("they differ at byte %d of %d/%d:\n got …%q\nwant …%q",
		i, len(got), len(want), got[from:min(len(got), i+40)], want[from:min(len(want), i+40)])
}

// TestPropertyRecords: arrays of objects whose names repeat, in the same
// order or another, some with the same name twice (the order found for one
// object is kept for the next with the same prefixes; see reorderFew).
func TestPropertyRecords(t *testing.T) {
	pool := []string{"id", "name", "role", "a", "b", "aaaaaaaa1", "aaaaaaaa2", "é", "\uffff", "\U0001F602"}
	rapid.Check(t, func(t *rapid.T) {
		templates := rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(pool), 2, insertionMax+2), 1, 3).Draw(t, "templates")
		n := rapid.IntRange(1, 30).Draw(t, "records")
		var src strings.Builder
		var want []any
		src.WriteByte('[')
		for r := range n {
			if r > 0 {
				src.WriteByte(',')
			}
			names := slices.Clone(rapid.SampledFrom(templates).Draw(t, "template"))
			switch rapid.IntRange(0, 3).Draw(t, "change") {
			case 0: // another name in one place
				names[rapid.IntRange(0, len(names)-1).Draw(t, "at")] = rapid.SampledFrom(pool).Draw(t, "name")
			case 1: // two names swapped
				i, j := rapid.IntRange(0, len(names)-1).Draw(t, "i"), rapid.IntRange(0, len(names)-1).Draw(t, "j")
				names[i], names[j] = names[j], names[i]
			}
			obj := map[string]any{}
			src.WriteByte('{')
			for i, k := range names {
				if i > 0 {
					src.WriteByte(',')
				}
				src.Write(Append(nil, k))
				src.WriteString(":" + strconv.Itoa(i))
				obj[k] = float64(i)
			}
			src.WriteByte('}')
			want = append(want, obj)
		}
		src.WriteByte(']')
		ref := refEncode(want, math.MaxInt)
		got := encodeWithLimit(math.MaxInt, func(e *encoder) { e.jsonTextCut([]byte(src.String())) })
		if !bytes.Equal(got, ref) {
			t.Fatalf("%s: %s", src.String(), firstDiff(got, ref))
		}
	})
}

// FuzzCut: at any limit, JSON text and the value it decodes into are cut as
// the reference cuts the decoded value.
func FuzzCut(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2,3],"a":{"y":1,"x":[true,null]},"a":{"z":"last"}}`,
		`[[1,[2,[3,[4]]]],{"k":{"k":{"k":[]}}},"s",1.5e3]`,
		`{"😂":1,"\uffff":2,"é":{"a":[1,2],"b":{}},"":[[],{}]}`,
	} {
		for _, limit := range []uint16{0, 1, 2, 3, 5, 8, 13, 100} {
			f.Add([]byte(s), limit)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, limit uint16) {
		v, ok := decodes(src)
		if !ok || !utf8.Valid(src) {
			return
		}
		l := int(limit % 1024)
		want := refEncode(v, l)
		if got := encodeWithLimit(l, func(e *encoder) { e.jsonTextCut(src) }); !bytes.Equal(got, want) {
			t.Fatalf("HashJSON(%q), limit %d: %s", src, l, firstDiff(got, want))
		}
		if got := encodeWithLimit(l, func(e *encoder) { e.value(v) }); !bytes.Equal(got, want) {
			t.Fatalf("Hash(decoded %q), limit %d: %s", src, l, firstDiff(got, want))
		}
	})
}
