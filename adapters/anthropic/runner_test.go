package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
	"github.com/google/go-cmp/cmp"

	lganthropic "github.com/loopguard/loopguard/adapters/anthropic"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// scripted is a model, played by a local server, that says the same words
// on every turn and asks for the weather of another city each time, from a
// weather service that is down (see failingWeather): a failed call brings
// nothing new, so the repeated-text rule of the defaults stops it when it
// has said them three times. It counts the requests, which are the paid
// model calls.
type scripted struct {
	mu       sync.Mutex
	requests int
	stream   bool // answer with a stream of events
}

var cities = []string{"Paris", "Rome", "Lima", "Kyiv", "Lagos", "Quito", "Hanoi"}

func (s *scripted) serve(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	s.requests++
	n := s.requests
	s.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	city := cities[(n-1)%len(cities)]
	if !s.stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": "msg_%d", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": [{"type": "text", "text": "Let me look that up for you."},
				{"type": "tool_use", "id": "toolu_%d", "name": "get_weather", "input": {"city": %q}}],
			"stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 20}}`, n, n, city)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range []string{
		`{"type":"message_start","message":{"id":"msg_` + fmt.Sprint(n) + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":0}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look that up for you."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_` + fmt.Sprint(n) + `","name":"get_weather","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"` + city + `\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`,
		`{"type":"message_stop"}`,
	} {
		name := e[len(`{"type":"`):]
		name = name[:strings.IndexByte(name, '"')]
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, e)
	}
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func newScripted(t *testing.T, stream bool) (*scripted, sdk.Client) {
	t.Helper()
	s := &scripted{stream: stream}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	return s, sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
}

var errWeatherDown = errors.New("the weather service is down")

