package replicas_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	einoschema "github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	lcschema "github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	lgeino "github.com/loopguard/loopguard/adapters/eino"
	lglangchaingo "github.com/loopguard/loopguard/adapters/langchaingo"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/loopguard/loopguard/stores/redis/redistest"
)

// runKey is the run the workers share.
const runKey = "run-1"

// workers returns two workers' views of run runKey: each its own
// snapshot.Runs (its own cache) over its own client of one redis-server.
// A store error fails the test.
func workers(t *testing.T, prefix string) [2]*guard.Guard {
	t.Helper()
	srv := redistest.Start(t, false)
	var gs [2]*guard.Guard
	for i := range gs {
		store, err := lgredis.New(srv.Client(nil), lgredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := snapshot.New(store, guard.Config{Rules: detector.Defaults()}, snapshot.Options{
			OnError: func(key string, err error) { t.Errorf("worker %d, %s: %v", i, key, err) }})
		if err != nil {
			t.Fatal(err)
		}
		gs[i] = runs.Guard(runKey)
	}
	return gs
}

// tally counts the runs of the tool, by worker.
type tally struct {
	mu  sync.Mutex
	ran []int
}

func (c *tally) add(worker int) {
	c.mu.Lock()
	c.ran = append(c.ran, worker)
	c.mu.Unlock()
}

// wantShared checks what the workers did: the tool ran at the first two
// turns and was refused at the third, and each turn is one step of the
// shared run, whichever worker reads it.
func wantShared(t *testing.T, gs [2]*guard.Guard, order []int, answers []string, c *tally) {
	t.Helper()
	if diff := cmp.Diff(order[:2], c.ran); diff != "" {
		t.Errorf("the workers whose tool ran (-want +got):\n%s", diff)
	}
	want := []string{"sunny in Paris", "sunny in Paris", "That call was not run: it would have been the 3rd call in a row to `get_weather` with exactly the same arguments"}
	for i, a := range answers {
		if !strings.HasPrefix(a, want[i]) {
			t.Errorf("turn %d (worker %d): the tool answered %q, want %q...", i+1, order[i], a, want[i])
		}
	}
	if len(answers) != len(want) {
		t.Errorf("%d answers, want %d", len(answers), len(want))
	}
	for i, g := range gs {
		s, err := g.Summary(context.Background())
		if err != nil || s.Steps != 3 || s.ToolCalls != 2 {
			t.Errorf("worker %d reads %d steps, %d calls (%v); want 3 steps (two calls and a refusal), 2 calls", i, s.Steps, s.ToolCalls, err)
		}
	}
}

// orders are the workers that serve the three turns: the third identical
// call is refused whichever worker gets it.
var orders = [][]int{{0, 1, 0}, {0, 1, 1}, {1, 1, 0}}

// weatherIn is the tool's input.
type weatherIn struct {
	City string `json:"city"`
}

// einoModel asks for the weather in Paris at every reply.
type einoModel struct{ turn int }

func (m *einoModel) Generate(context.Context, []*einoschema.Message, ...model.Option) (*einoschema.Message, error) {
	m.turn++
	return &einoschema.Message{Role: einoschema.Assistant, ResponseMeta: &einoschema.ResponseMeta{FinishReason: "tool_calls"},
		ToolCalls: []einoschema.ToolCall{{ID: fmt.Sprintf("call-%d", m.turn), Type: "function",
			Function: einoschema.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}, nil
}

func (m *einoModel) Stream(ctx context.Context, in []*einoschema.Message, opts ...model.Option) (*einoschema.StreamReader[*einoschema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return einoschema.StreamReaderFromArray([]*einoschema.Message{msg}), nil
}

func (m *einoModel) WithTools([]*einoschema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

// TestEinoWorkersShareARunThroughRedis: each turn of a run is one run of an
// eino agent on one of two workers (its tool returns directly, so the
// agent's run ends after it, and the worker then ends the turn with End, as
// the adapter's doc says). Each worker's agent has an unchanged lgeino
// middleware over the run's guard from its own snapshot.Runs.
func TestEinoWorkersShareARunThroughRedis(t *testing.T) {
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			ctx := context.Background()
			gs := workers(t, fmt.Sprintf("eino-%v:", order))
			c := new(tally)
			var answers []string
			for _, w := range order {
				mw := lgeino.New(gs[w])
				weather, err := utils.InferTool("get_weather", "The weather in a city.", func(_ context.Context, in weatherIn) (string, error) {
					c.add(w)
					return "sunny in " + in.City, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
					Name: "weather", Description: "Answers weather questions.", Model: new(einoModel),
					ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{weather}},
						ReturnDirectly: map[string]bool{"get_weather": true}},
					Middlewares: []adk.AgentMiddleware{mw.AgentMiddleware()},
				})
				if err != nil {
					t.Fatal(err)
				}
				iter := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, "What is the weather in Paris?")
				answer := ""
				for event, ok := iter.Next(); ok; event, ok = iter.Next() {
					if event.Err != nil {
						t.Fatalf("worker %d: %v", w, event.Err)
					}
					if mo := event.Output; mo != nil && mo.MessageOutput != nil && mo.MessageOutput.Role == einoschema.Tool {
						answer = mo.MessageOutput.Message.Content
					}
				}
				if _, err := mw.End(ctx); err != nil {
					t.Fatalf("worker %d: End: %v", w, err)
				}
				answers = append(answers, answer)
			}
			wantShared(t, gs, order, answers, c)
		})
	}
}

