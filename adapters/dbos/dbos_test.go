package dbos_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/google/go-cmp/cmp"

	lgdbos "github.com/loopguard/loopguard/adapters/dbos"
	"github.com/loopguard/loopguard/adapters/dbos/internal/pgtest"
	"github.com/loopguard/loopguard/guard"
)

// The feedback of the third identical search, as the repeat rule words it.
const refusedSearch = "That call was not run: it would have been the 3rd call in a row to `Search` with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know."

// The environment of a worker process: the test binary run again with
// workerEnv set runs one DBOS worker instead of the tests (see TestMain).
const (
	workerEnv   = "LOOPGUARD_DBOS_WORKER" // "start" starts the workflow, "recover" waits for it
	urlEnv      = "LOOPGUARD_DBOS_URL"
	workflowEnv = "LOOPGUARD_DBOS_WORKFLOW"
	ledgerEnv   = "LOOPGUARD_DBOS_LEDGER"
	hangEnv     = "LOOPGUARD_DBOS_HANG"
	configEnv   = "LOOPGUARD_DBOS_CONFIG"
	scriptEnv   = "LOOPGUARD_DBOS_SCRIPT"
)

// appName is the DBOS application of the tests.
const appName = "loopguard-test"

func TestMain(m *testing.M) {
	if mode := os.Getenv(workerEnv); mode != "" {
		os.Exit(worker(mode))
	}
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// logger writes DBOS's errors to standard error.
func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// worker is a worker process: it launches DBOS with the agent, starts the
// workflow (mode "start") or lets DBOS recover it (mode "recover"), waits
// for its result and prints it.
func worker(mode string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	lg, err := lgdbos.New(lgdbos.Options{Config: []byte(os.Getenv(configEnv))})
	if err != nil {
		return fail(err)
	}
	app := &App{Guard: lg, Ledger: os.Getenv(ledgerEnv), Hang: os.Getenv(hangEnv)}
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{AppName: appName,
		DatabaseURL: os.Getenv(urlEnv), Logger: logger()})
	if err != nil {
		return fail(err)
	}
	dbos.RegisterWorkflow(ctx, app.Agent, dbos.WithWorkflowName("Agent"))
	if err := dbos.Launch(ctx); err != nil {
		return fail(err)
	}
	defer dbos.Shutdown(ctx, 5*time.Second)
	id := os.Getenv(workflowEnv)
	var h dbos.WorkflowHandle[Result]
	if mode == "start" {
		h, err = dbos.RunWorkflow(ctx, app.Agent, Input{Task: "find it", Script: os.Getenv(scriptEnv)}, dbos.WithWorkflowID(id))
	} else {
		h, err = dbos.RetrieveWorkflow[Result](ctx, id)
	}
	if err != nil {
		return fail(err)
	}
	res, err := h.GetResult()
	if err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(res)
	fmt.Printf("RESULT %s\n", b)
	return 0
}

var databases atomic.Int64

// database returns the URL of a database of the test's own on the shared
// PostgreSQL server (DBOS creates it on first use): each test's workflows
// are out of reach of the others' recovery.
func database(t *testing.T) string {
	t.Helper()
	s := pgtest.Shared(t)
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	return s.URL(fmt.Sprintf("lg_%d_%.40s", databases.Add(1), name))
}

// launch launches DBOS on url in this process with the agent of app
// registered, and the workflows that register registers, and shuts it down
// when the test ends.
func launch(t *testing.T, url string, app *App, register ...func(dbos.Context)) dbos.Context {
	t.Helper()
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{AppName: appName, DatabaseURL: url, Logger: logger()})
	if err != nil {
		t.Fatal(err)
	}
	dbos.RegisterWorkflow(ctx, app.Agent, dbos.WithWorkflowName("Agent"))
	for _, r := range register {
		r(ctx)
	}
	if err := dbos.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbos.Shutdown(ctx, 5*time.Second) })
	return ctx
}

// newApp returns an app whose guard has options o.
func newApp(t *testing.T, o lgdbos.Options) *App {
	t.Helper()
	lg, err := lgdbos.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &App{Guard: lg}
}

