package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy"
	"github.com/loopguard/loopguard/proxy/internal/fake"
)

// The tests of this file run the real npm clients (openai, @anthropic-ai/sdk)
// and a real agent framework (@openai/agents) through the proxy, in front of
// the fake model, with the scripts and pinned versions of proxy/node. Each
// script is an agent's unchanged loop; the model keeps asking for the same
// search call; the guard refuses the third, and the run must end there, as
// the policy says, with no help from the agent.

// nodeTimeout bounds one script's run, so that a client that hangs on the
// proxy's answer fails the test at once rather than at go test's timeout.
const nodeTimeout = 60 * time.Second

// nodeReady returns the path of node, or skips (fails under CI=true) when
// Node.js or proxy/node's installed packages are missing.
func nodeReady(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: .ci/run installs Node.js and runs npm ci in proxy/node)", what)
		}
		t.Skipf("skipped: %s (install Node.js 20+, then run npm ci in proxy/node)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk", "@openai/agents", "zod"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			missing("proxy/node/node_modules/" + pkg + " is missing")
		}
	}
	return node
}

// nodeError is the error that ended a script's run, as the client or the
// framework threw it.
type nodeError struct {
	Name        string  `json:"name"`
	Status      *int    `json:"status"`
	Message     string  `json:"message"`
	ShouldRetry *string `json:"shouldRetry"`
}

// nodeReport is the JSON line a script of proxy/node prints.
type nodeReport struct {
	Requests     int        `json:"requests"`
	HTTPRequests int        `json:"httpRequests"`
	ToolRuns     int        `json:"toolRuns"`
	Text         *string    `json:"text"`
	Finish       *string    `json:"finish"`
	Error        *nodeError `json:"error"`
}

// runNode runs node script in proxy/node with env added and returns its
// report.
func runNode(t *testing.T, node, script string, env ...string) nodeReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("node %s did not end within %v (stdout %q, stderr %q)", script, nodeTimeout, stdout.String(), stderr.String())
	}
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var r nodeReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("node %s printed %q, not its report: %v\nstderr: %s", script, stdout.String(), err, stderr.String())
	}
	if testing.Verbose() {
		t.Logf("node %s %s: %s", script, strings.Join(env, " "), lines[len(lines)-1])
	}
	return r
}

// loopFeedback is the safe feedback of the guard that the proxy runs
// (detector.Defaults) when a run's model asks a third time for the call
// that fake.Loop("search", `{"q":"x"}`) makes: what the client must end with.
func loopFeedback(t *testing.T) string {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q":"x"}`), Result: "no results"}
	for range 2 {
		if _, err := g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{call}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := g.Preflight(ctx, guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allow || d.Code != "REPEATED_TOOL_CALL" {
		t.Fatalf("the guard's preflight of the third call: %+v, want a REPEATED_TOOL_CALL refusal", d)
	}
	if !strings.Contains(d.Feedback, "`search`") || !strings.Contains(d.Feedback, "not run") {
		t.Fatalf("feedback %q: want it to name the tool and say the call was not run", d.Feedback)
	}
	return d.Feedback
}

// nodeCase is one client's loop: a script of proxy/node, the API it speaks,
// and the finish reason of a normal final answer in that API.
type nodeCase struct {
	name, script, api, finish string
}

var nodeCases = []nodeCase{
	{"openai/chat", "chat.mjs", "chat", "stop"},
	{"openai/responses", "responses.mjs", "responses", "completed"},
	{"anthropic/messages", "messages.mjs", "messages", "end_turn"},
	{"agents/responses", "agents.mjs", "responses", "completed"},
	{"agents/chat", "agents.mjs", "chat", "stop"},
}

// waitingForResponses says whether the Responses wire format is still the
// stand-in (internal/wire/zz_stub.go): its subtests are skipped until it
// lands.
func waitingForResponses(t *testing.T, c nodeCase) {
	t.Helper()
	if c.api == "responses" {
		if _, err := os.Stat(filepath.Join("internal", "wire", "zz_stub.go")); err == nil {
			t.Skip("waiting for wire.Responses")
		}
	}
}

func nodeEnv(base, api string, stream bool) []string {
	s := "0"
	if stream {
		s = "1"
	}
	return []string{"LOOPGUARD_BASE_URL=" + base, "LOOPGUARD_API=" + api, "LOOPGUARD_STREAM=" + s}
}

func streamName(stream bool) string {
	if stream {
		return "stream"
	}
	return "json"
}

// TestNodeClientsEndPolicy: under End the third identical call is refused,
// and the client's loop (the framework's run) ends there with the safe
// feedback as a normal final answer: the text, no tool calls, the API's
// finish reason of a finished turn. The tool ran twice; the model got
// three requests.
func TestNodeClientsEndPolicy(t *testing.T) {
	node := nodeReady(t)
	fb := loopFeedback(t)
	for _, c := range nodeCases {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				waitingForResponses(t, c)
				up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.End})
				got := runNode(t, node, c.script, nodeEnv(srv.URL, c.api, stream)...)
				want := nodeReport{Requests: 3, HTTPRequests: 3, ToolRuns: 2, Text: &fb, Finish: &c.finish}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("the run (-want +got):\n%s", diff)
				}
				if up.Count() != 3 {
					t.Errorf("the model got %d requests, want 3", up.Count())
				}
			})
		}
	}
}

// TestNodeClientsErrorPolicy: under Error the third identical call is
// refused with an error that the client (the framework) throws at once,
// without a retry, carrying the feedback. A JSON answer is an HTTP 422
// with x-should-retry: false (the SDKs' UnprocessableEntityError); a
// stream's headers went out with status 200 before its calls could be
// judged, so there the API's error event ends it (the SDKs' APIError,
// with no status).
func TestNodeClientsErrorPolicy(t *testing.T) {
	node := nodeReady(t)
	fb := loopFeedback(t)
	status, no := http.StatusUnprocessableEntity, "false"
	for _, c := range nodeCases {
		for _, stream := range []bool{false, true} {
			t.Run(c.name+"/"+streamName(stream), func(t *testing.T) {
				waitingForResponses(t, c)
				up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.Error})
				got := runNode(t, node, c.script, nodeEnv(srv.URL, c.api, stream)...)
				if got.Error == nil {
					t.Fatalf("the run ended without an error: %+v", got)
				}
				if !strings.Contains(got.Error.Message, fb) {
					t.Errorf("error message %q does not carry the feedback %q", got.Error.Message, fb)
				}
				wantErr := &nodeError{Name: "UnprocessableEntityError", Status: &status, ShouldRetry: &no}
				if stream {
					wantErr = &nodeError{Name: "APIError"}
				}
				wantErr.Message = got.Error.Message // checked above
				want := nodeReport{Requests: 3, HTTPRequests: 3, ToolRuns: 2, Error: wantErr}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("the run (-want +got):\n%s", diff)
				}
				if up.Count() != 3 {
					t.Errorf("the model got %d requests, want 3 (no retry)", up.Count())
				}
			})
		}
	}
}
