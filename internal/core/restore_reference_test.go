package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// jnode is a JSON value that keeps its members' order and duplicates, so
// that a snapshot can be edited and written back in any spelling.
type jnode struct {
	kind byte // '{', '[', '"', '0' (a number), 'l' (true, false, null), 'r' (any JSON text)
	keys []string
	kids []*jnode
	text string // the string, or the number's or literal's text
}

func parseJSON(t *rapid.T, data []byte) *jnode {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var read func() *jnode
	read = func() *jnode {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		switch v := tok.(type) {
		case json.Delim:
			n := &jnode{kind: byte(v)}
			for dec.More() {
				if v == '{' {
					k, _ := dec.Token()
					n.keys = append(n.keys, k.(string))
				}
				n.kids = append(n.kids, read())
			}
			dec.Token() // the closing delimiter
			return n
		case string:
			return &jnode{kind: '"', text: v}
		case json.Number:
			return &jnode{kind: '0', text: string(v)}
		case bool:
			return &jnode{kind: 'l', text: fmt.Sprint(v)}
		}
		return &jnode{kind: 'l', text: "null"}
	}
	return read()
}

func (n *jnode) clone() *jnode {
	c := *n
	c.keys = append([]string(nil), n.keys...)
	c.kids = make([]*jnode, len(n.kids))
	for i, k := range n.kids {
		c.kids[i] = k.clone()
	}
	return &c
}

// all returns every value of the tree, n first.
func (n *jnode) all() []*jnode {
	out := []*jnode{n}
	for _, k := range n.kids {
		out = append(out, k.all()...)
	}
	return out
}

// write writes n; spell, when set, writes a string (key or value) in a
// spelling of its choice.
func (n *jnode) write(b *bytes.Buffer, spell func(s string) string, space func() string) {
	b.WriteString(space())
	switch n.kind {
	case '{', '[':
		b.WriteByte(n.kind)
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			if n.kind == '{' {
				b.WriteString(space() + spell(n.keys[i]) + space() + ":")
			}
			k.write(b, spell, space)
		}
		b.WriteString(space())
		if n.kind == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	case '"':
		b.WriteString(spell(n.text))
	default:
		b.WriteString(n.text)
	}
	b.WriteString(space())
}

// jsonQuote writes s as a JSON string, sometimes with its first character
// escaped as \uXXXX.
func jsonQuote(s string, escape bool) string {
	q, _ := json.Marshal(s)
	if !escape || s == "" || s[0] >= 0x80 || s[0] == '"' || s[0] == '\\' {
		return string(q)
	}
	return fmt.Sprintf(`"\u%04x%s`, s[0], q[2:])
}

