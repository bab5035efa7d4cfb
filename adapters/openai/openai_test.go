package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	lgopenai "github.com/loopguard/loopguard/adapters/openai"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
)

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{History: 32, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// outcome is what the tests compare of a run.
type outcome struct {
	Turns    int  // completions received
	Stop     bool // the guard stopped the run
	Reason   guard.Reason
	Code     string
	Refused  []string // per turn: the codes of refused calls, joined by ","
	ToolRuns int
	StopErr  bool // End returned a *guard.StopError
}

// ctxKey marks the test's context, so that the observer can check it is the
// one given to the helpers.
type ctxKey struct{}

// runChat runs the agent loop of the package documentation over a replayed
// run, the calls of a turn in parallel.
func runChat(t *testing.T, g *guard.Guard, client sdk.Client, tool *forecast) (outcome, guard.Verdict) {
	t.Helper()
	ctx := context.WithValue(context.Background(), ctxKey{}, "run")
	params := sdk.ChatCompletionNewParams{
		Model:    sdk.ChatModelGPT4o,
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("What is the weather in Paris?")},
		Tools: []sdk.ChatCompletionToolUnionParam{sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: shared.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}},
			},
		})},
	}
	var out outcome
	for range 20 {
		completion, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatalf("turn %d: %v", out.Turns, err)
		}
		out.Turns++
		turn := lgopenai.Preflight(ctx, g, completion)
		var refused []string
		for _, c := range completion.Choices[0].Message.ToolCalls {
			if d, _ := turn.Decision(c.ID); !d.Allow {
				refused = append(refused, d.Code)
			}
		}
		out.Refused = append(out.Refused, strings.Join(refused, ","))
		var wg sync.WaitGroup
		for _, call := range turn.Allowed() {
			wg.Go(func() {
				res, err := tool.run(call.Function.Arguments)
				if !turn.SetResult(call.ID, res, err) {
					t.Errorf("SetResult(%s) refused an allowed call", call.ID)
				}
			})
		}
		wg.Wait()
		v, err := turn.End(ctx)
		var stop *guard.StopError
		if err != nil && !errors.As(err, &stop) {
			t.Fatalf("End: %v", err)
		}
		if stop != nil && !cmp.Equal(stop.Verdict, v) {
			t.Errorf("the StopError's verdict %v is not End's %v", stop.Verdict, v)
		}
		if v.Stop {
			out.Stop, out.Reason, out.Code = true, v.Reason, v.Code
			out.ToolRuns = tool.count()
			out.StopErr = stop != nil
			return out, v
		}
		params.Messages = append(params.Messages, turn.Messages()...)
	}
	t.Fatal("the loop did not stop")
	return out, guard.Verdict{}
}

