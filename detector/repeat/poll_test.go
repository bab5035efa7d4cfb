package repeat_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
)

// poll returns the call an OpenHands agent makes to read more of a running
// command's output, with result r (a string; nil for none).
func poll(r any) guard.ToolCall {
	return guard.ToolCall{Name: "execute_bash", Args: json.RawMessage(`{"command":"","is_input":"true"}`), Result: r}
}

// stops returns which of the verdicts stop.
func stops(vs []guard.Verdict) []bool {
	out := make([]bool, len(vs))
	for i, v := range vs {
		out[i] = v.Stop
	}
	return out
}

func TestNewOutputStartsTheRunAgain(t *testing.T) {
	long := strings.Repeat("x", repeat.LooseBytes)
	failedPoll := poll("tests still running")
	failedPoll.Err = errors.New("exit code 1")
	tests := []struct {
		name    string
		opts    repeat.Options
		results []any // of the same call, a step each
		want    []bool
	}{
		{"new output each time goes on", repeat.Options{},
			[]any{"collecting 120 items", "test_a PASSED", "test_b PASSED", "test_c PASSED", "12 passed"},
			[]bool{false, false, false, false, false}},
		{"the reference's reading stops the third poll", repeat.Options{CountNewResults: true},
			[]any{"collecting 120 items", "test_a PASSED", "test_b PASSED"},
			[]bool{false, false, true}},
		{"the same output: the third stops", repeat.Options{},
			[]any{"still running", "still running", "still running"},
			[]bool{false, false, true}},
		{"new output, then the same twice: K-1 goes on, K stops", repeat.Options{},
			[]any{"collecting", "still running", "still running", "still running"},
			[]bool{false, false, false, true}},
		{"only a counter differs (IPython's Out[n])", repeat.Options{},
			[]any{"Out[2]: False", "Out[3]: False", "Out[4]: False"},
			[]bool{false, false, true}},
		{"only a timestamp and a request id differ", repeat.Options{},
			[]any{`{"results":[],"response_time":1.25,"request_id":"5f0c1b7e-2a4d-4c1e-9a51-0c0ffee00001"}`,
				`{"results":[],"response_time":0.98,"request_id":"6a1d2c8f-3b5e-4d2f-8b62-1d1ffee00002"}`,
				`{"results":[],"response_time":1.02,"request_id":"7b2e3d90-4c6f-4e30-9c73-2e2ffee00003"}`},
			[]bool{false, false, true}},
		{"case and white space are not new output", repeat.Options{},
			[]any{"Still  running", "still running\n", "STILL RUNNING"},
			[]bool{false, false, true}},
		{"output that differs past LooseBytes is the same", repeat.Options{},
			[]any{long + "a", long + "b", long + "c"},
			[]bool{false, false, true}},
		{"output that differs in its last compared byte is new", repeat.Options{},
			[]any{long[1:] + "a", long[1:] + "b", long[1:] + "c"},
			[]bool{false, false, false}},
		{"a failure is no new output", repeat.Options{},
			[]any{"collecting", failedPoll, "test_a PASSED"},
			[]bool{false, false, true}},
		{"calls without results count", repeat.Options{},
			[]any{nil, nil, nil},
			[]bool{false, false, true}},
		{"results that are not text count", repeat.Options{},
			[]any{map[string]any{"lines": 1}, map[string]any{"lines": 2}, map[string]any{"lines": 3}},
			[]bool{false, false, true}},
		{"[]byte and json.RawMessage are text", repeat.Options{},
			[]any{[]byte("collecting"), json.RawMessage(`"test_a PASSED"`), []byte("test_b PASSED")},
			[]bool{false, false, false}},
		{"a result that is only a number is compared as it is: a counter that moves is new output", repeat.Options{},
			[]any{"22", "23", " 24\n", json.RawMessage(`"25"`), "-3.5", "1,024", "6.02e23"},
			[]bool{false, false, false, false, false, false, false}},
		{"the same number: the third stops", repeat.Options{},
			[]any{"21", "22", "22", "22"},
			[]bool{false, false, false, true}},
		{"a number with a word is no bare number: the counter does not count", repeat.Options{},
			[]any{"queued: 3", "queued: 2", "queued: 1"},
			[]bool{false, false, true}},
		{"a number in JSON is not one either", repeat.Options{},
			[]any{json.RawMessage(`{"n":3}`), json.RawMessage(`{"n":4}`), json.RawMessage(`{"n":5}`)},
			[]bool{false, false, true}},
		{"the same number with and without the newline a shell prints: the third stops", repeat.Options{},
			[]any{"22\n", "22", json.RawMessage(`" 22 "`)},
			[]bool{false, false, true}},
		{"a date is no number: dates that move are a counter", repeat.Options{},
			[]any{"2024-06-01", "2024-06-02", "2024-06-03"},
			[]bool{false, false, true}},
		{"nor is an address", repeat.Options{}, []any{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, []bool{false, false, true}},
		{"nor a version", repeat.Options{}, []any{"1.2.3", "1.2.4", "1.2.5"}, []bool{false, false, true}},
		{"nor two exponents", repeat.Options{}, []any{"1e1e1", "1e1e2", "1e1e3"}, []bool{false, false, true}},
		{"nor a separator at the end", repeat.Options{}, []any{"12,", "13,", "14,"}, []bool{false, false, true}},
		{"an exponent with its sign is one", repeat.Options{}, []any{"1e-3", "1e-4", "1E+5"}, []bool{false, false, false}},
		{"signs and points without a digit are no number", repeat.Options{},
			[]any{"-", "+", "."},
			[]bool{false, false, false}},
		{"RequireIdenticalResults: new output ends the run as before", repeat.Options{RequireIdenticalResults: true},
			[]any{"a", "b", "b", "b"},
			[]bool{false, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{})
			var steps []guard.Step
			for _, r := range tt.results {
				c, ok := r.(guard.ToolCall)
				if !ok {
					c = poll(r)
				}
				steps = append(steps, step(c))
			}
			if diff := cmp.Diff(tt.want, stops(run(t, g, steps))); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPreflightAfterNewOutput: a call that would be the third same call is
// refused only when the two before it did not both bring new output.
func TestPreflightAfterNewOutput(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    repeat.Options
		results []any
		refused bool
	}{
		{"after two polls with new output", repeat.Options{}, []any{"collecting", "test_a PASSED"}, false},
		{"after two polls with the same output", repeat.Options{}, []any{"still running", "still running"}, true},
		{"the reference's reading", repeat.Options{CountNewResults: true}, []any{"collecting", "test_a PASSED"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{})
			for _, r := range tt.results {
				ruletest.Check(t, g, step(poll(r)))
			}
			d := ruletest.Preflight(t, g, poll(nil))
			if refused := !d.Allow; refused != tt.refused {
				t.Errorf("refused = %v, want %v (%+v)", refused, tt.refused, d)
			}
		})
	}
}

// TestNewOutputAcrossRestore: the newest result's loose hash is saved, so a
// restored run tells new output as the original does.
func TestNewOutputAcrossRestore(t *testing.T) {
	for _, tt := range []struct {
		name    string
		results []any // before the snapshot, then the one after
		stop    bool
	}{
		{"new output after the restore", []any{"still running", "still running", "done"}, false},
		{"the same output after the restore", []any{"still running", "still running", "still running"}, true},
		{"a counter after the restore", []any{"Out[1]: 5", "Out[2]: 5", "Out[3]: 5"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, repeat.Options{}, guard.Config{})
			for _, r := range tt.results[:len(tt.results)-1] {
				ruletest.Check(t, g, step(poll(r)))
			}
			data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d, _ := repeat.New(repeat.Options{})
			h, err := guard.Restore(data, guard.Config{Rules: []guard.Rule{d}})
			if err != nil {
				t.Fatal(err)
			}
			last := step(poll(tt.results[len(tt.results)-1]))
			a, b := ruletest.Check(t, g, last), ruletest.Check(t, h, last)
			if a.Stop != tt.stop || b.Stop != tt.stop {
				t.Errorf("stop: original %v, restored %v, want %v", a.Stop, b.Stop, tt.stop)
			}
		})
	}
}

// TestNewOutputSnapshotState pins the saved form and what Restore refuses.
func TestNewOutputSnapshotState(t *testing.T) {
	g := newGuard(t, repeat.Options{}, guard.Config{})
	ruletest.Check(t, g, step(poll("collecting")))
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Detectors []struct {
			State json.RawMessage `json:"state"`
		} `json:"detectors"`
	}
	if err := json.Unmarshal(data, &env); err != nil || len(env.Detectors) != 1 {
		t.Fatalf("snapshot %s: %v", data, err)
	}
	var st map[string]any
	if err := json.Unmarshal(env.Detectors[0].State, &st); err != nil {
		t.Fatal(err)
	}
	last, _ := st["last"].(string)
	if len(last) != 16 || strings.Contains(string(data), "collecting") {
		t.Errorf("state %s: want a 16-digit last and no result text", env.Detectors[0].State)
	}

	const sig = `"0123456789abcdef0123456789abcdef"`
	good := `{"sig":` + sig + `,"count":2,"steps":[4,7],"last":"00000000000000ff"}`
	bad := []string{
		`{"sig":` + sig + `,"count":2,"steps":[4,7],"last":"ff"}`,
		`{"sig":` + sig + `,"count":2,"steps":[4,7],"last":"00000000000000FF"}`,
		`{"sig":` + sig + `,"count":2,"steps":[4,7],"last":"000000000000000g"}`,
		`{"sig":` + sig + `,"count":2,"steps":[4,7],"last":255}`,
	}
	d, _ := repeat.New(repeat.Options{})
	ruletest.RejectsKeeping(t, d, good, bad)
	restoresAs(t, d, good)
	// Options that never compare outputs refuse a saved newest result.
	for _, o := range []repeat.Options{{CountNewResults: true}, {RequireIdenticalResults: true}} {
		d, _ := repeat.New(o)
		if err := ruletest.Saver(t, d).Restore([]byte(good)); err == nil {
			t.Errorf("%+v: Restore(%s) = nil, want an error", o, good)
		}
	}
}

