package genkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/google/go-cmp/cmp"

	lggenkit "github.com/loopguard/loopguard/adapters/genkit"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A reply is one scripted model response: tool requests, or else a final
// text.
type reply struct {
	calls []call
	text  string
}

// A call is one scripted tool request.
type call struct{ ref, city string }

// scripted is a model that answers the i-th request with the i-th reply
// (the last one again once the script runs out) and keeps the requests.
type scripted struct {
	mu       sync.Mutex
	script   []reply
	requests []*ai.ModelRequest
}

func (m *scripted) generate(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	rp := m.script[min(len(m.requests), len(m.script))-1]
	msg := &ai.Message{Role: ai.RoleModel}
	if rp.text != "" {
		msg.Content = append(msg.Content, ai.NewTextPart(rp.text))
	}
	for _, c := range rp.calls {
		msg.Content = append(msg.Content, ai.NewToolRequestPart(&ai.ToolRequest{Name: "get_weather", Ref: c.ref, Input: map[string]any{"city": c.city}}))
	}
	// Genkit's finish reasons have no "tool calls": models say "stop".
	return &ai.ModelResponse{Message: msg, FinishReason: ai.FinishReasonStop, Request: req,
		Usage: &ai.GenerationUsage{InputTokens: 80, OutputTokens: 20, TotalTokens: 100}}, nil
}

// forecast is the tool's body: it counts its runs per city.
type forecast struct {
	mu   sync.Mutex
	runs map[string]int
}

type weatherIn struct {
	City string `json:"city"`
}

