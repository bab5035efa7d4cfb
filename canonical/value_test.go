package canonical

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

type textKey struct{ a, b int }

func (k textKey) MarshalText() ([]byte, error) {
	return []byte(strings.Repeat("k", k.a) + strings.Repeat("K", k.b)), nil
}

type inner struct {
	X int `json:"x"`
	Y string
}

type Embedded struct {
	E1 int
	E2 string `json:"e2,omitempty"`
}

type sample struct {
	Name     string            `json:"name"`
	Count    int64             `json:"count"`
	Ratio    float32           `json:"ratio"`
	Big      uint64            `json:"big"`
	Tags     []string          `json:"tags"`
	Raw      json.RawMessage   `json:"raw"`
	Bytes    []byte            `json:"bytes"`
	When     time.Time         `json:"when"`
	Ptr      *inner            `json:"ptr"`
	NilPtr   *inner            `json:"nil_ptr"`
	Omit     string            `json:"omit,omitempty"`
	OmitZ    time.Time         `json:"omitz,omitzero"`
	Quoted   int               `json:",string"`
	QuotedS  string            `json:"qs,string"`
	Any      any               `json:"any"`
	Keys     map[textKey]int   `json:"keys"`
	IntKeys  map[int]bool      `json:"int_keys"`
	Num      json.Number       `json:"num"`
	Arr      [3]byte           `json:"arr"`
	Skip     int               `json:"-"`
	private  int               //nolint:unused
	Nested   map[string]any    `json:"nested"`
	Inner    inner             `json:"inner"`
	Embedded                   // promoted fields
	Dash     int               `json:"-,"`
	Strings  map[string]string `json:"strings"`
}

func sampleValue() sample {
	return sample{
		Name:     "loop\u2028guard <&>",
		Count:    -42,
		Ratio:    0.1,
		Big:      1<<53 + 1,
		Tags:     []string{"b", "a"},
		Raw:      json.RawMessage(`{ "z": [1, 2.0, 3e0], "a": null }`),
		Bytes:    []byte("hello"),
		When:     time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
		Ptr:      &inner{X: 1, Y: "y"},
		QuotedS:  "q<\"",
		Quoted:   7,
		Any:      []any{1, "x", nil, true, map[string]any{"b": 1, "a": 2}},
		Keys:     map[textKey]int{{1, 0}: 1, {0, 2}: 2},
		IntKeys:  map[int]bool{-1: true, 10: false},
		Num:      "1e3",
		Arr:      [3]byte{1, 2, 3},
		Nested:   map[string]any{"deep": map[string]any{"er": []any{1.5, -0.0}}},
		Embedded: Embedded{E1: 5},
		Dash:     9,
		Strings:  map[string]string{"é": "e", "€": "euro", "😂": "joy", "\uffff": "max"},
	}
}

// TestHashMatchesMarshal checks Hash(v) == HashJSON(json.Marshal(v)).
func TestHashMatchesMarshal(t *testing.T) {
	values := []any{
		nil, true, false, 0, -0.0, 1.5, "", "x", "\u00e9\"\\\n\x01",
		int8(-8), uint16(65535), uint64(math.MaxUint64), int64(math.MinInt64),
		int64(1<<53 + 1), uint64(1<<63 + 12345), float32(0.1), float32(1e-7), float32(3.4e38),
		1e21, 1e-7, 123456789012345678901234567890.0,
		[]int{3, 1, 2}, []string(nil), map[string]int(nil), []byte{0, 255}, []byte{},
		map[string]any{"a": 1, "b": []any{}}, sampleValue(), &[]sample{sampleValue(), {}},
		json.Number("12.50"), json.Number(""), json.RawMessage(`[1, {"b":2,"a":1}]`),
		time.Unix(0, 0).UTC(), struct{}{}, [0]int{}, map[int]string{1: "a", 2: "b"},
		struct {
			A *int        `json:"a,string"`
			B *int        `json:"b,string"`
			F float64     `json:"f,string"`
			G float32     `json:",string"`
			N json.Number `json:",string"`
		}{A: new(int), F: 1e-9, G: 2.5, N: "7"},
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", v, err)
		}
		if Hash(v) != HashJSON(b) {
			t.Errorf("Hash(%#v) != HashJSON(%s)\nAppend:    %s\nTransform: %s", v, b, Append(nil, v), mustTransform(t, b))
		}
		if got, want := Append(nil, v), mustTransform(t, b); string(got) != string(want) {
			t.Errorf("Append(%#v) = %s, want %s", v, got, want)
		}
	}
}

func mustTransform(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := Transform(b)
	if err != nil {
		t.Fatalf("Transform(%s): %v", b, err)
	}
	return out
}

