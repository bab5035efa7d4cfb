package guardtest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// failStreak is a rule of our own: it stops the run when that many calls in
// a row have failed. The rule holds only its options; each run's streak is
// in a streakState.
type failStreak struct{ limit int }

func newFailStreak(limit int) *failStreak { return &failStreak{limit: limit} }

func (r *failStreak) Name() string         { return "fail-streak" }
func (r *failStreak) Priority() int        { return rule.PriorityCustom }
func (r *failStreak) Options() any         { return map[string]int{"limit": r.limit} }
func (r *failStreak) NewState() rule.State { return &streakState{rule: r} }

// streakState is one run's streak of failed calls.
type streakState struct {
	rule   *failStreak
	streak int
}

func (d *streakState) Observe(f *rule.Facts) {
	for _, c := range f.Calls {
		switch {
		case c.Ignored:
		case c.Failed:
			d.streak = min(d.streak+1, d.rule.limit)
		default:
			d.streak = 0
		}
	}
}

func (d *streakState) Verdict() rule.Verdict {
	if d.streak < d.rule.limit {
		return rule.Verdict{}
	}
	return rule.Verdict{Stop: true, Code: "FAIL_STREAK",
		Detail:   fmt.Sprintf("%d calls in a row failed", d.streak),
		Feedback: "Your last tool calls all failed. Stop and report what went wrong."}
}

func (d *streakState) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

func (d *streakState) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if d.streak == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(d.streak)
}

func (d *streakState) Restore(state []byte) error {
	var streak *int
	if err := json.Unmarshal(state, &streak); err != nil {
		return err
	}
	if streak == nil {
		d.streak = 0
		return nil
	}
	if *streak < 1 || *streak > d.rule.limit {
		return errors.New("fail-streak: streak out of range")
	}
	d.streak = *streak
	return nil
}

// Check returns every problem it finds; a rule that keeps the contract has
// none. In a test, guardtest.Run reports each property as a subtest.
func ExampleCheck() {
	err := guardtest.Check(
		func(*testing.T) rule.Rule { return newFailStreak(3) },
		guardtest.WithOtherOptions(func(*testing.T) rule.Rule { return newFailStreak(4) }),
		guardtest.WithChecks(10),
	)
	fmt.Println(err)
	// Output: <nil>
}

// A generator of your own makes runs of the steps your rule cares about:
// here, mostly failing calls of one tool, mixed with the default steps.
func ExampleWithSteps() {
	failing := func(r *rand.Rand) rule.Step {
		if r.IntN(3) == 0 {
			return guardtest.RandomStep(r)
		}
		call := rule.ToolCall{Name: "fetch", Args: map[string]any{"url": r.IntN(3)}}
		if r.IntN(4) > 0 {
			call.Err = errors.New("503")
		}
		return rule.Step{ToolCalls: []rule.ToolCall{call}}
	}
	err := guardtest.Check(func(*testing.T) rule.Rule { return newFailStreak(3) },
		guardtest.WithSteps(failing), guardtest.WithChecks(10))
	fmt.Println(err)
	// Output: <nil>
}

// A rule whose Preflight changes its state is caught. Each problem names
// its property, says what is wrong, and shows the run and the seed that
// repeat it.
func ExampleCheck_broken() {
	err := guardtest.Check(func(*testing.T) rule.Rule { return eagerStreak{newFailStreak(2)} },
		guardtest.WithSeed(1), guardtest.WithChecks(10))
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		line, _, _ := strings.Cut(e.Error(), "\n")
		fmt.Println(line)
	}
	// Output:
	// guardtest: PreflightKeepsState: Preflight changed the snapshot before step 0 (calls [{"name":"search","args":{"q":1.0},"error":null}]):
	// guardtest: SnapshotRestore: restored from a snapshot taken after 0 steps, the state gives another verdict at step 1:
}

// eagerStreak counts calls as failed as soon as Preflight sees them.
type eagerStreak struct{ *failStreak }

func (r eagerStreak) NewState() rule.State { return &eagerState{streakState{rule: r.failStreak}} }

type eagerState struct{ streakState }

func (d *eagerState) Preflight(f *rule.Facts) rule.Verdict {
	d.streak = min(d.streak+len(f.Calls), d.rule.limit)
	return rule.Verdict{}
}