// TestReadingsWrittenOnlyWhenSet: CountNewResults and CountAcrossTurns are
// written only when set, so that the default options fingerprint as
// before; RequireIdenticalResults makes CountNewResults read false. The
// options document's side is in detector's registry tests.
func TestReadingsWrittenOnlyWhenSet(t *testing.T) {
	for _, tt := range []struct {
		field string
		set   repeat.Options
	}{
		{"countNewResults", repeat.Options{CountNewResults: true}},
		{"countAcrossTurns", repeat.Options{CountAcrossTurns: true}},
	} {
		if got := optionsJSON(t, repeat.Options{}); strings.Contains(got, tt.field) {
			t.Errorf("default options %s name %s", got, tt.field)
		}
		if got := optionsJSON(t, tt.set); !strings.Contains(got, `"`+tt.field+`":true`) {
			t.Errorf("options %s do not say %s", got, tt.field)
		}
	}
	if a, b := optionsJSON(t, repeat.Options{RequireIdenticalResults: true}), optionsJSON(t, repeat.Options{RequireIdenticalResults: true, CountNewResults: true}); a != b {
		t.Errorf("with RequireIdenticalResults, CountNewResults changes the options: %s, %s", a, b)
	}
}

// TestNewOutputProperty: with outputs that all differ in words, no run of
// same calls ever stops; with one output, the threshold-th call stops, as
// under the reference's reading.
func TestNewOutputProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "calls")
		same := rapid.Bool().Draw(t, "same")
		g := newGuard(t, repeat.Options{}, guard.Config{})
		for i := range n {
			r := "line " + strings.Repeat("a", i+1)
			if same {
				r = "line"
			}
			v := ruletest.Check(t, g, step(poll(r)))
			if want := same && i+1 >= repeat.DefaultThreshold; v.Stop != want {
				t.Fatalf("call %d (same %v): stop %v, want %v", i+1, same, v.Stop, want)
			}
		}
	})
}

// TestBareNumberProperty: for any text, a bare number is a part of it that
// holds a digit and no letter but an exponent's, and a text with a letter
// other than e or E is never one.
func TestBareNumberProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune(" \n\"-+.,_eE0123456789ax")), 0, 12, -1).Draw(t, "text")
		n, ok := repeat.BareNumber(s)
		if !ok {
			return
		}
		if !strings.Contains(s, n) || !strings.ContainsAny(n, "0123456789") || strings.ContainsAny(n, "ax \n\"") {
			t.Fatalf("BareNumber(%q) = %q, true", s, n)
		}
	})
}