// A model that asks for the same forecast on every turn, with no content: the
// third call is refused with the repeated-call rule, and so are the fourth
// and the fifth; at the third refusal the guard stops the run
// (REPEATED_REFUSAL), as it does a hand-written loop: refused steps count
// neither for the no-progress nor for the repeated-text rule.
func TestChatStubbornLoop(t *testing.T) {
	rp, client := newReplay(t, "chat_stubborn.json", "/chat/completions")
	g := newGuard(t)
	tool := new(forecast)
	got, v := runChat(t, g, client, tool)
	want := outcome{
		Turns: 5, Stop: true, Reason: "repeated-refusal", Code: "REPEATED_REFUSAL",
		Refused:  []string{"", "", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL"},
		ToolRuns: 2, StopErr: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	// The refused calls are recorded as refusals, not as calls.
	var refusedIDs []string
	for _, s := range g.History() {
		for _, c := range s.Refused {
			refusedIDs = append(refusedIDs, c.ID)
		}
	}
	if diff := cmp.Diff([]string{"call_Wq3", "call_Wq4", "call_Wq5"}, refusedIDs); diff != "" {
		t.Errorf("refusals recorded (-want +got):\n%s", diff)
	}
	if v.Feedback == "" || !guard.IsFault(v) {
		t.Errorf("stop verdict has no feedback or is not a fault: %+v", v)
	}
	// The model saw the refusal: the fourth request answers the third
	// call with the guard's feedback, not with a forecast.
	feedback := refusalFeedback(t, `{"city":"Paris","unit":"celsius"}`)
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(rp.request(3)), &body); err != nil {
		t.Fatal(err)
	}
	last := body.Messages[len(body.Messages)-1]
	if last.Role != "tool" || last.ToolCallID != "call_Wq3" || last.Content != feedback {
		t.Errorf("the fourth request ends with %+v, want the refusal of call_Wq3: %q", last, feedback)
	}
	if strings.Contains(last.Content, "Paris") || strings.Contains(last.Content, "celsius") {
		t.Errorf("the refusal quotes the arguments: %q", last.Content)
	}
	if sum := summary(t, g); sum.Steps != 5 || sum.ToolCalls != 2 || sum.Totals.InputTokens != 86+131+176+262+348 {
		t.Errorf("summary: %+v", sum)
	}
}

// refusalFeedback returns the feedback on a third identical get_weather
// call, from a twin guard.
func refusalFeedback(t *testing.T, args string) string {
	t.Helper()
	twin := newGuard(t)
	c := guard.ToolCall{Name: "get_weather", Args: json.RawMessage(args)}
	for range 2 {
		if _, err := twin.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{c}, FinishReason: "tool_calls"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := twin.Preflight(context.Background(), c)
	if err != nil || d.Allow {
		t.Fatal("the twin guard allowed the third call")
	}
	return d.Feedback
}

// A model that takes the refusal and answers: the run ends normally.
func TestChatRecoversAfterRefusal(t *testing.T) {
	_, client := newReplay(t, "chat_recovers.json", "/chat/completions")
	g := newGuard(t)
	tool := new(forecast)
	got, v := runChat(t, g, client, tool)
	want := outcome{
		Turns: 4, Stop: true, Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL",
		Refused:  []string{"", "", "REPEATED_TOOL_CALL", ""},
		ToolRuns: 2, StopErr: false, // a normal finish is not an error
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if guard.IsFault(v) {
		t.Errorf("a normal finish is a fault: %+v", v)
	}
}

// Parallel calls of one turn see each other: of three identical calls in a
// row the third is refused, and the call for another city after them runs.
func TestChatParallelCalls(t *testing.T) {
	rp, client := newReplay(t, "chat_parallel.json", "/chat/completions")
	g := newGuard(t)
	tool := new(forecast)
	got, _ := runChat(t, g, client, tool)
	want := outcome{
		Turns: 2, Stop: true, Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL",
		Refused:  []string{"REPEATED_TOOL_CALL", ""},
		ToolRuns: 3,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	// Every call was answered, in order.
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(rp.request(1)), &body); err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			answered = append(answered, m.ToolCallID+": "+m.Content)
		}
	}
	wantAnswered := []string{
		"call_P1: 18 °C, sunny",
		"call_P2: 18 °C, sunny",
		"call_P3: " + refusalFeedback(t, `{"city":"Paris","unit":"celsius"}`),
		"call_P4: 4 °C, rain",
	}
	if diff := cmp.Diff(wantAnswered, answered); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
}

func TestStepFromChatCompletion(t *testing.T) {
	var c sdk.ChatCompletion
	err := json.Unmarshal([]byte(`{
		"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "gpt-4o",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
			"role": "assistant", "content": "Looking it up.", "refusal": null,
			"tool_calls": [
				{"id": "call_a", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"go\"}"}},
				{"id": "call_b", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}},
				{"id": "call_c", "type": "function", "function": {"name": "now", "arguments": ""}}
			]}}],
		"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	}`), &c)
	if err != nil {
		t.Fatal(err)
	}
	want := guard.Step{
		Text: "Looking it up.",
		ToolCalls: []guard.ToolCall{
			{ID: "call_a", Name: "search", Args: json.RawMessage(`{"q":"go"}`)},
			{ID: "call_b", Name: "sql", Args: "SELECT 1"},
			{ID: "call_c", Name: "now"},
		},
		FinishReason: "tool_calls",
		Usage:        guard.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15},
	}
	if diff := cmp.Diff(want, lgopenai.StepFromChatCompletion(&c)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(guard.Step{}, lgopenai.StepFromChatCompletion(nil)); diff != "" {
		t.Errorf("step of nil (-want +got):\n%s", diff)
	}
}

func TestStepFromChatCompletionRefusalAndFunctionCall(t *testing.T) {
	var c sdk.ChatCompletion
	err := json.Unmarshal([]byte(`{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
		"choices": [{"index": 0, "finish_reason": "function_call", "logprobs": null,
			"message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]}`), &c)
	if err != nil {
		t.Fatal(err)
	}
	want := guard.Step{Text: "I can't help with that.", FinishReason: "tool_calls"}
	if diff := cmp.Diff(want, lgopenai.StepFromChatCompletion(&c)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
}

func TestTurnOutcomes(t *testing.T) {
	var c sdk.ChatCompletion
	err := json.Unmarshal([]byte(`{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
			"role": "assistant", "content": null, "refusal": null, "tool_calls": [
				{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"n\":1}"}},
				{"id": "b", "type": "function", "function": {"name": "f", "arguments": "{\"n\":2}"}},
				{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"n\":3}"}}
			]}}]}`), &c)
	if err != nil {
		t.Fatal(err)
	}
	turn := lgopenai.Preflight(context.Background(), newGuard(t), &c)
	if n := len(turn.Allowed()); n != 3 {
		t.Fatalf("%d calls allowed, want 3", n)
	}
	if turn.SetResult("nope", "x", nil) {
		t.Error("SetResult accepted an unknown call")
	}
	turn.SetResult("a", "one", nil)
	turn.SetResult("b", "", errors.New("boom"))
	// c never reports.
	want := guard.Step{
		ToolCalls: []guard.ToolCall{
			{ID: "a", Name: "f", Args: json.RawMessage(`{"n":1}`), Result: "one"},
			{ID: "b", Name: "f", Args: json.RawMessage(`{"n":2}`), Err: errors.New("boom")},
		},
		FinishReason: "tool_calls",
	}
	errText := cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error()) })
	if diff := cmp.Diff(want, turn.Step(), errText); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	var answers []string
	for _, m := range turn.Messages()[1:] {
		answers = append(answers, m.OfTool.ToolCallID+": "+m.OfTool.Content.OfString.Value)
	}
	wantAnswers := []string{"a: one", "b: Error: boom", "c: That call was not run."}
	if diff := cmp.Diff(wantAnswers, answers); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if len(turn.Refusals()) != 0 {
		t.Errorf("refusals without a refused call: %v", turn.Refusals())
	}
}

