package eino_test

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
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"

	lgeino "github.com/loopguard/loopguard/adapters/eino"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// A reply is one scripted model reply: tool calls, or else a final text.
type reply struct {
	calls []call
	text  string
}

// A call is one scripted tool call.
type call struct{ id, city string }

// scripted is a chat model that answers the i-th call with the i-th reply
// (the last one again once the script runs out) and keeps its inputs.
type scripted struct {
	mu     sync.Mutex
	script []reply
	inputs [][]*schema.Message
}

func (m *scripted) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inputs = append(m.inputs, input)
	rp := m.script[min(len(m.inputs), len(m.script))-1]
	msg := &schema.Message{Role: schema.Assistant, Content: rp.text, ResponseMeta: &schema.ResponseMeta{
		FinishReason: "stop",
		Usage:        &schema.TokenUsage{PromptTokens: 80, CompletionTokens: 20, TotalTokens: 100},
	}}
	for _, c := range rp.calls {
		msg.ToolCalls = append(msg.ToolCalls, schema.ToolCall{ID: c.id, Type: "function",
			Function: schema.FunctionCall{Name: "get_weather", Arguments: fmt.Sprintf(`{"city":%q}`, c.city)}})
		msg.ResponseMeta.FinishReason = "tool_calls"
	}
	return msg, nil
}

func (m *scripted) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scripted) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// forecast is the tool's body: it counts its runs per city.
type forecast struct {
	mu   sync.Mutex
	runs map[string]int
}

type weatherIn struct {
	City string `json:"city"`
}

func (f *forecast) run(in weatherIn) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[string]int)
	}
	f.runs[in.City]++
	return "18 °C, sunny in " + in.City
}

// kinds are the four kinds of eino tools, each built on a forecast.
var kinds = []struct {
	name string
	tool func(*forecast) (tool.BaseTool, error)
}{
	{"invokable", func(f *forecast) (tool.BaseTool, error) {
		return utils.InferTool("get_weather", "The weather in a city.", func(_ context.Context, in weatherIn) (string, error) {
			return f.run(in), nil
		})
	}},
	{"streamable", func(f *forecast) (tool.BaseTool, error) {
		return utils.InferStreamTool("get_weather", "The weather in a city.", func(_ context.Context, in weatherIn) (*schema.StreamReader[string], error) {
			text := f.run(in)
			return schema.StreamReaderFromArray([]string{text[:6], text[6:]}), nil
		})
	}},
	{"enhanced", func(f *forecast) (tool.BaseTool, error) {
		return utils.InferEnhancedTool("get_weather", "The weather in a city.", func(_ context.Context, in weatherIn) (*schema.ToolResult, error) {
			return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: f.run(in)}}}, nil
		})
	}},
	{"enhanced streamable", func(f *forecast) (tool.BaseTool, error) {
		return utils.InferEnhancedStreamTool("get_weather", "The weather in a city.", func(_ context.Context, in weatherIn) (*schema.StreamReader[*schema.ToolResult], error) {
			text := f.run(in)
			return schema.StreamReaderFromArray([]*schema.ToolResult{
				{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text[:6]}}},
				{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text[6:]}}},
			}), nil
		})
	}},
}

func newGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{History: 32, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// run runs a chat model agent with the middleware and the tool against the
// script, through eino's runner, and returns the error of its last event.
func run(t *testing.T, g *guard.Guard, m *scripted, tl tool.BaseTool, streaming bool) error {
	t.Helper()
	ctx := context.Background()
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "weather", Description: "Answers weather questions.", Model: m,
		ToolsConfig:   adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{tl}}},
		Middlewares:   []adk.AgentMiddleware{lgeino.New(g).AgentMiddleware()},
		MaxIterations: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, EnableStreaming: streaming})
	iter := runner.Query(ctx, "What is the weather in Paris?")
	var last error
	for event, ok := iter.Next(); ok; event, ok = iter.Next() {
		if event.Err != nil {
			last = event.Err
		}
		if mo := event.Output; mo != nil && mo.MessageOutput != nil && mo.MessageOutput.IsStreaming {
			// Read the stream, as a user of the runner does.
			for {
				if _, err := mo.MessageOutput.MessageStream.Recv(); err != nil {
					break
				}
			}
		}
	}
	return last
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

// toolMessage returns the text of the tool message answering id.
func toolMessage(t *testing.T, msgs []*schema.Message, id string) string {
	t.Helper()
	for _, m := range msgs {
		if m.Role == schema.Tool && m.ToolCallID == id {
			text := m.Content
			for _, p := range m.UserInputMultiContent {
				text += p.Text
			}
			return text
		}
	}
	t.Fatalf("no tool message answers %s", id)
	return ""
}

// results returns the results of the calls of each recorded step.
func results(g *guard.Guard) [][]string {
	var out [][]string
	for _, s := range g.History() {
		var rs []string
		for _, c := range s.ToolCalls {
			rs = append(rs, fmt.Sprintf("%s: %v", c.ID, c.Result))
		}
		out = append(out, rs)
	}
	return out
}

