package core_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/canonical"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestRejectionsFail: a result that a harness wrote to reject an edit is a
// failed call by default, without an error, and not with
// DisableRejections; FailWhen patterns apply either way.
func TestRejectionsFail(t *testing.T) {
	rejected := guard.ToolCall{Name: "str_replace_editor", Args: raw(`{"command":"str_replace","path":"/a.py","old_str":"x = 1","new_str":"x = 2"}`),
		Result: "ERROR:\nNo replacement was performed, old_str `x = 1` did not appear verbatim in /a.py."}
	fine := guard.ToolCall{Name: "str_replace_editor", Args: raw(`{"command":"view","path":"/a.py"}`),
		Result: "Here's the result of running `cat -n` on /a.py:\n     1\tx = 2\n"}
	tests := []struct {
		name string
		o    guard.Config
		call guard.ToolCall
		want bool
	}{
		{"a rejection, by default", guard.Config{}, rejected, true},
		{"a rejection as JSON text", guard.Config{}, guard.ToolCall{Name: "e", Result: json.RawMessage(`"[No exact match found in /a.py for\n` + "```" + `\nx\n` + "```" + `\n]"`)}, true},
		{"a rejection, rejections off", guard.Config{DisableRejections: true}, rejected, false},
		{"a rejection, rejections off, FailWhen", guard.Config{DisableRejections: true, FailWhen: []string{`^ERROR:`}}, rejected, true},
		{"an ordinary result", guard.Config{}, fine, false},
		{"an error, rejections off", guard.Config{DisableRejections: true}, guard.ToolCall{Name: "e", Result: "x", Err: errors.New("boom")}, true},
	}
	for _, tt := range tests {
		sum, failed := failureOf(t, tt.o, tt.call)
		if failed != tt.want || (sum != canonical.Sum{}) != tt.want {
			t.Errorf("%s: failed %v (signature %v), want %v", tt.name, failed, sum, tt.want)
		}
	}
	g := mustNew(t, guard.Config{})
	testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{rejected, fine}})
	if s := testutil.Summary(t, g); s.FailedToolCalls != 1 {
		t.Errorf("FailedToolCalls = %d, want 1", s.FailedToolCalls)
	}
}

// TestRejectionsFingerprint: a snapshot taken with the rejections off
// restores only with them off, and one taken with the defaults only with
// the defaults. The default's fingerprint is that of before the rejections
// (testdata/snapshot-v1.golden.json, TestSnapshotGolden, pins it).
func TestRejectionsFingerprint(t *testing.T) {
	off := guard.Config{DisableRejections: true}
	snap := func(o guard.Config) []byte {
		g := mustNew(t, o)
		testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "e", Result: "No replacement was performed"}}})
		data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	restored := func(data []byte, o guard.Config) error {
		_, err := guard.Restore(data, o)
		return err
	}
	if err := restored(snap(off), guard.Config{}); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("taken with the rejections off, restored with the defaults: %v, want ErrOptionsChanged", err)
	}
	if err := restored(snap(guard.Config{}), off); !errors.Is(err, guard.ErrOptionsChanged) {
		t.Errorf("taken with the defaults, restored with the rejections off: %v, want ErrOptionsChanged", err)
	}
	for _, o := range []guard.Config{{}, off} {
		data := snap(o)
		g, err := guard.Restore(data, o)
		if err != nil {
			t.Fatalf("restored with the same options (%+v): %v", o.DisableRejections, err)
		}
		// The restored guard reads the next result as the first did.
		testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{{Name: "e", Result: "No replacement was performed"}}})
		want := 2
		if o.DisableRejections {
			want = 0
		}
		if diff := cmp.Diff(want, testutil.Summary(t, g).FailedToolCalls); diff != "" {
			t.Errorf("rejections off %v: failed calls after a restore (-want +got):\n%s", o.DisableRejections, diff)
		}
	}
}

