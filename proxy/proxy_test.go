package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/loopguard/loopguard/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// start runs a fake model that answers by script behind a proxy with o
// (Upstream and, when zero, Config filled in) and returns both.
func start(t *testing.T, script fake.Script, o proxy.Options) (*fake.Server, *httptest.Server, *proxy.Proxy) {
	t.Helper()
	up := fake.New(script)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	o.Upstream = u
	if o.Config.Rules == nil {
		o.Config = guard.Config{Rules: detector.Defaults()}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return up, srv, p
}

// chatLoop is an agent's hand-written loop over the OpenAI client: it
// sends the history, runs every tool call the model asks for (each returns
// the same result), and ends at the first answer without tool calls. It
// returns that answer, the number of model requests it made, and the
// error that ended it.
func chatLoop(t *testing.T, base string, stream bool, opts ...option.RequestOption) (answer string, finish string, requests int, err error) {
	t.Helper()
	client := openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(base + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(2),
	}, opts...)...)
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You search."), openai.UserMessage("Find x.")},
	}
	ctx := context.Background()
	for requests < 10 {
		requests++
		var msg openai.ChatCompletionMessage
		if stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				return "", "", requests, err
			}
			if len(acc.Choices) == 0 {
				return "", "", requests, errors.New("no choices")
			}
			msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
		} else {
			resp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return "", "", requests, err
			}
			msg, finish = resp.Choices[0].Message, resp.Choices[0].FinishReason
		}
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			return msg.Content, finish, requests, nil
		}
		for _, c := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage("no results", c.ID))
		}
	}
	return "", "", requests, errors.New("the loop did not end")
}

func TestEndPolicyEndsTheLoopAtTheThirdIdenticalCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.End})
			answer, finish, n, err := chatLoop(t, srv.URL, stream)
			if err != nil {
				t.Fatal(err)
			}
			if n != 3 || up.Count() != 3 {
				t.Errorf("the loop made %d requests, the model got %d; want 3 and 3", n, up.Count())
			}
			if finish != "stop" {
				t.Errorf("finish reason %q, want stop", finish)
			}
			if !strings.Contains(answer, "search") || !strings.Contains(answer, "not run") {
				t.Errorf("answer %q: want the refusal's feedback (names the tool, says the call was not run)", answer)
			}
		})
	}
}

func TestErrorPolicyEndsTheLoopWithAnErrorThatIsNotRetried(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.Error})
			_, _, n, err := chatLoop(t, srv.URL, stream)
			if err == nil {
				t.Fatal("the loop ended without an error")
			}
			if n != 3 || up.Count() != 3 {
				t.Errorf("the loop made %d requests, the model got %d; want 3 and 3 (no retry)", n, up.Count())
			}
			var apiErr *openai.Error
			if !stream {
				if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity || apiErr.Code != "REPEATED_TOOL_CALL" {
					t.Errorf("error %v: want an *openai.Error with status 422 and code REPEATED_TOOL_CALL", err)
				}
			} else if !strings.Contains(err.Error(), "not run") {
				t.Errorf("stream error %q does not carry the refusal's feedback", err)
			}
		})
	}
}

