package eino_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"

	lgeino "github.com/loopguard/loopguard/adapters/eino"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// runReAct runs eino's ReAct graph agent with the guard's model wrapper and
// tool middleware, against the script, and returns the run's answer and
// error. A streamed run is read to its end, as its user does.
func runReAct(t *testing.T, g *guard.Guard, m *scripted, tl tool.BaseTool, streaming bool) (*schema.Message, error) {
	t.Helper()
	ctx := context.Background()
	lg := lgeino.New(g)
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: lg.ChatModel(m),
		ToolsConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{tl},
			ToolCallMiddlewares: []compose.ToolMiddleware{lg.ToolMiddleware()}},
		MaxStep: 40,
	})
	if err != nil {
		t.Fatal(err)
	}
	input := []*schema.Message{schema.UserMessage("What is the weather in Paris?")}
	if !streaming {
		return agent.Generate(ctx, input)
	}
	sr, err := agent.Stream(ctx, input)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	var chunks []*schema.Message
	for {
		c, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return schema.ConcatMessages(chunks)
		}
		if err != nil {
			return nil, err
		}
		chunks = append(chunks, c)
	}
}

// handLoop runs the script in a loop written by hand on a guard.Turn, as
// the README's loops are, and returns the error that ended it: the figure
// the ReAct agent's model calls are held to.
func handLoop(t *testing.T, g *guard.Guard, m *scripted, f *forecast) error {
	t.Helper()
	ctx := context.Background()
	msgs := []*schema.Message{schema.UserMessage("What is the weather in Paris?")}
	for {
		msg, err := m.Generate(ctx, msgs)
		if err != nil {
			return err
		}
		msgs = append(msgs, msg)
		step := lgeino.StepFromMessage(msg)
		turn := g.Begin()
		if _, err := turn.Preflight(ctx, step.ToolCalls...); err != nil {
			return err
		}
		for _, c := range msg.ToolCalls {
			answer := ""
			if d, _ := turn.Decision(c.ID); d.Allow {
				var in weatherIn
				if _, err := fmt.Sscanf(c.Function.Arguments, `{"city":%q}`, &in.City); err != nil {
					t.Fatal(err)
				}
				answer = f.run(in)
				turn.SetResult(c.ID, answer, nil)
			} else {
				answer, _ = turn.Answer(c.ID)
			}
			msgs = append(msgs, schema.ToolMessage(answer, c.ID))
		}
		v, err := turn.End(ctx, step)
		if err != nil || v.Stop {
			return err
		}
	}
}

// The ReAct graph agent, with a model that asks for the same forecast on
// every turn: the third call is refused, and when the model keeps asking
// the guard's stop ends the run with a *guard.StopError, before the model
// is called again. The model is called exactly as often as in a loop
// written by hand (5 times), not until eino's step limit. For every kind
// of tool, with and without streaming.
func TestReActStubbornModel(t *testing.T) {
	stubborn := func() *scripted {
		var script []reply
		for i := 1; i <= 30; i++ {
			script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
		}
		return &scripted{script: script}
	}
	hand := stubborn()
	var handStop *guard.StopError
	if err := handLoop(t, newGuard(t), hand, new(forecast)); !errors.As(err, &handStop) {
		t.Fatalf("the hand-written loop ended with %v", err)
	}
	if len(hand.inputs) != 5 {
		t.Fatalf("the hand-written loop called the model %d times, want 5", len(hand.inputs))
	}
	for _, k := range kinds {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", k.name, streaming), func(t *testing.T) {
				m := stubborn()
				f := new(forecast)
				tl, err := k.tool(f)
				if err != nil {
					t.Fatal(err)
				}
				g := newGuard(t)
				_, err = runReAct(t, g, m, tl, streaming)
				var stop *guard.StopError
				if !errors.As(err, &stop) {
					t.Fatalf("the run ended with %v, want a *guard.StopError", err)
				}
				if stop.Verdict.Code != handStop.Verdict.Code || len(m.inputs) != len(hand.inputs) {
					t.Fatalf("stopped by %s after %d model calls, want %s after %d, as the hand-written loop",
						stop.Verdict.Code, len(m.inputs), handStop.Verdict.Code, len(hand.inputs))
				}
				if diff := cmp.Diff(map[string]int{"Paris": 2}, f.runs); diff != "" {
					t.Errorf("tool runs (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, {"call_4"}, {"call_5"}}, refusals(g)); diff != "" {
					t.Errorf("refused calls per step (-want +got):\n%s", diff)
				}
				feedback := toolMessage(t, m.inputs[3], "call_3")
				if !strings.HasPrefix(feedback, "That call was not run") || strings.Contains(feedback, "Paris") {
					t.Errorf("the model was told %q, want the guard's feedback without the arguments", feedback)
				}
			})
		}
	}
}