// The same stubborn run over the Responses API, chained with
// previous_response_id, where the model also writes the same sentence on
// every turn: the third call is refused, the refusal is the output that
// answers it, and the run stops on the third same sentence.
func TestResponsesStubbornLoop(t *testing.T) {
	rp, client := newReplay(t, "responses_stubborn.json", "/responses")
	g := newGuard(t)
	tool := new(forecast)
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model: shared.ResponsesModel("gpt-4.1"),
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("What is the weather in Paris?")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object"}, true)},
	}
	var got outcome
	var v guard.Verdict
	var last *lgopenai.ResponseTurn
	for range 10 {
		r, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		got.Turns++
		turn := lgopenai.PreflightResponse(ctx, g, r)
		var refused []string
		for _, item := range r.Output {
			if d, ok := turn.Decision(item.CallID); ok && !d.Allow {
				refused = append(refused, d.Code)
			}
		}
		got.Refused = append(got.Refused, strings.Join(refused, ","))
		for _, item := range turn.Allowed() {
			fc := item.AsFunctionCall()
			out, err := tool.run(fc.Arguments)
			turn.SetResult(fc.CallID, out, err)
		}
		last = turn
		var endErr error
		if v, endErr = turn.End(ctx); v.Stop {
			var stop *guard.StopError
			got.StopErr = errors.As(endErr, &stop)
			break
		}
		params.PreviousResponseID = sdk.String(r.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: turn.Outputs()}
	}
	got.Stop, got.Reason, got.Code, got.ToolRuns = v.Stop, v.Reason, v.Code, tool.count()
	// The same preamble on each turn, and refusals from the third: the
	// refusal rule stops the run at the third refusal, as with no text.
	want := outcome{
		Turns: 5, Stop: true, Reason: "repeated-refusal", Code: "REPEATED_REFUSAL",
		Refused:  []string{"", "", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL"},
		ToolRuns: 2, StopErr: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if rp.count() != 5 {
		t.Errorf("%d requests, want 5", rp.count())
	}
	feedback := refusalFeedback(t, `{"city":"Paris","unit":"celsius"}`)
	data, err := json.Marshal(last.Outputs())
	if err != nil {
		t.Fatal(err)
	}
	var outs []struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal(data, &outs); err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Type != "function_call_output" || outs[0].CallID != "call_R5" || outs[0].Output != feedback {
		t.Errorf("the fifth turn's outputs: %s, want the refusal of call_R5", data)
	}
}

func TestStepFromResponseStatus(t *testing.T) {
	tests := []struct {
		name, json string
		want       string
	}{
		{"completed text", `{"status": "completed", "output": []}`, "stop"},
		{"completed call", `{"status": "completed", "output": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]}`, "tool_calls"},
		{"incomplete tokens", `{"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}`, "length"},
		{"incomplete filter", `{"status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "output": []}`, "content_filter"},
		{"incomplete unknown", `{"status": "incomplete", "incomplete_details": null, "output": []}`, "incomplete"},
		{"failed", `{"status": "failed", "output": []}`, "error"},
		{"cancelled", `{"status": "cancelled", "output": []}`, "cancelled"},
		{"in progress", `{"status": "in_progress", "output": []}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r responses.Response
			if err := json.Unmarshal([]byte(tt.json), &r); err != nil {
				t.Fatal(err)
			}
			if got := lgopenai.StepFromResponse(&r).FinishReason; got != tt.want {
				t.Errorf("finish reason %q, want %q", got, tt.want)
			}
		})
	}
}

// The helpers hand their context to the guard's observer.
func TestContextReachesObserver(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	g, err := guard.New(guard.Config{Rules: detector.Defaults(), Observer: func(ctx context.Context, e guard.Event) {
		mu.Lock()
		defer mu.Unlock()
		v, _ := ctx.Value(ctxKey{}).(string)
		seen = append(seen, e.Phase.String()+":"+v)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var c sdk.ChatCompletion
	if err := json.Unmarshal([]byte(`{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
			"role": "assistant", "content": null, "refusal": null, "tool_calls": [
				{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}`), &c); err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal([]byte(`{"status": "completed", "output": [{"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"}]}`), &r); err != nil {
		t.Fatal(err)
	}
	chat := context.WithValue(context.Background(), ctxKey{}, "chat")
	turn := lgopenai.Preflight(chat, g, &c)
	turn.SetResult("a", "ok", nil)
	if _, err := turn.End(chat); err != nil {
		t.Fatal(err)
	}
	resp := context.WithValue(context.Background(), ctxKey{}, "responses")
	rt := lgopenai.PreflightResponse(resp, g, &r)
	rt.SetResult("b", "ok", nil)
	if _, err := rt.End(resp); err != nil {
		t.Fatal(err)
	}
	want := []string{"preflight:chat", "check:chat", "preflight:responses", "check:responses"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("observer events (-want +got):\n%s", diff)
	}
}

// summary returns g's summary.
func summary(t *testing.T, g *guard.Guard) guard.Summary {
	t.Helper()
	s, err := g.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