// failingWeather returns a get_weather tool that always fails; it counts
// its runs.
func failingWeather(t *testing.T, runs *int, mu *sync.Mutex) sdk.BetaTool {
	t.Helper()
	tool, err := toolrunner.NewBetaToolFromJSONSchema("get_weather", "Current weather in a city.",
		func(_ context.Context, in weatherIn) (sdk.BetaToolResultBlockParamContentUnion, error) {
			mu.Lock()
			*runs++
			mu.Unlock()
			return sdk.BetaToolResultBlockParamContentUnion{}, errWeatherDown
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func defaultGuard(t *testing.T) *guard.Guard {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The yardstick: a loop written by hand, which checks each message's step
// with its outcomes before it asks for the next, stops the scripted model
// after its third request.
func TestHandWrittenLoopRequests(t *testing.T) {
	s, client := newScripted(t, false)
	g := defaultGuard(t)
	ctx := context.Background()
	params := runnerParams().BetaMessageNewParams
	var v guard.Verdict
	for range 10 {
		m, err := client.Beta.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		step := lganthropic.StepFromBetaMessage(m)
		turn := g.Begin()
		ds, err := turn.Preflight(ctx, step.ToolCalls...)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range ds {
			if d.Allow {
				turn.SetResult(step.ToolCalls[i].ID, nil, errWeatherDown)
			}
		}
		step.ToolCalls = nil
		if v, _ = turn.End(ctx, step); v.Stop {
			break
		}
	}
	if v.Code != "REPEATED_TEXT" || s.count() != 3 {
		t.Errorf("verdict %v after %d requests, want REPEATED_TEXT after 3", v, s.count())
	}
}

// The tool runner with Runner.Option costs the same three requests: the
// third message is recorded before the fourth request would go out, and the
// runner gets the middleware's final message instead. Without the option
// the stop is seen one request later. Streaming or not, the same.
func TestToolRunnerStopsBeforeRequest(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stream, opt   bool
		wantRequests  int
		wantMessages  int
		wantToolRuns  int
		wantStopMsgID bool
	}{
		{name: "option", opt: true, wantRequests: 3, wantMessages: 4, wantToolRuns: 3, wantStopMsgID: true},
		{name: "option-stream", stream: true, opt: true, wantRequests: 3, wantMessages: 4, wantToolRuns: 3, wantStopMsgID: true},
		{name: "without-option", wantRequests: 4, wantMessages: 4, wantToolRuns: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, client := newScripted(t, tc.stream)
			g := defaultGuard(t)
			lg := lganthropic.NewRunner(g)
			var mu sync.Mutex
			runs := 0
			var opts []option.RequestOption
			if tc.opt {
				opts = append(opts, lg.Option())
			}
			ctx := context.Background()
			var (
				v        guard.Verdict
				stopErr  error
				messages int
				lastID   string
			)
			check := func(msg *sdk.BetaMessage) bool {
				messages++
				lastID = msg.ID
				var err error
				v, err = lg.Check(ctx, msg)
				if (err != nil) != v.Stop {
					t.Fatalf("message %d: verdict %v with error %v", messages, v, err)
				}
				stopErr = err
				return err != nil
			}
			tools := lg.Tools(failingWeather(t, &runs, &mu))
			if tc.stream {
				runner := client.Beta.Messages.NewToolRunnerStreaming(tools, runnerParams(), opts...)
			turns:
				for events, err := range runner.AllStreaming(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					var msg sdk.BetaMessage
					for e, err := range events {
						if err != nil {
							t.Fatal(err)
						}
						if err := msg.Accumulate(e); err != nil {
							t.Fatal(err)
						}
					}
					if check(&msg) {
						break turns
					}
				}
			} else {
				runner := client.Beta.Messages.NewToolRunner(tools, runnerParams(), opts...)
				for msg, err := range runner.All(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					if check(msg) {
						break
					}
				}
			}
			var stop *guard.StopError
			if v.Code != "REPEATED_TEXT" || !errors.As(stopErr, &stop) || stop.Verdict.Code != "REPEATED_TEXT" {
				t.Errorf("verdict %v, error %v; want a REPEATED_TEXT stop and its *guard.StopError", v, stopErr)
			}
			got := []int{s.count(), messages, runs}
			if diff := cmp.Diff([]int{tc.wantRequests, tc.wantMessages, tc.wantToolRuns}, got); diff != "" {
				t.Errorf("requests, messages, tool runs (-want +got):\n%s", diff)
			}
			if (lastID == lganthropic.StopMessageID) != tc.wantStopMsgID {
				t.Errorf("last message %q, want the stop message: %v", lastID, tc.wantStopMsgID)
			}
			if sum := summary(t, g); sum.Steps != 3 || sum.ToolCalls != 3 {
				t.Errorf("summary: %d steps, %d calls; want 3, 3 (the stop message is not a step)", sum.Steps, sum.ToolCalls)
			}
		})
	}
}

// Without Check, the decorated tools judge each call alone; once the guard
// has stopped the run, the middleware sends no more requests and the runner
// ends with the stop message. The stubborn model asks for the same forecast
// every time: two runs, three refusals (the third stops the run), and no
// request after it.
func TestToolRunnerOptionWithoutCheck(t *testing.T) {
	rp, client := newReplay(t, "messages_stubborn.json")
	g := newGuard(t)
	lg := lganthropic.NewRunner(g)
	var mu sync.Mutex
	runs := 0
	runner := client.Beta.Messages.NewToolRunner(lg.Tools(newWeather(t, &runs, &mu)), runnerParams(), lg.Option())
	last, err := runner.RunToCompletion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if last.ID != lganthropic.StopMessageID || rp.count() != 5 || runs != 2 {
		t.Errorf("last message %q after %d requests and %d runs; want %q after 5 and 2", last.ID, rp.count(), runs, lganthropic.StopMessageID)
	}
	v, err := lg.Check(context.Background(), last)
	var stop *guard.StopError
	if v.Code != "REPEATED_REFUSAL" || !errors.As(err, &stop) {
		t.Errorf("Check of the stop message: %v, %v; want the REPEATED_REFUSAL stop", v, err)
	}
	if !strings.Contains(last.Content[0].Text, "REPEATED_REFUSAL") {
		t.Errorf("the stop message says %q", last.Content[0].Text)
	}
}