// Without the model wrapper, the tool middleware alone refuses calls but
// cannot end the run: eino's own step limit does, many model calls later.
// This is why the recipe wraps the model.
func TestReActToolMiddlewareAlone(t *testing.T) {
	var script []reply
	for i := 1; i <= 30; i++ {
		script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i), "Paris"}}})
	}
	m := &scripted{script: script}
	tl, err := kinds[0].tool(new(forecast))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{tl},
			ToolCallMiddlewares: []compose.ToolMiddleware{lgeino.New(newGuard(t)).ToolMiddleware()}},
		MaxStep: 40,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Generate(ctx, []*schema.Message{schema.UserMessage("What is the weather in Paris?")})
	var stop *guard.StopError
	if err == nil || errors.As(err, &stop) {
		t.Fatalf("the run ended with %v, want eino's step limit", err)
	}
	t.Logf("without the model wrapper: %d model calls, then %v", len(m.inputs), err)
	if len(m.inputs) <= 5 {
		t.Errorf("the model was called %d times, want more than the guarded run's 5", len(m.inputs))
	}
}

// A model that takes the refusal and answers: the ReAct run ends with the
// answer, without an error, and the answer is recorded as the last step.
func TestReActModelRecovers(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
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
			answer, err := runReAct(t, g, m, tl, streaming)
			if err != nil {
				t.Fatalf("a normal finish ended the run with %v", err)
			}
			if answer.Content != "It is 18 °C and sunny in Paris." || len(m.inputs) != 4 {
				t.Errorf("the run answered %q after %d model calls", answer.Content, len(m.inputs))
			}
			if diff := cmp.Diff([][]string{nil, nil, {"call_3"}, nil}, refusals(g)); diff != "" {
				t.Errorf("refused calls per step (-want +got):\n%s", diff)
			}
			h := g.History()
			if last := h[len(h)-1]; last.Text != "It is 18 °C and sunny in Paris." || last.Usage.TotalTokens != 100 {
				t.Errorf("the last step is %+v", last)
			}
			if v := summary(t, g).LastVerdict; v == nil || !v.Stop || guard.IsFault(*v) {
				t.Errorf("last verdict %+v, want a normal finish", v)
			}
		})
	}
}

// Token usage reaches the guard from eino's response metadata (100 tokens a
// reply here), so a token budget stops the ReAct run at the step that
// reaches it, before the next model call; one token more goes on a step.
func TestReActTokenBudget(t *testing.T) {
	for _, tc := range []struct {
		limit int
		calls int
	}{{300, 3}, {301, 4}} {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/streaming=%v", tc.limit, streaming), func(t *testing.T) {
				var script []reply
				for i, city := range []string{"Paris", "Berlin", "Rome", "Oslo", "Lima", "Kyiv"} {
					script = append(script, reply{calls: []call{{fmt.Sprintf("call_%d", i+1), city}}})
				}
				m := &scripted{script: script}
				tl, err := kinds[0].tool(new(forecast))
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := detector.FromJSON(fmt.Appendf(nil, `{"budget": {"maxTotalTokens": %d}}`, tc.limit))
				if err != nil {
					t.Fatal(err)
				}
				g, err := guard.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				_, err = runReAct(t, g, m, tl, streaming)
				var stop *guard.StopError
				if !errors.As(err, &stop) {
					t.Fatalf("the run ended with %v, want a *guard.StopError", err)
				}
				if stop.Verdict.Code != "BUDGET_TOTAL_TOKENS" || len(m.inputs) != tc.calls {
					t.Errorf("stopped by %s after %d model calls, want BUDGET_TOTAL_TOKENS after %d", stop.Verdict.Code, len(m.inputs), tc.calls)
				}
			})
		}
	}
}
