package guardtest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
)

// failStreak is a detector of our own: it stops the run when that many calls
// in a row have failed.
type failStreak struct {
	guard.Owned // the state of one guard: guard.New refuses to share it
	limit       int
	streak      int
}

func newFailStreak(limit int) *failStreak { return &failStreak{limit: limit} }

func (d *failStreak) Name() string  { return "fail-streak" }
func (d *failStreak) Priority() int { return guard.PriorityCustom }
func (d *failStreak) Options() any  { return map[string]int{"limit": d.limit} }

func (d *failStreak) Observe(f *guard.Facts) {
	for _, c := range f.Calls {
		switch {
		case c.Ignored:
		case c.Failed:
			d.streak = min(d.streak+1, d.limit)
		default:
			d.streak = 0
		}
	}
}

func (d *failStreak) Verdict() guard.Verdict {
	if d.streak < d.limit {
		return guard.Verdict{}
	}
	return guard.Verdict{Stop: true, Code: "FAIL_STREAK",
		Detail:   fmt.Sprintf("%d calls in a row failed", d.streak),
		Feedback: "Your last tool calls all failed. Stop and report what went wrong."}
}

func (d *failStreak) Preflight(*guard.Facts) guard.Verdict { return guard.Verdict{} }

func (d *failStreak) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	if d.streak == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(d.streak)
}

func (d *failStreak) Restore(state []byte) error {
	var streak *int
	if err := json.Unmarshal(state, &streak); err != nil {
		return err
	}
	if streak == nil {
		d.streak = 0
		return nil
	}
	if *streak < 1 || *streak > d.limit {
		return errors.New("fail-streak: streak out of range")
	}
	d.streak = *streak
	return nil
}

func (d *failStreak) Reset() { d.streak = 0 }

// Check returns every problem it finds; a detector that keeps the contract
// has none. In a test, guardtest.Run reports each property as a subtest.
func ExampleCheck() {
	err := guardtest.Check(
		func() guard.Detector { return newFailStreak(3) },
		guardtest.WithOtherOptions(func() guard.Detector { return newFailStreak(4) }),
		guardtest.WithChecks(10),
	)
	fmt.Println(err)
	// Output: <nil>
}

// A generator of your own makes runs of the steps your detector cares about:
// here, mostly failing calls of one tool, mixed with the default steps.
func ExampleWithSteps() {
	failing := func(r *rand.Rand) guard.Step {
		if r.IntN(3) == 0 {
			return guardtest.RandomStep(r)
		}
		call := guard.ToolCall{Name: "fetch", Args: map[string]any{"url": r.IntN(3)}}
		if r.IntN(4) > 0 {
			call.Err = errors.New("503")
		}
		return guard.Step{ToolCalls: []guard.ToolCall{call}}
	}
	err := guardtest.Check(func() guard.Detector { return newFailStreak(3) },
		guardtest.WithSteps(failing), guardtest.WithChecks(10))
	fmt.Println(err)
	// Output: <nil>
}

// A detector whose Preflight changes its state is caught. Each problem names
// its property, says what is wrong, and shows the run and the seed that
// repeat it.
func ExampleCheck_broken() {
	err := guardtest.Check(func() guard.Detector { return &eagerStreak{newFailStreak(2)} },
		guardtest.WithSeed(1), guardtest.WithChecks(10))
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		line, _, _ := strings.Cut(e.Error(), "\n")
		fmt.Println(line)
	}
	// Output:
	// guardtest: PreflightKeepsState: Preflight changed the snapshot before step 0 (calls [{"name":"search","args":{"q":1.0},"error":null}]):
	// guardtest: SnapshotRestore: restored from a snapshot taken after 0 steps, the detector gives another verdict at step 1:
}

// eagerStreak counts calls as failed as soon as Preflight sees them.
type eagerStreak struct{ *failStreak }

func (d *eagerStreak) Preflight(f *guard.Facts) guard.Verdict {
	d.streak = min(d.streak+len(f.Calls), d.limit)
	return guard.Verdict{}
}
