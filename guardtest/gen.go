package guardtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/loopguard/loopguard/rule"
)

// The small alphabets of RandomStep, so that random runs repeat themselves,
// cycle and stall as often as real agents do.
var (
	tools = []string{"search", "search", "read", "read", "write", "think"}
	texts = []string{"", "", "", "Thinking.", "thinking. ", "Let me look that up.",
		"Done.", "  ÜNÏCODE   text ", "I will try again."}
	finishReasons = []string{"", "", "", "tool-calls", "tool-calls", "tool_calls", "stop", "STOP",
		"length", "content-filter", "error", "other", "unknown"}
)

// RandomStep returns a random step in the style of an agent that may be
// looping: zero to three calls of a few tools (search, read, write, think)
// with a few arguments and results, written in several equivalent ways
// (JSON text with or without spaces, Go maps, numbers as int or float64),
// sometimes failing, now and then a refused call; a few texts and finish
// reasons; small usage numbers, and now and then new input or an odd value
// (a negative or NaN number, a tool name of 300 bytes, invalid UTF-8).
//
// It is the default generator of [Run] and [Check]. Call it from a generator
// of your own to mix your steps with these.
func RandomStep(r *rand.Rand) rule.Step {
	s := rule.Step{
		Text:         pick(r, texts),
		FinishReason: pick(r, finishReasons),
	}
	n := 0
	switch x := r.IntN(20); {
	case x < 5:
	case x < 14:
		n = 1
	case x < 18:
		n = 2
	default:
		n = 3
	}
	for range n {
		s.ToolCalls = append(s.ToolCalls, randomCall(r))
	}
	if r.IntN(10) == 0 {
		s.Input = "The user says: go on."
	}
	if r.IntN(8) == 0 {
		c := randomCall(r)
		c.Result, c.Err = nil, nil
		s.Refused = append(s.Refused, c)
	}
	s.Usage = randomUsage(r)
	if r.IntN(50) == 0 {
		s.Text = "\xffinvalid \xc3 UTF-8"
	}
	return s
}

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func randomCall(r *rand.Rand) rule.ToolCall {
	c := rule.ToolCall{Name: pick(r, tools), Args: randomArgs(r, r.IntN(3))}
	switch r.IntN(40) {
	case 0:
		c.Name = strings.Repeat("t", 300) + "a" // longer than the 256 bytes states keep
	case 1:
		c.Name = strings.Repeat("t", 300) + "b"
	case 2:
		c.Name = "bad\xffname"
	case 3:
		c.Name = ""
	}
	switch x := r.IntN(12); {
	case x < 3: // no result: the call has not run, or its result is unknown
	case x < 5:
		c.Err = errors.New(pick(r, []string{"timeout", "not found", "exit code 1"}))
		if r.IntN(2) == 0 {
			c.Result = pick(r, []string{"line 12: syntax error", "line 14: syntax error", "old_str was not found"})
		}
	default:
		c.Result = randomResult(r, r.IntN(3))
	}
	return c
}

// randomArgs returns the arguments {"q": q} written one of several ways.
func randomArgs(r *rand.Rand, q int) any {
	switch r.IntN(8) {
	case 0:
		return json.RawMessage(fmt.Sprintf(`{"q":%d}`, q))
	case 1:
		return json.RawMessage(fmt.Sprintf(`{ "q" : %d.0 }`, q))
	case 2:
		return map[string]any{"q": q}
	case 3:
		return map[string]any{"q": float64(q), "opts": []any{"a", map[string]any{"deep": true}}}
	case 4:
		return nil
	case 5:
		return json.RawMessage(`null`)
	case 6:
		return []any{q, "x"}
	default:
		return fmt.Sprintf("q=%d", q)
	}
}

func randomResult(r *rand.Rand, k int) any {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("result %d", k)
	case 1:
		return json.RawMessage(fmt.Sprintf(`{"hits":[%d]}`, k))
	case 2:
		return map[string]any{"hits": []any{k}}
	default:
		return k
	}
}

func randomUsage(r *rand.Rand) rule.Usage {
	u := rule.Usage{
		InputTokens:  r.Int64N(400),
		OutputTokens: r.Int64N(200),
		CostUSD:      float64(r.IntN(50)) / 1000,
		Duration:     time.Duration(r.IntN(1500)) * time.Millisecond,
	}
	if r.IntN(3) == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens + r.Int64N(50)
	}
	switch r.IntN(25) {
	case 0:
		u.CostUSD = math.NaN()
	case 1:
		u.InputTokens = -1
	case 2:
		u.CostUSD = math.Inf(1)
	case 3:
		u.Duration = -time.Second
	}
	return u
}

