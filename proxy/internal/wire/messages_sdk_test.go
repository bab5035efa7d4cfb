package wire

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

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/proxy/internal/fake"
)

// These tests put the real Anthropic Go SDK in front of what Messages
// writes, to show that it reads it as the API's own.

func msgSDK(url string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-ant-test"))
}

var msgParams = anthropic.MessageNewParams{
	Model:     "claude-sonnet-4-5",
	MaxTokens: 1024,
	Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("list /"))},
}

// msgTurn is what an agent reads of a message: its stop reason and blocks.
type msgTurn struct {
	ID     string
	Stop   string
	Blocks []string // "text: …" or "tool_use id name input"
}

func asMsgTurn(m *anthropic.Message) msgTurn {
	t := msgTurn{ID: m.ID, Stop: string(m.StopReason)}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			t.Blocks = append(t.Blocks, "text: "+b.Text)
		case "tool_use":
			t.Blocks = append(t.Blocks, "tool_use "+b.ID+" "+b.Name+" "+string(b.Input))
		default:
			t.Blocks = append(t.Blocks, b.Type)
		}
	}
	return t
}

// msgRoundTrip runs one request, streamed or not, and returns the message.
func msgRoundTrip(t *testing.T, url string, stream bool) (*anthropic.Message, error) {
	t.Helper()
	client := msgSDK(url)
	ctx := context.Background()
	if !stream {
		return client.Messages.New(ctx, msgParams)
	}
	s := client.Messages.NewStreaming(ctx, msgParams)
	defer s.Close()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &m, nil
}

func TestMessagesSDKFinal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := Messages{}.ParseRequest(body)
		if err != nil {
			t.Errorf("ParseRequest of the SDK's request: %v", err)
		}
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write(Messages{}.Final(&req, "Stopped: the same call again.", req.Stream))
	}))
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		m, err := msgRoundTrip(t, srv.URL, stream)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		got := asMsgTurn(m)
		if !strings.HasPrefix(got.ID, "msg_lg") {
			t.Errorf("stream %v: id %q", stream, got.ID)
		}
		want := msgTurn{ID: got.ID, Stop: "end_turn", Blocks: []string{"text: Stopped: the same call again."}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stream %v: (-want +got):\n%s", stream, diff)
		}
		if m.Model != "claude-sonnet-4-5" {
			t.Errorf("stream %v: model %q", stream, m.Model)
		}
	}
}

// msgFilter is a proxy in front of upstream that refuses the calls
// refused gives and adds text, with Rewrite and Stream as the proxy uses
// them.
func msgFilter(t *testing.T, upstream string, refused func(Output) []int, text string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := Messages{}.ParseRequest(body)
		if err != nil {
			t.Errorf("ParseRequest: %v", err)
		}
		res, err := http.Post(upstream+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Errorf("upstream: %v", err)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		if !req.Stream {
			up, _ := io.ReadAll(res.Body)
			out, err := Messages{}.ParseResponse(up)
			if err != nil {
				t.Errorf("ParseResponse: %v", err)
			}
			rw, err := Messages{}.Rewrite(up, refused(out), text)
			if err != nil {
				t.Errorf("Rewrite: %v", err)
			}
			w.Write(rw)
			return
		}
		s := Messages{}.NewStream(&req)
		evs := NewEvents(res.Body, 1<<20)
		for {
			ev, err := evs.Next()
			if len(ev) > 0 {
				w.Write(s.Event(ev))
				w.(http.Flusher).Flush()
			}
			if err != nil {
				break
			}
		}
		w.Write(s.End(refused(s.Output()), text))
	}))
}

