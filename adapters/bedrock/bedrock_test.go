package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/google/go-cmp/cmp"

	lgbedrock "github.com/loopguard/loopguard/adapters/bedrock"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
)

const modelID = "anthropic.claude-sonnet-4-5-v1:0"

// script is a local server that speaks Converse: it answers the n-th
// request with the n-th response and keeps the request bodies. A request
// past the script fails the test.
type script struct {
	t         *testing.T
	responses []string
	mu        sync.Mutex
	bodies    []string
}

// newScript starts a script and a client of it: an aws.Config with static
// credentials, and the server as the endpoint.
func newScript(t *testing.T, responses ...string) (*script, *bedrockruntime.Client) {
	t.Helper()
	s := &script{t: t, responses: responses}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	}
	client := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.RetryMaxAttempts = 1
	})
	return s, client
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	if want := "/model/" + modelID + "/converse"; r.Method != http.MethodPost || r.URL.Path != want {
		s.t.Errorf("request %d: %s %s, want POST %s", n+1, r.Method, r.URL.Path, want)
	}
	if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "Credential=AKIDEXAMPLE/") {
		s.t.Errorf("request %d is not signed with the static credentials: %q", n+1, auth)
	}
	w.Header().Set("Content-Type", "application/json")
	if n >= len(s.responses) {
		s.t.Errorf("request %d: the script has only %d responses", n+1, len(s.responses))
		w.Header().Set("X-Amzn-Errortype", "InternalServerException")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"message": "no more responses"}`)
		return
	}
	io.WriteString(w, s.responses[n])
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func (s *script) request(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// toolUseResponse is an output whose message uses get_weather once.
func toolUseResponse(id, city string, input, total int) string {
	return fmt.Sprintf(`{"output": {"message": {"role": "assistant", "content": [
		{"toolUse": {"toolUseId": %q, "name": "get_weather", "input": {"city": %q}}}]}},
		"stopReason": "tool_use",
		"usage": {"inputTokens": %d, "outputTokens": %d, "totalTokens": %d},
		"metrics": {"latencyMs": 250}}`, id, city, input, total-input, total)
}

// textResponse is an output that answers in text.
func textResponse(text string) string {
	return fmt.Sprintf(`{"output": {"message": {"role": "assistant", "content": [{"text": %q}]}},
		"stopReason": "end_turn", "usage": {"inputTokens": 50, "outputTokens": 10, "totalTokens": 60},
		"metrics": {"latencyMs": 100}}`, text)
}

func newGuard(t *testing.T, doc string) *guard.Guard {
	t.Helper()
	cfg, err := detector.FromJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cfg.History = 32
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// outcome is what the tests compare of a run.
type outcome struct {
	Requests int      // requests the server received
	Refused  []string // per turn: the codes of refused calls, joined by ","
	ToolRuns int
	Reason   guard.Reason
	Code     string
	Fault    bool
	StopErr  bool // End returned a *guard.StopError
}

// run runs the loop of the package documentation, the calls of a turn in
// parallel, until the guard stops it, and returns the last turn too.
func run(t *testing.T, g *guard.Guard, client *bedrockruntime.Client, s *script) (outcome, *lgbedrock.Turn) {
	t.Helper()
	ctx := context.Background()
	input := &bedrockruntime.ConverseInput{
		ModelId: aws.String(modelID),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
			&types.ContentBlockMemberText{Value: "What is the weather in Paris?"}}}},
		ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name: aws.String("get_weather"),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{
				"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}})},
		}}}},
	}
	var out outcome
	var mu sync.Mutex
	for range 20 {
		resp, err := client.Converse(ctx, input)
		if err != nil {
			t.Fatalf("request %d: %v", s.count(), err)
		}
		turn := lgbedrock.Preflight(ctx, g, resp)
		var refused []string
		for _, b := range resp.Output.(*types.ConverseOutputMemberMessage).Value.Content {
			if tu, ok := b.(*types.ContentBlockMemberToolUse); ok {
				if d, _ := turn.Decision(aws.ToString(tu.Value.ToolUseId)); !d.Allow {
					refused = append(refused, d.Code)
				}
			}
		}
		out.Refused = append(out.Refused, strings.Join(refused, ","))
		var wg sync.WaitGroup
		for _, call := range turn.Allowed() {
			wg.Go(func() {
				mu.Lock()
				out.ToolRuns++
				mu.Unlock()
				var args struct{ City string }
				if err := call.Input.UnmarshalSmithyDocument(&args); err != nil {
					t.Error(err)
				}
				if !turn.SetResult(aws.ToString(call.ToolUseId), "18 °C, sunny in "+args.City, nil) {
					t.Errorf("SetResult(%s) refused an allowed call", aws.ToString(call.ToolUseId))
				}
			})
		}
		wg.Wait()
		v, err := turn.End(ctx)
		var stop *guard.StopError
		if err != nil && !errors.As(err, &stop) {
			t.Fatalf("End: %v", err)
		}
		if v.Stop {
			out.Requests = s.count()
			out.Reason, out.Code, out.Fault, out.StopErr = v.Reason, v.Code, guard.IsFault(v), stop != nil
			return out, turn
		}
		input.Messages = append(input.Messages, turn.Messages()...)
	}
	t.Fatal("the loop did not stop")
	return out, nil
}

// A model that asks for the same forecast on every turn: with the default
// rules the third call is refused before it runs, and so are the fourth and
// the fifth; at the third refusal the guard stops the run, and the loop
// makes no further request.
func TestStubbornLoop(t *testing.T) {
	var responses []string
	for i := range 6 { // one more than the run may ask for
		responses = append(responses, toolUseResponse(fmt.Sprintf("tooluse_%d", i+1), "Paris", 80+40*i, 100+40*i))
	}
	s, client := newScript(t, responses...)
	g := newGuard(t, `{}`)
	got, _ := run(t, g, client, s)
	want := outcome{
		Requests: 5,
		Refused:  []string{"", "", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL", "REPEATED_TOOL_CALL"},
		ToolRuns: 2, Reason: "repeated-refusal", Code: "REPEATED_REFUSAL", Fault: true, StopErr: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	// The fourth request answers the third call with a tool result whose
	// text is the guard's feedback, which names the tool and does not
	// quote the arguments.
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				ToolResult *struct {
					ToolUseID string `json:"toolUseId"`
					Status    string `json:"status"`
					Content   []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"toolResult"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(s.request(3)), &body); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range body.Messages {
		for _, c := range m.Content {
			if tr := c.ToolResult; tr != nil {
				answers = append(answers, fmt.Sprintf("%s %s status=%q %+v", m.Role, tr.ToolUseID, tr.Status, tr.Content))
			}
		}
	}
	feedback := refusalFeedback(t)
	wantAnswers := []string{
		`user tooluse_1 status="" [{Text:18 °C, sunny in Paris}]`,
		`user tooluse_2 status="" [{Text:18 °C, sunny in Paris}]`,
		`user tooluse_3 status="" [{Text:` + feedback + `}]`,
	}
	if diff := cmp.Diff(wantAnswers, answers); diff != "" {
		t.Errorf("tool results of the fourth request (-want +got):\n%s", diff)
	}
	if strings.Contains(feedback, "Paris") || !strings.Contains(feedback, "get_weather") {
		t.Errorf("the feedback quotes the arguments or does not name the tool: %q", feedback)
	}
	var refused []string
	for _, st := range g.History() {
		for _, c := range st.Refused {
			refused = append(refused, c.ID)
		}
	}
	if diff := cmp.Diff([]string{"tooluse_3", "tooluse_4", "tooluse_5"}, refused); diff != "" {
		t.Errorf("refusals recorded (-want +got):\n%s", diff)
	}
}

// refusalFeedback returns the feedback on a third identical get_weather
// call for Paris, from a twin guard.
func refusalFeedback(t *testing.T) string {
	t.Helper()
	twin := newGuard(t, `{}`)
	c := guard.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}
	for range 2 {
		if _, err := twin.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{c}, FinishReason: "tool_use"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := twin.Preflight(context.Background(), c)
	if err != nil || d.Allow {
		t.Fatal("the twin guard allowed the third call")
	}
	return d.Feedback
}

// A token budget of 300 with 100 tokens an output: the second output (200)
// goes on, the third (300) reaches it and stops the run, and no fourth
// request is made.
func TestTokenBudget(t *testing.T) {
	s, client := newScript(t,
		toolUseResponse("t1", "Paris", 70, 100), toolUseResponse("t2", "Rome", 70, 100),
		toolUseResponse("t3", "Oslo", 70, 100), toolUseResponse("t4", "Lima", 70, 100))
	g := newGuard(t, `{"budget": {"maxTotalTokens": 300}}`)
	got, _ := run(t, g, client, s)
	want := outcome{
		Requests: 3, Refused: []string{"", "", ""}, ToolRuns: 3,
		Reason: "budget", Code: "BUDGET_TOTAL_TOKENS", Fault: true, StopErr: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	sum, err := g.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 3 || sum.Totals.TotalTokens != 300 || sum.Totals.InputTokens != 210 || sum.Totals.OutputTokens != 90 {
		t.Errorf("summary: %+v", sum)
	}
}

// The model uses a tool once, then answers: end_turn ends the run normally,
// with no error.
func TestAnswerEndsNormally(t *testing.T) {
	s, client := newScript(t, toolUseResponse("t1", "Paris", 70, 100), textResponse("It is 18 °C and sunny in Paris."))
	g := newGuard(t, `{}`)
	got, turn := run(t, g, client, s)
	want := outcome{
		Requests: 2, Refused: []string{"", ""}, ToolRuns: 1,
		Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if msgs := turn.Messages(); len(msgs) != 1 || msgs[0].Role != types.ConversationRoleAssistant {
		t.Errorf("a text answer's messages: %+v, want the assistant's message alone", msgs)
	}
}

// The SDK's stop reasons, through a guard with the default rules, on a step
// with a tool use and on one without.
func TestStopReasons(t *testing.T) {
	tests := []struct {
		reason         types.StopReason
		withCall, text string // the verdict's code; "" goes on
		fault          bool
	}{
		{types.StopReasonToolUse, "", "", false},
		{types.StopReasonEndTurn, "", "FINISH_TERMINAL", false},
		{types.StopReasonStopSequence, "", "FINISH_TERMINAL", false},
		{types.StopReasonMaxTokens, "FINISH_TERMINAL", "FINISH_TERMINAL", true},
		{types.StopReasonModelContextWindowExceeded, "FINISH_TERMINAL", "FINISH_TERMINAL", true},
		{types.StopReasonGuardrailIntervened, "FINISH_TERMINAL", "FINISH_TERMINAL", true},
		{types.StopReasonContentFiltered, "FINISH_TERMINAL", "FINISH_TERMINAL", true},
	}
	for _, tt := range tests {
		for _, withCall := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/call=%v", tt.reason, withCall), func(t *testing.T) {
				content := []types.ContentBlock{&types.ContentBlockMemberText{Value: "Done."}}
				want, wantFault := tt.text, tt.fault
				if withCall {
					content = append(content, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
						ToolUseId: aws.String("t1"), Name: aws.String("get_weather"),
						Input: document.NewLazyDocument(map[string]any{"city": "Paris"})}})
					want = tt.withCall
					wantFault = want != ""
				}
				out := &bedrockruntime.ConverseOutput{StopReason: tt.reason,
					Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant, Content: content}}}
				turn := lgbedrock.Preflight(context.Background(), newGuard(t, `{}`), out)
				for _, c := range turn.Allowed() {
					turn.SetResult(aws.ToString(c.ToolUseId), "18 °C", nil)
				}
				v, err := turn.End(context.Background())
				if v.Code != want {
					t.Errorf("code %q (stop %v), want %q", v.Code, v.Stop, want)
				}
				if guard.IsFault(v) != wantFault || (err != nil) != wantFault {
					t.Errorf("fault %v, error %v, want a fault: %v", guard.IsFault(v), err, wantFault)
				}
			})
		}
	}
}

func TestStepFromConverse(t *testing.T) {
	out := &bedrockruntime.ConverseOutput{
		StopReason: types.StopReasonToolUse,
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
			&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: types.ReasoningTextBlock{Text: aws.String("hmm")}}},
			&types.ContentBlockMemberText{Value: "Looking it up."},
			&types.ContentBlockMemberText{Value: "Twice."},
			&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("a"), Name: aws.String("search"),
				Input: document.NewLazyDocument(map[string]any{"q": "go"})}},
			&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("b"), Name: aws.String("now")}},
		}}},
		Usage:   &types.TokenUsage{InputTokens: aws.Int32(10), OutputTokens: aws.Int32(5), TotalTokens: aws.Int32(15)},
		Metrics: &types.ConverseMetrics{LatencyMs: aws.Int64(1500)},
	}
	want := guard.Step{
		Text: "Looking it up.\nTwice.",
		ToolCalls: []guard.ToolCall{
			{ID: "a", Name: "search", Args: json.RawMessage(`{"q":"go"}`)},
			{ID: "b", Name: "now"},
		},
		FinishReason: "tool_use",
		Usage:        guard.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Duration: 1500 * time.Millisecond},
	}
	if diff := cmp.Diff(want, lgbedrock.StepFromConverse(out)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(guard.Step{}, lgbedrock.StepFromConverse(nil)); diff != "" {
		t.Errorf("step of nil (-want +got):\n%s", diff)
	}
	usageOnly := &bedrockruntime.ConverseOutput{Usage: &types.TokenUsage{TotalTokens: aws.Int32(7)}}
	if diff := cmp.Diff(guard.Step{Usage: guard.Usage{TotalTokens: 7}}, lgbedrock.StepFromConverse(usageOnly)); diff != "" {
		t.Errorf("step without a message (-want +got):\n%s", diff)
	}
	if lgbedrock.Preflight(context.Background(), newGuard(t, `{}`), usageOnly).Messages() != nil {
		t.Error("messages of an output without a message")
	}
}

func TestTurnOutcomes(t *testing.T) {
	use := func(id string, n int) types.ContentBlock {
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String(id), Name: aws.String("f"),
			Input: document.NewLazyDocument(map[string]any{"n": n})}}
	}
	out := &bedrockruntime.ConverseOutput{StopReason: types.StopReasonToolUse,
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
			Content: []types.ContentBlock{use("a", 1), use("b", 2), use("c", 3)}}}}
	turn := lgbedrock.Preflight(context.Background(), newGuard(t, `{}`), out)
	if n := len(turn.Allowed()); n != 3 {
		t.Fatalf("%d calls allowed, want 3", n)
	}
	if turn.SetResult("nope", "x", nil) {
		t.Error("SetResult accepted an unknown call")
	}
	turn.SetResult("a", "one", nil)
	turn.SetResult("b", "", errors.New("boom"))
	// c never reports.
	msgs := turn.Messages()
	if len(msgs) != 2 || msgs[1].Role != types.ConversationRoleUser {
		t.Fatalf("messages: %+v", msgs)
	}
	var answers []string
	for _, b := range msgs[1].Content {
		tr := b.(*types.ContentBlockMemberToolResult).Value
		answers = append(answers, aws.ToString(tr.ToolUseId)+": "+tr.Content[0].(*types.ToolResultContentBlockMemberText).Value)
	}
	wantAnswers := []string{"a: one", "b: Error: boom", "c: That call was not run."}
	if diff := cmp.Diff(wantAnswers, answers); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if n := len(turn.Step().ToolCalls); n != 2 {
		t.Errorf("%d calls in the step, want the 2 that reported", n)
	}
	if len(turn.Refusals()) != 0 {
		t.Errorf("refusals without a refused call: %v", turn.Refusals())
	}
}