// An oddStep is a step a detector must survive.
type oddStep struct {
	what string
	step rule.Step
}

// panicError is an error whose Error method panics.
type panicError struct{}

func (*panicError) Error() string { panic("guardtest: this error's Error method panics") }

// node makes cyclic Go values.
type node struct {
	Name string
	Next *node
}

// oddSteps returns the odd steps of the OddSteps property. They are built
// anew for each use, because a misbehaving detector may modify them.
func oddSteps() []oddStep {
	cyclicMap := map[string]any{"q": 1}
	cyclicMap["self"] = cyclicMap
	cyclicSlice := []any{1, nil}
	cyclicSlice[1] = cyclicSlice
	ring := &node{Name: "a"}
	ring.Next = &node{Name: "b", Next: ring}
	var deepGo any = "bottom"
	for range 10_000 {
		deepGo = []any{deepGo}
	}
	deepJSON := json.RawMessage(strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000))
	huge := strings.Repeat("loop and loop again ", 1<<14) // 320 kB
	var nilErr *panicError
	same := make([]rule.ToolCall, 5000)
	for i := range same {
		same[i] = rule.ToolCall{Name: "search", Args: json.RawMessage(`{"q":1}`), Result: "r"}
	}
	distinct := make([]rule.ToolCall, 5000)
	for i := range distinct {
		distinct[i] = rule.ToolCall{Name: fmt.Sprintf("tool%d", i%97), Args: map[string]any{"i": i}}
	}
	call := func(c rule.ToolCall) []rule.ToolCall { return []rule.ToolCall{c, c, c} }
	return []oddStep{
		{"an empty step", rule.Step{}},
		{"a huge text", rule.Step{Text: huge, FinishReason: "stop"}},
		{"text that is not UTF-8", rule.Step{Text: "\xff\xfe\xfd loop \xc3", FinishReason: "\xff"}},
		{"a huge finish reason and input", rule.Step{FinishReason: huge[:100_000], Input: huge}},
		{"NaN usage", rule.Step{Usage: rule.Usage{CostUSD: math.NaN(), InputTokens: 1}}},
		{"infinite cost", rule.Step{Usage: rule.Usage{CostUSD: math.Inf(1)}}},
		{"negative usage", rule.Step{Usage: rule.Usage{InputTokens: -5, OutputTokens: -7, TotalTokens: -1,
			CostUSD: -1, Duration: -time.Hour}}},
		{"the largest usage", rule.Step{Usage: rule.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64,
			TotalTokens: math.MaxInt64, CostUSD: math.MaxFloat64, Duration: math.MaxInt64}}},
		{"invalid JSON arguments", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: json.RawMessage(`{"q":`)})}},
		{"empty JSON arguments", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: json.RawMessage{}})}},
		{"arguments that are not UTF-8", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: json.RawMessage("\"\xff\"")})}},
		{"a tool name that is not UTF-8", rule.Step{ToolCalls: call(rule.ToolCall{Name: "se\xffarch", Args: "x"})}},
		{"an empty tool name", rule.Step{ToolCalls: call(rule.ToolCall{Name: "", Args: "x"})}},
		{"a tool name of 10,000 bytes", rule.Step{ToolCalls: call(rule.ToolCall{Name: strings.Repeat("é", 5000), Args: "x"})}},
		{"a cyclic map in the arguments", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: cyclicMap, Result: cyclicMap})}},
		{"a cyclic slice in the arguments", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: cyclicSlice})}},
		{"a cyclic pointer in the arguments", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: ring, Result: ring})}},
		{"unencodable arguments", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search",
			Args: map[string]any{"f": func() {}, "c": make(chan int), "z": complex(1, 2), "nan": math.NaN()}})}},
		{"arguments nested 10,000 deep", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: deepGo})}},
		{"JSON arguments nested 100,000 deep", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: deepJSON, Result: deepJSON})}},
		{"huge arguments and result", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: huge, Result: huge})}},
		{"an error whose Error method panics", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: "x", Err: &panicError{}})}},
		{"a nil error pointer", rule.Step{ToolCalls: call(rule.ToolCall{Name: "search", Args: "x", Err: nilErr})}},
		{"5000 identical parallel calls", rule.Step{ToolCalls: same}},
		{"5000 parallel calls of 97 tools", rule.Step{ToolCalls: distinct, Text: "many"}},
	}
}
