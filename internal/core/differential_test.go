package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// textCounter is a custom rule with state of its own: it stops every
// fifth step that has text. It shows that custom rules' states are saved
// and restored like the built-ins'.
type textCounter struct{ every int }

// textCounterState counts a run's steps with text.
type textCounterState struct{ n, every int }

func (d *textCounter) Name() string          { return "textcounter" }
func (d *textCounter) Priority() int         { return guard.PriorityCustom }
func (d *textCounter) Options() any          { return map[string]int{"every": d.every} }
func (d *textCounter) NewState() guard.State { return &textCounterState{every: d.every} }
func (d *textCounterState) Observe(f *guard.Facts) {
	if f.HasText && d.n < math.MaxInt {
		d.n++
	}
}

// CheckBounds: the steps with text are among the steps recorded.
func (d *textCounterState) CheckBounds(c guard.Counters) error {
	if d.n > c.Steps {
		return errors.New("more steps with text than steps")
	}
	return nil
}
func (d *textCounterState) Verdict() guard.Verdict {
	if d.n > 0 && d.n%d.every == 0 {
		return guard.Verdict{Stop: true, Code: "TEXT_COUNT", Evidence: map[string]int{"steps": d.n}}
	}
	return guard.Verdict{}
}
func (d *textCounterState) Preflight(*guard.Facts) guard.Verdict { return guard.Verdict{} }
func (d *textCounterState) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	return json.Marshal(map[string]int{"n": d.n})
}
func (d *textCounterState) Restore(state []byte) error {
	var s *struct{ N int }
	if err := json.Unmarshal(state, &s); err != nil {
		return err
	}
	if s == nil {
		d.n = 0
		return nil
	}
	if s.N < 0 {
		return errors.New("negative count")
	}
	d.n = s.N
	return nil
}

// allDetectors builds every built-in detector, with options that make random
// runs trip all of them (and warn), plus the custom one. clock drives the
// duration budget. The oscillation rule compares results, the state with
// more to save (its preflight is covered by the detector's own tests).
func allDetectors(t interface{ Fatal(...any) }, clock *testutil.Clock) []guard.Rule {
	must := func(d guard.Rule, err error) guard.Rule {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return []guard.Rule{
		must(finish.New(finish.Options{OtherPolicy: finish.StopIfTextOnly})),
		must(budget.New(budget.Options{MaxSteps: 40, MaxTotalTokens: budget.Limit{Value: 900, WarnAt: 0.5},
			MaxCostUSD: budget.Limit{Value: 0.5}, MaxDurationMs: budget.Limit{Value: 60_000}, WarnAt: 0.8, Now: clock.Now})),
		must(toollimit.New(toollimit.Options{MaxCalls: map[string]int{"write": 4, "think": 0}, Warn: true})),
		must(repeat.New(repeat.Options{Threshold: 3, Warn: true, Tools: map[string]repeat.ToolPolicy{"read": {Polling: true, MaxIdenticalResults: 2}}})),
		must(window.New(window.Options{Window: 6, Threshold: 3, Warn: true})),
		must(oscillation.New(oscillation.Options{MaxPeriod: 3, Repeats: 2, RequireIdenticalResults: true, Warn: true})),
		must(noprogress.New(noprogress.Options{Threshold: 3, Window: 4, Warn: true})),
		must(stall.New(stall.Options{Threshold: 4, Window: 5, Warn: true})),
		&textCounter{every: 5},
	}
}

type op struct {
	step      guard.Step
	preflight []guard.ToolCall
	advance   time.Duration
}

func opGen() *rapid.Generator[op] {
	return rapid.Custom(func(t *rapid.T) op {
		var o op
		if rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
			o.preflight = rapid.SliceOfN(testutil.CallGen(), 0, 3).Draw(t, "preflight")
		} else {
			o.step = testutil.StepGen().Draw(t, "step")
		}
		o.advance = time.Duration(rapid.IntRange(0, 2000).Draw(t, "advance")) * time.Millisecond
		return o
	})
}

// apply runs one operation and returns the answer as JSON, for comparison.
func apply(g *guard.Guard, o op) string {
	var (
		v   any
		err error
	)
	if o.preflight != nil {
		v, err = g.Preflight(context.Background(), o.preflight...)
	} else {
		v, err = g.Check(context.Background(), o.step)
	}
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "marshal error: " + err.Error()
	}
	return string(b)
}

// TestSnapshotRestoreDifferential cuts random runs at random points, saves
// the guard as JSON bytes, restores it into fresh detectors and checks that
// it answers exactly like a twin that was never cut, on the rest of the run.
func TestSnapshotRestoreDifferential(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops := rapid.SliceOfN(opGen(), 1, 60).Draw(t, "ops")
		cut := rapid.IntRange(0, len(ops)).Draw(t, "cut")
		redact := rapid.Bool().Draw(t, "redact")
		opts := guard.Config{Ignore: []string{"think"}}

		clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
		twin, err := guard.New(withRules(opts, allDetectors(t, clock)...))
		if err != nil {
			t.Fatal(err)
		}
		cutClock := &testutil.Clock{T: clock.T}
		g, err := guard.New(withRules(opts, allDetectors(t, cutClock)...))
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range ops {
			if i == cut {
				data, err := g.Snapshot(context.Background(), guard.SnapshotOptions{Previews: !redact})
				if err != nil {
					t.Fatal(err)
				}
				cutClock.Advance(time.Hour) // the time between saving and restoring does not count
				restoreClock := &testutil.Clock{T: cutClock.T}
				g, err = guard.Restore(data, withRules(opts, allDetectors(t, restoreClock)...))
				if err != nil {
					t.Fatalf("restore at %d: %v\n%s", i, err, data)
				}
				cutClock = restoreClock
			}
			clock.Advance(o.advance)
			cutClock.Advance(o.advance)
			want, got := apply(twin, o), apply(g, o)
			if redact {
				want, got = decision(want), decision(got)
			}
			if want != got {
				t.Fatalf("op %d (cut at %d, redact %v):\n twin: %s\ncut:  %s", i, cut, redact, want, got)
			}
		}
		ws, gs := summary(t, twin), summary(t, g)
		ws.LastVerdict, gs.LastVerdict = nil, nil
		// A restored first stop keeps its reason, code and rule only.
		ws.FirstStop, gs.FirstStop = savedStop(ws.FirstStop), savedStop(gs.FirstStop)
		if fmt.Sprint(ws) != fmt.Sprint(gs) {
			t.Fatalf("summaries differ:\n twin: %+v\ncut:  %+v", ws, gs)
		}
	})
}

// summary is g.Summary for rapid's tests.
func summary(t interface{ Fatal(...any) }, g *guard.Guard) guard.Summary {
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// savedStop is what a snapshot keeps of a first stop.
func savedStop(v *guard.Verdict) *guard.Verdict {
	if v == nil {
		return nil
	}
	return &guard.Verdict{Stop: v.Stop, Reason: v.Reason, Code: v.Code, Detector: v.Detector}
}

// decision keeps what a redacted snapshot must not change: stop or go on,
// the reason and the code.
func decision(answer string) string {
	var v struct {
		Stop   *bool
		Allow  *bool
		Reason string
		Code   string
	}
	_ = json.Unmarshal([]byte(answer), &v)
	b, _ := json.Marshal(v)
	return string(b)
}
