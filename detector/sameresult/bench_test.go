package sameresult_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// sameResultSums returns n distinct sums.
func sameResultSums(n int) []canonical.Sum {
	out := make([]canonical.Sum, n)
	var buf [8]byte
	for i := range out {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		out[i] = canonical.HashBytes(buf[:])
	}
	return out
}

// BenchmarkSameResultObserve measures the rule's own work per one-call
// step, with warnings on: "new" is the common path (each call returns
// something new), "streak" a long result that comes back for other
// arguments three times in a row (its size is read once per streak), and
// "short" a short result that comes back for other arguments every time.
func BenchmarkSameResultObserve(b *testing.B) {
	keys := sameResultSums(64)
	results := sameResultSums(64)
	big := guard.ToolCall{Name: "search", Result: string(make([]byte, 2048))}
	small := guard.ToolCall{Name: "search", Result: "[]"}
	for _, tt := range []struct {
		name   string
		raw    *guard.ToolCall
		result func(i int) canonical.Sum
	}{
		{"new", &big, func(i int) canonical.Sum { return results[i%len(results)] }},
		{"streak", &big, func(i int) canonical.Sum { return results[i/3%len(results)] }},
		{"short", &small, func(int) canonical.Sum { return results[0] }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			st := newSameResultRule(b, sameresult.Options{Warn: true}).NewState()
			var f rule.Facts
			f.Calls = make([]rule.Call, 1)
			facts := sameResultFactsOf(tt.raw)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				f.Index = i
				f.Calls[0] = facts // a fresh copy: its size not read yet
				f.Calls[0].Key, f.Calls[0].Result = keys[i%len(keys)], tt.result(i)
				st.Observe(&f)
				if st.Verdict().Stop {
					b.Fatal("stop")
				}
			}
		})
	}
}

// sameResultFactsOf returns the facts of a call of raw. rule.Call keeps
// its raw call in an unexported field, so the facts come from a guard that
// checks raw once, before the size is read.
func sameResultFactsOf(raw *guard.ToolCall) rule.Call {
	cap := &sameResultCapture{}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{cap}})
	if err != nil {
		panic(err)
	}
	if _, err := g.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{*raw}}); err != nil {
		panic(err)
	}
	return cap.call
}

// sameResultCapture is a rule that keeps a copy of the facts of the last
// step's first call. The copy holds the guard's own copy of the raw call,
// which the guard never changes after Check returns.
type sameResultCapture struct{ call rule.Call }

func (*sameResultCapture) Name() string                       { return "capture" }
func (*sameResultCapture) Priority() int                      { return rule.PriorityCustom }
func (*sameResultCapture) Options() any                       { return nil }
func (c *sameResultCapture) NewState() rule.State             { return c }
func (c *sameResultCapture) Observe(f *rule.Facts)            { c.call = f.Calls[0] }
func (*sameResultCapture) Verdict() rule.Verdict              { return rule.Verdict{} }
func (*sameResultCapture) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// BenchmarkSameResultCheck measures a whole Guard.Check of a one-call step
// with only this rule, each call with other arguments and a new result.
func BenchmarkSameResultCheck(b *testing.B) {
	g := newSameResultGuard(b, sameresult.Options{Warn: true}, guard.Config{})
	steps := make([]guard.Step, 64)
	for i := range steps {
		steps[i] = sameResultStep(sameResultSearch(fmt.Sprint("q", i), fmt.Sprintf("result %d %0600d", i, 0)))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if v, _ := g.Check(ctx, steps[i%len(steps)]); v.Stop {
			b.Fatal("stop")
		}
	}
}
