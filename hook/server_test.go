package hook_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
)

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// refuse is an SDK's error result: the text, marked.
func refuse(text string) string { return "ERROR: " + text }

// answer reads a result of this fake SDK: a text that starts with "ERROR: "
// is an error result.
func answer(res string, err error) hook.Outcome {
	if text, ok := strings.CutPrefix(res, "ERROR: "); ok {
		return hook.ToolOutcome(&hook.ToolResult[string]{IsError: true, Texts: []string{text}}, err)
	}
	return hook.ToolOutcome(&hook.ToolResult[string]{Content: []string{res}}, err)
}

func TestServe(t *testing.T) {
	ctx := context.Background()
	call := guard.ToolCall{Name: "search", Args: map[string]any{"q": "x"}}
	errPick := errors.New("no guard for this session")
	tests := []struct {
		name    string
		nilG    bool
		pickErr error
		want    []string // the answers of 3 identical calls
		ran     int
		wantErr error
	}{
		{name: "guarded", want: []string{"found x", "found x", "refused"}, ran: 2},
		{name: "no guard", nilG: true, want: []string{"found x", "found x", "found x"}, ran: 3},
		{name: "no key", pickErr: fmt.Errorf("%w: no header", hook.ErrNoKey),
			want: []string{refuse(hook.NoKeyText), refuse(hook.NoKeyText), refuse(hook.NoKeyText)}},
		{name: "pick fails", pickErr: errPick, want: []string{"", "", ""}, wantErr: errPick},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g *guard.Guard
			if !tt.nilG {
				g = newGuard(t)
			}
			ran := 0
			var got []string
			for range 3 {
				res, err := hook.Serve(ctx, g, tt.pickErr, call, func() (string, error) { ran++; return "found x", nil }, answer, refuse)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				if strings.HasPrefix(res, "ERROR: That call was not run: it would have been the 3rd call") {
					res = "refused"
				}
				got = append(got, res)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if ran != tt.ran {
				t.Errorf("the tool ran %d times, want %d", ran, tt.ran)
			}
		})
	}
}

func TestServeRecordsErrorResults(t *testing.T) {
	// Error results are failed calls: five of the same failure stop the
	// run, and the sixth call is refused with that stop.
	ctx := context.Background()
	g := newGuard(t)
	for i := range 6 {
		call := guard.ToolCall{Name: "fetch", Args: map[string]any{"page": i}}
		res, err := hook.Serve(ctx, g, nil, call, func() (string, error) { return "ERROR: timeout", nil }, answer, refuse)
		if err != nil {
			t.Fatal(err)
		}
		if refused := !strings.HasSuffix(res, "timeout"); refused != (i == 5) {
			t.Errorf("call %d answered %q", i+1, res)
		}
	}
	s, err := g.Summary(ctx)
	if err != nil || s.FailedToolCalls != 5 || s.FirstStop == nil {
		t.Errorf("summary %+v, %v; want 5 failed calls and a first stop", s, err)
	}
}

func TestToolOutcome(t *testing.T) {
	errProto := errors.New("connection reset")
	tests := []struct {
		name string
		r    *hook.ToolResult[string]
		err  error
		want hook.Outcome
	}{
		{"error", &hook.ToolResult[string]{Content: []string{"a"}}, errProto, hook.Outcome{Err: errProto}},
		{"nothing", nil, nil, hook.Outcome{}},
		{"awaits input", &hook.ToolResult[string]{AwaitsInput: true, IsError: true}, nil, hook.Outcome{Again: true}},
		{"error result", &hook.ToolResult[string]{IsError: true, Texts: []string{"bad", "input"}}, nil, hook.Outcome{Err: errors.New("bad\ninput")}},
		{"error result without text", &hook.ToolResult[string]{IsError: true}, nil, hook.Outcome{Err: errors.New("the tool reported an error")}},
		{"content", &hook.ToolResult[string]{Content: []string{"a"}, StructuredContent: 1, Texts: []string{"a"}}, nil,
			hook.Outcome{Result: hook.ToolResult[string]{Content: []string{"a"}, StructuredContent: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hook.ToolOutcome(tt.r, tt.err)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error()) })); diff != "" {
				t.Errorf("ToolOutcome (-want +got):\n%s", diff)
			}
		})
	}
}
