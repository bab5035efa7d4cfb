package canonical

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestTransformInvalid(t *testing.T) {
	for _, s := range []string{
		``, ` `, `nul`, `nulls`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":}`, `[`, `]`, `{`,
		`01`, `-`, `-01`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`, `NaN`, `Infinity`, `1e400`, `-1e309`,
		`"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\t\"", "\"\x00\"", "\"\xff\"", "\"\xed\xa0\x80\"",
		"\ufeff{}", `"a" "b"`, `[1] x`, `{"a":1}}`, `'a'`, `tru`, `[true false]`,
	} {
		if out, err := Transform([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Transform(%q) = %q, %v; want ErrInvalid", s, out, err)
		}
		var v any
		if json.Unmarshal([]byte(s), &v) == nil && !strings.ContainsAny(s, "\xff\xed") {
			t.Errorf("encoding/json accepts %q", s)
		}
	}
}

func TestTransformValid(t *testing.T) {
	for in, want := range map[string]string{
		` [ 1 , 2 ] `:                `[1,2]`,
		`1e-400`:                     `0`,
		`-0.0e-5`:                    `0`,
		`1E+2`:                       `100`,
		`123456789012345678901234`:   `1.2345678901234569e+23`,
		`0.000001`:                   `0.000001`,
		`0.0000001`:                  `1e-7`,
		`1e21`:                       `1e+21`,
		`1e20`:                       `100000000000000000000`,
		`5e-324`:                     `5e-324`,
		`1.7976931348623157e308`:     `1.7976931348623157e+308`,
		`"\u0000\u001f\u007f\u2028"`: "\"\\u0000\\u001f\x7f\u2028\"",
		`"\ud800\u0041"`:             "\"\ufffdA\"",
		`"\udc00\ud800\udc00"`:       "\"\ufffd\U00010000\"",
		`{"a":1,"a":{"b":2},"a":3}`:  `{"a":3}`,
		`{"b":[],"a":{}}`:            `{"a":{},"b":[]}`,
	} {
		got, err := Transform([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Transform(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

type zeroer struct{ n int }

func (z zeroer) IsZero() bool { return z.n == 42 }

type panicZero struct{}

func (panicZero) IsZero() bool { panic("no") }

type A struct{ Name, Only string }
type B struct {
	Name string
	Tag  string `json:"Only"`
}

type unexported struct{ Visible int }

func TestGoValueRules(t *testing.T) {
	type Conflict struct {
		A
		B
	}
	type withZero struct {
		Z zeroer         `json:"z,omitzero"`
		P *zeroer        `json:"p,omitzero"`
		E []int          `json:"e,omitempty"`
		M map[string]int `json:"m,omitempty"`
	}
	type embedsUnexported struct {
		unexported
		*A
	}
	for _, v := range []any{
		Conflict{A{"a", "x"}, B{"b", "y"}},
		withZero{Z: zeroer{42}},
		withZero{Z: zeroer{1}, P: &zeroer{42}, E: []int{}, M: map[string]int{}},
		embedsUnexported{unexported{3}, nil},
		embedsUnexported{unexported{3}, &A{"n", "o"}},
		map[json.Number]int{"1": 1},
		[]json.RawMessage{[]byte(`{"b":1, "a":2}`), nil},
		map[string]*int{"nil": nil},
		struct {
			F func() `json:"-"`
		}{},
		[2][]byte{[]byte("a"), nil},
		struct {
			X uint8 `json:"x,string"`
			Y *bool `json:"y,string"`
		}{X: 3},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", v, err)
		}
		if Hash(v) != HashJSON(b) {
			t.Errorf("Hash(%#v) != HashJSON(%s)\nAppend: %s", v, b, Append(nil, v))
		}
	}
}

func TestPanickingIsZero(t *testing.T) {
	v := struct {
		PZ panicZero `json:"pz,omitzero"`
	}{}
	if got := string(Append(nil, v)); got != `{"pz":{}}` {
		t.Errorf("Append = %s", got)
	}
}

func TestUnsupported(t *testing.T) {
	for v, want := range map[string]any{
		"[Unsupported:func()]":             func() {},
		"[Unsupported:complex128(1+2i)]":   complex(1, 2),
		"[Unsupported:map[float64]string]": map[float64]string{1: "a"},
		"[Unsupported:chan int]":           make(chan int),
		`{"a":NaN,"b":-Infinity}`:          map[string]float64{"a": math.NaN(), "b": math.Inf(-1)},
		`[InvalidUTF8:ff61]`:               "\xffa",
		`{[InvalidUTF8:ff]:1}`:             map[string]int{"\xff": 1},
		`[InvalidJSON:7b]`:                 json.RawMessage(`{`),
		`[InvalidJSON:]`:                   json.RawMessage{},
	} {
		if got := string(Append(nil, want)); got != v {
			t.Errorf("Append(%#v) = %s, want %s", want, got, v)
		}
	}
}