// lcAgent plans a call of get_weather for Paris at every plan.
type lcAgent struct {
	tools []tools.Tool
	turn  int
}

func (a *lcAgent) Plan(context.Context, []lcschema.AgentStep, map[string]string, ...chains.ChainCallOption) ([]lcschema.AgentAction, *lcschema.AgentFinish, error) {
	a.turn++
	return []lcschema.AgentAction{{Tool: "get_weather", ToolInput: `{"city":"Paris"}`, ToolID: fmt.Sprintf("call-%d", a.turn)}}, nil, nil
}
func (a *lcAgent) GetInputKeys() []string  { return []string{"input"} }
func (a *lcAgent) GetOutputKeys() []string { return []string{"output"} }
func (a *lcAgent) GetTools() []tools.Tool  { return a.tools }

// lcTool is the weather tool of a worker.
type lcTool struct {
	worker int
	c      *tally
}

func (lcTool) Name() string        { return "get_weather" }
func (lcTool) Description() string { return "The weather in a city." }
func (t lcTool) Call(context.Context, string) (string, error) {
	t.c.add(t.worker)
	return "sunny in Paris", nil
}

// TestLangchaingoWorkersShareARunThroughRedis: each turn of a run is one run
// of a langchaingo executor (one iteration) on one of two workers, whose
// agent is wrapped unchanged over the run's guard from its own
// snapshot.Runs; after the executor gives up (agents.ErrNotFinished), the
// worker ends the turn with End, as the adapter's doc says.
func TestLangchaingoWorkersShareARunThroughRedis(t *testing.T) {
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			ctx := context.Background()
			gs := workers(t, fmt.Sprintf("langchaingo-%v:", order))
			c := new(tally)
			var answers []string
			for _, w := range order {
				agent := lglangchaingo.Wrap(gs[w], &lcAgent{tools: []tools.Tool{lcTool{worker: w, c: c}}})
				var answer string
				executor := agents.NewExecutor(agent, agents.WithMaxIterations(1), agents.WithReturnIntermediateSteps())
				out, err := executor.Call(ctx, map[string]any{"input": "What is the weather in Paris?"})
				if !errors.Is(err, agents.ErrNotFinished) {
					t.Fatalf("worker %d: %v, want ErrNotFinished (one iteration)", w, err)
				}
				if steps, ok := out["intermediateSteps"].([]lcschema.AgentStep); ok && len(steps) == 1 {
					answer = steps[0].Observation
				}
				if _, err := agent.End(ctx); err != nil {
					t.Fatalf("worker %d: End: %v", w, err)
				}
				answers = append(answers, answer)
			}
			wantShared(t, gs, order, answers, c)
		})
	}
}
