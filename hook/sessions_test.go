package hook_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

func TestSessions(t *testing.T) {
	var added []string
	s := hook.NewSessions(func(k string) { added = append(added, k) })
	made := 0
	newGuard := func() (*guard.Guard, error) { made++; return guard.New(guard.Config{}) }
	a1, err1 := s.Guard("a", newGuard)
	a2, err2 := s.Guard("a", newGuard)
	b, err3 := s.Guard("b", newGuard)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if a1 != a2 || a1 == b || made != 2 || s.Len() != 2 || len(added) != 2 {
		t.Errorf("a1 == a2: %v, a1 == b: %v, %d made, Len %d, added %v; want one guard per session", a1 == a2, a1 == b, made, s.Len(), added)
	}
	s.Forget("a")
	if a3, _ := s.Guard("a", newGuard); a3 == a1 || made != 3 || s.Len() != 2 {
		t.Errorf("after Forget: the same guard %v, %d made; want a new one", a3 == a1, made)
	}
}

func TestSessionsFactoryErrorIsKept(t *testing.T) {
	s := hook.NewSessions[int](nil)
	errNo := errors.New("no guard")
	calls := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			g, err := s.Guard(1, func() (*guard.Guard, error) { calls++; return nil, errNo })
			if g != nil || !errors.Is(err, errNo) {
				t.Errorf("= %v, %v; want nil, the factory's error", g, err)
			}
		})
	}
	wg.Wait()
	if calls != 1 {
		t.Errorf("the factory was asked %d times, want once", calls)
	}
}

func TestCallIDs(t *testing.T) {
	calls := func(ids ...string) []guard.ToolCall {
		out := make([]guard.ToolCall, len(ids))
		for i, id := range ids {
			out[i] = guard.ToolCall{ID: id, Name: "f"}
		}
		return out
	}
	for _, tc := range []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"", ""}, []string{"call_1", "call_2"}},
		{[]string{"x", "x"}, []string{"x", "call_2"}},
		{[]string{"", "call_1"}, []string{"call_1_2", "call_1"}},
		{[]string{"", "call_1", "call_1_2"}, []string{"call_1_3", "call_1", "call_1_2"}},
	} {
		if diff := cmp.Diff(tc.want, hook.CallIDs(calls(tc.in...))); diff != "" {
			t.Errorf("CallIDs(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