// A model that asks for the same forecast on every turn: the third call is
// refused and the tool runs twice; the model is told so with the guard's
// feedback, and when it keeps asking the guard stops the run with a
// *guard.StopError. For every kind of tool, with and without streaming.
func TestStubbornModel(t *testing.T) {
	for _, k := range kinds {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", k.name, streaming), func(t *testing.T) {
				var script []reply
				for i := 1; i <= 6; i++ {
					script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
				}
				m := &scripted{script: script}
				f := new(forecast)
				tl, err := k.tool(f)
				if err != nil {
					t.Fatal(err)
				}
				g := newGuard(t)
				err = run(t, g, m, tl, streaming)
				var stop *guard.StopError
				if !errors.As(err, &stop) {
					t.Fatalf("the run ended with %v, want a *guard.StopError", err)
				}
				if stop.Verdict.Code != "REPEATED_REFUSAL" || len(m.inputs) != 5 {
					t.Fatalf("stopped by %s after %d model calls, want REPEATED_REFUSAL after 5", stop.Verdict.Code, len(m.inputs))
				}
				if diff := cmp.Diff(map[string]int{"Paris": 2}, f.runs); diff != "" {
					t.Errorf("tool runs (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, {"call_4"}, {"call_5"}}, refusals(g)); diff != "" {
					t.Errorf("refused calls per step (-want +got):\n%s", diff)
				}
				want := [][]string{{"call_1: 18 °C, sunny in Paris"}, {"call_2: 18 °C, sunny in Paris"}, nil, nil, nil}
				if diff := cmp.Diff(want, results(g)); diff != "" {
					t.Errorf("recorded results per step (-want +got):\n%s", diff)
				}
				feedback := toolMessage(t, m.inputs[3], "call_3")
				if !strings.HasPrefix(feedback, "That call was not run") || strings.Contains(feedback, "Paris") {
					t.Errorf("the model was told %q, want the guard's feedback without the arguments", feedback)
				}
				if got := toolMessage(t, m.inputs[2], "call_2"); got != "18 °C, sunny in Paris" {
					t.Errorf("the second call was answered with %q", got)
				}
			})
		}
	}
}

// A model that takes the refusal and answers: the run ends without an
// error, on a normal finish.
func TestModelRecovers(t *testing.T) {
	m := &scripted{script: []reply{
		{calls: []call{{"call_1", "Paris"}}},
		{calls: []call{{"call_2", "Paris"}}},
		{calls: []call{{"call_3", "Paris"}}},
		{text: "It is 18 °C and sunny in Paris."},
	}}
	f := new(forecast)
	tl, err := kinds[0].tool(f)
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t)
	if err := run(t, g, m, tl, false); err != nil {
		t.Fatalf("a normal finish ended the run with %v", err)
	}
	if diff := cmp.Diff(map[string]int{"Paris": 2}, f.runs); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, nil}, refusals(g)); diff != "" {
		t.Errorf("refused calls per step (-want +got):\n%s", diff)
	}
	h := g.History()
	if last := h[len(h)-1]; last.Text != "It is 18 °C and sunny in Paris." || last.FinishReason != "stop" || last.Usage.TotalTokens != 100 {
		t.Errorf("the last step is %+v", last)
	}
	if v := summary(t, g).LastVerdict; v == nil || !v.Stop || guard.IsFault(*v) {
		t.Errorf("last verdict %+v, want a normal finish", v)
	}
}

// Identical parallel calls of one reply are judged together, though eino
// runs them in parallel: of three in a row the third is refused, and the
// call for another city after them runs.
func TestParallelCalls(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			m := &scripted{script: []reply{
				{calls: []call{{"call_1", "Paris"}, {"call_2", "Paris"}, {"call_3", "Paris"}, {"call_4", "Berlin"}}},
				{text: "Sunny in both."},
			}}
			f := new(forecast)
			tl, err := k.tool(f)
			if err != nil {
				t.Fatal(err)
			}
			g := newGuard(t)
			if err := run(t, g, m, tl, false); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]int{"Paris": 2, "Berlin": 1}, f.runs); diff != "" {
				t.Errorf("tool runs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([][]string{{"call_3"}, nil}, refusals(g)); diff != "" {
				t.Errorf("refused calls per step (-want +got):\n%s", diff)
			}
			second := m.inputs[1]
			for _, id := range []string{"call_1", "call_2", "call_4"} {
				if got := toolMessage(t, second, id); !strings.HasPrefix(got, "18 °C") {
					t.Errorf("%s was answered with %q", id, got)
				}
			}
			if got := toolMessage(t, second, "call_3"); !strings.HasPrefix(got, "That call was not run") || strings.Contains(got, "Paris") {
				t.Errorf("call_3 was answered with %q", got)
			}
		})
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
