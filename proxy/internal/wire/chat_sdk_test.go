package wire_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// The tests below point openai-go at servers that answer with what
// package wire writes, and read the answers as an agent's framework does.

func sdkClient(url string, retries int) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(retries))
}

func sdkParams(includeUsage bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
	if includeUsage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

// sdkTurn asks srv once, streamed or not, and returns the turn the SDK read.
func sdkTurn(t *testing.T, url string, stream, includeUsage bool) turn {
	t.Helper()
	c := sdkClient(url, 0)
	ctx := context.Background()
	if !stream {
		r, err := c.Chat.Completions.New(ctx, sdkParams(includeUsage))
		if err != nil {
			t.Fatal(err)
		}
		return turnOf(*r)
	}
	s := c.Chat.Completions.NewStreaming(ctx, sdkParams(includeUsage))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			t.Fatalf("the accumulator refused a chunk: %s", s.Current().RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return turnOf(acc.ChatCompletion)
}

// judge is a stand-in for the proxy: it parses the request, forwards it to
// the fake server, and refuses the calls at refused (all of them when
// refused is nil and all is set) with text.
type judge struct {
	up      *fake.Server
	refused []int
	text    string
	fail    bool // a stream ends with Fail
}

func (j *judge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	api := wire.Chat{}
	req, err := api.ParseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := http.Post(j.up.URL+r.URL.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	if !req.Stream {
		whole, _ := io.ReadAll(res.Body)
		if _, err := api.ParseResponse(whole); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if out, err := api.Rewrite(whole, j.refused, j.text); err == nil {
			whole = out
		}
		w.Write(whole)
		return
	}
	f := w.(http.Flusher)
	s := api.NewStream(&req)
	ev := wire.NewEvents(res.Body, 1<<20)
	for {
		e, err := ev.Next()
		if len(e) > 0 {
			if out := s.Event(e); out != nil {
				w.Write(out)
				f.Flush()
			}
		}
		if err != nil {
			break
		}
	}
	if j.fail {
		w.Write(s.Fail("REPEATED_TOOL_CALL", j.text))
		return
	}
	w.Write(s.End(j.refused, j.text))
}

func TestChatSDKFake(t *testing.T) {
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "two calls", Calls: []fake.Call{callA, callB}, InputTokens: 7, OutputTokens: 3}
	})
	defer up.Close()
	want := turn{Content: "two calls", Calls: []string{`call_a search {"q":"go"}`, `call_b read {"path":"/etc/hosts","n":1}`}, Finish: "tool_calls", Usage: [3]int64{7, 3, 10}}
	for _, stream := range []bool{false, true} {
		if diff := cmp.Diff(want, sdkTurn(t, up.URL, stream, true)); diff != "" {
			t.Errorf("stream %v (-want +got):\n%s", stream, diff)
		}
	}
}

func TestChatSDKRewrite(t *testing.T) {
	usage := [3]int64{7, 3, 10}
	tests := []struct {
		name    string
		refused []int
		text    string
		want    turn
	}{
		{"all refused: a final answer", []int{0, 1}, "stopped: a loop",
			turn{Content: "two calls\n\nstopped: a loop", Finish: "stop", Usage: usage}},
		{"first refused", []int{0}, "search refused",
			turn{Content: "two calls\n\nsearch refused", Calls: []string{`call_b read {"path":"/etc/hosts","n":1}`}, Finish: "tool_calls", Usage: usage}},
		{"second refused", []int{1}, "read refused",
			turn{Content: "two calls\n\nread refused", Calls: []string{`call_a search {"q":"go"}`}, Finish: "tool_calls", Usage: usage}},
		{"none refused", nil, "",
			turn{Content: "two calls", Calls: []string{`call_a search {"q":"go"}`, `call_b read {"path":"/etc/hosts","n":1}`}, Finish: "tool_calls", Usage: usage}},
	}
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "two calls", Calls: []fake.Call{callA, callB}, InputTokens: 7, OutputTokens: 3}
	})
	defer up.Close()
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			srv := httptest.NewServer(&judge{up: up, refused: tt.refused, text: tt.text})
			got := sdkTurn(t, srv.URL, stream, true)
			srv.Close()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s, stream %v (-want +got):\n%s", tt.name, stream, diff)
			}
		}
	}
}

func TestChatSDKFinal(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, includeUsage := range []bool{false, true} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				req, err := wire.Chat{}.ParseRequest(body)
				if err != nil || req.Stream != stream || req.IncludeUsage != includeUsage {
					t.Errorf("ParseRequest of the SDK's request = %+v, %v", req, err)
				}
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.Write(wire.Chat{}.Final(&req, "stopped: the run repeats search", stream))
			}))
			got := sdkTurn(t, srv.URL, stream, includeUsage)
			srv.Close()
			want := turn{Content: "stopped: the run repeats search", Finish: "stop"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stream %v, include_usage %v (-want +got):\n%s", stream, includeUsage, diff)
			}
		}
	}
}

// TestChatSDKError: Error with status 422 and x-should-retry: false is an
// *openai.Error that the SDK does not retry. The header is what stops a
// retry of a status the SDK would retry (500), as the control case shows.
func TestChatSDKError(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		noRetry  bool
		requests int64
	}{
		{"422, x-should-retry false", 422, true, 1},
		{"500, x-should-retry false", 500, true, 1},
		{"500 without the header is retried", 500, false, 2},
	}
	for _, tt := range tests {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Content-Type", "application/json")
			if tt.noRetry {
				w.Header().Set("x-should-retry", "false")
			}
			w.WriteHeader(tt.status)
			w.Write(wire.Chat{}.Error(tt.status, "REPEATED_TOOL_CALL", "the run repeats search"))
		}))
		c := sdkClient(srv.URL, 1)
		_, err := c.Chat.Completions.New(context.Background(), sdkParams(false))
		srv.Close()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: error %v (%T), want *openai.Error", tt.name, err, err)
		}
		got := [4]string{apiErr.Code, apiErr.Message, apiErr.Type, itoa(apiErr.StatusCode)}
		wantType := "invalid_request_error"
		if tt.status >= 500 {
			wantType = "server_error"
		}
		if diff := cmp.Diff([4]string{"REPEATED_TOOL_CALL", "the run repeats search", wantType, itoa(tt.status)}, got); diff != "" {
			t.Errorf("%s: the SDK's error (-want +got):\n%s", tt.name, diff)
		}
		if n.Load() != tt.requests {
			t.Errorf("%s: %d requests, want %d", tt.name, n.Load(), tt.requests)
		}
	}
}

// TestChatSDKErrorEvent: a stream that Fail ends is the SDK's stream
// error, after the text that went on.
func TestChatSDKErrorEvent(t *testing.T) {
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "looking", Calls: []fake.Call{callA}}
	})
	defer up.Close()
	srv := httptest.NewServer(&judge{up: up, fail: true, text: "the run repeats search"})
	defer srv.Close()
	c := sdkClient(srv.URL, 0)
	s := c.Chat.Completions.NewStreaming(context.Background(), sdkParams(false))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	var se *ssestream.StreamError
	if !errors.As(s.Err(), &se) {
		t.Fatalf("stream error %v (%T), want *ssestream.StreamError", s.Err(), s.Err())
	}
	if !strings.Contains(se.Message, "REPEATED_TOOL_CALL") || !strings.Contains(se.Message, "the run repeats search") {
		t.Errorf("stream error %q does not hold the code and the message", se.Message)
	}
	if got := turnOf(acc.ChatCompletion); got.Content != "looking" || got.Calls != nil {
		t.Errorf("before the error the SDK read %+v, want the text only", got)
	}
}
