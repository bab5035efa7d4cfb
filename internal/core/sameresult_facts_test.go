package core_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestSameResultCallResult: Call.Result is the hash of the result alone (the
// same for any tool and arguments), zero without a result or with an error,
// and Call.ResultSize the bytes of the result's text.
func TestSameResultCallResult(t *testing.T) {
	type seen struct {
		Result canonical.Sum
		Size   int
	}
	var got []seen
	p := &probe{name: "p", prio: 100, stopWhen: func(f *guard.Facts) bool {
		for i := range f.Calls {
			c := &f.Calls[i]
			got = append(got, seen{c.Result, c.ResultSize()})
			if c.ResultSize() != got[len(got)-1].Size {
				t.Errorf("ResultSize changed on a second call")
			}
		}
		return false
	}}
	g := mustNew(t, guard.Config{}, p)
	calls := []guard.ToolCall{
		{Name: "a", Args: json.RawMessage(`{"q":1}`), Result: "héllo"},
		{Name: "b", Args: json.RawMessage(`{"q":2}`), Result: json.RawMessage(`"héllo"`)},
		{Name: "c", Args: json.RawMessage(`{"q":3}`), Result: json.RawMessage(` {"a": [1, 2]} `)},
		{Name: "d", Args: json.RawMessage(`{"q":4}`), Result: map[string]any{"a": []int{1, 2}}},
		{Name: "e", Args: json.RawMessage(`{"q":5}`), Result: []byte("xyz")},
		{Name: "f", Args: json.RawMessage(`{"q":6}`)},
		{Name: "g", Args: json.RawMessage(`{"q":7}`), Result: "héllo", Err: errors.New("boom")},
	}
	testutil.Check(t, g, guard.Step{ToolCalls: calls})
	hello := canonical.Hash("héllo")
	want := []seen{
		{hello, 6}, {hello, 6}, // a string and JSON text that holds it: the same result
		{canonical.Hash(json.RawMessage(`{"a":[1,2]}`)), len(`{"a": [1, 2]}`)},
		{canonical.Hash(json.RawMessage(`{"a":[1,2]}`)), len(`{"a":[1,2]}`)},
		{canonical.Hash([]byte("xyz")), 3},
		{},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}
