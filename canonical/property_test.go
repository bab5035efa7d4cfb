package canonical

import (
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

// genValue draws a JSON value as encoding/json decodes it into any.
func genValue(t *rapid.T, depth int) any {
	kinds := []string{"null", "bool", "number", "string"}
	if depth < 4 {
		kinds = append(kinds, "array", "object")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "kind") {
	case "null":
		return nil
	case "bool":
		return rapid.Bool().Draw(t, "bool")
	case "number":
		return genNumber(t)
	case "string":
		return genString(t)
	case "array":
		n := rapid.IntRange(0, 4).Draw(t, "len")
		a := make([]any, n)
		for i := range a {
			a[i] = genValue(t, depth+1)
		}
		return a
	default:
		n := rapid.IntRange(0, 4).Draw(t, "len")
		m := make(map[string]any, n)
		for range n {
			m[genString(t)] = genValue(t, depth+1)
		}
		return m
	}
}

func genNumber(t *rapid.T) float64 {
	switch rapid.IntRange(0, 3).Draw(t, "numkind") {
	case 0:
		return float64(rapid.IntRange(-1000, 1000).Draw(t, "int"))
	case 1:
		return float64(rapid.Int64().Draw(t, "int64"))
	case 2:
		f := math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0.5
		}
		return f
	default:
		return rapid.Float64Range(-1e6, 1e6).Draw(t, "float")
	}
}

func genString(t *rapid.T) string { return stringGen().Draw(t, "string") }

func stringGen() *rapid.Generator[string] {
	return rapid.StringOfN(rapid.OneOf(
		rapid.RuneFrom([]rune("aAzé€\"\\/\n\t\x00\x1f\x7f\u2028\ue000\ufffd\uffff\U0001F602\U00010000")),
		rapid.Rune(),
	), 0, 10, -1)
}

// render writes v as JSON text in one of its many spellings: members in
// any order, earlier duplicates of a name, any whitespace, escapes that are
// not needed, numbers written other ways.
func render(t *rapid.T, b []byte, v any) []byte {
	space := func(b []byte) []byte {
		return append(b, rapid.SampledFrom([]string{"", "", " ", "\n\t", "\r\n  "}).Draw(t, "space")...)
	}
	b = space(b)
	switch v := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		b = strconv.AppendBool(b, v)
	case float64:
		b = append(b, spellNumber(t, v)...)
	case string:
		b = spellString(t, b, v)
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = render(t, b, x)
		}
		b = append(space(b), ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		keys = rapid.Permutation(keys).Draw(t, "order")
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			if rapid.IntRange(0, 5).Draw(t, "dup") == 0 {
				// An earlier member of the same name, which must lose.
				b = spellString(t, space(b), k)
				b = append(space(b), ':')
				b = render(t, b, genValue(t, 4))
				b = append(b, ',')
			}
			b = spellString(t, space(b), k)
			b = append(space(b), ':')
			b = render(t, b, v[k])
		}
		b = append(space(b), '}')
	}
	return space(b)
}

func spellNumber(t *rapid.T, f float64) string {
	spellings := []string{
		strconv.FormatFloat(f, 'g', -1, 64),
		strconv.FormatFloat(f, 'e', -1, 64),
		strconv.FormatFloat(f, 'E', 25, 64),
		strings.NewReplacer("e+", "e+0", "e-", "e-0").Replace(strconv.FormatFloat(f, 'e', -1, 64)),
	}
	if a := math.Abs(f); a == 0 || a > 1e-20 && a < 1e25 {
		spellings = append(spellings, strconv.FormatFloat(f, 'f', -1, 64))
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		i := strconv.FormatFloat(f, 'f', 0, 64)
		spellings = append(spellings, i+".0", i+"e0", i+".000E-0")
		if f != 0 {
			spellings = append(spellings, i+"0e-1")
		}
	}
	if f == 0 {
		spellings = append(spellings, "-0", "-0.0", "0e10", "-0E-7")
	}
	return rapid.SampledFrom(spellings).Draw(t, "spelling")
}

func spellString(t *rapid.T, b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		escape := rapid.IntRange(0, 3).Draw(t, "escape") == 0
		switch {
		case r == '"' || r == '\\' || r < 0x20 || escape:
			if short, ok := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[r]; ok && rapid.Bool().Draw(t, "short") {
				b = append(b, short...)
				continue
			}
			format := `\u%04x`
			if rapid.Bool().Draw(t, "upper") {
				format = `\u%04X`
			}
			if r > 0xFFFF {
				r -= 0x10000
				b = fmt.Appendf(b, format+format, 0xD800+r>>10, 0xDC00+r&0x3FF)
			} else {
				b = fmt.Appendf(b, format, r)
			}
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// TestPropertySpellings: every spelling of a value has the hash of the
// value, and its Transform is the canonical text of the value.
func TestPropertySpellings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0)
		want := Hash(v)
		canon := Append(nil, v)
		src := render(t, nil, v)
		if got := HashJSON(src); got != want {
			t.Fatalf("HashJSON(%s) != Hash(%#v)\ncanonical %s", src, v, canon)
		}
		out, err := Transform(src)
		if err != nil {
			t.Fatalf("Transform(%s): %v", src, err)
		}
		if string(out) != string(canon) {
			t.Fatalf("Transform(%s) = %s, want %s", src, out, canon)
		}
		again, err := Transform(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("Transform(Transform(x)) = %s, %v, want %s", again, err, out)
		}
		var decoded any
		if err := json.Unmarshal(src, &decoded); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", src, err)
		}
		if Hash(decoded) != want {
			t.Fatalf("Hash(decoded %s) != HashJSON", src)
		}
		if m, err := json.Marshal(v); err != nil || HashJSON(m) != want {
			t.Fatalf("HashJSON(json.Marshal(v)) = %s, %v", m, err)
		}
	})
}