func TestStructEqualsMap(t *testing.T) {
	type call struct {
		Path   string   `json:"path"`
		Lines  []int    `json:"lines,omitempty"`
		Force  bool     `json:"force"`
		Labels []string `json:"labels"`
	}
	s := call{Path: "/tmp/x", Force: true, Labels: []string{"a"}}
	m := map[string]any{"force": true, "labels": []any{"a"}, "path": "/tmp/x"}
	if Hash(s) != Hash(m) || Hash(&s) != Hash(m) {
		t.Errorf("Hash(struct) != Hash(map): %s vs %s", Append(nil, s), Append(nil, m))
	}
	if Hash(s) != HashJSON([]byte(`{"path":"/tmp/x","labels":["a"],"force":true}`)) {
		t.Error("Hash(struct) != HashJSON")
	}
}

func TestEqualAndDistinct(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":2}`, `{ "b": 2.0, "a": 1 }`, `{"b":2e0,"a":10e-1,"a":1}`, `{"\u0061":1,"b":0.2e1}`},
		{`"abc"`, `"\u0061\u0062c"`, `"a\u0062\u0063"`},
		{`0`, `-0`, `0.0`, `-0e5`, `0E-3`},
		{`"\ud800"`, `"\ufffd"`, `"\udc00"`},
		{`"/"`, `"\/"`},
		{`1e400000000000000000000000000000000000000`, `1e400`}, // both invalid: opaque bytes differ
	}
	for i, group := range same[:len(same)-1] {
		for _, s := range group[1:] {
			if HashJSON([]byte(s)) != HashJSON([]byte(group[0])) {
				t.Errorf("group %d: HashJSON(%s) != HashJSON(%s)", i, s, group[0])
			}
		}
	}
	distinct := []any{
		json.RawMessage(`[1,2]`), json.RawMessage(`[2,1]`), json.RawMessage(`[1,2,null]`),
		json.RawMessage(`{}`), json.RawMessage(`[]`), json.RawMessage(`""`), json.RawMessage(`null`),
		json.RawMessage(`{"a":[]}`), json.RawMessage(`{"a":{}}`), json.RawMessage(`[[]]`), json.RawMessage(`[{}]`),
		json.RawMessage(`["a","b"]`), json.RawMessage(`["ab"]`), json.RawMessage(`{"a":"b"}`),
		json.RawMessage(`{"ab":""}`), json.RawMessage(`[true]`), json.RawMessage(`[false]`),
		json.RawMessage(`0`), json.RawMessage(`1`), json.RawMessage(`"1"`), json.RawMessage(`"NaN"`),
		math.NaN(), math.Inf(1), math.Inf(-1), json.RawMessage(`"Infinity"`),
		json.RawMessage(`"[Circular:1]"`), json.RawMessage(`{`), json.RawMessage(``), json.RawMessage(` `),
		"\xff", "\xfe", json.RawMessage(`"\ufffd"`), []byte("\xff"), json.RawMessage("\"\xff\""),
		func() {}, make(chan int), complex(1, 2),
	}
	seen := map[Sum]any{}
	for _, v := range distinct {
		h := Hash(v)
		if prev, ok := seen[h]; ok {
			t.Errorf("Hash(%#v) == Hash(%#v) = %s", v, prev, h)
		}
		seen[h] = v
	}
	if Hash(math.NaN()) != Hash(math.Float64frombits(0x7ff8000000000abc)) {
		t.Error("NaNs differ")
	}
}

func TestHashNil(t *testing.T) {
	null := HashJSON([]byte("null"))
	for _, v := range []any{nil, (*int)(nil), []int(nil), map[string]any(nil), json.RawMessage(nil), (*json.RawMessage)(nil), (*time.Time)(nil)} {
		if Hash(v) != null {
			t.Errorf("Hash(%#v) != HashJSON(null)", v)
		}
	}
	if HashJSON(nil) == null || HashJSON([]byte("  ")) == null || HashJSON(nil) == HashJSON([]byte(" ")) {
		t.Error("empty text must be opaque and distinct")
	}
	if Hash(json.RawMessage(`{"a": 1}`)) != HashJSON([]byte(`{"a":1}`)) {
		t.Error("RawMessage is not JSON text")
	}
	raw := json.RawMessage(`[1]`)
	if Hash(&raw) != HashJSON(raw) {
		t.Error("*RawMessage is not JSON text")
	}
	if Hash("[1]") == HashJSON(raw) || Hash([]byte("[1]")) == HashJSON(raw) {
		t.Error("a string or []byte is not JSON text")
	}
}

type node struct {
	Name string `json:"name"`
	Next *node  `json:"next"`
	Kids []any  `json:"kids"`
}

func TestCycles(t *testing.T) {
	m := map[string]any{"a": 1}
	m["self"] = m
	if got := string(Append(nil, m)); got != `{"a":1,"self":[Circular:1]}` {
		t.Errorf("map cycle: %s", got)
	}
	s := []any{1, nil}
	s[1] = s
	if got := string(Append(nil, s)); got != `[1,[Circular:1]]` {
		t.Errorf("slice cycle: %s", got)
	}
	n := &node{Name: "a"}
	n.Next = &node{Name: "b", Next: n}
	n.Kids = []any{n}
	if got := string(Append(nil, n)); got != `{"kids":[[Circular:2]],"name":"a","next":{"kids":null,"name":"b","next":[Circular:2]}}` {
		t.Errorf("pointer cycle: %s", got)
	}
	p := new(any)
	*p = p
	if got := string(Append(nil, p)); got != `[Circular:0]` {
		t.Errorf("pointer to itself: %s", got)
	}
	// Sharing without a cycle is not circular.
	shared := &inner{X: 1}
	pair := []*inner{shared, shared}
	if got := string(Append(nil, pair)); got != `[{"Y":"","x":1},{"Y":"","x":1}]` {
		t.Errorf("shared pointer: %s", got)
	}
}

