package wire_test

// These tests put openai-go (the real SDK) in front of what package wire
// writes: a small proxy between the SDK and the fake upstream applies
// Rewrite, the stream filter's End and Fail, Final and Error, and the SDK
// must read each as the API's own answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/loopguard/loopguard/proxy/internal/wire"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

const feedback = "loopguard: you called search with the same arguments 3 times; answer with what you have."

// testProxy answers Responses requests as the proxy would under a
// policy: "pass" forwards, "first" and "all" refuse the first or all
// calls (Rewrite, End), "fail" ends a stream with Fail, "final" and
// "error" answer without the upstream, "event" sends an error event.
func testProxy(t *testing.T, up *fake.Server, policy string, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	refuse := func(n int) []int {
		switch {
		case policy == "first" && n > 0:
			return []int{0}
		case policy == "all":
			var r []int
			for i := range n {
				r = append(r, i)
			}
			return r
		}
		return nil
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		body, _ := io.ReadAll(r.Body)
		req, err := rs.ParseRequest(body)
		if err != nil {
			t.Errorf("ParseRequest: %v: %s", err, body)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch policy {
		case "final":
			if req.Stream {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.Write(rs.Final(&req, feedback, req.Stream))
			return
		case "error":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("x-should-retry", "false")
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write(rs.Error(http.StatusUnprocessableEntity, "REPEATED_TOOL_CALL", feedback))
			return
		case "event":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(rs.ErrorEvent("REPEATED_TOOL_CALL", feedback))
			return
		}
		res, err := up.Client().Post(up.URL+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		defer res.Body.Close()
		if !req.Stream {
			b, _ := io.ReadAll(res.Body)
			out, err := rs.ParseResponse(b)
			if err != nil {
				t.Error(err)
			}
			if refused := refuse(len(out.Calls)); refused != nil {
				if b, err = rs.Rewrite(b, refused, feedback); err != nil {
					t.Error(err)
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		st := rs.NewStream(&req)
		f := w.(http.Flusher)
		ev := wire.NewEvents(res.Body, 1<<20)
		for {
			e, err := ev.Next()
			if len(e) > 0 {
				w.Write(st.Event(e))
				f.Flush()
			}
			if err != nil {
				break
			}
		}
		if policy == "fail" {
			w.Write(st.Fail("REPEATED_TOOL_CALL", feedback))
			return
		}
		refused := refuse(len(st.Output().Calls))
		text := ""
		if refused != nil {
			text = feedback
		}
		w.Write(st.End(refused, text))
	}))
	t.Cleanup(s.Close)
	return s
}

func client(url string, retries int) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(retries))
}

var params = responses.ResponseNewParams{
	Model: "gpt-test",
	Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("find go")},
}

// answer is what a client of the SDK sees of a response.
type answer struct {
	Status string
	Text   string
	Calls  []string // call_ids
}

func answerOf(r *responses.Response) answer {
	a := answer{Status: string(r.Status), Text: r.OutputText()}
	for _, it := range r.Output {
		if it.Type == "function_call" {
			a.Calls = append(a.Calls, it.CallID)
		}
	}
	return a
}

// readStream reads a stream with the SDK and feeds its events to the
// SDK's accumulator: it returns the completed response's answer, the
// accumulator's (text and calls) and the stream's error.
func readStream(t *testing.T, st *ssestream.Stream[responses.ResponseStreamEventUnion]) (final, acc answer, err error) {
	t.Helper()
	var a responses.ResponseAccumulator
	for st.Next() {
		ev := st.Current()
		var ws responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &ws); err != nil {
			t.Fatal(err)
		}
		if err := a.AddEvent(ws); err != nil {
			t.Errorf("accumulator: %s: %v", ev.Type, err)
		}
		if ev.Type == "response.completed" {
			r := ev.AsResponseCompleted().Response
			final = answerOf(&r)
		}
	}
	snap := a.Snapshot()
	acc = answer{Status: snap.TerminalEvent, Text: snap.OutputText()}
	for _, o := range snap.Output {
		if o.Type == "function_call" {
			acc.Calls = append(acc.Calls, o.CallID)
		}
	}
	return final, acc, st.Err()
}

