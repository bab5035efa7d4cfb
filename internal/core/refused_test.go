package core_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	guard "github.com/loopguard/loopguard/internal/core"
)

// errText compares errors by their text.
var errText = cmp.Comparer(func(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
})

func TestStepJSONIDsAndRefused(t *testing.T) {
	tests := []struct {
		line string
		want guard.Step
	}{
		{`{"toolCalls": [{"id": "call_1", "name": "a", "args": {"q": 1}, "result": "r"}, {"id": 5, "name": "b"}]}`,
			guard.Step{ToolCalls: []guard.ToolCall{
				{ID: "call_1", Name: "a", Args: raw(`{"q": 1}`), Result: raw(`"r"`)},
				{Name: "b"}, // an id that is not a string is ignored
			}}},
		// Refused entries are read like toolCalls entries, without an
		// outcome: a refused call did not run.
		{`{"refused": [{"id": "call_2", "name": "a", "args": {"q": 1}, "result": "r", "error": "e"}, 7, {"name": 3}, {"name": "c"}]}`,
			guard.Step{Refused: []guard.ToolCall{
				{ID: "call_2", Name: "a", Args: raw(`{"q": 1}`)},
				{Name: "c"},
			}}},
		{`{"refused": "nope"}`, guard.Step{}},
	}
	for _, tt := range tests {
		var s guard.Step
		if err := json.Unmarshal([]byte(tt.line), &s); err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.want, s, errText); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.line, diff)
		}
	}

	in := guard.Step{
		ToolCalls: []guard.ToolCall{{ID: "call_1", Name: "a", Args: raw(`{"q":1}`), Result: "r"}, {Name: "b", Err: errors.New("e")}},
		Refused:   []guard.ToolCall{{ID: "call_2", Name: "a", Args: raw(`{"q":1}`), Result: "ignored", Err: errors.New("ignored")}, {Name: "c"}},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"text":"","toolCalls":[{"name":"a","args":{"q":1},"result":"r","error":null,"id":"call_1"},{"name":"b","args":null,"error":"e"}],` +
		`"refused":[{"name":"a","args":{"q":1},"id":"call_2"},{"name":"c","args":null}]}`
	if string(b) != want {
		t.Errorf("MarshalJSON:\n got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(guard.Step{}); string(b) != `{"text":"","toolCalls":[]}` {
		t.Errorf("an empty step writes %s; no refused key is expected", b)
	}
	var out guard.Step
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	wantOut := guard.Step{
		ToolCalls: []guard.ToolCall{{ID: "call_1", Name: "a", Args: raw(`{"q":1}`), Result: raw(`"r"`)}, {Name: "b", Err: errors.New("e")}},
		Refused:   []guard.ToolCall{{ID: "call_2", Name: "a", Args: raw(`{"q":1}`)}, {Name: "c"}},
	}
	if diff := cmp.Diff(wantOut, out, errText); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
