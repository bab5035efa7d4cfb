package gemini_test

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

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	lggemini "github.com/loopguard/loopguard/adapters/gemini"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
)

const model = "gemini-2.5-flash"

// script is a local server that speaks generateContent: it answers the n-th
// request with the n-th response and keeps the request bodies. A request
// past the script fails the test.
type script struct {
	t         *testing.T
	responses []string
	mu        sync.Mutex
	bodies    []string
}

func newScript(t *testing.T, responses ...string) (*script, *genai.Client) {
	t.Helper()
	s := &script{t: t, responses: responses}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, client
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	if want := "/v1beta/models/" + model + ":generateContent"; r.Method != http.MethodPost || r.URL.Path != want {
		s.t.Errorf("request %d: %s %s, want POST %s", n+1, r.Method, r.URL.Path, want)
	}
	if n >= len(s.responses) {
		s.t.Errorf("request %d: the script has only %d responses", n+1, len(s.responses))
		http.Error(w, `{"error": {"code": 500, "message": "no more responses", "status": "INTERNAL"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
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

// callResponse is a response whose one part calls get_weather, as Gemini
// reports it: finish reason STOP, no call ID.
func callResponse(city string, prompt, total int) string {
	return fmt.Sprintf(`{"candidates": [{"content": {"role": "model", "parts": [
		{"functionCall": {"name": "get_weather", "args": {"city": %q}}}]},
		"finishReason": "STOP", "index": 0}],
		"usageMetadata": {"promptTokenCount": %d, "candidatesTokenCount": %d, "totalTokenCount": %d},
		"modelVersion": "gemini-2.5-flash", "responseId": "r"}`, city, prompt, total-prompt, total)
}

// textResponse is a response that answers in text.
func textResponse(text string) string {
	return fmt.Sprintf(`{"candidates": [{"content": {"role": "model", "parts": [{"text": %q}]},
		"finishReason": "STOP", "index": 0}],
		"usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 10, "totalTokenCount": 60}}`, text)
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
func run(t *testing.T, g *guard.Guard, client *genai.Client, s *script) (outcome, *lggemini.Turn) {
	t.Helper()
	ctx := context.Background()
	contents := []*genai.Content{genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser)}
	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}},
	}}}}}
	var out outcome
	var mu sync.Mutex
	for range 20 {
		resp, err := client.Models.GenerateContent(ctx, model, contents, config)
		if err != nil {
			t.Fatalf("request %d: %v", s.count(), err)
		}
		turn := lggemini.Preflight(ctx, g, resp)
		var refused []string
		for i := range resp.FunctionCalls() {
			if d, _ := turn.Decision(fmt.Sprintf("call_%d", i+1)); !d.Allow {
				refused = append(refused, d.Code)
			}
		}
		out.Refused = append(out.Refused, strings.Join(refused, ","))
		var wg sync.WaitGroup
		for _, call := range turn.Allowed() {
			wg.Go(func() {
				mu.Lock()
				out.ToolRuns++
				mu.Unlock()
				if !turn.SetResult(call.ID, fmt.Sprintf("18 °C, sunny in %v", call.Args["city"]), nil) {
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
		if v.Stop {
			out.Requests = s.count()
			out.Reason, out.Code, out.Fault, out.StopErr = v.Reason, v.Code, guard.IsFault(v), stop != nil
			return out, turn
		}
		contents = append(contents, turn.Contents()...)
	}
	t.Fatal("the loop did not stop")
	return out, nil
}

// A model that asks for the same forecast on every turn, with STOP as
// Gemini reports it: with the default rules the third call is refused
// before it runs, and so are the fourth and the fifth; at the third refusal
// the guard stops the run, and the loop makes no further request.
func TestStubbornLoop(t *testing.T) {
	var responses []string
	for i := range 6 { // one more than the run may ask for
		responses = append(responses, callResponse("Paris", 80+40*i, 100+40*i))
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
	// The fourth request answers the third call with a function response
	// whose error is the guard's feedback, which names the tool and does
	// not quote the arguments.
	var body struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse *struct {
					ID       string         `json:"id"`
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal([]byte(s.request(3)), &body); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, c := range body.Contents {
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil {
				answers = append(answers, fmt.Sprintf("%s %s id=%q %v", c.Role, fr.Name, fr.ID, fr.Response))
			}
		}
	}
	feedback := refusalFeedback(t)
	wantAnswers := []string{
		`user get_weather id="" map[output:18 °C, sunny in Paris]`,
		`user get_weather id="" map[output:18 °C, sunny in Paris]`,
		`user get_weather id="" map[error:` + feedback + `]`,
	}
	if diff := cmp.Diff(wantAnswers, answers); diff != "" {
		t.Errorf("function responses of the fourth request (-want +got):\n%s", diff)
	}
	if strings.Contains(feedback, "Paris") || !strings.Contains(feedback, "get_weather") {
		t.Errorf("the feedback quotes the arguments or does not name the tool: %q", feedback)
	}
	// The refused calls are recorded as refusals, not as calls.
	var refused []string
	for _, st := range g.History() {
		for _, c := range st.Refused {
			refused = append(refused, c.ID+" "+c.Name)
		}
	}
	if diff := cmp.Diff([]string{"call_1 get_weather", "call_1 get_weather", "call_1 get_weather"}, refused); diff != "" {
		t.Errorf("refusals recorded (-want +got):\n%s", diff)
	}
}

// refusalFeedback returns the feedback on a third identical get_weather
// call for Paris, from a twin guard.
func refusalFeedback(t *testing.T) string {
	t.Helper()
	twin := newGuard(t, `{}`)
	c := guard.ToolCall{Name: "get_weather", Args: map[string]any{"city": "Paris"}}
	for range 2 {
		if _, err := twin.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{c}, FinishReason: "STOP"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := twin.Preflight(context.Background(), c)
	if err != nil || d.Allow {
		t.Fatal("the twin guard allowed the third call")
	}
	return d.Feedback
}

// A token budget of 300 with 100 tokens a response: the second response
// (200) goes on, the third (300) reaches it and stops the run, and no fourth
// request is made.
func TestTokenBudget(t *testing.T) {
	s, client := newScript(t,
		callResponse("Paris", 70, 100), callResponse("Rome", 70, 100),
		callResponse("Oslo", 70, 100), callResponse("Lima", 70, 100))
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

// The model calls once, then answers: its STOP ends the run normally, with
// no error, while the STOP on the call did not.
func TestAnswerEndsNormally(t *testing.T) {
	s, client := newScript(t, callResponse("Paris", 70, 100), textResponse("It is 18 °C and sunny in Paris."))
	g := newGuard(t, `{}`)
	got, turn := run(t, g, client, s)
	want := outcome{
		Requests: 2, Refused: []string{"", ""}, ToolRuns: 1,
		Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if contents := turn.Contents(); len(contents) != 1 || contents[0].Role != genai.RoleModel {
		t.Errorf("a text answer's contents: %+v, want the model's content alone", contents)
	}
}

// The SDK's finish reasons, through a guard with the default rules, on a
// step with a function call and on one without.
func TestFinishReasons(t *testing.T) {
	tests := []struct {
		reason         genai.FinishReason
		withCall, text string // the verdict's code; "" goes on
	}{
		{genai.FinishReasonStop, "", "FINISH_TERMINAL"},
		{genai.FinishReasonMaxTokens, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{genai.FinishReasonSafety, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{genai.FinishReasonRecitation, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{genai.FinishReasonProhibitedContent, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{genai.FinishReasonMalformedFunctionCall, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{genai.FinishReasonUnexpectedToolCall, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{genai.FinishReasonUnspecified, "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		for _, withCall := range []bool{true, false} {
			name := fmt.Sprintf("%s/call=%v", tt.reason, withCall)
			t.Run(name, func(t *testing.T) {
				parts := `{"text": "Done."}`
				want := tt.text
				if withCall {
					parts = `{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}`
					want = tt.withCall
				}
				var r genai.GenerateContentResponse
				if err := json.Unmarshal([]byte(`{"candidates": [{"content": {"role": "model", "parts": [`+parts+`]}, "finishReason": "`+string(tt.reason)+`"}]}`), &r); err != nil {
					t.Fatal(err)
				}
				turn := lggemini.Preflight(context.Background(), newGuard(t, `{}`), &r)
				for _, c := range turn.Allowed() {
					turn.SetResult(c.ID, "18 °C", nil)
				}
				v, err := turn.End(context.Background())
				if got := v.Code; got != want {
					t.Errorf("code %q (stop %v), want %q", got, v.Stop, want)
				}
				// Only the model's answer is a normal finish.
				if wantFault := want != "" && (withCall || tt.reason != genai.FinishReasonStop); guard.IsFault(v) != wantFault || (err != nil) != wantFault {
					t.Errorf("fault %v, error %v, want a fault: %v", guard.IsFault(v), err, wantFault)
				}
			})
		}
	}
}

func TestStepFromResponse(t *testing.T) {
	var r genai.GenerateContentResponse
	err := json.Unmarshal([]byte(`{"candidates": [{"content": {"role": "model", "parts": [
			{"text": "Let me think.", "thought": true},
			{"text": "Looking it up"},
			{"text": " now."},
			{"functionCall": {"id": "fc-1", "name": "search", "args": {"q": "go"}}},
			{"functionCall": {"name": "now"}}]},
		"finishReason": "STOP"}],
		"usageMetadata": {"promptTokenCount": 10, "toolUsePromptTokenCount": 2, "candidatesTokenCount": 5,
			"thoughtsTokenCount": 3, "totalTokenCount": 20}}`), &r)
	if err != nil {
		t.Fatal(err)
	}
	want := guard.Step{
		Text: "Looking it up now.",
		ToolCalls: []guard.ToolCall{
			{ID: "fc-1", Name: "search", Args: map[string]any{"q": "go"}},
			{Name: "now"},
		},
		FinishReason: "STOP",
		Usage:        guard.Usage{InputTokens: 12, OutputTokens: 8, TotalTokens: 20},
	}
	if diff := cmp.Diff(want, lggemini.StepFromResponse(&r)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	for _, r := range []*genai.GenerateContentResponse{nil, {}, {Candidates: []*genai.Candidate{nil}}} {
		if diff := cmp.Diff(guard.Step{}, lggemini.StepFromResponse(r)); diff != "" {
			t.Errorf("step of %+v (-want +got):\n%s", r, diff)
		}
	}
}

// Calls are named by their ID, or by their place when they have none or
// repeat an earlier one; the function responses carry the model's IDs.
func TestCallIDsAndOutcomes(t *testing.T) {
	var r genai.GenerateContentResponse
	err := json.Unmarshal([]byte(`{"candidates": [{"content": {"role": "model", "parts": [
			{"functionCall": {"name": "f", "args": {"n": 1}}},
			{"functionCall": {"id": "call_1", "name": "f", "args": {"n": 2}}},
			{"functionCall": {"id": "x", "name": "f", "args": {"n": 3}}},
			{"functionCall": {"id": "x", "name": "f", "args": {"n": 4}}}]},
		"finishReason": "STOP"}]}`), &r)
	if err != nil {
		t.Fatal(err)
	}
	turn := lggemini.Preflight(context.Background(), newGuard(t, `{}`), &r)
	var ids []string
	for _, c := range turn.Allowed() {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"call_1_2", "call_1", "x", "call_4"}, ids); diff != "" {
		t.Errorf("IDs (-want +got):\n%s", diff)
	}
	if r.Candidates[0].Content.Parts[0].FunctionCall.ID != "" {
		t.Error("Allowed changed the response's call")
	}
	if turn.SetResult("nope", "x", nil) {
		t.Error("SetResult accepted an unknown call")
	}
	turn.SetResult("call_1_2", "one", nil)
	turn.SetResult("call_1", "", errors.New("boom"))
	turn.SetResult("x", "partial", errors.New("bad"))
	// call_4 never reports.
	var got []string
	contents := turn.Contents()
	if len(contents) != 2 || contents[1].Role != genai.RoleUser {
		t.Fatalf("contents: %+v", contents)
	}
	for _, p := range contents[1].Parts {
		got = append(got, fmt.Sprintf("%s %q %v", p.FunctionResponse.Name, p.FunctionResponse.ID, p.FunctionResponse.Response))
	}
	want := []string{
		`f "" map[output:one]`,
		`f "call_1" map[error:Error: boom]`,
		`f "x" map[error:partial]`,
		`f "x" map[error:That call was not run.]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("function responses (-want +got):\n%s", diff)
	}
	if n := len(turn.Step().ToolCalls); n != 3 {
		t.Errorf("%d calls in the step, want the 3 that reported", n)
	}
	if len(turn.Refusals()) != 0 {
		t.Errorf("refusals without a refused call: %v", turn.Refusals())
	}
}