// scalars are values to put in place of others: every JSON type, numbers in
// the spellings encoding/json reads into an int or does not, and sums.
var scalars = []string{`null`, `0`, `-0`, `1`, `1.0`, `1e0`, `-1`, `9223372036854775807`,
	`9223372036854775808`, `-9223372036854775808`, `"1"`, `""`, `true`, `false`, `[]`, `{}`, `[null]`, `{"a":1}`,
	`"0123456789abcdef0123456789abcdef"`, `"0123456789ABCDEF0123456789ABCDEF"`, `"\u0030123456789abcdef0123456789abcdef"`,
	`1.5`, `1E+2`, `"a\u00e9b"`, `"\ud800"`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`}

// editTree edits the tree once.
func editTree(t *rapid.T, root *jnode) {
	nodes := root.all()
	n := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "node")]
	switch rapid.IntRange(0, 6).Draw(t, "edit") {
	case 0: // a value of another type or spelling
		v := rapid.SampledFrom(scalars).Draw(t, "scalar")
		*n = jnode{kind: 'r', text: v} // written as it is
	case 1: // a member twice, or in another case
		if n.kind != '{' || len(n.keys) == 0 {
			return
		}
		i := rapid.IntRange(0, len(n.keys)-1).Draw(t, "member")
		k := n.keys[i]
		switch rapid.IntRange(0, 3).Draw(t, "twin") {
		case 0:
			k = strings.ToUpper(k)
		case 1:
			k = strings.ToUpper(k[:1]) + k[1:]
		case 2:
			k = strings.Replace(k, "s", "ſ", 1) // folds to s
		}
		n.keys = append(n.keys, k)
		n.kids = append(n.kids, n.kids[i].clone())
		if rapid.Bool().Draw(t, "alone") { // in place of the original
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			n.kids = append(n.kids[:i], n.kids[i+1:]...)
		}
	case 2: // a member less
		if len(n.kids) == 0 {
			return
		}
		i := rapid.IntRange(0, len(n.kids)-1).Draw(t, "drop")
		if n.kind == '{' {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
		}
		n.kids = append(n.kids[:i], n.kids[i+1:]...)
	case 3: // an unknown member
		if n.kind != '{' {
			return
		}
		n.keys = append(n.keys, rapid.SampledFrom([]string{"extra", "", "x\u00e9", "meta"}).Draw(t, "key"))
		n.kids = append(n.kids, parseJSON(t, []byte(rapid.SampledFrom(scalars[:20]).Draw(t, "value"))))
	case 4: // nested deeper
		c := *n
		*n = jnode{kind: '[', kids: []*jnode{&c}}
	case 5: // an element twice (a record, a step index)
		if n.kind != '[' || len(n.kids) == 0 {
			return
		}
		n.kids = append(n.kids, n.kids[rapid.IntRange(0, len(n.kids)-1).Draw(t, "elem")].clone())
	case 6: // a string changed
		if n.kind != '"' {
			return
		}
		n.text = rapid.SampledFrom([]string{"", strings.ToUpper(n.text), n.text + "x", "fin\u00e9", "think"}).Draw(t, "string")
	}
}

// TestRestoreAgreesWithReference edits real snapshots at random (values of
// other types, keys twice or in another case or escaped, members dropped or
// added, deeper nesting, whitespace, truncation, trailing bytes) and checks
// that Restore and the Restore of before accept and refuse the same
// documents, and restore what both accept to the same guard.
func TestRestoreAgreesWithReference(t *testing.T) {
	clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
	opts := guard.Config{Ignore: []string{"think"}}
	g, err := guard.New(withRules(opts, allDetectors(t, clock)...))
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for i := range 8 {
		seed, err := g.Snapshot(t.Context(), guard.SnapshotOptions{Previews: i%3 != 2})
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, seed)
		testutil.Check(t, g, bigStep(i%4))
		testutil.Check(t, g, guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Call("write", `{}`), testutil.Q("x")},
			Usage: guard.Usage{TotalTokens: 5, CostUSD: 0.25}})

	}
	accepted, refused := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.SampledFrom(seeds).Draw(t, "seed")
		root := parseJSON(t, seed)
		for range rapid.IntRange(0, 3).Draw(t, "edits") {
			editTree(t, root)
		}
		escape := rapid.IntRange(0, 9).Draw(t, "escape") == 0
		spaced := rapid.IntRange(0, 9).Draw(t, "spaced") == 0
		var b bytes.Buffer
		root.write(&b, func(s string) string { return jsonQuote(s, escape && len(s) > 3) }, func() string {
			if spaced {
				return " \n"
			}
			return ""
		})
		data := b.Bytes()
		switch rapid.IntRange(0, 19).Draw(t, "text") {
		case 0:
			data = data[:rapid.IntRange(0, len(data)).Draw(t, "cut")]
		case 1:
			data = append(data, rapid.SampledFrom([]string{" ", "x", "{}", "\x00", "\f", "\u00a0"}).Draw(t, "trailer")...)
		case 2:
			data = append([]byte(rapid.SampledFrom([]string{"\ufeff", "\f", " \t\r\n"}).Draw(t, "leader")), data...)
		}
		got, err := guard.Restore(data, withRules(opts, allDetectors(t, &testutil.Clock{T: clock.T})...))
		want, werr := guard.ReferenceRestore(data, withRules(opts, allDetectors(t, &testutil.Clock{T: clock.T})...))
		if (err == nil) != (werr == nil) {
			t.Fatalf("Restore: %v\nthe reference: %v\nsnapshot: %s", err, werr, data)
		}
		if err != nil {
			refused++
			if !errors.Is(err, guard.ErrInvalidState) && !errors.Is(err, guard.ErrOptionsChanged) {
				t.Fatalf("Restore: %v, neither ErrInvalidState nor ErrOptionsChanged", err)
			}
			return
		}
		accepted++
		a, _ := got.Snapshot(t.Context(), guard.SnapshotOptions{Previews: true})
		b2, _ := want.Snapshot(t.Context(), guard.SnapshotOptions{Previews: true})
		if !bytes.Equal(a, b2) {
			t.Fatalf("restored differently:\n%s\n%s", a, b2)
		}
	})
	t.Logf("%d documents accepted, %d refused by both", accepted, refused)
	if accepted == 0 || refused == 0 {
		t.Errorf("%d documents accepted, %d refused: the edits do not reach both sides", accepted, refused)
	}
}

// stateLike has the kinds of fields that the built-in detectors' states
// have: slices of sums, of pointers to sums, of ints and of structs, a map,
// pointers, a string, a fixed array and a field that is not JSON.
type stateLike struct {
	Tools    []canonical.Sum  `json:"tools"`
	Ops      []*canonical.Sum `json:"ops"`
	Steps    []int            `json:"steps"`
	Calls    []callLike       `json:"calls"`
	Counts   map[string]int   `json:"counts"`
	Stalled  int              `json:"stalled"`
	Outcomes string           `json:"outcomes"`
	Last     *canonical.Sum   `json:"lastInput,omitempty"`
	Wall     *float64         `json:"wallClockMs"`
	Pair     [2]int           `json:"pair"`
	Skipped  int              `json:"-"`
	Plain    bool
}

type callLike struct {
	Key     canonical.Sum `json:"key"`
	Tool    string        `json:"tool"`
	Preview string        `json:"preview,omitempty"`
}

// TestUnmarshalStateAgreesWithReference holds UnmarshalState, which checks
// keys without allocating and makes room for slices before decoding, to
// the UnmarshalState of before: on edited states of every kind of field,
// both accept or both refuse, and both decode the same value, into a struct
// and into a nil pointer to one.
func TestUnmarshalStateAgreesWithReference(t *testing.T) {
	sum := func(t *rapid.T, label string) canonical.Sum {
		return canonical.HashString(fmt.Sprint(rapid.IntRange(0, 3).Draw(t, label)))
	}
	accepted := 0
	rapid.Check(t, func(t *rapid.T) {
		var s stateLike
		for range rapid.IntRange(0, 12).Draw(t, "n") {
			s.Tools = append(s.Tools, sum(t, "tool"))
			var op *canonical.Sum
			if rapid.Bool().Draw(t, "op") {
				x := sum(t, "opSum")
				op = &x
			}
			s.Ops = append(s.Ops, op)
			s.Steps = append(s.Steps, rapid.IntRange(-2, 100).Draw(t, "step"))
			s.Calls = append(s.Calls, callLike{Key: sum(t, "key"), Tool: rapid.SampledFrom([]string{"a", "read"}).Draw(t, "name")})
		}
		if rapid.Bool().Draw(t, "counts") {
			s.Counts = map[string]int{"read": 2, "write": 1}
		}
		s.Stalled = rapid.IntRange(0, 5).Draw(t, "stalled")
		s.Outcomes = rapid.SampledFrom([]string{"", "AAAA", strings.Repeat("QUJD", 200)}).Draw(t, "outcomes")
		if rapid.Bool().Draw(t, "last") {
			x := sum(t, "lastSum")
			s.Last = &x
		}
		good, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		data := good
		if rapid.Bool().Draw(t, "null") {
			data = []byte("null")
		} else if rapid.IntRange(0, 4).Draw(t, "edit") > 0 {
			root := parseJSON(t, good)
			for range rapid.IntRange(1, 3).Draw(t, "edits") {
				editTree(t, root)
			}
			var b bytes.Buffer
			escape := rapid.IntRange(0, 9).Draw(t, "escape") == 0
			root.write(&b, func(s string) string { return jsonQuote(s, escape && len(s) > 3) }, func() string { return "" })
			data = b.Bytes()
		}
		var gotV, wantV stateLike
		err = guard.UnmarshalState(data, &gotV)
		werr := guard.ReferenceUnmarshalState(data, &wantV)
		if (err == nil) != (werr == nil) {
			t.Fatalf("UnmarshalState: %v\nthe reference: %v\nstate: %s", err, werr, data)
		}
		if err == nil && !reflect.DeepEqual(gotV, wantV) {
			t.Fatalf("decoded differently from %s:\n%+v\n%+v", data, gotV, wantV)
		}
		var gotP, wantP *stateLike
		err = guard.UnmarshalState(data, &gotP)
		werr = guard.ReferenceUnmarshalState(data, &wantP)
		if (err == nil) != (werr == nil) {
			t.Fatalf("into a pointer: UnmarshalState: %v\nthe reference: %v\nstate: %s", err, werr, data)
		}
		if err == nil {
			accepted++
			if !reflect.DeepEqual(gotP, wantP) {
				t.Fatalf("into a pointer: decoded differently from %s:\n%+v\n%+v", data, gotP, wantP)
			}
		}
	})
	if accepted == 0 {
		t.Error("no state was accepted")
	}
}