// mutate returns v with its leaf number k (in a walk of v) changed to a
// different value; it returns the number of leaves after k.
func mutate(v any, k *int) any {
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			break
		}
		c := slices.Clone(x)
		for i := range c {
			c[i] = mutate(c[i], k)
		}
		return c
	case map[string]any:
		if len(x) == 0 {
			break
		}
		c := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for key := range x {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			c[key] = mutate(x[key], k)
		}
		return c
	}
	*k--
	if *k != -1 {
		return v
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return !x
	case float64:
		if x == 0 {
			return 1.0
		}
		return -x
	case string:
		return x + "x"
	case []any:
		return []any{nil}
	case map[string]any:
		return map[string]any{"": nil}
	}
	panic("unexpected value")
}

// TestPropertyLeafChange: changing any leaf changes the hash.
func TestPropertyLeafChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0)
		leaves := 0
		mutate(v, &leaves) // counts (k never reaches -1 from 0... below)
		leaves = -leaves
		k := rapid.IntRange(0, leaves-1).Draw(t, "leaf")
		w := mutate(v, &k)
		if Hash(v) == Hash(w) {
			t.Fatalf("changing a leaf kept the hash: %s vs %s", Append(nil, v), Append(nil, w))
		}
		if HashJSON(render(t, nil, v)) == HashJSON(render(t, nil, w)) {
			t.Fatalf("changing a leaf kept HashJSON: %s vs %s", Append(nil, v), Append(nil, w))
		}
	})
}

type propInner struct {
	N float64 `json:"n"`
	S string  `json:"s,omitempty"`
}

type propStruct struct {
	ID     int64             `json:"id"`
	Big    uint64            `json:"big"`
	Ratio  float32           `json:"ratio"`
	Name   string            `json:"name"`
	Tags   []string          `json:"tags"`
	Inner  *propInner        `json:"inner,omitempty"`
	Labels map[string]string `json:"labels"`
	Blob   []byte            `json:"blob"`
	Flag   bool
}

// TestPropertyStructEqualsMap: a struct hashes as the map of its fields,
// and as its JSON encoding.
func TestPropertyStructEqualsMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := propStruct{
			ID:     rapid.Int64().Draw(t, "id"),
			Big:    rapid.Uint64().Draw(t, "big"),
			Ratio:  rapid.Float32Range(-1e30, 1e30).Draw(t, "ratio"),
			Name:   rapid.String().Draw(t, "name"),
			Tags:   rapid.SliceOfN(rapid.String(), 0, 3).Draw(t, "tags"),
			Labels: rapid.MapOfN(rapid.String(), rapid.String(), 0, 3).Draw(t, "labels"),
			Blob:   rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "blob"),
			Flag:   rapid.Bool().Draw(t, "flag"),
		}
		if rapid.Bool().Draw(t, "hasInner") {
			s.Inner = &propInner{N: genNumber(t), S: genString(t)}
		}
		m := map[string]any{
			"id": float64(s.ID), "big": float64(s.Big), "name": s.Name, "Flag": s.Flag,
			"ratio": json.Number(strconv.FormatFloat(float64(s.Ratio), 'g', -1, 32)),
		}
		if s.Tags == nil {
			m["tags"] = nil
		} else {
			tags := []any{}
			for _, tag := range s.Tags {
				tags = append(tags, tag)
			}
			m["tags"] = tags
		}
		if s.Labels == nil {
			m["labels"] = nil
		} else {
			labels := map[string]any{}
			for k, v := range s.Labels {
				labels[k] = v
			}
			m["labels"] = labels
		}
		if s.Blob == nil {
			m["blob"] = nil
		} else {
			m["blob"] = base64String(s.Blob)
		}
		if s.Inner != nil {
			inner := map[string]any{"n": s.Inner.N}
			if s.Inner.S != "" {
				inner["s"] = s.Inner.S
			}
			m["inner"] = inner
		}
		if Hash(s) != Hash(m) {
			t.Fatalf("Hash(struct) != Hash(map)\n%s\n%s", Append(nil, s), Append(nil, m))
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if HashJSON(b) != Hash(s) {
			t.Fatalf("HashJSON(json.Marshal(s)) != Hash(s)\n%s\n%s", b, Append(nil, s))
		}
	})
}

func base64String(b []byte) string {
	s, _ := json.Marshal(b)
	return string(s[1 : len(s)-1])
}

// TestPropertyIntegers: integers of any size hash as their JSON encoding.
func TestPropertyIntegers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		for _, v := range []any{rapid.Uint64().Draw(t, "u"), rapid.Int64().Draw(t, "i"), rapid.Float32().Draw(t, "f32")} {
			b, err := json.Marshal(v)
			if err != nil {
				continue // NaN, Inf
			}
			if Hash(v) != HashJSON(b) {
				t.Fatalf("Hash(%T %v) != HashJSON(%s)", v, v, b)
			}
		}
	})
}

// TestPropertyMemberOrder: members come out sorted by the UTF-16 code
// units of their names, compared with a plain reference implementation.
func TestPropertyMemberOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOfN(stringGen(), rapid.Just[any](nil), 0, 12).Draw(t, "members")
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		var want []byte
		want = append(want, '{')
		for i, k := range keys {
			if i > 0 {
				want = append(want, ',')
			}
			want = append(Append(want, k), ":null"...)
		}
		want = append(want, '}')
		if got := Append(nil, m); string(got) != string(want) {
			t.Fatalf("Append = %s, want %s", got, want)
		}
	})
}
