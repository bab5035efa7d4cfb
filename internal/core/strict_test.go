package core_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	guard "github.com/loopguard/loopguard/internal/core"
)

type innerState struct {
	Count int `json:"count"`
}

type testState struct {
	Stalled int                   `json:"stalled"`
	Calls   []innerState          `json:"calls"`
	Counts  map[string]int        `json:"counts,omitempty"`
	Raw     json.RawMessage       `json:"raw,omitempty"`
	Ptr     *innerState           `json:"ptr,omitempty"`
	ByName  map[string]innerState `json:"byName,omitempty"`
}

func TestUnmarshalState(t *testing.T) {
	tests := []struct {
		doc  string
		want *testState // nil: an error
	}{
		{`{"stalled":2,"calls":[{"count":1}]}`, &testState{Stalled: 2, Calls: []innerState{{1}}}},
		{`null`, &testState{}},
		{`{"counts":{"a":1,"A":2}}`, &testState{Counts: map[string]int{"a": 1, "A": 2}}},
		{`{"raw":{"x":1,"X":2}}`, &testState{Raw: json.RawMessage(`{"x":1,"X":2}`)}},
		// Keys twice, in any case, at any depth.
		{`{"stalled":1,"stalled":2}`, nil},
		{`{"stalled":1,"Stalled":2}`, nil},
		{`{"STALLED":2}`, nil},
		{`{"ſtalled":2}`, nil}, // U+017F folds to s in encoding/json
		{`{"calls":[{"count":1},{"count":1,"COUNT":2}]}`, nil},
		{`{"ptr":{"count":1,"count":2}}`, nil},
		{`{"byName":{"a":{"Count":1}}}`, nil},
		{`{"counts":{"a":1,"a":2}}`, nil},
		{`{"raw":{"x":1,"x":2}}`, nil},
		// A key spelt with escapes is the same key.
		{`{"st\u0061lled":1,"stalled":2}`, nil},
		{`{"counts":{"\u0061":1,"a":2}}`, nil},
		{`{"st\u0061lled":1}`, &testState{Stalled: 1}},
		// Unknown keys.
		{`{"stalled":1,"future":true}`, nil},
		{`{"calls":[{"count":1,"more":2}]}`, nil},
		// What json.Unmarshal rejects.
		{`{"stalled":"x"}`, nil},
		{`{"stalled":1}x`, nil},
		{`{"stalled":1`, nil},
		{`{"stalled":1,}`, nil},
		{`{"calls":[{"count":1},]}`, nil},
		{`{"stalled" 1}`, nil},
		{`{"stalled":1 "calls":[]}`, nil},
		{` {"stalled" : 1 , "calls" : [ { "count" : 2 } ] } `, &testState{Stalled: 1, Calls: []innerState{{2}}}},
	}
	for _, tt := range tests {
		var got *testState
		err := guard.UnmarshalState([]byte(tt.doc), &got)
		if tt.want == nil {
			if err == nil {
				t.Errorf("UnmarshalState(%s) = %+v, want an error", tt.doc, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("UnmarshalState(%s): %v", tt.doc, err)
			continue
		}
		if got == nil {
			got = &testState{}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("UnmarshalState(%s) (-want +got):\n%s", tt.doc, diff)
		}
	}
	// The threat: encoding/json itself takes all of these.
	var s testState
	if err := json.Unmarshal([]byte(`{"stalled":1,"ſTALLED":2}`), &s); err != nil || s.Stalled != 2 {
		t.Errorf("encoding/json no longer folds keys (%v, %d): the checks may be simpler now", err, s.Stalled)
	}
	if err := guard.UnmarshalState([]byte(`{}`), s); err == nil {
		t.Error("UnmarshalState into a non-pointer: no error")
	}
}

// TestUnmarshalStateLimits: 100,000 keys in one object, or arrays nested a
// million deep, cost linear time and no deep stack.
func TestUnmarshalStateLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"counts":{`)
	for i := range 100_000 {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	many := b.String()
	var got *testState
	if err := guard.UnmarshalState([]byte(many+`"k99999":2}}`), &got); err == nil {
		t.Error("a duplicate after 100,000 keys: no error")
	}
	start := time.Now()
	if err := guard.UnmarshalState([]byte(many+`"last":2}}`), &got); err != nil || len(got.Counts) != 100_001 {
		t.Errorf("100,000 keys: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("100,000 keys took %v", d)
	}
	deep := strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000)
	if err := guard.UnmarshalState([]byte(`{"raw":`+deep+`}`), &got); err == nil {
		t.Error("arrays nested a million deep: no error")
	}
}
