package wire_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/proxy/internal/wire"
	"pgregory.net/rapid"
)

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		in    string
		stop  string // the key at which fn returns false
		want  []string
		isErr bool
	}{
		{in: `{}`, want: nil},
		{in: ` { "a" : 1 , "b":"x\"}" ,"c":[1,{"d":[]}] } `, want: []string{`a=1`, `b="x\"}"`, `c=[1,{"d":[]}]`}},
		{in: `{"a":1,"b":2,"c":3}`, stop: "b", want: []string{`a=1`, `b=2`}},
		{in: `{"a":true,"b":null,"c":-1.5e3}`, want: []string{`a=true`, `b=null`, `c=-1.5e3`}},
		{in: `{"a\"b":"\\"}`, want: []string{`a\"b="\\"`}},
		{in: `[]`, isErr: true},
		{in: `{"a":1`, isErr: true},
		{in: `{"a" 1}`, isErr: true},
		{in: `{"a":1,}`, isErr: true},
		{in: `{"a":1} x`, isErr: true},
		{in: `{"a":"open}`, isErr: true},
		{in: ``, isErr: true},
	} {
		var got []string
		err := wire.Fields([]byte(tc.in), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return string(k) != tc.stop
		})
		if tc.isErr {
			if !errors.Is(err, wire.ErrSyntax) {
				t.Errorf("Fields(%s) = %v, want ErrSyntax", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Fields(%s): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Fields(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestItemsAndElements(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  []string
		isErr bool
	}{
		{in: `[]`, want: []string{}},
		{in: ` [ 1 , "a]" , {"b":[2]} ,[[]] ] `, want: []string{`1`, `"a]"`, `{"b":[2]}`, `[[]]`}},
		{in: `[1,]`, isErr: true},
		{in: `[1 2]`, isErr: true},
		{in: `[1`, isErr: true},
		{in: `{}`, isErr: true},
		{in: `[1] 2`, isErr: true},
	} {
		items, err := wire.Items([]byte(tc.in))
		var elems []string
		eerr := wire.Elements([]byte(tc.in), func(e []byte) bool { elems = append(elems, string(e)); return len(elems) < 2 })
		if tc.isErr {
			if !errors.Is(err, wire.ErrSyntax) || !errors.Is(eerr, wire.ErrSyntax) {
				t.Errorf("%s: Items %v, Elements %v, want ErrSyntax", tc.in, err, eerr)
			}
			continue
		}
		got := []string{}
		for _, it := range items {
			got = append(got, string(it))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Items(%s) (-want +got):\n%s", tc.in, diff)
		}
		if want := tc.want[:min(2, len(tc.want))]; len(want) != len(elems) || (len(want) > 0 && !cmp.Equal(want, elems)) {
			t.Errorf("Elements(%s) stopped after %v, want %v", tc.in, elems, want)
		}
	}
}

// TestItemsOfValidJSON: on any valid JSON array, Items gives the elements
// encoding/json gives, byte for byte.
func TestItemsOfValidJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOf(rapid.OneOf(
			rapid.Just[any](nil), rapid.Bool().AsAny(), rapid.Float64().AsAny(),
			rapid.String().AsAny(), rapid.MapOf(rapid.String(), rapid.String()).AsAny(),
			rapid.SliceOf(rapid.String()).AsAny(),
		)).Draw(t, "vals")
		body, err := json.MarshalIndent(vals, "", " ")
		if err != nil {
			t.Skip(err)
		}
		var want []json.RawMessage
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		got, err := wire.Items(body)
		if err != nil {
			t.Fatalf("Items(%s): %v", body, err)
		}
		if len(got) != len(want) {
			t.Fatalf("Items(%s): %d elements, want %d", body, len(got), len(want))
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("element %d: %s, want %s", i, got[i], want[i])
			}
		}
	})
}
