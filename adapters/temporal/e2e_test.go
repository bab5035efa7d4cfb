package temporal_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	lgtemporal "github.com/loopguard/loopguard/adapters/temporal"
	"github.com/loopguard/loopguard/guard"
)

// AddressEnv names the environment variable that holds the address of a
// Temporal server (the CLI's dev server: temporal server start-dev) for the
// end-to-end tests. .ci/run builds the CLI and starts one.
const AddressEnv = "LOOPGUARD_TEMPORAL_ADDRESS"

var update = flag.Bool("update", false, "with a server, record testdata/stubborn.history.json again")

// server returns a client of the server named by AddressEnv. Without one,
// the test is skipped, loudly, or fails when CI=true.
func server(t *testing.T) client.Client {
	t.Helper()
	addr := os.Getenv(AddressEnv)
	if addr == "" {
		msg := fmt.Sprintf("SKIPPING the end-to-end test: no Temporal server (set %s, e.g. to the address of `temporal server start-dev`)", AddressEnv)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	c, err := client.Dial(client.Options{HostPort: addr, Identity: "loopguard-e2e", Logger: log.NewStructuredLogger(slog.New(testHandler{t}))})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// start runs a worker with the interceptor on a task queue of the test's
// own, and returns the queue.
func start(t *testing.T, c client.Client, acts *Activities) string {
	t.Helper()
	itc, err := lgtemporal.NewInterceptor(options())
	if err != nil {
		t.Fatal(err)
	}
	queue := fmt.Sprintf("loopguard-%s-%d", t.Name(), time.Now().UnixNano())
	w := worker.New(c, queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{itc}})
	w.RegisterWorkflow(Agent)
	w.RegisterActivity(acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return queue
}

// TestEndToEnd runs the agent on a real server: the stubborn model's third
// search is refused and never scheduled, the refusal rule stops the run,
// the query answers with the summary, and the recorded history replays
// with the interceptor. With -update, the history becomes the one that
// TestReplay replays.
func TestEndToEnd(t *testing.T) {
	c := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acts := &Activities{Script: stubborn}
	queue := start(t, c, acts)
	id := "loopguard-e2e-" + fmt.Sprint(time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, Agent, Input{})
	if err != nil {
		t.Fatal(err)
	}
	var got Result
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	want := Result{Stops: []string{"REPEATED_REFUSAL"}, Refusals: []string{refusedSearch, refusedSearch, refusedSearch}, Runs: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if n := acts.ran()["Search"]; n != 2 {
		t.Errorf("Search ran %d times, want 2", n)
	}
	v, err := c.QueryWorkflow(ctx, id, run.GetRunID(), lgtemporal.QuerySummary)
	if err != nil {
		t.Fatal(err)
	}
	var s guard.Summary
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	if s.Steps != 5 || s.ToolCalls != 2 {
		t.Errorf("summary: %d steps, %d calls; want 5 and 2", s.Steps, s.ToolCalls)
	}

	hist := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, id, run.GetRunID(), false, 0)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	replay(t, hist, options())
	if *update {
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(historyFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEndToEndContinueAsNew: on a real server, the guard crosses
// continue-as-new in the header: the search ran twice in the first run and
// is refused in the second.
func TestEndToEndContinueAsNew(t *testing.T) {
	c := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acts := &Activities{Script: stubborn}
	queue := start(t, c, acts)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "loopguard-e2e-can-" + fmt.Sprint(time.Now().UnixNano()),
		TaskQueue: queue}, Agent, Input{ContinueEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got Result
	if err := run.Get(ctx, &got); err != nil { // Get follows the new runs
		t.Fatal(err)
	}
	if got.Runs < 2 || len(got.Refusals) == 0 || acts.ran()["Search"] != 2 {
		t.Errorf("result %+v with Search run %d times: want a later run to refuse the third search", got, acts.ran()["Search"])
	}
}

// historyFile is the recorded history of TestEndToEnd's workflow.
var historyFile = filepath.Join("testdata", "stubborn.history.json")

// replay replays a history with an interceptor of options o, which must raise no
// non-determinism error and tell its observer nothing; and without it,
// which must fail, since without the guard the third search would be
// scheduled: the proof that the history holds the guard's decisions.
func replay(t *testing.T, hist *historypb.History, o lgtemporal.Options) {
	t.Helper()
	told := 0
	o.Observer = func(context.Context, guard.Event) { told++ }
	itc, err := lgtemporal.NewInterceptor(o)
	if err != nil {
		t.Fatal(err)
	}
	logger := log.NewStructuredLogger(slog.New(testHandler{t}))
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: []interceptor.WorkerInterceptor{itc}})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflow(Agent)
	if err := r.ReplayWorkflowHistory(logger, hist); err != nil {
		t.Errorf("replay with the interceptor: %v", err)
	}
	if told != 0 {
		t.Errorf("the observer was told of %d events during the replay, want none", told)
	}

	bare := worker.NewWorkflowReplayer()
	bare.RegisterWorkflow(Agent)
	err = bare.ReplayWorkflowHistory(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), hist)
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") { // the SDK's code for non-determinism
		t.Errorf("replay without the interceptor: %v, want a non-determinism error", err)
	}
}

// TestReplay replays the recorded history of TestEndToEnd (a run on the
// CLI's dev server) with the interceptor.
func TestReplay(t *testing.T) {
	f, err := os.Open(historyFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Events) < 20 {
		t.Fatalf("%d events in %s, want the whole run", len(hist.Events), historyFile)
	}
	replay(t, hist, options())

	// A worker whose options changed since (a new deployment) replays the
	// run with the options the run recorded: with a threshold of 5, the
	// third search would run, and the replay would break.
	o := options()
	o.Config = []byte(`{"repeatedToolCall": {"threshold": 5}}`)
	replay(t, hist, o)
}