func TestMaxDepth(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if HashJSON([]byte(deep(64))) == HashJSON([]byte(deep(65))) {
		t.Error("64 levels must be kept")
	}
	if HashJSON([]byte(deep(65))) != HashJSON([]byte(deep(100))) {
		t.Error("levels past 64 must be cut")
	}
	want := strings.Repeat("[", 64) + "[TooDeep]" + strings.Repeat("]", 64)
	var v any
	if err := json.Unmarshal([]byte(deep(100)), &v); err != nil {
		t.Fatal(err)
	}
	if got := string(Append(nil, v)); got != want {
		t.Errorf("Append = %s", got)
	}
	if Hash(v) != HashJSON([]byte(deep(100))) {
		t.Error("Hash(decoded) != HashJSON")
	}
	if _, err := Transform([]byte(deep(10000))); err != nil {
		t.Errorf("10000 levels: %v", err)
	}
	if _, err := Transform([]byte(deep(10001))); err == nil {
		t.Error("10001 levels must be invalid")
	}
	if HashJSON([]byte(deep(10001))) == HashJSON([]byte(deep(100))) {
		t.Error("10001 levels must be invalid")
	}
}

func TestMaxValues(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"z":0,"a":[`)
	for i := range MaxValues + 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1")
	}
	b.WriteString(`],"b":{"x":1,"y":[2]}}`)
	src := []byte(b.String())
	var v any
	if err := json.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	if Hash(v) != HashJSON(src) {
		t.Error("Hash(decoded) != HashJSON")
	}
	text := string(Append(nil, v))
	// Canonical order: the object, "a", then MaxValues-2 ones.
	want := `{"a":[` + strings.Repeat("1,", MaxValues-3) + `1,[Truncated]],[Truncated]}`
	if text != want {
		t.Errorf("Append: ...%s", text[max(0, len(text)-60):])
	}
	full, err := Transform(src)
	if err != nil || !strings.HasSuffix(string(full), `1],"b":{"x":1,"y":[2]},"z":0}`) {
		t.Errorf("Transform must not cut: %v", err)
	}
}

type failing struct{ err error }

func (f failing) MarshalJSON() ([]byte, error) {
	if f.err == nil {
		panic("boom")
	}
	return nil, f.err
}

type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return []byte(`{oops`), nil }

type ptrMarshaler struct{ N int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(`"ptr"`), nil
}

type badText struct{}

func (badText) MarshalText() ([]byte, error) { return nil, errors.New("no") }

func TestFailures(t *testing.T) {
	for _, v := range []any{failing{}, failing{errors.New("x")}, []any{failing{}}, map[badText]int{{}: 1}, badText{}} {
		a, b := Hash(v), Hash(v)
		if a == b {
			t.Errorf("Hash(%#v) equal when read twice", v)
		}
		if !strings.Contains(string(Append(nil, v)), "[Failed:") {
			t.Errorf("Append(%#v) = %s", v, Append(nil, v))
		}
	}
	if Hash(badJSON{}) != Hash(badJSON{}) || !strings.HasPrefix(string(Append(nil, badJSON{})), "[InvalidJSON:") {
		t.Errorf("invalid MarshalJSON output: %s", Append(nil, badJSON{}))
	}
	// A pointer receiver is used only for addressable values, as in
	// encoding/json.
	type holder struct{ P ptrMarshaler }
	for _, v := range []any{ptrMarshaler{1}, &ptrMarshaler{1}, holder{}, &holder{}} {
		b, _ := json.Marshal(v)
		if Hash(v) != HashJSON(b) {
			t.Errorf("Hash(%#v) != HashJSON(%s)", v, b)
		}
	}
}

func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	src := []byte(`{"path": "/src/main.go", "line": 42, "context": 3, "flags": ["-n", "-i"], "recursive": true, "pattern": "func main\\("}`)
	s := strings.Repeat("result text ", 25)
	// Boxed once: converting a slice or string to any allocates.
	var raw, s300 any = json.RawMessage(src), s
	m := map[string]any{"path": "/src/main.go", "line": 42.0, "flags": []any{"-n"}}
	for name, f := range map[string]func(){
		"HashJSON":   func() { HashJSON(src) },
		"Hash(raw)":  func() { Hash(raw) },
		"Hash(str)":  func() { Hash(s300) },
		"Hash(map)":  func() { Hash(m) },
		"Hash(int)":  func() { Hash(42) },
		"Hash(nil)":  func() { Hash(nil) },
		"Hash(bool)": func() { Hash(true) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs", name, n)
		}
	}
}
