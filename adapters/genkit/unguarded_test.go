package genkit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/google/go-cmp/cmp"

	lggenkit "github.com/loopguard/loopguard/adapters/genkit"
)

// twoTools is a model whose first response asks for the weather and the
// time, and whose later ones answer; it counts its calls.
type twoTools struct {
	mu    sync.Mutex
	calls int
}

func (m *twoTools) generate(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	msg := ai.NewModelTextMessage("Sunny, and it is noon.")
	if m.calls == 1 {
		msg = ai.NewModelMessage(
			ai.NewToolRequestPart(&ai.ToolRequest{Name: "get_weather", Ref: "w1", Input: map[string]any{"city": "Paris"}}),
			ai.NewToolRequestPart(&ai.ToolRequest{Name: "get_time", Ref: "t1", Input: map[string]any{"city": "Paris"}}),
		)
	}
	return &ai.ModelResponse{Message: msg, FinishReason: ai.FinishReasonStop, Request: req}, nil
}

// A tool defined with the plain genkit.DefineTool (or ai.NewTool) cannot
// be guarded, since Genkit v1.4.0 has no tool middleware: when it answers a
// request in a guarded run, the run ends with an error wrapping
// ErrUnguardedTool that names it, before the model is called again. With
// both tools guarded, the same run answers. Through each door.
func TestUnguardedTool(t *testing.T) {
	for _, tc := range []struct {
		name          string
		plain         string // "", "registered" or "dynamic": how get_time is defined unguarded
		door          door
		wantErr       bool
		wantCalls     int
		wantTimeRuns  int
		wantGuardRuns int
	}{
		{"both guarded", "", generate, false, 2, 1, 1},
		{"plain registered", "registered", generate, true, 1, 1, 1},
		{"plain dynamic", "dynamic", generate, true, 1, 1, 1},
		{"plain registered, middleware", "registered", middleware, true, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gk := genkit.Init(ctx)
			m := new(twoTools)
			model := genkit.DefineModel(gk, "test/two", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, m.generate)
			f := new(forecast)
			var timeRuns int
			clock := func(*ai.ToolContext, weatherIn) (string, error) { timeRuns++; return "noon", nil }
			var timeTool ai.ToolRef
			switch tc.plain {
			case "registered":
				timeTool = genkit.DefineTool(gk, "get_time", "The time in a city.", clock)
			case "dynamic":
				timeTool = ai.NewTool("get_time", "The time in a city.", clock)
			default:
				timeTool = lggenkit.DefineTool(gk, "get_time", "The time in a city.", clock)
			}
			weather := lggenkit.DefineTool(gk, "get_weather", "The weather in a city.", f.run)
			opts := []ai.GenerateOption{ai.WithModel(model), ai.WithPrompt("Weather and time in Paris?"), ai.WithTools(weather, timeTool)}
			g := newGuard(t)
			var err error
			if tc.door == middleware {
				lg := lggenkit.New(g)
				_, err = genkit.Generate(lg.Context(ctx), gk, append(opts, ai.WithMiddleware(lg.ModelMiddleware()))...)
			} else {
				_, err = lggenkit.Generate(ctx, gk, g, opts...)
			}
			if got := errors.Is(err, lggenkit.ErrUnguardedTool); got != tc.wantErr {
				t.Fatalf("Generate ended with %v; ErrUnguardedTool %v, want %v", err, got, tc.wantErr)
			}
			if tc.wantErr && (!strings.Contains(err.Error(), `"get_time"`) || strings.Contains(err.Error(), "get_weather")) {
				t.Errorf("the error %q should name get_time alone", err)
			}
			if !tc.wantErr && err != nil {
				t.Fatal(err)
			}
			if m.calls != tc.wantCalls || timeRuns != tc.wantTimeRuns {
				t.Errorf("%d model calls, get_time ran %d times; want %d and %d", m.calls, timeRuns, tc.wantCalls, tc.wantTimeRuns)
			}
			if diff := cmp.Diff(map[string]int{"Paris": tc.wantGuardRuns}, f.runs); diff != "" {
				t.Errorf("guarded tool runs (-want +got):\n%s", diff)
			}
			// The guarded call of the response is recorded all the same.
			if h := g.History(); len(h) == 0 || len(h[0].ToolCalls) == 0 || h[0].ToolCalls[0].Name != "get_weather" {
				t.Errorf("the first step is %+v", h)
			}
		})
	}
}

// A tool response in the history a run starts from (a plain tool of an
// earlier run) is not this run's: it does not end the run.
func TestUnguardedToolHistory(t *testing.T) {
	ctx := context.Background()
	gk := genkit.Init(ctx)
	m := &scripted{script: []reply{{text: "Noon, as you were told."}}}
	model := genkit.DefineModel(gk, "test/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, m.generate)
	history := []*ai.Message{
		ai.NewUserTextMessage("Time in Paris?"),
		ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Name: "get_time", Ref: "t0", Input: map[string]any{"city": "Paris"}})),
		ai.NewMessage(ai.RoleTool, nil, ai.NewToolResponsePart(&ai.ToolResponse{Name: "get_time", Ref: "t0", Output: "noon"})),
	}
	resp, err := lggenkit.Generate(ctx, gk, newGuard(t), ai.WithModel(model), ai.WithMessages(history...))
	if err != nil || resp.Text() != "Noon, as you were told." {
		t.Fatalf("Generate returned %v, %v", resp, err)
	}
}