func TestMessagesSDKRewrite(t *testing.T) {
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "Let me look.", Calls: []fake.Call{
			{ID: "toolu_a", Name: "ls", Args: `{"dir":"/"}`},
			{ID: "toolu_b", Name: "pwd", Args: `{}`},
		}, InputTokens: 10, OutputTokens: 5}
	})
	defer up.Close()
	const fb = "loopguard: ls was called with the same arguments 3 times."
	tests := []struct {
		name    string
		refused []int
		want    msgTurn
	}{
		{"none", nil, msgTurn{Stop: "tool_use", Blocks: []string{"text: Let me look.", `tool_use toolu_a ls {"dir":"/"}`, "tool_use toolu_b pwd {}"}}},
		{"first", []int{0}, msgTurn{Stop: "tool_use", Blocks: []string{"text: Let me look.", "text: " + fb, "tool_use toolu_b pwd {}"}}},
		{"second", []int{1}, msgTurn{Stop: "tool_use", Blocks: []string{"text: Let me look.", "text: " + fb, `tool_use toolu_a ls {"dir":"/"}`}}},
		{"all", []int{0, 1}, msgTurn{Stop: "end_turn", Blocks: []string{"text: Let me look.", "text: " + fb}}},
	}
	for _, tt := range tests {
		text := fb
		if tt.refused == nil {
			text = ""
		}
		srv := msgFilter(t, up.URL, func(o Output) []int {
			if len(o.Calls) != 2 {
				t.Errorf("calls read: %+v", o.Calls)
			}
			return tt.refused
		}, text)
		for _, stream := range []bool{false, true} {
			m, err := msgRoundTrip(t, srv.URL, stream)
			if err != nil {
				t.Errorf("%s, stream %v: %v", tt.name, stream, err)
				continue
			}
			got := asMsgTurn(m)
			got.ID = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s, stream %v: (-want +got):\n%s", tt.name, stream, diff)
			}
		}
		srv.Close()
	}
}

func TestMessagesSDKError(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-should-retry", "false")
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write(Messages{}.Error(http.StatusUnprocessableEntity, "REPEATED_TOOL_CALL", "the run loops"))
	}))
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		n.Store(0)
		_, err := msgRoundTrip(t, srv.URL, stream)
		var ae *anthropic.Error
		if !errors.As(err, &ae) {
			t.Fatalf("stream %v: error %v (%T), want an *anthropic.Error", stream, err, err)
		}
		if ae.StatusCode != 422 || ae.Type() != "invalid_request_error" || ae.Message != "REPEATED_TOOL_CALL: the run loops" {
			t.Errorf("stream %v: status %d, type %q, message %q", stream, ae.StatusCode, ae.Type(), ae.Message)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("stream %v: %d requests, want 1 (no retry)", stream, got)
		}
	}
}

func TestMessagesSDKErrorEvent(t *testing.T) {
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "Let me look.", Calls: []fake.Call{{Name: "ls", Args: `{"dir":"/"}`}}}
	})
	defer up.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := Messages{}.ParseRequest(body)
		res, err := http.Post(up.URL+r.URL.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Errorf("upstream: %v", err)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		s := Messages{}.NewStream(&req)
		evs := NewEvents(res.Body, 1<<20)
		for {
			ev, err := evs.Next()
			w.Write(s.Event(ev))
			if err != nil {
				break
			}
		}
		w.Write(s.Fail("REPEATED_TOOL_CALL", "the run loops"))
	}))
	defer srv.Close()
	client := msgSDK(srv.URL)
	s := client.Messages.NewStreaming(context.Background(), msgParams)
	defer s.Close()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	var ae *anthropic.Error
	if !errors.As(s.Err(), &ae) {
		t.Fatalf("stream error %v (%T), want an *anthropic.Error", s.Err(), s.Err())
	}
	if ae.Type() != "invalid_request_error" || ae.Message != "REPEATED_TOOL_CALL: the run loops" {
		t.Errorf("type %q, message %q", ae.Type(), ae.Message)
	}
	// The text before the first call went out as it came.
	if diff := cmp.Diff([]string{"text: Let me look."}, asMsgTurn(&m).Blocks); diff != "" {
		t.Errorf("blocks before the error (-want +got):\n%s", diff)
	}
}
