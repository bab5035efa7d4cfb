package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopguard/loopguard/proxy/internal/fake"
)

// syncBuffer is a bytes.Buffer for a log written while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestShutdownFinishesStreamsInFlight stops the proxy (as SIGTERM does)
// while a stream is in flight: the stream is sent to its end, then run
// returns 0.
func TestShutdownFinishesStreamsInFlight(t *testing.T) {
	up := fake.New(func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "one two three four five six", Gap: 100 * time.Millisecond}
	})
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	code := make(chan int, 1)
	var log syncBuffer
	go func() {
		code <- run(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", up.URL}, &log, func(a string) { addr <- a })
	}()
	base := "http://" + <-addr
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	cancel() // SIGTERM
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the stream in flight broke off: %v", err)
	}
	if !bytes.Contains(rest, []byte("data: [DONE]")) {
		t.Errorf("the stream in flight did not reach its end:\n%s", rest)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("run returned %d, want 0; log:\n%s", c, log.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after the shutdown")
	}
	if !strings.Contains(log.String(), "shutting down") {
		t.Errorf("the log does not say it shut down:\n%s", log.String())
	}
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-upstream is required"},
		{[]string{"-upstream", "api.openai.com"}, "want an absolute http or https URL"},
		{[]string{"-upstream", "http://x", "-policy", "halt"}, "-policy"},
		{[]string{"-upstream", "http://x", "-recovery", "never"}, "-recovery"},
		{[]string{"-upstream", "http://x", "-log-format", "xml"}, "-log-format"},
		{[]string{"-upstream", "http://x", "-config", "/nonexistent.json"}, "-config"},
		{[]string{"-upstream", "http://x", "-ttl", "-1s"}, "-ttl"},
		{[]string{"-upstream", "http://x", "extra"}, "unexpected argument"},
		{[]string{"-upstream", "http://x", "-listen", "256.0.0.1:99999"}, "-listen"},
	} {
		var stderr bytes.Buffer
		if c := run(context.Background(), tc.args, &stderr, nil); c != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, c)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not say %q", tc.args, stderr.String(), tc.want)
		}
	}
}