// stepNames returns the names of the steps recorded for a workflow, in
// order, failing the test unless their IDs are 0, 1, 2...
func stepNames(t *testing.T, c dbos.Client, id string) []string {
	t.Helper()
	steps, err := dbos.GetWorkflowSteps(c, id)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, s := range steps {
		if s.StepID != i {
			t.Errorf("step %d has ID %d: a step is missing or recorded twice", i, s.StepID)
		}
		names = append(names, s.StepName)
	}
	return names
}

// The steps that the stubborn agent records: the options, two searches,
// five model calls, and the stop that takes the place of the sixth.
var stubbornSteps = []string{lgdbos.StepOptions, "Chat", "Search", "Chat", "Search", "Chat", "Chat", "Chat", lgdbos.StepStop}

// stubbornResult is the result of the stubborn agent: its third search is
// refused, and so are the two after it, and the refusal rule stops the run
// at the sixth model call: five steps checked, two calls recorded.
var stubbornResult = Result{
	Stops:    []string{"REPEATED_REFUSAL"},
	Refusals: []string{refusedSearch, refusedSearch, refusedSearch},
	Outputs:  []string{"results for loop guard", "results for loop guard", refusedSearch, refusedSearch, refusedSearch},
	Steps:    5, Calls: 2,
}

// TestAgent runs the agent on a real PostgreSQL: the stubborn model's third
// search is refused and never runs, the refusal rule stops the run; the
// learner's answer ends it normally, with End's check recorded, and its
// failed fetch is a failed call. The recorded steps are the durable units
// of the run, in order.
func TestAgent(t *testing.T) {
	url := database(t)
	for _, tc := range []struct {
		script string
		want   Result
		steps  []string
		ran    []string
	}{{
		script: "stubborn", want: stubbornResult, steps: stubbornSteps,
		ran: []string{"Chat 0", "Search 0", "Chat 1", "Search 1", "Chat 2", "Chat 3", "Chat 4"},
	}, {
		script: "learner",
		want: Result{Answer: "Done.", Outputs: []string{"results for a", "results for b", "Error: fetch http://x: connection refused"},
			Steps: 3, Calls: 3, Failed: 1},
		steps: []string{lgdbos.StepOptions, "Chat", "Search", "Chat", "Search", "Fetch", "Chat", lgdbos.StepEnd},
		ran:   []string{"Chat 0", "Search 0", "Chat 1", "Search 1", "Fetch 1", "Chat 2"},
	}} {
		t.Run(tc.script, func(t *testing.T) {
			var told []guard.Event
			app := newApp(t, lgdbos.Options{Observer: func(_ context.Context, e guard.Event) { told = append(told, e) }})
			ctx := launch(t, url, app)
			id := "agent-" + tc.script
			h, err := dbos.RunWorkflow(ctx, app.Agent, Input{Script: tc.script}, dbos.WithWorkflowID(id))
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.GetResult()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.steps, stepNames(t, ctx, id)); diff != "" {
				t.Errorf("recorded steps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ran, app.ran()); diff != "" {
				t.Errorf("bodies run (-want +got):\n%s", diff)
			}
			// One event per check and per preflighted call, each told once.
			if want := got.Steps + got.Calls + len(got.Refusals); len(told) != want {
				t.Errorf("the observer was told of %d events, want %d: %v", len(told), want, told)
			}
		})
	}
}