// post sends one chat request with the given messages and headers and
// returns the response with its body read.
func post(t *testing.T, base string, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// history is a chat history of n identical search calls, each answered.
func history(n int, tail ...string) string {
	msgs := []string{`{"role":"system","content":"You search."}`, `{"role":"user","content":"Find x."}`}
	for i := range n {
		id := "call_" + string(rune('a'+i))
		msgs = append(msgs,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":"no results"}`)
	}
	msgs = append(msgs, tail...)
	return `{"model":"gpt-test","messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestObservePolicyForwardsAndReportsInHeaders(t *testing.T) {
	up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.Observe})
	var got []string
	for n := range 4 {
		resp, _ := post(t, srv.URL, history(n), nil)
		got = append(got, resp.Header.Get(proxy.VerdictHeader)+" "+resp.Header.Get(proxy.CodeHeader))
	}
	want := []string{"continue ", "continue ", "refused REPEATED_TOOL_CALL", "stop REPEATED_TOOL_CALL"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdict headers (-want +got):\n%s", diff)
	}
	if up.Count() != 4 {
		t.Errorf("the model got %d requests, want all 4", up.Count())
	}
}

func TestStoppedRunIsAnsweredWithoutTheUpstream(t *testing.T) {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	script := func(api string, n int, body []byte) fake.Reply {
		return fake.Reply{Calls: []fake.Call{{Name: "search", Args: `{"q":"` + string(rune('a'+n)) + `"}`}}}
	}
	up, srv, _ := start(t, script, proxy.Options{Config: cfg, Policy: proxy.End})
	answer, finish, n, err := chatLoop(t, srv.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	// Request 3 carries step 2, which reaches maxSteps: it is answered by
	// the proxy, and the model is not called for it.
	if n != 3 || up.Count() != 2 {
		t.Errorf("the loop made %d requests, the model got %d; want 3 and 2", n, up.Count())
	}
	if finish != "stop" || answer == "" {
		t.Errorf("answer %q, finish %q: want the stop's feedback with finish stop", answer, finish)
	}
}

func TestRecovery(t *testing.T) {
	stopped := history(3, `{"role":"assistant","content":"FEEDBACK"}`, `{"role":"user","content":"Try something else."}`)
	for _, tc := range []struct {
		recovery proxy.Recovery
		upstream int // requests the model gets after the stop
	}{
		{proxy.Resume, 1},
		{proxy.Stay, 0},
	} {
		t.Run(tc.recovery.String(), func(t *testing.T) {
			up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.End, Recovery: tc.recovery})
			resp, body := post(t, srv.URL, history(3), nil)
			if resp.Header.Get(proxy.VerdictHeader) != "stop" {
				t.Fatalf("verdict %q, want stop", resp.Header.Get(proxy.VerdictHeader))
			}
			var final struct {
				Choices []struct {
					Message struct{ Content string }
				}
			}
			if err := json.Unmarshal(body, &final); err != nil || len(final.Choices) == 0 {
				t.Fatalf("final answer %s: %v", body, err)
			}
			before := up.Count()
			// The agent sends the proxy's answer back, then the person writes.
			next := strings.Replace(stopped, "FEEDBACK", final.Choices[0].Message.Content, 1)
			resp, _ = post(t, srv.URL, next, nil)
			if got := up.Count() - before; got != tc.upstream {
				t.Errorf("the model got %d requests after the person's message, want %d (verdict %q)", got, tc.upstream, resp.Header.Get(proxy.VerdictHeader))
			}
		})
	}
}

func TestUnknownFieldsAndMalformedBodiesPassUntouched(t *testing.T) {
	up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{})
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"hi","x_vendor":{"a":[1,2]}}],"x_unknown":true,"temperature":0.25}`
	post(t, srv.URL, body, nil)
	if got := string(up.Requests()[0].Body); got != body {
		t.Errorf("the upstream got\n%s\nwant the body unchanged\n%s", got, body)
	}
	resp, _ := post(t, srv.URL, `{"model":`, nil)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(proxy.UnjudgedHeader) != "unreadable" {
		t.Errorf("malformed body: status %d, %s %q; want the upstream's 400, unreadable", resp.StatusCode, proxy.UnjudgedHeader, resp.Header.Get(proxy.UnjudgedHeader))
	}
}

func TestUpstreamErrorsPassAsTheyCame(t *testing.T) {
	const errBody = `{"error":{"message":"overloaded","type":"server_error"}}`
	script := func(string, int, []byte) fake.Reply { return fake.Reply{Status: 503, Body: errBody} }
	_, srv, _ := start(t, script, proxy.Options{})
	resp, body := post(t, srv.URL, history(0), nil)
	if resp.StatusCode != 503 || string(body) != errBody {
		t.Errorf("got %d %s, want 503 %s", resp.StatusCode, body, errBody)
	}
}

func TestBodyOverTheLimitPassesUnjudged(t *testing.T) {
	up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{MaxBody: 100})
	body := history(2)
	resp, _ := post(t, srv.URL, body, nil)
	if resp.Header.Get(proxy.UnjudgedHeader) != "too-large" {
		t.Errorf("%s %q, want too-large", proxy.UnjudgedHeader, resp.Header.Get(proxy.UnjudgedHeader))
	}
	if got := string(up.Requests()[0].Body); got != body {
		t.Errorf("the upstream got %d bytes, want the whole body (%d)", len(got), len(body))
	}
}

func TestHostileRunHeaderIsHashed(t *testing.T) {
	_, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{})
	for _, v := range []string{"a b", strings.Repeat("a", 129), "run\u00e9", "a\tb", "k\"}{", "<script>", "x;rm -rf", "%00"} {
		got := rawRunHeader(t, srv.URL, v, http.StatusOK)
		if !strings.HasPrefix(got, "run:h:") || len(got) != len("run:h:")+32 {
			t.Errorf("run header %q became %q, want run:h: and 32 hex digits", v, got)
		}
	}
	// A control character is refused by net/http itself, before the proxy.
	rawRunHeader(t, srv.URL, "x\x7f", http.StatusBadRequest)
	for _, v := range []string{"agent-7/session:42", "../../etc", "user@example.com"} {
		if got := rawRunHeader(t, srv.URL, v, http.StatusOK); got != "run:"+v {
			t.Errorf("the safe run name %q became %q", v, got)
		}
	}
}

