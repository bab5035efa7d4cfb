package repeat_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/internal/ruletest"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

// The steps of a support conversation, as tau2-bench's telecom runs hold
// them: the agent looks the line up (lookup), answers the customer in words
// (answer), and the customer's reply comes with the agent's next step
// (replied).
var (
	lookup = call("get_details_by_id", `{"id":"L1002"}`)
	answer = guard.Step{Text: "Please turn Airplane Mode off and tell me what the status bar shows."}
)

// replied is a step whose input is the customer's reply.
func replied(s guard.Step, reply string) guard.Step {
	s.Input = reply
	return s
}

func TestTurnStartsTheRunAgain(t *testing.T) {
	look := step(lookup)
	tests := []struct {
		name  string
		opts  repeat.Options
		steps []guard.Step
		want  []bool
	}{
		{"three lookups in a row: the third stops", repeat.Options{},
			[]guard.Step{look, look, look},
			[]bool{false, false, true}},
		{"an answer and a reply between: K-1 goes on, K stops", repeat.Options{},
			[]guard.Step{look, answer, replied(look, "Airplane Mode is off."), look, look},
			[]bool{false, false, false, false, true}},
		{"a turn before each lookup: never stops", repeat.Options{},
			[]guard.Step{look, answer, replied(look, "It is off."), answer, replied(look, "I rebooted."), answer, replied(look, "Still no signal.")},
			[]bool{false, false, false, false, false, false, false}},
		{"the reply on a step of its own answered in words", repeat.Options{},
			[]guard.Step{look, look, answer, replied(answer, "Done."), look, look, look},
			[]bool{false, false, false, false, false, false, true}},
		{"an answer with no reply is no turn", repeat.Options{},
			[]guard.Step{look, answer, look, answer, look},
			[]bool{false, false, false, false, true}},
		{"input on every call, no answer between (MINT's feedback), counts", repeat.Options{},
			[]guard.Step{replied(look, "Good, now submit."), replied(look, "Good, submit it."), replied(look, "Submit.")},
			[]bool{false, false, true}},
		{"a reply that comes before any answer counts", repeat.Options{},
			[]guard.Step{look, replied(look, "ok"), replied(look, "ok?")},
			[]bool{false, false, true}},
		{"a step with neither text nor calls is no answer", repeat.Options{},
			[]guard.Step{look, {}, replied(look, "ok"), look},
			[]bool{false, false, false, true}},
		{"an answer alongside a call of the sequence is no answer in words", repeat.Options{},
			[]guard.Step{look, {Text: "Checking your line.", ToolCalls: []guard.ToolCall{lookup}}, replied(look, "ok")},
			[]bool{false, false, true}},
		{"an answer with an ignored call is an answer in words", repeat.Options{},
			[]guard.Step{look, look, {Text: "Let me think.", ToolCalls: []guard.ToolCall{think}}, replied(look, "ok"), look},
			[]bool{false, false, false, false, false}},
		{"a step whose calls were refused is no answer in words", repeat.Options{},
			[]guard.Step{look, look, {Text: "Let me look your line up.", Refused: []guard.ToolCall{lookup}}, replied(look, "ok")},
			[]bool{false, false, false, true}},
		{"the reply on the answer's own step, as package trace puts it", repeat.Options{},
			[]guard.Step{look, look, replied(answer, "ok"), look, look, look},
			[]bool{false, false, false, false, false, true}},
		{"an ignored call refused after the answer does not end the turn", repeat.Options{},
			[]guard.Step{look, look, answer, {Text: "Let me think.", Refused: []guard.ToolCall{think}}, replied(look, "ok"), look},
			[]bool{false, false, false, false, false, false}},
		{"a call refused after the answer ends the turn", repeat.Options{},
			[]guard.Step{look, look, answer, {Text: "Let me look your line up.", Refused: []guard.ToolCall{lookup}}, replied(look, "ok")},
			[]bool{false, false, false, false, true}},
		{"IgnoreErrors: a step with a failed call is no answer in words", repeat.Options{IgnoreErrors: true},
			[]guard.Step{look, look, {Text: "It failed.", ToolCalls: []guard.ToolCall{failed(lookup)}}, replied(look, "ok")},
			[]bool{false, false, false, true}},
		{"CountAcrossTurns: the reference's reading", repeat.Options{CountAcrossTurns: true},
			[]guard.Step{look, answer, replied(look, "Airplane Mode is off."), look},
			[]bool{false, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.opts, guard.Config{Ignore: []string{"think"}})
			if diff := cmp.Diff(tt.want, stops(run(t, g, tt.steps))); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTurnEvidence: the stop after a turn counts and lists only the calls
// since the turn.
func TestTurnEvidence(t *testing.T) {
	g := newGuard(t, repeat.Options{}, guard.Config{})
	vs := run(t, g, []guard.Step{step(lookup), step(lookup), answer, replied(step(lookup), "ok"), step(lookup), step(lookup)})
	want := stop(ev("get_details_by_id", `{"id":"L1002"}`, 3, 3, 3, 4, 5), guard.PhaseCheck)
	if diff := cmp.Diff(want, vs[5], ignoreDetail); diff != "" {
		t.Errorf("stop (-want +got):\n%s", diff)
	}
}

// TestTurnWarns: the warning comes one call short of the threshold, counted
// from the turn.
func TestTurnWarns(t *testing.T) {
	g := newGuard(t, repeat.Options{Warn: true}, guard.Config{})
	vs := run(t, g, []guard.Step{step(lookup), step(lookup), answer, replied(step(lookup), "ok"), step(lookup)})
	var warned []bool
	for _, v := range vs {
		warned = append(warned, len(v.Warnings) > 0)
	}
	if diff := cmp.Diff([]bool{false, true, false, false, true}, warned); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestPreflightAfterAnAnswer: the input of the step to come is unknown in
// preflight, so a turn counts there only once its reply is recorded, on the
// answer's step; a reply that comes with the lookup's own step lets Check go
// on where preflight refused.
func TestPreflightAfterAnAnswer(t *testing.T) {
	for _, tt := range []struct {
		name    string
		before  []guard.Step
		refused bool
		stop    [2]bool // Check of the lookup: with no reply, with one
	}{
		{"two lookups", []guard.Step{step(lookup), step(lookup)}, true, [2]bool{true, true}},
		{"two lookups and an answer", []guard.Step{step(lookup), step(lookup), answer}, true, [2]bool{true, false}},
		{"two lookups and an answer with its reply", []guard.Step{step(lookup), step(lookup), replied(answer, "ok")}, false, [2]bool{false, false}},
		{"two lookups, an answer and a reply", []guard.Step{step(lookup), step(lookup), answer, replied(guard.Step{}, "ok")}, false, [2]bool{false, false}},
		{"an answer, a reply and two lookups", []guard.Step{answer, replied(step(lookup), "ok"), step(lookup)}, true, [2]bool{true, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i, reply := range []string{"", "I rebooted."} {
				g := newGuard(t, repeat.Options{}, guard.Config{})
				run(t, g, tt.before)
				if refused := !ruletest.Preflight(t, g, lookup).Allow; refused != tt.refused {
					t.Errorf("refused = %v, want %v", refused, tt.refused)
				}
				if v := ruletest.Check(t, g, replied(step(lookup), reply)); v.Stop != tt.stop[i] {
					t.Errorf("reply %q: stop = %v, want %v", reply, v.Stop, tt.stop[i])
				}
			}
		})
	}
}

// TestTurnAcrossRestore: the answer in words is saved, so a restored run
// tells the turn as the original does; the saved form names it only when
// it is true, and options that count across turns refuse it.
func TestTurnAcrossRestore(t *testing.T) {
	g := newGuard(t, repeat.Options{}, guard.Config{})
	run(t, g, []guard.Step{step(lookup), step(lookup), answer})
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"talked":true`) || strings.Contains(string(data), "Airplane") {
		t.Errorf("snapshot %s: want talked and no text", data)
	}
	d, _ := repeat.New(repeat.Options{})
	h, err := guard.Restore(data, guard.Config{Rules: []guard.Rule{d}})
	if err != nil {
		t.Fatal(err)
	}
	for _, gd := range []*guard.Guard{g, h} {
		if v := ruletest.Check(t, gd, replied(step(lookup), "ok")); v.Stop {
			t.Errorf("the lookup after a turn stops: %+v", v)
		}
	}

	const sig = `"0123456789abcdef0123456789abcdef"`
	good := `{"sig":` + sig + `,"count":2,"steps":[4,7],"talked":true}`
	restoresAs(t, d, good)
	// An answer in words needs a step after the run's newest call: a run
	// whose newest call is on the last step recorded cannot have one.
	two := newGuard(t, repeat.Options{}, guard.Config{})
	run(t, two, []guard.Step{step(lookup), step(lookup)})
	saved := testutil.Snapshot(t, two, guard.SnapshotOptions{})
	forged := strings.Replace(string(saved), `"steps":[0,1]}`, `"steps":[0,1],"talked":true}`, 1)
	if forged == string(saved) {
		t.Fatalf("nothing replaced in %s", saved)
	}
	if _, err := guard.Restore([]byte(forged), guard.Config{Rules: []guard.Rule{d}}); err == nil {
		t.Errorf("restored %s", forged)
	}
	if _, err := guard.Restore(data, guard.Config{Rules: []guard.Rule{d}}); err != nil {
		t.Errorf("Restore of the answer's snapshot: %v", err)
	}
	across, _ := repeat.New(repeat.Options{CountAcrossTurns: true})
	if err := ruletest.Saver(t, across).Restore([]byte(good)); err == nil {
		t.Errorf("CountAcrossTurns: Restore(%s) = nil, want an error", good)
	}
	// A run saved by an earlier release restores under both readings:
	// CountAcrossTurns takes the fingerprint of the options without it.
	for _, r := range []rule.Rule{d, across} {
		if _, err := guard.Restore(saved, guard.Config{Rules: []guard.Rule{r}}); err != nil {
			t.Errorf("%+v: Restore(%s): %v", r.Options(), saved, err)
		}
	}
	other, _ := repeat.New(repeat.Options{CountAcrossTurns: true, Threshold: 4})
	if _, err := guard.Restore(saved, guard.Config{Rules: []guard.Rule{other}}); err == nil {
		t.Errorf("restored %s under another threshold", saved)
	}
	if _, err := guard.Restore(data, guard.Config{Rules: []guard.Rule{across}}); err == nil {
		t.Errorf("CountAcrossTurns restored a run with an answer in words: %s", data)
	}
	// A state of an earlier release, without talked, restores under both.
	old := `{"sig":` + sig + `,"count":2,"steps":[4,7]}`
	for _, r := range []rule.Rule{d, across} {
		if err := ruletest.Saver(t, r).Restore([]byte(old)); err != nil {
			t.Errorf("Restore(%s): %v", old, err)
		}
	}
}

// TestTurnProperty: with a turn (an answer, then a reply) before every
// lookup, no run ever stops; with no reply, the answers change nothing, as
// under the reference's reading.
func TestTurnProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		threshold := rapid.IntRange(2, 5).Draw(t, "threshold")
		n := rapid.IntRange(1, 12).Draw(t, "lookups")
		reply := rapid.Bool().Draw(t, "reply")
		g := newGuard(t, repeat.Options{Threshold: threshold}, guard.Config{})
		ref := newGuard(t, repeat.Options{Threshold: threshold, CountAcrossTurns: true}, guard.Config{})
		for i := range n {
			s := step(lookup)
			if i > 0 && reply {
				s.Input = "still no signal"
			}
			v, w := ruletest.Check(t, g, s), ruletest.Check(t, ref, s)
			switch {
			case reply && v.Stop:
				t.Fatalf("lookup %d after a turn stops: %+v", i+1, v)
			case !reply && v.Stop != w.Stop:
				t.Fatalf("lookup %d: stop %v, the reference's reading %v", i+1, v.Stop, w.Stop)
			case w.Stop != (i+1 >= threshold):
				t.Fatalf("lookup %d: the reference's reading stops %v at threshold %d", i+1, w.Stop, threshold)
			}
			ruletest.Check(t, g, answer)
			ruletest.Check(t, ref, answer)
		}
	})
}

// An OpenAI transcript of a support conversation: the lookup, an answer in
// words, the customer's reply, the lookup again, twice over.
const supportChat = `{"role":"user","content":"My line has no signal."}
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_details_by_id","arguments":"{\"id\":\"L1002\"}"}}]}
{"role":"tool","tool_call_id":"c1","content":"status: Active"}
{"role":"assistant","content":"Please turn Airplane Mode off."}
{"role":"user","content":"Airplane Mode is off."}
{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"get_details_by_id","arguments":"{\"id\":\"L1002\"}"}}]}
{"role":"tool","tool_call_id":"c2","content":"status: Active"}
{"role":"assistant","content":"Please reboot the phone."}
{"role":"user","content":"I rebooted."}
{"role":"assistant","content":null,"tool_calls":[{"id":"c3","type":"function","function":{"name":"get_details_by_id","arguments":"{\"id\":\"L1002\"}"}}]}
{"role":"tool","tool_call_id":"c3","content":"status: Active"}
`

// TestTurnsOfAnImportedTranscript: package trace puts each reply on the
// answer it follows; the turns count there too, in Check and in preflight.
func TestTurnsOfAnImportedTranscript(t *testing.T) {
	steps, err := trace.ReadOpenAI(strings.NewReader(supportChat))
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t, repeat.Options{Threshold: 2}, guard.Config{})
	for i, s := range steps {
		if len(s.ToolCalls) > 0 {
			if d := ruletest.Preflight(t, g, s.ToolCalls...); !d.Allow {
				t.Errorf("step %d: preflight refused: %v", i, d.Verdict())
			}
		}
		if v := ruletest.Check(t, g, s); v.Stop {
			t.Errorf("step %d: stopped: %v", i, v)
		}
	}
	// The same lookup with no turn between stops at once.
	if v := ruletest.Check(t, g, step(steps[len(steps)-1].ToolCalls...)); !v.Stop {
		t.Errorf("the lookup again with no turn between goes on")
	}
}
