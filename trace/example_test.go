package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// An OpenAI transcript, replayed through a guard with the default rules.
func Example() {
	transcript := `[
	  {"role": "user", "content": "Is the build green?"},
	  {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ci_status", "arguments": "{\"branch\": \"main\"}"}}]},
	  {"role": "tool", "tool_call_id": "c1", "content": "running"},
	  {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "ci_status", "arguments": "{\"branch\": \"main\"}"}}]},
	  {"role": "tool", "tool_call_id": "c2", "content": "running"},
	  {"role": "assistant", "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "ci_status", "arguments": "{\"branch\": \"main\"}"}}]},
	  {"role": "tool", "tool_call_id": "c3", "content": "running"}
	]`
	t, err := trace.Parse([]byte(transcript), trace.Unknown)
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Format, len(t.Steps), "steps")
	for i, s := range t.Steps {
		v, err := g.Check(context.Background(), s)
		if err != nil {
			panic(err)
		}
		if v.Stop {
			fmt.Printf("step %d (line %d): %s\n", i, t.Lines[i], v.Code)
			break
		}
	}
	// Output:
	// openai 3 steps
	// step 2 (line 7): REPEATED_TOOL_CALL
}

func ExampleReadAnthropic() {
	transcript := `{"role": "user", "content": "Read config.yaml"}
{"type": "message", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "config.yaml"}}], "stop_reason": "tool_use", "usage": {"input_tokens": 50, "output_tokens": 12}}
{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "permission denied", "is_error": true}]}
{"type": "message", "role": "assistant", "content": [{"type": "text", "text": "I cannot read it."}], "stop_reason": "end_turn"}`
	steps, err := trace.ReadAnthropic(strings.NewReader(transcript))
	if err != nil {
		panic(err)
	}
	for _, s := range steps {
		fmt.Printf("%q finish=%s tokens=%d", s.Text, s.FinishReason, s.Usage.InputTokens+s.Usage.OutputTokens)
		for _, c := range s.ToolCalls {
			fmt.Printf(" call %s%s err=%v", c.Name, c.Args, c.Err)
		}
		fmt.Println()
	}
	// Output:
	// "" finish=tool-calls tokens=62 call read_file{"path": "config.yaml"} err=permission denied
	// "I cannot read it." finish=stop tokens=0
}

func ExampleReadOpenAI() {
	transcript := `{"role": "user", "content": "Weather in Oslo?"}
{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}}
{"role": "tool", "tool_call_id": "call_1", "content": "-3°C, snow"}
{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "It is -3°C and snowing in Oslo."}, "finish_reason": "stop"}]}`
	steps, err := trace.ReadOpenAI(strings.NewReader(transcript))
	if err != nil {
		panic(err)
	}
	for _, s := range steps {
		fmt.Printf("%q finish=%s tokens=%d", s.Text, s.FinishReason, s.Usage.TotalTokens)
		for _, c := range s.ToolCalls {
			fmt.Printf(" call %s%s -> %v", c.Name, c.Args, c.Result)
		}
		fmt.Println()
	}
	// Output:
	// "" finish=tool-calls tokens=39 call weather{"city":"Oslo"} -> -3°C, snow
	// "It is -3°C and snowing in Oslo." finish=stop tokens=0
}

func ExampleReadSteps() {
	lines := `{"text": "searching", "toolCalls": [{"name": "search", "args": {"q": "go"}, "result": ["go.dev"]}]}
{"text": "done", "finishReason": "stop", "usage": {"inputTokens": 10, "outputTokens": 3}}`
	steps, err := trace.ReadSteps(strings.NewReader(lines))
	if err != nil {
		panic(err)
	}
	fmt.Println(len(steps), steps[0].ToolCalls[0].Name, steps[1].FinishReason)
	// Output: 2 search stop
}

func ExampleDetect() {
	fmt.Println(trace.Detect([]byte(`{"text": "hi", "toolCalls": []}`)))
	fmt.Println(trace.Detect([]byte(`[{"role": "system", "content": "Be brief."}]`)))
	fmt.Println(trace.Detect([]byte(`{"type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn"}`)))
	// Output:
	// steps
	// openai
	// anthropic
}

func ExampleError() {
	_, err := trace.Parse([]byte("{\"text\": \"a\"}\n[1, 2]\n"), trace.Steps)
	fmt.Println(err)
	// Output: trace: line 2: a step must be a JSON object, not an array
}

// A log of step lines with a control line and an annotation, read entry by
// entry. Under WarnUnknownKeys an unknown key is told once and ignored; a
// key that resembles a known one stays an error.
func ExampleReader() {
	log := `{"text": "looking", "toolCalls": [{"name": "search", "args": {"q": "go"}}], "step": 1}
{"preflight": {"name": "search", "args": {"q": "go"}}}
{"text": "again", "tool_calls": [{"name": "search"}], "step": 2}`
	r := trace.NewReader(strings.NewReader(log), &trace.Options{
		UnknownKeys: trace.WarnUnknownKeys,
		Warn:        func(err error) { fmt.Println("warning:", err) },
	})
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Println(e.Line, e.Kind)
	}
	// Output:
	// warning: trace: line 1: unknown key "step"
	// 1 step
	// 2 preflight
	// error: trace: line 3: unknown key "tool_calls" (did you mean "toolCalls"?)
}

// A proxy reads the items of each request that are new since the request
// before: here the function_call_output of a call made in an earlier
// request (ignored), the model's next turn, and the user's reply to it.
func ExampleStepsOf() {
	tail := []json.RawMessage{
		json.RawMessage(`{"type": "function_call_output", "call_id": "call_1", "output": "running"}`),
		json.RawMessage(`{"type": "reasoning", "id": "rs_2", "summary": []}`),
		json.RawMessage(`{"type": "function_call", "call_id": "call_2", "name": "ci_status", "arguments": "{\"branch\": \"main\"}"}`),
		json.RawMessage(`{"type": "function_call_output", "call_id": "call_2", "output": "running"}`),
		json.RawMessage(`{"role": "user", "content": "Stop polling."}`),
	}
	steps, err := trace.StepsOf(trace.Responses, tail)
	if err != nil {
		panic(err)
	}
	for _, s := range steps {
		fmt.Printf("%s %s -> %v; input %q\n", s.ToolCalls[0].Name, s.ToolCalls[0].Args, s.ToolCalls[0].Result, s.Input)
	}
	// Output:
	// ci_status {"branch": "main"} -> running; input "Stop polling."
}
