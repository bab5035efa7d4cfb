package canonical

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type selfRef struct {
	Kids []selfRef           `json:"kids"`
	Map  map[string]*selfRef `json:"map"`
	Any  any                 `json:"any"`
}

type hidden struct{ X int }

type withHidden struct {
	*hidden
	Y int
}

type textPtr struct{ s string }

func (t *textPtr) MarshalText() ([]byte, error) { return []byte("t:" + t.s), nil }

type nilMarshaler struct{}

func (*nilMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"nil ok"`), nil }

type recursiveMarshaler struct{ n int }

func (r recursiveMarshaler) MarshalJSON() ([]byte, error) {
	if r.n == 0 {
		return []byte(`0`), nil
	}
	inner := Append(nil, recursiveMarshaler{r.n - 1}) // re-entrant use of the package
	return []byte(`[` + string(inner) + `]`), nil
}

// TestExoticValues: unusual Go values neither panic nor fail, and hash as
// their JSON encoding where encoding/json accepts them.
func TestExoticValues(t *testing.T) {
	var nilMap map[string]int
	var nilIface error
	arr := [3]int{1, 2, 3}
	n := 5
	pn := &n
	ppn := &pn
	self := selfRef{}
	self.Kids = []selfRef{{}}
	self.Map = map[string]*selfRef{"me": &self}
	self.Any = &self
	values := []any{
		nilMap, nilIface, &arr, ppn, (**int)(nil), [0]byte{}, [2]bool{true},
		big.NewInt(12345), big.NewFloat(1.5), netip.MustParseAddr("::1"), time.Duration(5),
		time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600)),
		withHidden{nil, 1}, withHidden{&hidden{2}, 1},
		map[*textPtr]int{{"a"}: 1}, []*textPtr{{"b"}, nil},
		(*nilMarshaler)(nil), &nilMarshaler{}, []json.Marshaler{nil, &nilMarshaler{}},
		recursiveMarshaler{3}, map[string]any{"a": []any{map[string]any{}}},
		struct {
			A any       `json:"a,omitempty"`
			B any       `json:"b,omitzero"`
			C *struct{} `json:",omitempty"`
		}{},
		errors.New("an error"), uintptr(7), unsafe.Pointer(nil), map[bool]int{true: 1},
		[]any{[]byte(nil), json.RawMessage("null"), json.Number("-1.5e3")},
		strings.Repeat("é", 1000),
	}
	for _, v := range values {
		text := string(Append(nil, v))
		if strings.Contains(text, "[Failed:") {
			t.Errorf("Append(%#v) = %s: a failure", v, text)
		}
		if b, err := json.Marshal(v); err == nil {
			if Hash(v) != HashJSON(b) {
				t.Errorf("Hash(%#v) != HashJSON(%s)\nAppend: %s", v, b, text)
			}
		}
	}
	text := string(Append(nil, self))
	want := `{"any":{"any":[Circular:1],"kids":[{"any":null,"kids":null,"map":null}],"map":{"me":[Circular:2]}},"kids":[{"any":null,"kids":null,"map":null}],"map":{"me":{"any":[Circular:1],"kids":[{"any":null,"kids":null,"map":null}],"map":[Circular:2]}}}`
	if text != want {
		t.Errorf("self-referencing struct:\n got %s\nwant %s", text, want)
	}
}