// rawRunHeader sends a request whose run header is v, byte for byte (the
// Go client refuses to send some values), and returns the run the proxy
// answers with.
func rawRunHeader(t *testing.T, base, v string, status int) string {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := history(0)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		u.Host, proxy.RunHeader, v, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		t.Errorf("run header %q: status %d, want %d", v, resp.StatusCode, status)
	}
	return resp.Header.Get(proxy.RunHeader)
}

func TestDroppedStreamReachesTheClientBroken(t *testing.T) {
	script := func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "hello there, this is long", DropAfter: 2}
	}
	_, srv, _ := start(t, script, proxy.Options{})
	_, _, _, err := chatLoop(t, srv.URL, true, option.WithMaxRetries(0))
	if err == nil {
		t.Error("a stream the upstream broke off ended without an error")
	}
}

func TestClientThatLeavesMidStream(t *testing.T) {
	script := func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "a b c d e f g h", Gap: 50 * time.Millisecond}
	}
	_, srv, _ := start(t, script, proxy.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	// The proxy goes on serving.
	if resp, _ := post(t, srv.URL, history(0), nil); resp.StatusCode != 200 {
		t.Errorf("after a client left: status %d", resp.StatusCode)
	}
}

func TestTextReachesTheClientAsItArrives(t *testing.T) {
	script := func(string, int, []byte) fake.Reply {
		return fake.Reply{Text: "one two three", Gap: 300 * time.Millisecond}
	}
	_, srv, _ := start(t, script, proxy.Options{})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 250*time.Millisecond {
		t.Errorf("the first event took %v: it was held back (the upstream sends one every 300 ms)", d)
	}
	if !bytes.Contains(buf[:n], []byte("data:")) {
		t.Errorf("first read %q is not an event", buf[:n])
	}
}

func TestHealthReadinessAndMetrics(t *testing.T) {
	m, err := proxy.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, srv, p := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Metrics: m})
	for n := range 3 {
		post(t, srv.URL, history(n), nil)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/loopguard/healthz"); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if code, _ := get("/loopguard/readyz"); code != 200 {
		t.Errorf("readyz %d", code)
	}
	_, metrics := get("/loopguard/metrics")
	for _, want := range []string{
		`loopguard_proxy_requests_total{api="chat",outcome="judged"} 3`,
		`loopguard_proxy_refusals_total{api="chat",code="REPEATED_TOOL_CALL"} 1`,
		`loopguard_proxy_verdicts_total{api="chat",code="none"}`,
		`loopguard_proxy_upstream_seconds_count{api="chat"} 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	p.Drain()
	if code, _ := get("/loopguard/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz while draining: %d, want 503", code)
	}
}

func TestOptionsErrors(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, o := range []proxy.Options{
		{},
		{Upstream: &url.URL{Path: "/v1"}},
		{Upstream: &url.URL{Scheme: "ftp", Host: "x"}},
		{Upstream: u, Policy: 9},
		{Upstream: u, Recovery: 9},
		{Upstream: u, MaxRuns: -1},
		{Upstream: u, MaxBody: -1},
	} {
		if _, err := proxy.New(o); !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOption", o, err)
		}
	}
}

func TestStepLogIsReadByTheAudit(t *testing.T) {
	dir := t.TempDir()
	steps, err := proxy.NewStepLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Steps: steps})
	if _, _, _, err := chatLoop(t, srv.URL, false); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("step files %v, want one for the one run", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := trace.ReadSteps(f)
	if err != nil {
		t.Fatal(err)
	}
	// Two searches that ran, then the third, refused.
	if len(got) != 3 || len(got[0].ToolCalls) != 1 || len(got[1].ToolCalls) != 1 || len(got[2].Refused) != 1 {
		t.Errorf("steps %+v: want two calls that ran and one refused", got)
	}
	if err := steps.Err(); err != nil {
		t.Error(err)
	}
}
