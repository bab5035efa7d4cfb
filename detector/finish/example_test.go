package finish_test

import (
	"context"
	"fmt"

	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

func Example() {
	d, err := finish.New(finish.Options{}) // terminal: stop, length, content-filter, error
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: []rule.Rule{d}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background() // a guard in memory never returns an error

	v, _ := g.Check(ctx, guard.Step{Text: "Let me search.", FinishReason: "tool_calls",
		ToolCalls: []guard.ToolCall{{Name: "search", Args: map[string]any{"q": "go"}}}})
	fmt.Println(v.Stop)

	// Gemini reports STOP on function calls: the loop must run them.
	v, _ = g.Check(ctx, guard.Step{FinishReason: "STOP",
		ToolCalls: []guard.ToolCall{{Name: "search", Args: map[string]any{"q": "loopguard"}}}})
	fmt.Println(v.Stop)

	// An unfamiliar reason on a text-only step ends the run.
	v, _ = g.Check(ctx, guard.Step{Text: "The answer is 42.", FinishReason: "OTHER"})
	fmt.Println(v.Code, guard.IsFault(v))

	// "stop" (or "end_turn", "STOP") on a text-only step is a normal
	// finish: no fault, no feedback.
	v, _ = g.Check(ctx, guard.Step{Text: "The answer is 42.", FinishReason: "end_turn"})
	fmt.Println(v.Code, guard.IsFault(v), v.Feedback == "")
	// Output:
	// false
	// false
	// FINISH_OTHER_TEXT_ONLY true
	// FINISH_TERMINAL false true
}

// For an agent that parses its actions out of the model's text, "stop" is
// reported on every step and must not end the run.
func ExampleTextActions() {
	d, err := finish.New(finish.TextActions())
	if err != nil {
		panic(err)
	}
	g, _ := guard.New(guard.Config{Rules: []rule.Rule{d}})
	ctx := context.Background()
	v, _ := g.Check(ctx, guard.Step{Text: "THOUGHT: run the tests\n```bash\npytest\n```", FinishReason: "STOP"})
	fmt.Println(guard.Explain(v))
	v, _ = g.Check(ctx, guard.Step{Text: "cut off mid-", FinishReason: "length"})
	fmt.Println(v.Code)
	// Output:
	// go on
	// FINISH_TERMINAL
}