// TestFork rebuilds the guard from the recorded steps: a fork of the
// stubborn run from its seventh step (the fourth model call) reads the
// first six back, runs the rest, and comes to the same refusals and the
// same stop, with the observer told only of the events of the steps that
// ran again.
func TestFork(t *testing.T) {
	url := database(t)
	var told []guard.Event
	app := newApp(t, lgdbos.Options{Observer: func(_ context.Context, e guard.Event) { told = append(told, e) }})
	ctx := launch(t, url, app)
	h, err := dbos.RunWorkflow(ctx, app.Agent, Input{Script: "stubborn"}, dbos.WithWorkflowID("original"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.GetResult(); err != nil {
		t.Fatal(err)
	}
	before, ran := len(told), len(app.ran())
	const start = 6 // the step "Chat" of turn 3
	fh, err := dbos.ForkWorkflow[Result](ctx, dbos.ForkWorkflowInput{OriginalWorkflowID: "original", ForkedWorkflowID: "fork", StartStep: start})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fh.GetResult()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stubbornResult, got); diff != "" {
		t.Errorf("the fork's result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(stubbornSteps, stepNames(t, ctx, "fork")); diff != "" {
		t.Errorf("the fork's steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Chat 3", "Chat 4"}, app.ran()[ran:]); diff != "" {
		t.Errorf("the fork ran (-want +got):\n%s", diff)
	}
	// Each of steps 6, 7 and 8 tells two events: the refusal of the
	// search before it, and the check it follows.
	if n := len(told) - before; n != 6 {
		t.Errorf("the fork told the observer of %d events, want 6: %v", n, told[before:])
	}
}

// callsWorkflow makes calls that Model and Tool refuse before any step,
// and a tool call whose options name its step otherwise, and returns the
// errors' texts.
func callsWorkflow(lg *lgdbos.Guard) func(dbos.Context, string) ([]string, error) {
	return func(ctx dbos.Context, _ string) ([]string, error) {
		run, err := lg.Start(ctx)
		if err != nil {
			return nil, err
		}
		text := func(err error) string {
			if err == nil {
				return "<nil>"
			}
			return err.Error()
		}
		ok := func(context.Context) (string, error) { return "ok", nil }
		var got []string
		_, err = lgdbos.Tool(run, "", "x", ok)
		got = append(got, text(err))
		_, err = lgdbos.Tool[string](run, "Search", "x", nil)
		got = append(got, text(err))
		_, err = lgdbos.Model(run, "", step, func(context.Context) (Reply, error) { return Reply{}, nil })
		got = append(got, text(err))
		_, err = lgdbos.Model(run, "Chat", nil, func(context.Context) (Reply, error) { return Reply{}, nil })
		got = append(got, text(err))
		out, err := lgdbos.Tool(run, "Search", "x", ok, dbos.WithStepName("Other"), dbos.WithStepMaxRetries(1))
		got = append(got, out+" "+text(err))
		return got, nil
	}
}

// TestCalls: Model and Tool refuse an empty name and a nil function before
// any step; a step is named by its call, whatever its options say.
func TestCalls(t *testing.T) {
	url := database(t)
	app := newApp(t, lgdbos.Options{})
	wf := callsWorkflow(app.Guard)
	ctx := launch(t, url, app, func(ctx dbos.Context) { dbos.RegisterWorkflow(ctx, wf, dbos.WithWorkflowName("Calls")) })
	h, err := dbos.RunWorkflow(ctx, wf, "", dbos.WithWorkflowID("calls"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.GetResult()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"loopguard: Tool: empty step name",
		`loopguard: Tool "Search": nil step function`,
		"loopguard: Model: empty step name",
		`loopguard: Model "Chat": nil read or step function`,
		"ok <nil>",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{lgdbos.StepOptions, "Search"}, stepNames(t, ctx, "calls")); diff != "" {
		t.Errorf("recorded steps (-want +got):\n%s", diff)
	}
}

// TestNew: an options document that does not build is refused, naming the
// field.
func TestNew(t *testing.T) {
	_, err := lgdbos.New(lgdbos.Options{Config: []byte(`{"repeatedToolCall": {"threshold": "x"}}`)})
	var oe *guard.OptionError
	if !errors.As(err, &oe) || oe.Field != "Config" || !errors.Is(err, guard.ErrInvalidOption) {
		t.Errorf("New with a bad Config: %v, want a *guard.OptionError on Config", err)
	}
	if _, err := lgdbos.New(lgdbos.Options{}); err != nil {
		t.Errorf("New with no options: %v", err)
	}
}

// TestCrash kills a worker (SIGKILL) in the middle of the stubborn run, in
// a tool step or in a model step, starts another worker, which recovers the
// workflow, and checks that the run ends as a run without a crash does:
// each recorded step once, the guard counting each once (five steps, two
// calls: the search that was running when the worker died ran again and
// counts once), the third search refused as before the crash. Each body
// runs once, but the one that was killed, which runs again. A worker that
// restarts with other options keeps the recorded ones: under them, the
// third search would run.
func TestCrash(t *testing.T) {
	url := database(t)
	for i, tc := range []struct {
		name, hang, config string
		first, second      []string // the bodies each worker runs
	}{{
		name: "in a tool step", hang: "Search 1",
		first:  []string{"Chat 0", "Search 0", "Chat 1", "Search 1"},
		second: []string{"Search 1", "Chat 2", "Chat 3", "Chat 4"},
	}, {
		name: "in a model step", hang: "Chat 3",
		first:  []string{"Chat 0", "Search 0", "Chat 1", "Search 1", "Chat 2", "Chat 3"},
		second: []string{"Chat 3", "Chat 4"},
	}, {
		name: "restarted with other options", hang: "Search 1", config: `{"repeatedToolCall": {"threshold": 5}}`,
		first:  []string{"Chat 0", "Search 0", "Chat 1", "Search 1"},
		second: []string{"Search 1", "Chat 2", "Chat 3", "Chat 4"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("crash-%d", i)
			ledger := filepath.Join(t.TempDir(), "ledger")
			env := []string{urlEnv + "=" + url, workflowEnv + "=" + id, ledgerEnv + "=" + ledger, scriptEnv + "=stubborn"}

			first := startWorker(t, append(env, workerEnv+"=start", hangEnv+"="+tc.hang))
			first.waitFor(t, "HANG")
			first.kill(t)

			second := startWorker(t, append(env, workerEnv+"=recover", configEnv+"="+tc.config))
			line := second.waitFor(t, "RESULT ")
			second.wait(t)
			var got Result
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "RESULT ")), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(stubbornResult, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}

			c, err := dbos.NewClient(context.Background(), dbos.ClientConfig{DatabaseURL: url, AppName: appName, Logger: logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer dbos.Shutdown(c, 5*time.Second)
			if diff := cmp.Diff(stubbornSteps, stepNames(t, c, id)); diff != "" {
				t.Errorf("recorded steps (-want +got):\n%s", diff)
			}
			byPID := map[int][]string{}
			b, err := os.ReadFile(ledger)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines(string(b)) {
				var pid int
				var name string
				var turn int
				if _, err := fmt.Sscanf(l, "%d %s %d", &pid, &name, &turn); err != nil {
					t.Fatalf("ledger line %q: %v", l, err)
				}
				byPID[pid] = append(byPID[pid], fmt.Sprintf("%s %d", name, turn))
			}
			if diff := cmp.Diff(tc.first, byPID[first.pid]); diff != "" {
				t.Errorf("the killed worker ran (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.second, byPID[second.pid]); diff != "" {
				t.Errorf("the second worker ran (-want +got):\n%s", diff)
			}
			if len(byPID) != 2 {
				t.Errorf("bodies ran in %d processes, want 2", len(byPID))
			}
		})
	}
}

// A workerProc is a worker process of a test.
type workerProc struct {
	cmd    *exec.Cmd
	pid    int
	lines  chan string
	stderr *lockedWriter
	done   chan struct{}
}

// startWorker runs the test binary as a worker with env added to this
// process's environment.
func startWorker(t *testing.T, env []string) *workerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	w := &workerProc{cmd: cmd, lines: make(chan string, 16), stderr: &lockedWriter{b: new(strings.Builder)}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.pid = cmd.Process.Pid
	go func() {
		defer close(w.done)
		s := bufio.NewScanner(out)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			w.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.done
		_ = cmd.Wait()
	})
	return w
}

// waitFor returns the first line of the worker's output that begins with
// prefix, failing the test if none comes within 30 seconds.
func (w *workerProc) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-w.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-w.done:
			select {
			case l := <-w.lines:
				if strings.HasPrefix(l, prefix) {
					return l
				}
				continue
			default:
			}
			_ = w.cmd.Wait()
			t.Fatalf("worker %d exited before printing %q: %v\n%s", w.pid, prefix, w.cmd.ProcessState, w.stderr.String())
		case <-deadline:
			t.Fatalf("worker %d printed no %q within 30s\n%s", w.pid, prefix, w.stderr.String())
		}
	}
}

// kill kills the worker with SIGKILL, as a crash would, and waits for it.
func (w *workerProc) kill(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-w.done
	_ = w.cmd.Wait()
}

// wait waits for the worker to exit, failing the test unless it exits 0.
func (w *workerProc) wait(t *testing.T) {
	t.Helper()
	<-w.done
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("worker %d: %v\n%s", w.pid, err, w.stderr.String())
	}
}

// lockedWriter is a strings.Builder that the process's copier writes to
// while the test may read it.
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
