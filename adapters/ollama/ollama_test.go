package ollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/api"

	lgollama "github.com/loopguard/loopguard/adapters/ollama"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/guard"
)

// script is a local server that speaks /api/chat: it answers the n-th
// request with the n-th response (one JSON line, or several for a streamed
// reply) and keeps the request bodies. A request past the script fails the
// test.
type script struct {
	t         *testing.T
	responses []string
	mu        sync.Mutex
	bodies    []string
}

func newScript(t *testing.T, responses ...string) (*script, *api.Client) {
	t.Helper()
	s := &script{t: t, responses: responses}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s, api.NewClient(u, srv.Client())
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
		s.t.Errorf("request %d: %s %s, want POST /api/chat", n+1, r.Method, r.URL.Path)
	}
	if n >= len(s.responses) {
		s.t.Errorf("request %d: the script has only %d responses", n+1, len(s.responses))
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error": "no more responses"}`+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
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

// callResponse is a reply that calls get_weather once, as Ollama reports
// it: done_reason "stop". An empty id gives a call without an ID, as older
// servers send it.
func callResponse(id, city string, prompt, eval int) string {
	idField := ""
	if id != "" {
		idField = fmt.Sprintf(`"id": %q, `, id)
	}
	return line(fmt.Sprintf(`{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z",
		"message": {"role": "assistant", "content": "", "tool_calls": [
			{%s"function": {"index": 0, "name": "get_weather", "arguments": {"city": %q}}}]},
		"done": true, "done_reason": "stop", "total_duration": 250000000,
		"prompt_eval_count": %d, "eval_count": %d}`, idField, city, prompt, eval))
}

// textResponse is a reply that answers in text.
func textResponse(text string) string {
	return line(fmt.Sprintf(`{"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z",
		"message": {"role": "assistant", "content": %q}, "done": true, "done_reason": "stop",
		"prompt_eval_count": 50, "eval_count": 10}`, text))
}

// line returns a JSON object as one line of NDJSON, as Ollama writes it.
func line(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(err)
	}
	return b.String() + "\n"
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
func run(t *testing.T, g *guard.Guard, client *api.Client, s *script) (outcome, *lgollama.Turn) {
	t.Helper()
	ctx := context.Background()
	stream := false
	req := &api.ChatRequest{
		Model:    "llama3.2",
		Stream:   &stream,
		Messages: []api.Message{{Role: "user", Content: "What is the weather in Paris?"}},
	}
	var out outcome
	var mu sync.Mutex
	for range 20 {
		var resp api.ChatResponse
		if err := client.Chat(ctx, req, lgollama.Collect(&resp)); err != nil {
			t.Fatalf("request %d: %v", s.count(), err)
		}
		turn := lgollama.Preflight(ctx, g, resp)
		var refused []string
		for i, c := range resp.Message.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", i+1)
			}
			if d, _ := turn.Decision(id); !d.Allow {
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
				city, _ := call.Function.Arguments.Get("city")
				if !turn.SetResult(call.ID, fmt.Sprintf("18 °C, sunny in %v", city), nil) {
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
		req.Messages = append(req.Messages, turn.Messages()...)
	}
	t.Fatal("the loop did not stop")
	return out, nil
}

// toolMessages returns the tool messages of request i, as the server read
// them.
func toolMessages(t *testing.T, s *script, i int) []string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolName   string `json:"tool_name"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(s.request(i)), &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			out = append(out, fmt.Sprintf("%s id=%q: %s", m.ToolName, m.ToolCallID, m.Content))
		}
	}
	return out
}

// A model that asks for the same forecast on every turn, with the "stop"
// Ollama reports on tool calls: with the default rules the third call is
// refused before it runs, and so are the fourth and the fifth; at the third
// refusal the guard stops the run, and the loop makes no further request.
// The calls carry IDs in one run and none in the other, as older servers
// send them.
func TestStubbornLoop(t *testing.T) {
	for _, withIDs := range []bool{true, false} {
		t.Run(fmt.Sprintf("ids=%v", withIDs), func(t *testing.T) {
			var responses []string
			var wantRefusedIDs []string
			for i := range 6 { // one more than the run may ask for
				id := ""
				if withIDs {
					id = fmt.Sprintf("call_w%d", i+1)
				}
				responses = append(responses, callResponse(id, "Paris", 80+40*i, 20))
				if i >= 2 && i < 5 {
					wantRefusedIDs = append(wantRefusedIDs, map[bool]string{true: id, false: "call_1"}[withIDs])
				}
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
			// The fourth request answers the third call with a tool
			// message whose content is the guard's feedback.
			feedback := refusalFeedback(t)
			id := func(n int) string {
				if withIDs {
					return fmt.Sprintf("call_w%d", n)
				}
				return ""
			}
			wantAnswers := []string{
				fmt.Sprintf("get_weather id=%q: 18 °C, sunny in Paris", id(1)),
				fmt.Sprintf("get_weather id=%q: 18 °C, sunny in Paris", id(2)),
				fmt.Sprintf("get_weather id=%q: %s", id(3), feedback),
			}
			if diff := cmp.Diff(wantAnswers, toolMessages(t, s, 3)); diff != "" {
				t.Errorf("tool messages of the fourth request (-want +got):\n%s", diff)
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
			if diff := cmp.Diff(wantRefusedIDs, refused); diff != "" {
				t.Errorf("refusals recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// refusalFeedback returns the feedback on a third identical get_weather
// call for Paris, from a twin guard.
func refusalFeedback(t *testing.T) string {
	t.Helper()
	twin := newGuard(t, `{}`)
	c := guard.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}
	for range 2 {
		if _, err := twin.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{c}, FinishReason: "stop"}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := twin.Preflight(context.Background(), c)
	if err != nil || d.Allow {
		t.Fatal("the twin guard allowed the third call")
	}
	return d.Feedback
}

// A token budget of 300 with 100 tokens a reply (Ollama gives no total:
// prompt plus output counts): the second reply (200) goes on, the third
// (300) reaches it and stops the run, and no fourth request is made.
func TestTokenBudget(t *testing.T) {
	s, client := newScript(t,
		callResponse("a", "Paris", 70, 30), callResponse("b", "Rome", 70, 30),
		callResponse("c", "Oslo", 70, 30), callResponse("d", "Lima", 70, 30))
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

// The model calls once, then answers: its "stop" ends the run normally,
// with no error, while the "stop" on the call did not.
func TestAnswerEndsNormally(t *testing.T) {
	s, client := newScript(t, callResponse("a", "Paris", 70, 30), textResponse("It is 18 °C and sunny in Paris."))
	g := newGuard(t, `{}`)
	got, turn := run(t, g, client, s)
	want := outcome{
		Requests: 2, Refused: []string{"", ""}, ToolRuns: 1,
		Reason: finish.ReasonFinishReason, Code: "FINISH_TERMINAL",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if msgs := turn.Messages(); len(msgs) != 1 || msgs[0].Role != "assistant" {
		t.Errorf("a text answer's messages: %+v, want the assistant's message alone", msgs)
	}
}

// A streamed reply: text in two chunks, the call in a third, and the done
// chunk with the reason and the counts. Collect gathers it into the step
// of the same reply unstreamed.
func TestCollectStreamed(t *testing.T) {
	streamed := `{"model": "llama3.2", "message": {"role": "assistant", "content": "Looking "}, "done": false}
{"model": "llama3.2", "message": {"role": "assistant", "content": "it up.", "thinking": "hmm"}, "done": false}
{"model": "llama3.2", "message": {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}]}, "done": false}
{"model": "llama3.2", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "total_duration": 1000000, "prompt_eval_count": 12, "eval_count": 8}
`
	_, client := newScript(t, streamed)
	var resp api.ChatResponse
	if err := client.Chat(context.Background(), &api.ChatRequest{Model: "llama3.2"}, lgollama.Collect(&resp)); err != nil {
		t.Fatal(err)
	}
	want := guard.Step{
		Text:         "Looking it up.",
		ToolCalls:    []guard.ToolCall{{ID: "c1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}},
		FinishReason: "stop",
		Usage:        guard.Usage{InputTokens: 12, OutputTokens: 8, Duration: time.Millisecond},
	}
	if diff := cmp.Diff(want, lgollama.StepFromResponse(resp)); diff != "" {
		t.Errorf("step (-want +got):\n%s", diff)
	}
	if resp.Message.Thinking != "hmm" || resp.Message.Role != "assistant" {
		t.Errorf("collected message: %+v", resp.Message)
	}
}

// Ollama's done reasons, through a guard with the default rules, on a step
// with a tool call and on one without; a reply not done has no reason.
func TestDoneReasons(t *testing.T) {
	tests := []struct {
		reason         string
		done           bool
		withCall, text string // the verdict's code; "" goes on
	}{
		{"stop", true, "", "FINISH_TERMINAL"},
		{"length", true, "FINISH_TERMINAL", "FINISH_TERMINAL"},
		{"stop", false, "", ""},
		{"", true, "", ""},
	}
	for _, tt := range tests {
		for _, withCall := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/done=%v/call=%v", tt.reason, tt.done, withCall), func(t *testing.T) {
				msg := `{"role": "assistant", "content": "Done."}`
				want := tt.text
				if withCall {
					msg = `{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}`
					want = tt.withCall
				}
				var r api.ChatResponse
				if err := json.Unmarshal([]byte(fmt.Sprintf(`{"message": %s, "done": %v, "done_reason": %q}`, msg, tt.done, tt.reason)), &r); err != nil {
					t.Fatal(err)
				}
				turn := lgollama.Preflight(context.Background(), newGuard(t, `{}`), r)
				for _, c := range turn.Allowed() {
					turn.SetResult(c.ID, "18 °C", nil)
				}
				v, err := turn.End(context.Background())
				if v.Code != want {
					t.Errorf("code %q (stop %v), want %q", v.Code, v.Stop, want)
				}
				wantFault := want != "" && (withCall || tt.reason != "stop")
				if guard.IsFault(v) != wantFault || (err != nil) != wantFault {
					t.Errorf("fault %v, error %v, want a fault: %v", guard.IsFault(v), err, wantFault)
				}
			})
		}
	}
}

// Calls are named by their ID, or by their place when they have none or
// repeat an earlier one; the tool messages carry the model's IDs.
func TestCallIDsAndOutcomes(t *testing.T) {
	var r api.ChatResponse
	err := json.Unmarshal([]byte(`{"message": {"role": "assistant", "content": "", "tool_calls": [
		{"function": {"name": "f", "arguments": {"n": 1}}},
		{"id": "call_1", "function": {"name": "f", "arguments": {"n": 2}}},
		{"id": "x", "function": {"name": "f", "arguments": {"n": 3}}},
		{"id": "x", "function": {"name": "f", "arguments": {}}}]},
		"done": true, "done_reason": "stop"}`), &r)
	if err != nil {
		t.Fatal(err)
	}
	turn := lgollama.Preflight(context.Background(), newGuard(t, `{}`), r)
	var ids []string
	for _, c := range turn.Allowed() {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"call_1_2", "call_1", "x", "call_4"}, ids); diff != "" {
		t.Errorf("IDs (-want +got):\n%s", diff)
	}
	if r.Message.ToolCalls[0].ID != "" {
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
	msgs := turn.Messages()
	for _, m := range msgs[1:] {
		got = append(got, fmt.Sprintf("%s %s %q: %s", m.Role, m.ToolName, m.ToolCallID, m.Content))
	}
	want := []string{
		`tool f "": one`,
		`tool f "call_1": Error: boom`,
		`tool f "x": partial`,
		`tool f "x": That call was not run.`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	step := turn.Step()
	if n := len(step.ToolCalls); n != 3 {
		t.Errorf("%d calls in the step, want the 3 that reported", n)
	}
	if diff := cmp.Diff(json.RawMessage(`{"n":1}`), step.ToolCalls[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if len(turn.Refusals()) != 0 {
		t.Errorf("refusals without a refused call: %v", turn.Refusals())
	}
}