func (f *forecast) run(_ *ai.ToolContext, in weatherIn) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[string]int)
	}
	f.runs[in.City]++
	return "18 °C, sunny in " + in.City, nil
}

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{History: 32, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A door is a way into Genkit's generate loop with a guard.
type door int

const (
	generate   door = iota // lggenkit.Generate, a registered tool
	dynamic                // lggenkit.Generate, a dynamic tool (NewTool)
	middleware             // genkit.Generate with the Middleware's pieces
)

func (d door) String() string { return [...]string{"generate", "dynamic", "middleware"}[d] }

// run runs Genkit's generate loop, guarded by g, with the guarded tool
// against the script, and returns what Generate returned.
func run(t *testing.T, g *guard.Guard, m *scripted, f *forecast, d door, opts ...ai.GenerateOption) (*ai.ModelResponse, error) {
	t.Helper()
	ctx := context.Background()
	gk := genkit.Init(ctx)
	model := genkit.DefineModel(gk, "test/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, m.generate)
	var tool ai.ToolRef
	if d == dynamic {
		tool = lggenkit.NewTool("get_weather", "The weather in a city.", f.run)
	} else {
		tool = lggenkit.DefineTool(gk, "get_weather", "The weather in a city.", f.run)
	}
	if len(opts) == 0 {
		opts = []ai.GenerateOption{ai.WithMaxTurns(10)}
	}
	opts = append([]ai.GenerateOption{ai.WithModel(model), ai.WithPrompt("What is the weather in Paris?"), ai.WithTools(tool)}, opts...)
	if d != middleware {
		return lggenkit.Generate(ctx, gk, g, opts...)
	}
	lg := lggenkit.New(g)
	resp, err := genkit.Generate(lg.Context(ctx), gk, append(opts, ai.WithMiddleware(lg.ModelMiddleware()))...)
	if _, endErr := lg.End(ctx); err == nil {
		err = endErr
	}
	return resp, err
}

// refusals returns, per recorded step, the IDs of the refused calls.
func refusals(g *guard.Guard) [][]string {
	var out [][]string
	for _, s := range g.History() {
		var ids []string
		for _, c := range s.Refused {
			ids = append(ids, c.ID)
		}
		out = append(out, ids)
	}
	return out
}

// toolOutput returns the output of the tool response to ref in req.
func toolOutput(t *testing.T, req *ai.ModelRequest, ref string) any {
	t.Helper()
	for _, msg := range req.Messages {
		for _, p := range msg.Content {
			if p.IsToolResponse() && p.ToolResponse.Ref == ref {
				return p.ToolResponse.Output
			}
		}
	}
	t.Fatalf("no tool response answers %s", ref)
	return nil
}

// A model that asks for the same forecast on every turn: the third call is
// refused and the tool runs twice; the model is told so with the guard's
// feedback, and when it keeps asking the guard stops Generate with a
// *guard.StopError. Through each door.
func TestStubbornModel(t *testing.T) {
	for _, d := range []door{generate, dynamic, middleware} {
		t.Run(d.String(), func(t *testing.T) {
			var script []reply
			for i := 1; i <= 6; i++ {
				script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
			}
			m := &scripted{script: script}
			f := new(forecast)
			g := newGuard(t)
			_, err := run(t, g, m, f, d)
			var stop *guard.StopError
			if !errors.As(err, &stop) {
				t.Fatalf("Generate ended with %v, want a *guard.StopError", err)
			}
			if stop.Verdict.Code != "REPEATED_REFUSAL" || len(m.requests) != 5 {
				t.Fatalf("stopped by %s after %d model calls, want REPEATED_REFUSAL after 5", stop.Verdict.Code, len(m.requests))
			}
			if diff := cmp.Diff(map[string]int{"Paris": 2}, f.runs); diff != "" {
				t.Errorf("tool runs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, {"call_4"}, {"call_5"}}, refusals(g)); diff != "" {
				t.Errorf("refused calls per step (-want +got):\n%s", diff)
			}
			feedback, _ := toolOutput(t, m.requests[3], "call_3").(string)
			if !strings.HasPrefix(feedback, "That call was not run") || strings.Contains(feedback, "Paris") {
				t.Errorf("the model was told %q, want the guard's feedback without the arguments", feedback)
			}
			if got := toolOutput(t, m.requests[2], "call_2"); got != "18 °C, sunny in Paris" {
				t.Errorf("the second call was answered with %v", got)
			}
			h := g.History()
			if c := h[1].ToolCalls; len(c) != 1 || c[0].ID != "call_2" || c[0].Result != "18 °C, sunny in Paris" || h[1].FinishReason != "tool_calls" {
				t.Errorf("the second step is %+v", h[1])
			}
		})
	}
}

// A model that takes the refusal and answers: Generate returns the answer
// without an error, on a normal finish.
func TestModelRecovers(t *testing.T) {
	m := &scripted{script: []reply{
		{calls: []call{{"call_1", "Paris"}}},
		{calls: []call{{"call_2", "Paris"}}},
		{calls: []call{{"call_3", "Paris"}}},
		{text: "It is 18 °C and sunny in Paris."},
	}}
	f := new(forecast)
	g := newGuard(t)
	resp, err := run(t, g, m, f, generate)
	if err != nil || resp.Text() != "It is 18 °C and sunny in Paris." {
		t.Fatalf("Generate returned %q, %v; want the answer and no error", resp.Text(), err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2}, f.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, nil}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	if v := summary(t, g).LastVerdict; v == nil || !v.Stop || guard.IsFault(*v) {
		t.Errorf("last verdict %+v, want a normal finish", v)
	}
}

// Identical parallel requests of one response are judged together, though
// Genkit runs them in parallel: of three in a row the third is refused, and
// the request for another city after them runs.
func TestParallelCalls(t *testing.T) {
	m := &scripted{script: []reply{
		{calls: []call{{"call_1", "Paris"}, {"call_2", "Paris"}, {"call_3", "Paris"}, {"call_4", "Berlin"}}},
		{text: "Sunny in both."},
	}}
	f := new(forecast)
	g := newGuard(t)
	if _, err := run(t, g, m, f, generate); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2, "Berlin": 1}, f.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"call_3"}, nil}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	// Genkit answers each request by its ref. Which of the identical
	// requests the refusal answers depends on the order in which Genkit's
	// goroutines run them: exactly one of the Paris requests gets it.
	second := m.requests[1]
	var told []string
	for _, ref := range []string{"call_1", "call_2", "call_3"} {
		out, _ := toolOutput(t, second, ref).(string)
		if strings.HasPrefix(out, "That call was not run") && !strings.Contains(out, "Paris") {
			told = append(told, "refused")
		} else if out == "18 °C, sunny in Paris" {
			told = append(told, "ran")
		} else {
			t.Errorf("%s was answered with %q", ref, out)
		}
	}
	if n := strings.Count(strings.Join(told, " "), "refused"); n != 1 {
		t.Errorf("the Paris requests were answered %v, want one refusal", told)
	}
	if got := toolOutput(t, second, "call_4"); got != "18 °C, sunny in Berlin" {
		t.Errorf("call_4 was answered with %v", got)
	}
}

// StepFromResponse keeps a finish reason other than "stop" on a response
// with tool requests, and "stop" on one without.
func TestStepFromResponse(t *testing.T) {
	req := ai.NewToolRequestPart(&ai.ToolRequest{Name: "get_weather", Ref: "r1", Input: map[string]any{"city": "Paris"}})
	for _, tc := range []struct {
		name   string
		resp   *ai.ModelResponse
		reason string
	}{
		{"calls and stop", &ai.ModelResponse{FinishReason: ai.FinishReasonStop, Message: ai.NewModelMessage(req)}, "tool_calls"},
		{"calls and no reason", &ai.ModelResponse{Message: ai.NewModelMessage(req)}, "tool_calls"},
		{"calls and length", &ai.ModelResponse{FinishReason: ai.FinishReasonLength, Message: ai.NewModelMessage(req)}, "length"},
		{"text and stop", &ai.ModelResponse{FinishReason: ai.FinishReasonStop, Message: ai.NewModelTextMessage("Hi")}, "stop"},
	} {
		if got := lggenkit.StepFromResponse(tc.resp).FinishReason; got != tc.reason {
			t.Errorf("%s: finish reason %q, want %q", tc.name, got, tc.reason)
		}
	}
	if diff := cmp.Diff(guard.Step{}, lggenkit.StepFromResponse(nil)); diff != "" {
		t.Errorf("nil response (-want +got):\n%s", diff)
	}
}

