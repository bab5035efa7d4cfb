package core

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// compactReference is what appendCompact must give: json.Compact's text and
// json.Valid's answer.
func compactReference(src []byte) ([]byte, bool) {
	var b bytes.Buffer
	if err := json.Compact(&b, src); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}

func checkCompact(t interface {
	Helper()
	Fatalf(string, ...any)
}, src []byte) {
	t.Helper()
	want, wantOK := compactReference(src)
	got, ok := appendCompact([]byte("prefix"), src)
	if ok != wantOK {
		t.Fatalf("appendCompact(%q) valid = %v, json.Valid says %v", src, ok, wantOK)
	}
	if ok && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("appendCompact(%q) = %q, json.Compact gives %q", src, got[len("prefix"):], want)
	}
}

func TestAppendCompact(t *testing.T) {
	for _, src := range []string{
		``, ` `, `null`, ` true `, `false`, `nul`, `truex`, `[truex]`, `0`, `-0`, `01`, `-`, `1.`, `1.5e+3`, `1E-2`, `1e`, `+1`, `.5`,
		`""`, `"a\"b"`, `"\u00e9\ud83d"`, `"\u00g0"`, `"\x"`, "\"a\tb\"", "\"\xff\xfe\"", `"unterminated`, `"ends in backslash\`,
		`{}`, `[]`, `{ "a" : [ 1 , 2 , { } ] , "b" : null }`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`,
		`[1] [2]`, "[\n1,\r\n2\t]", `{"a":1}}`, `[[[]]`, `"` + strings.Repeat("0123456789abcdef", 100) + `"`,
		`"` + strings.Repeat("x", 13) + `\n` + strings.Repeat("y", 9) + `"`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
		strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
	} {
		checkCompact(t, []byte(src))
	}
}

// TestAppendCompactProperty: for text made of JSON's tokens and a few
// wrong ones, in any order, appendCompact agrees with json.Compact and
// json.Valid.
func TestAppendCompactProperty(t *testing.T) {
	tokens := []string{"{", "}", "[", "]", ",", ":", " ", "\n", "\t", `"k"`, `"a\"b"`, `"\u0041"`, `"` + strings.Repeat("abcdefgh", 3) + `"`,
		"0", "-1", "2.5", "1e3", "true", "false", "null", "\"\x01\"", `"\q"`, "x", "\xff", "-", "01", `"`, `\`}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(tokens), 0, 30).Draw(t, "tokens")
		checkCompact(t, []byte(strings.Join(parts, "")))
	})
	// Valid documents, most of them: values encoding/json wrote, spaced out.
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.SliceOf(rapid.MapOf(rapid.StringMatching(`[a-z"\\é]{0,12}`), rapid.OneOf(
			rapid.Just[any](nil), rapid.Float64().AsAny(), rapid.String().AsAny(), rapid.Bool().AsAny()))).Draw(t, "value")
		b, err := json.MarshalIndent(v, " ", "\t")
		if err != nil {
			t.Skip(err)
		}
		checkCompact(t, b)
	})
}

func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u0041"],"b":null}`, ` [ true , false ] `, `"` + strings.Repeat("a", 40) + `"`, `{"a" 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkCompact(t, src)
	})
}

func BenchmarkAppendCompact(b *testing.B) {
	state := []byte(`{"stalled":93,"text":"00000000000000000000000000000000","outcomes":"` + strings.Repeat("Kt6sWyGa8vSb9Uh6IOdDjOatda4IgQrI", 680) + `"}`)
	dst := make([]byte, 0, 2*len(state))
	b.SetBytes(int64(len(state)))
	b.Run("appendCompact", func(b *testing.B) {
		for b.Loop() {
			dst, _ = appendCompact(dst[:0], state)
		}
	})
	b.Run("json.Compact", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			_ = json.Compact(&buf, state)
		}
	})
}