func TestResponsesSDK(t *testing.T) {
	looping := fake.Reply{Text: "Searching again.", Calls: []fake.Call{
		{ID: "call_1", Name: "search", Args: `{"q":"go"}`},
		{ID: "call_2", Name: "fetch", Args: `{"url":"https://go.dev"}`},
	}, InputTokens: 10, OutputTokens: 5}
	tests := []struct {
		policy string
		rep    fake.Reply
		want   answer
	}{
		{"pass", looping, answer{Status: "completed", Text: "Searching again.", Calls: []string{"call_1", "call_2"}}},
		{"first", looping, answer{Status: "completed", Text: "Searching again." + feedback, Calls: []string{"call_2"}}},
		{"all", looping, answer{Status: "completed", Text: "Searching again." + feedback}},
		{"all", fake.Reply{Calls: looping.Calls[:1]}, answer{Status: "completed", Text: feedback}},
		{"final", looping, answer{Status: "completed", Text: feedback}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.policy + map[bool]string{false: "/json", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				up := fake.New(func(string, int, []byte) fake.Reply { return tt.rep })
				defer up.Close()
				c := client(testProxy(t, up, tt.policy, nil).URL, 0)
				if !stream {
					r, err := c.Responses.New(context.Background(), params)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tt.want, answerOf(r)); diff != "" {
						t.Errorf("(-want +got):\n%s", diff)
					}
					return
				}
				final, acc, err := readStream(t, c.Responses.NewStreaming(context.Background(), params))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, final); diff != "" {
					t.Errorf("response.completed (-want +got):\n%s", diff)
				}
				want := tt.want
				want.Status = "response.completed"
				if diff := cmp.Diff(want, acc); diff != "" {
					t.Errorf("accumulator (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestResponsesSDKError(t *testing.T) {
	up := fake.New(fake.Loop("search", `{"q":"go"}`))
	defer up.Close()
	for _, stream := range []bool{false, true} {
		var hits atomic.Int32
		// Two retries allowed: x-should-retry: false must stop them.
		c := client(testProxy(t, up, "error", &hits).URL, 2)
		var err error
		if stream {
			_, _, err = readStream(t, c.Responses.NewStreaming(context.Background(), params))
		} else {
			_, err = c.Responses.New(context.Background(), params)
		}
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("stream %v: error %T %v, want *openai.Error", stream, err, err)
		}
		if apiErr.StatusCode != 422 || apiErr.Code != "REPEATED_TOOL_CALL" || apiErr.Message != feedback || apiErr.Type != "invalid_request_error" {
			t.Errorf("stream %v: %d %q %q %q", stream, apiErr.StatusCode, apiErr.Code, apiErr.Message, apiErr.Type)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("stream %v: %d requests, want 1 (no retry)", stream, n)
		}
	}
	if up.Count() != 0 {
		t.Errorf("the upstream was called %d times", up.Count())
	}
}

func TestResponsesSDKErrorEvent(t *testing.T) {
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "Searching again.", Calls: []fake.Call{{ID: "call_1", Name: "search", Args: `{"q":"go"}`}}}
	})
	defer up.Close()
	for _, policy := range []string{"fail", "event"} {
		var hits atomic.Int32
		c := client(testProxy(t, up, policy, &hits).URL, 2)
		st := c.Responses.NewStreaming(context.Background(), params)
		var text strings.Builder
		var types []string
		for st.Next() {
			ev := st.Current()
			types = append(types, ev.Type)
			if ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta)
			}
		}
		var se *ssestream.StreamError
		if err := st.Err(); !errors.As(err, &se) || !strings.Contains(se.Message, "REPEATED_TOOL_CALL") || !strings.Contains(se.Message, "answer with what you have") {
			t.Errorf("%s: error %T %v, want an *ssestream.StreamError", policy, err, err)
		}
		var typed responses.ResponseErrorEvent
		if se != nil {
			if err := json.Unmarshal(se.Event.Data, &typed); err != nil || typed.Code != "REPEATED_TOOL_CALL" || typed.Message != feedback {
				t.Errorf("%s: the typed error event: %v %+v", policy, err, typed)
			}
		}
		wantText := map[string]string{"fail": "Searching again.", "event": ""}[policy]
		if text.String() != wantText || len(types) > 0 && types[len(types)-1] == "response.completed" {
			t.Errorf("%s: text %q, events %v", policy, text.String(), types)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("%s: %d requests, want 1", policy, n)
		}
	}
}
