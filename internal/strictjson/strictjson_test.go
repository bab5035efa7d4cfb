package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// show lists members as key=value, for cmp.Diff.
func show(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Key+"="+string(m.Value))
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkMembers(t *testing.T, call string, want []string, wantErr string, got []Member, err error) {
	t.Helper()
	if diff := cmp.Diff(wantErr, errText(err)); diff != "" {
		t.Errorf("%s error (-want +got):\n%s", call, diff)
	}
	if diff := cmp.Diff(want, show(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", call, diff)
	}
}

// A memberCase is a document and the members read from it, or the error.
type memberCase struct {
	in   string
	want []string
	err  string
}

func TestObject(t *testing.T) {
	for _, tc := range []memberCase{
		{`{}`, nil, ""},
		{` {"b":1, "a":[1,2], "c":{"x":null}} `, []string{"b=1", "a=[1,2]", `c={"x":null}`}, ""},
		{`{"a":1,"A":2}`, []string{"a=1", "A=2"}, ""},
		{`{"a":1,"b":2,"a":3}`, nil, `key "a" appears twice`},
		{`{"\u0061":1,"a":2}`, nil, `key "a" appears twice`},
		{`{"a":{"x":1,"x":2}}`, []string{`a={"x":1,"x":2}`}, ""}, // only the top level
		{`{"a":1} {}`, nil, "data after the JSON object"},
		{`{"a":1} x`, nil, "data after the JSON object"},
		{`[1]`, nil, "not a JSON object"},
		{`"x"`, nil, "not a JSON object"},
		{``, nil, "EOF"},
		{`{"a":}`, nil, "invalid character '}' looking for beginning of value"},
		{`{"a":1`, nil, "EOF"},
	} {
		got, err := Object([]byte(tc.in))
		checkMembers(t, "Object("+tc.in+")", tc.want, tc.err, got, err)
	}
	if _, err := Object([]byte(`[]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("Object([]) = %v, want ErrNotObject", err)
	}
}

func TestMembers(t *testing.T) {
	for _, tc := range []memberCase{
		{`{}`, nil, ""},
		{`{"a":1,"b":2,"a":3}`, []string{"a=1", "b=2", "a=3"}, ""},
		{`{"a":1} trailing`, []string{"a=1"}, ""},
		{`[1]`, nil, "not a JSON object"},
		{``, nil, "not a JSON object"},
		{`{"a":1,}`, nil, "invalid character '}' looking for beginning of object key string"},
	} {
		got, err := Members([]byte(tc.in))
		checkMembers(t, "Members("+tc.in+")", tc.want, tc.err, got, err)
	}
}

func TestEachMemberAndElement(t *testing.T) {
	notObject, notArray := errors.New("no object"), errors.New("no array")
	walk := func(in string) ([]string, error) {
		dec := json.NewDecoder(strings.NewReader(in))
		var got []string
		err := EachMember(dec, notObject, func(key string) error {
			got = append(got, key)
			return EachElement(dec, notArray, func() error {
				var v json.RawMessage
				err := dec.Decode(&v)
				got = append(got, string(v))
				return err
			})
		})
		return got, err
	}
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{`null`, nil, ""},
		{`{}`, nil, ""},
		{`{"a":[1,2],"b":null,"c":[]}`, []string{"a", "1", "2", "b", "c"}, ""},
		{`[]`, nil, "no object"},
		{`{"a":{}}`, []string{"a"}, "no array"},
		{`{"a":[1}`, []string{"a", "1"}, "invalid character '}' after array element"},
	} {
		got, err := walk(tc.in)
		if diff := cmp.Diff(tc.err, errText(err)); diff != "" {
			t.Errorf("walk(%s) error (-want +got):\n%s", tc.in, diff)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("walk(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
	dec := json.NewDecoder(strings.NewReader(`{"a":[1,2]} 7`))
	if err := Skip(dec); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := dec.Decode(&n); err != nil || n != 7 {
		t.Errorf("after Skip: %d, %v; want 7", n, err)
	}
}

func TestKind(t *testing.T) {
	got := map[string]string{}
	for _, in := range []string{"", " \n", "{}", " [1]", `"s"`, "true", "false", "null", "-1", "0.5", "x"} {
		got[in] = Kind([]byte(in))
	}
	want := map[string]string{
		"": "nothing", " \n": "nothing", "{}": "an object", " [1]": "an array", `"s"`: "a string",
		"true": "a boolean", "false": "a boolean", "null": "null", "-1": "a number", "0.5": "a number", "x": "a number",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Kind (-want +got):\n%s", diff)
	}
	if !IsLiteral([]byte(" true\n"), "true") || IsLiteral([]byte("truex"), "true") || IsLiteral([]byte(`"true"`), "true") {
		t.Error("IsLiteral: wrong")
	}
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct{ path, key, want string }{
		{"", "loop", "loop"},
		{"detectors", "loop", "detectors.loop"},
		{"a", "A_b-9", "a.A_b-9"},
		{"tools", "a.b", `tools["a.b"]`},
		{"", "a b", `["a b"]`},
		{"tools", "", `tools[""]`},
		{"tools", "é", `tools["é"]`},
	} {
		if got := Join(tc.path, tc.key); got != tc.want {
			t.Errorf("Join(%q, %q) = %s, want %s", tc.path, tc.key, got, tc.want)
		}
	}
	if got := Index("calls", 12); got != "calls[12]" {
		t.Errorf("Index = %s", got)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"warn", "threshold", "limit", "ignoreErrors"}
	for _, tc := range []struct{ key, want string }{
		{"WARN", "warn"}, // case only, however short
		{"wran", ""},     // 4 letters: too short for edits
		{"threshold", "threshold"},
		{"treshold", "threshold"},
		{"thresh0ld", "threshold"},
		{"tresh0ld", "threshold"}, // two edits
		{"trsh0ld", ""},           // three edits
		{"limt", "limit"},         // one edit, known name of 5 bytes
		{"lim", "limit"},          // two edits
		{"li", ""},                // three edits
		{"ignoreerrors", "ignoreErrors"},
		{"xyz", ""},
	} {
		if got := Suggest(tc.key, known); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	// Objects of 0 to 40 keys, nested three deep, each key once; then the
	// first, the last and a middle key again, in each object.
	for _, n := range []int{0, 1, ListedKeys - 1, ListedKeys, ListedKeys + 1, 40} {
		var k Keys
		key := func(depth, i int) []byte { return []byte(strings.Repeat("k", depth) + string(rune('A'+i))) }
		var open func(depth int)
		open = func(depth int) {
			o := k.Open()
			for i := range n {
				if k.Add(&o, key(depth, i)) {
					t.Fatalf("n=%d depth %d: key %d seen twice on its first time", n, depth, i)
				}
				if depth < 3 && i == n/2 {
					open(depth + 1)
				}
			}
			for _, i := range []int{0, n / 2, n - 1} {
				if n > 0 && !k.Add(&o, key(depth, i)) {
					t.Errorf("n=%d depth %d: key %d again is not seen twice", n, depth, i)
				}
			}
			if k.Add(&o, []byte("other")) {
				t.Errorf("n=%d depth %d: a new key is seen twice", n, depth)
			}
			k.Close(o)
		}
		open(0)
		if k.s.n != 0 {
			t.Errorf("n=%d: %d keys left after the last Close", n, k.s.n)
		}
	}
	// The same key in two objects, one inside the other, is no duplicate.
	var k Keys
	outer := k.Open()
	k.Add(&outer, []byte("a"))
	inner := k.Open()
	if k.Add(&inner, []byte("a")) {
		t.Error(`"a" inside an object with "a" is seen twice`)
	}
	k.Close(inner)
	if !k.Add(&outer, []byte("a")) {
		t.Error(`"a" again in the outer object is not seen twice`)
	}
}

func TestSkipSpace(t *testing.T) {
	for _, tc := range []struct {
		in      string
		from, n int
	}{{"", 0, 0}, {" \t\r\n{", 0, 4}, {"a  b", 1, 3}, {"   ", 1, 3}, {"x", 0, 0}} {
		if got := SkipSpace([]byte(tc.in), tc.from); got != tc.n {
			t.Errorf("SkipSpace(%q, %d) = %d, want %d", tc.in, tc.from, got, tc.n)
		}
	}
}

func TestStack(t *testing.T) {
	var s Stack[int]
	for i := range 40 { // 32 in buf, 8 beyond
		s.Push(i)
	}
	s.Truncate(30)
	for i := 30; i < 45; i++ { // over the old elements beyond buf, then more
		s.Push(100 + i)
	}
	var got []int
	for i := range s.Len() {
		got = append(got, s.At(i))
	}
	var want []int
	for i := range 30 {
		want = append(want, i)
	}
	for i := 30; i < 45; i++ {
		want = append(want, 100+i)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stack (-want +got):\n%s", diff)
	}
}