// Genkit's limit on turns ends Generate after a response whose tools never
// run: Generate still records that response's refused call.
func TestMaxTurns(t *testing.T) {
	var script []reply
	for i := 1; i <= 6; i++ {
		script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
	}
	m := &scripted{script: script}
	f := new(forecast)
	g := newGuard(t)
	_, err := run(t, g, m, f, generate, ai.WithMaxTurns(2))
	var stop *guard.StopError
	if err == nil || errors.As(err, &stop) || !strings.Contains(err.Error(), "maximum tool call iterations") {
		t.Fatalf("Generate ended with %v, want Genkit's limit on turns", err)
	}
	if diff := cmp.Diff([][]string{nil, nil, {"call_3"}}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
}

// A guarded tool is defined once for every run: concurrent runs, each with
// its own guard, do not see each other's calls; without a guard in its
// context the tool runs unguarded.
func TestRunsApart(t *testing.T) {
	ctx := context.Background()
	gk := genkit.Init(ctx)
	f := new(forecast)
	tool := lggenkit.DefineTool(gk, "get_weather", "The weather in a city.", f.run)
	var wg sync.WaitGroup
	guards := make([]*guard.Guard, 4)
	for i := range guards {
		guards[i] = newGuard(t)
		m := &scripted{script: []reply{
			{calls: []call{{"call_1", "Paris"}, {"call_2", "Paris"}}},
			{text: "Sunny."},
		}}
		model := genkit.DefineModel(gk, fmt.Sprintf("test/scripted%d", i), &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, m.generate)
		wg.Go(func() {
			if _, err := lggenkit.Generate(ctx, gk, guards[i], ai.WithModel(model), ai.WithPrompt("Weather?"), ai.WithTools(tool)); err != nil {
				t.Errorf("run %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i, g := range guards {
		if got := refusals(g); !cmp.Equal(got, [][]string{nil, nil}) || summary(t, g).ToolCalls != 2 {
			t.Errorf("run %d: refusals %v, %d calls; want none refused and 2 calls", i, got, summary(t, g).ToolCalls)
		}
	}
	// Unguarded: three identical calls in one response all run.
	model := genkit.DefineModel(gk, "test/unguarded", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		(&scripted{script: []reply{{calls: []call{{"a", "Oslo"}, {"b", "Oslo"}, {"c", "Oslo"}}}, {text: "Cold."}}}).generate)
	if _, err := genkit.Generate(ctx, gk, ai.WithModel(model), ai.WithPrompt("Weather?"), ai.WithTools(tool)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 8, "Oslo": 3}, f.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
}

// Genkit reports each response's token usage (100 tokens here, a new city
// each time so that no other rule stops the run): a token budget stops
// Generate at the step that reaches it, before the model is called again;
// one token more goes on a step. Through each door.
func TestTokenBudget(t *testing.T) {
	for _, d := range []door{generate, dynamic, middleware} {
		for _, tc := range []struct {
			limit, calls int
		}{{300, 3}, {301, 4}} {
			t.Run(fmt.Sprintf("%s/%d", d, tc.limit), func(t *testing.T) {
				var script []reply
				for i, city := range []string{"Paris", "Berlin", "Rome", "Oslo", "Lima", "Kyiv"} {
					script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i+1), city}}})
				}
				m := &scripted{script: script}
				cfg, err := detector.FromJSON(fmt.Appendf(nil, `{"budget": {"maxTotalTokens": %d}}`, tc.limit))
				if err != nil {
					t.Fatal(err)
				}
				g, err := guard.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				_, err = run(t, g, m, new(forecast), d)
				var stop *guard.StopError
				if !errors.As(err, &stop) {
					t.Fatalf("Generate ended with %v, want a *guard.StopError", err)
				}
				if stop.Verdict.Code != "BUDGET_TOTAL_TOKENS" || len(m.requests) != tc.calls {
					t.Errorf("stopped by %s after %d model calls, want BUDGET_TOTAL_TOKENS after %d", stop.Verdict.Code, len(m.requests), tc.calls)
				}
			})
		}
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