// rejectionTraceCalls reads the tool calls of a run of testdata/traces, one
// a line, with their error fields left out when withErrors is false.
func rejectionTraceCalls(t *testing.T, file string, withErrors bool) []guard.ToolCall {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "traces", file))
	if err != nil {
		t.Fatal(err)
	}
	var calls []guard.ToolCall
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var step struct {
			ToolCalls []struct {
				Name   string          `json:"name"`
				Args   json.RawMessage `json:"args"`
				Result json.RawMessage `json:"result"`
				Error  *string         `json:"error"`
			} `json:"toolCalls"`
		}
		if err := json.Unmarshal([]byte(line), &step); err != nil {
			t.Fatal(err)
		}
		if len(step.ToolCalls) != 1 {
			t.Fatalf("%s: a step with %d calls", file, len(step.ToolCalls))
		}
		c := step.ToolCalls[0]
		tc := guard.ToolCall{Name: c.Name, Args: c.Args, Result: c.Result}
		if c.Error != nil && withErrors {
			tc.Err = errors.New(*c.Error)
		}
		calls = append(calls, tc)
	}
	return calls
}

// TestFailureSignaturesListings: the listing of the file as an edit would
// have left it does not count in a failure's signature, so that a harness
// that rejects eight edits of one file with the same message and eight
// listings (openhands-resolver-darkmode, lines 5 to 12) fails the same way
// eight times, with or without the error fields; while other failures stay
// apart (SWE-agent's rejections with other lint errors, in
// sweagent-gpt4-pydicom-1458, a linter's reports, tracebacks).
func TestFailureSignaturesListings(t *testing.T) {
	for _, withErrors := range []bool{true, false} {
		calls := rejectionTraceCalls(t, "openhands-resolver-darkmode.jsonl", withErrors)
		var distinct []int
		seen := map[canonical.Sum]bool{}
		for line := 5; line <= 12; line++ {
			sum, failed := failureOf(t, guard.Config{}, calls[line-1])
			if !failed {
				t.Fatalf("errors %v: line %d did not fail", withErrors, line)
			}
			if !seen[sum] {
				seen[sum] = true
				distinct = append(distinct, line)
			}
		}
		if diff := cmp.Diff([]int{5}, distinct); diff != "" {
			t.Errorf("errors %v: lines with a new signature (-want +got):\n%s", withErrors, diff)
		}
	}

	pydicom := rejectionTraceCalls(t, "sweagent-gpt4-pydicom-1458.jsonl", false)
	eslint := func(report string) guard.ToolCall {
		return guard.ToolCall{Name: "bash", Args: raw(`{"command":"npx eslint src"}`), Result: report, Err: errors.New("exit code 1")}
	}
	python := func(out string) guard.ToolCall {
		return guard.ToolCall{Name: "bash", Args: raw(`{"command":"python a.py"}`), Result: out, Err: errors.New("exit code 1")}
	}
	tests := []struct {
		name string
		a, b guard.ToolCall
		same bool
	}{
		{"SWE-agent: unmatched ']' and unmatched ')' are two failures", pydicom[5], pydicom[6], false},
		{"SWE-agent: the same lint error twice is one", pydicom[6], pydicom[7], true},
		{"a linter's reports on consecutive lines stay apart",
			eslint("/src/a.js\n  12:3  error  'x' is defined but never used  no-unused-vars\n  13:1  error  Unexpected console statement  no-console\n\n✖ 2 problems (2 errors, 0 warnings)"),
			eslint("/src/a.js\n  12:3  error  'y' is not defined  no-undef\n  13:1  error  Unexpected debugger statement  no-debugger\n\n✖ 2 problems (2 errors, 0 warnings)"), false},
		{"tracebacks stay apart",
			python("Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    f()\nKeyError: 'name'"),
			python("Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    f()\nTypeError: f() missing 1 required positional argument: 'x'"), false},
		{"grep -n's matches stay apart",
			python("12:def f(x):\n40:    return g(x)"), python("12:def f(y):\n40:    return h(y)"), false},
	}
	for _, tt := range tests {
		sa, fa := failureOf(t, guard.Config{}, tt.a)
		sb, fb := failureOf(t, guard.Config{}, tt.b)
		if !fa || !fb {
			t.Fatalf("%s: failed %v %v, want both", tt.name, fa, fb)
		}
		if (sa == sb) != tt.same {
			t.Errorf("%s: same signature = %v, want %v", tt.name, sa == sb, tt.same)
		}
	}
}
