// Package testutil holds step builders and rapid generators shared by
// loopguard's tests.
package testutil

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// Call returns a call of tool with JSON arguments args and no result.
func Call(tool, args string) guard.ToolCall {
	return guard.ToolCall{Name: tool, Args: json.RawMessage(args)}
}

// Done returns a call of tool with JSON arguments args and a result.
func Done(tool, args string, result any) guard.ToolCall {
	return guard.ToolCall{Name: tool, Args: json.RawMessage(args), Result: result}
}

// Failed returns a call of tool with JSON arguments args that failed.
func Failed(tool, args, msg string) guard.ToolCall {
	return guard.ToolCall{Name: tool, Args: json.RawMessage(args), Err: errors.New(msg)}
}

// Calls returns a step that makes the given calls and has no text.
func Calls(calls ...guard.ToolCall) guard.Step {
	return guard.Step{ToolCalls: calls}
}

// Text returns a step with text and no calls.
func Text(text string) guard.Step { return guard.Step{Text: text} }

// Q returns a call of "search" with {"q": q} and no result.
func Q(q string) guard.ToolCall { return Call("search", fmt.Sprintf(`{"q":%q}`, q)) }

// Tools is the small alphabet of tool names the generators use, so that
// random runs repeat and cycle often.
var Tools = []string{"search", "read", "think", "write"}

// CallGen generates calls from a small alphabet: a few tools, a few
// arguments, a few results, sometimes an error.
func CallGen() *rapid.Generator[guard.ToolCall] {
	return rapid.Custom(func(t *rapid.T) guard.ToolCall {
		c := guard.ToolCall{
			Name: rapid.SampledFrom(Tools).Draw(t, "tool"),
			Args: json.RawMessage(fmt.Sprintf(`{"q":%d}`, rapid.IntRange(0, 2).Draw(t, "arg"))),
		}
		switch rapid.IntRange(0, 4).Draw(t, "outcome") {
		case 0: // no result
		case 1:
			c.Err = errors.New("failed")
		default:
			c.Result = fmt.Sprintf("r%d", rapid.IntRange(0, 2).Draw(t, "result"))
		}
		return c
	})
}

// StepGen generates steps that loop often: zero to three calls, one of a
// few texts, a finish reason now and then, small usage numbers, and
// sometimes new input.
func StepGen() *rapid.Generator[guard.Step] {
	return rapid.Custom(func(t *rapid.T) guard.Step {
		s := guard.Step{
			Text:      rapid.SampledFrom([]string{"", "", "thinking", "Thinking ", "done"}).Draw(t, "text"),
			ToolCalls: rapid.SliceOfN(CallGen(), 0, 3).Draw(t, "calls"),
			FinishReason: rapid.SampledFrom([]string{"", "", "", "tool-calls", "tool_calls",
				"other", "length", "stop"}).Draw(t, "finish"),
			Usage: guard.Usage{
				InputTokens:  rapid.Int64Range(0, 50).Draw(t, "in"),
				OutputTokens: rapid.Int64Range(0, 50).Draw(t, "out"),
				CostUSD:      float64(rapid.IntRange(0, 3).Draw(t, "cost")) / 100,
				Duration:     time.Duration(rapid.IntRange(0, 3).Draw(t, "ms")) * time.Millisecond,
			},
		}
		if rapid.IntRange(0, 9).Draw(t, "input") == 0 {
			s.Input = "user reply"
		}
		return s
	})
}

// Clock is a manual clock for time-based detectors. The zero value starts at
// the zero time.
type Clock struct{ T time.Time }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.T }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.T = c.T.Add(d) }

// OptionFields returns the fields named by the *guard.OptionError values in
// err (one, or several joined), in order. Any part of err that is not an
// OptionError of detector is reported as a test error.
func OptionFields(t testing.TB, err error, detector string) []string {
	t.Helper()
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	var fields []string
	for _, e := range parts {
		var oe *guard.OptionError
		if !errors.As(e, &oe) || oe.Detector != detector {
			t.Errorf("error %v is not an OptionError of %s", e, detector)
			continue
		}
		fields = append(fields, oe.Field)
	}
	return fields
}

// Panicky is a rule of one's own whose Observe panics while *Panics is above
// zero (counting it down), or always while it is negative: for tests that a
// panicking rule leaves its guard, its run and its locks as they were.
type Panicky struct{ Panics *atomic.Int32 }

var (
	_ rule.Rule  = Panicky{}
	_ rule.State = Panicky{}
)

// Name returns "panicky".
func (Panicky) Name() string { return "panicky" }

// Priority returns rule.PriorityCustom.
func (Panicky) Priority() int { return rule.PriorityCustom }

// Options returns nil.
func (Panicky) Options() any { return nil }

// NewState returns p: the rule keeps no state.
func (p Panicky) NewState() rule.State { return p }

// Verdict goes on.
func (Panicky) Verdict() rule.Verdict { return rule.Verdict{} }

// Preflight allows.
func (Panicky) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// Observe panics as *Panics says.
func (p Panicky) Observe(*rule.Facts) {
	if n := p.Panics.Load(); n < 0 || n > 0 && p.Panics.CompareAndSwap(n, n-1) {
		panic("panicky: boom")
	}
}

// Sums returns the form of outcome sums in detector states: one 16-byte sum
// per id (the id in its first byte, zeros after it), concatenated and
// encoded in base64 without padding.
func Sums(ids ...byte) string {
	var raw []byte
	for _, id := range ids {
		var s [16]byte
		s[0] = id
		raw = append(raw, s[:]...)
	}
	return base64.RawStdEncoding.EncodeToString(raw)
}

// PreflightPanicky is a Panicky whose Preflight also panics while *Armed is
// above zero (counting it down): for tests that a rule panicking in a
// preflight leaves its turn's lock free.
type PreflightPanicky struct {
	Panicky
	Armed *atomic.Int32
}

// NewState returns p.
func (p PreflightPanicky) NewState() rule.State { return p }

// Preflight panics as *Armed says, and otherwise allows.
func (p PreflightPanicky) Preflight(*rule.Facts) rule.Verdict {
	if n := p.Armed.Load(); n > 0 && p.Armed.CompareAndSwap(n, n-1) {
		panic("preflightPanicky: boom")
	}
	return guard.Verdict{}
}

// New returns a guard in memory with these rules and default options, and
// fails t if it cannot be built.
func New(t testing.TB, rules ...rule.Rule) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: rules})
	if err != nil {
		t.Fatalf("guard.New: %v", err)
	}
	return g
}

// Check is g.Check with a background context; it fails t on an error.
func Check(t testing.TB, g *guard.Guard, s guard.Step) guard.Verdict {
	t.Helper()
	v, err := g.Check(context.Background(), s)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return v
}

// Preflight is g.Preflight with a background context; it fails t on an
// error.
func Preflight(t testing.TB, g *guard.Guard, calls ...guard.ToolCall) guard.Decision {
	t.Helper()
	d, err := g.Preflight(context.Background(), calls...)
	if err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	return d
}

// Summary is g.Summary with a background context; it fails t on an error.
func Summary(t testing.TB, g *guard.Guard) guard.Summary {
	t.Helper()
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	return s
}

// Snapshot is g.Snapshot with a background context; it fails t on an error.
func Snapshot(t testing.TB, g *guard.Guard, o guard.SnapshotOptions) []byte {
	t.Helper()
	data, err := g.Snapshot(context.Background(), o)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return data
}
