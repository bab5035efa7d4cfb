package canonical

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

func addSeeds(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/jcs/input/*.json")
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, ` `, `null`, `-0`, `1e400`, `1e-400`, `[1,2]`, `{"a":1,"a":2}`, `"\ud800"`,
		`"\ud83d\ude02"`, "\"\xff\"", `{"a":[1,{"b":null}],"c":"\u0000"}`, `[[[[[[[[[[]]]]]]]]]]`,
		`123456789012345678901234567890`, `9007199254740993`, `0.1e-7`, `[1.0, 1e0, 10E-1]`,
	} {
		f.Add([]byte(s))
	}
}

// decodes reports whether encoding/json decodes src into any.
func decodes(src []byte) (any, bool) {
	var v any
	err := json.Unmarshal(src, &v)
	return v, err == nil
}

// depth returns how deeply arrays and objects nest in v.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	case map[string]any:
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	}
	return 0
}

func FuzzTransform(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Transform(src)
		v, ok := decodes(src)
		if utf8.Valid(src) && ok != (err == nil) {
			t.Fatalf("Transform(%q) error %v, but json.Unmarshal ok = %v", src, err, ok)
		}
		if err != nil {
			return
		}
		again, err := Transform(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Transform(Transform(%q)) = %q, %v; want %q", src, again, err, out)
		}
		if HashJSON(out) != HashJSON(src) {
			t.Fatalf("HashJSON(Transform(%q)) != HashJSON", src)
		}
		if depth(v) <= MaxDepth {
			if got := Append(nil, v); !bytes.Equal(got, out) {
				t.Fatalf("Append(decoded %q) = %q, Transform = %q", src, got, out)
			}
		}
	})
}

func FuzzHashJSON(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		h := HashJSON(src)
		if HashJSON(src) != h {
			t.Fatalf("HashJSON(%q) is not deterministic", src)
		}
		if Hash(string(src)) == h {
			t.Fatalf("HashJSON(%q) == Hash of the string", src)
		}
		out, err := Transform(src)
		if err != nil {
			// Invalid text is opaque: unlike any valid text.
			if HashJSON([]byte(`"`+string(src)+`"`)) == h || HashJSON(nil) == h && len(src) > 0 {
				t.Fatalf("HashJSON(%q) of invalid text collides", src)
			}
			return
		}
		if HashJSON(out) != h {
			t.Fatalf("HashJSON(%q) != HashJSON(Transform)", src)
		}
		if Hash(json.RawMessage(src)) != h {
			t.Fatalf("Hash(RawMessage(%q)) != HashJSON", src)
		}
	})
}

// fuzzStruct exercises the reflection path.
type fuzzStruct struct {
	A string          `json:"a"`
	B float64         `json:"b,omitempty"`
	C []int64         `json:"c"`
	D map[string]any  `json:"d"`
	E *fuzzStruct     `json:"e,omitempty"`
	F json.RawMessage `json:"f,omitempty"`
	G []byte          `json:"g"`
	H bool            `json:",string"`
	I uint32          `json:"i,string"`
	J [2]float32      `json:"j"`
	K map[int]string  `json:"k"`
	N json.Number     `json:"n"`
	fuzzEmbedded
}

type fuzzEmbedded struct {
	X any    `json:"x"`
	Y string `json:"a"` // hidden by A
}

func FuzzHashDecoded(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"a":"x","c":[1,2],"d":{"z":[true]},"e":{"a":"y"},"f":[1, 2],"g":"aGk=","H":"true","i":"7","j":[0.1,2],"k":{"3":"c"},"n":12.5,"x":{"b":1}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		h := HashJSON(src)
		if v, ok := decodes(src); ok && utf8.Valid(src) {
			if Hash(v) != h {
				t.Fatalf("Hash(decoded %q) != HashJSON\n%s", src, Append(nil, v))
			}
			if m, err := json.Marshal(v); err == nil && HashJSON(m) != h {
				t.Fatalf("HashJSON(json.Marshal(decoded %q)) != HashJSON", src)
			}
		}
		var s fuzzStruct
		if json.Unmarshal(src, &s) == nil {
			m, err := json.Marshal(s)
			if err != nil || !utf8.Valid(m) {
				return
			}
			if _, ok := decodes(m); !ok {
				return
			}
			if depth, _ := decodes(m); Hash(s) != HashJSON(m) && depthOK(depth) {
				t.Fatalf("Hash(struct from %q) != HashJSON(%s)\n%s", src, m, Append(nil, s))
			}
		}
	})
}

func depthOK(v any) bool { return depth(v) <= MaxDepth }
