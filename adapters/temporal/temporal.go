// Package temporal guards an agent loop that runs as a Temporal workflow
// (go.temporal.io/sdk): model calls and tool calls are activities, the loop
// is the workflow, and a worker interceptor puts a loopguard guard between
// them.
//
//	itc, err := lgtemporal.NewInterceptor(lgtemporal.Options{
//		Models: map[string]lgtemporal.ModelFunc{"Chat": lgtemporal.Model(lgopenai.StepFromChatCompletion)},
//	})
//	if err != nil {
//		return err
//	}
//	w := worker.New(c, "agents", worker.Options{Interceptors: []interceptor.WorkerInterceptor{itc}})
//
// The workflow itself changes in nothing but what it does with two errors.
//
// # Steps
//
// Each activity of a model type ([Options.Models]) ends the step before it:
// the model's previous reply (read by the type's [ModelFunc]: text, finish
// reason, usage) with the tool calls the workflow made since. The guard
// checks that step before the model activity is scheduled. The last step is
// checked when the workflow returns, and before it continues as new.
//
// Every activity of a tool type ([Options.Tools]) is preflighted as a call of
// the current step (a [guard.Turn]), with the activity type as the tool's
// name and its arguments (one argument as it is, several as a list). A
// refused call is not scheduled: its future fails at once with a
// non-retryable *temporal.ApplicationError of type [ErrorTypeRefused], whose
// message is the guard's feedback (safe to hand to the model as the tool's
// answer: it never quotes arguments) and whose cause is a
// [*guard.RefusedError]. A call that is scheduled is recorded with its
// result, or with its error's message, once it has finished.
//
// When a step's verdict stops the run for a fault, the model activity is not
// scheduled and its future fails with a non-retryable
// *temporal.ApplicationError of type [ErrorTypeStop] whose cause is a
// [*guard.StopError]; so does every later model or tool activity, until a
// control signal lifts the stop. Find it with errors.As:
//
//	var stop *guard.StopError
//	if errors.As(err, &stop) {
//		return err // or wait for an operator: see Stopped
//	}
//
// A normal finish (the model answered) is not an error.
//
// # Determinism
//
// The guard lives in the workflow and is rebuilt by replay: its clock is
// workflow.Now (for the duration budget), outcomes are read from futures that
// are ready when a step ends (never waited for), and the observer is not told
// of anything while the workflow replays. The interceptor starts no
// goroutine; it starts one workflow coroutine (workflow.Go) that receives the
// control signal.
//
// guard.Guard and guard.Turn take a sync.Mutex in every method. That is safe
// in a workflow, and the adapter needs no lock of its own: the SDK runs one
// coroutine of a workflow at a time and switches only where a coroutine
// blocks on a workflow primitive (Future.Get, Channel.Receive, Await,
// Sleep), and no method of the guard or the turn blocks on one while it
// holds its lock (the observer is called after the lock is released). A
// coroutine therefore never waits for a lock that another coroutine holds,
// and the deadlock detector never fires. Query handlers run while every
// coroutine is blocked. TestParallelTools runs tool calls from several
// coroutines under the race detector.
//
// The options document is recorded in the history when a run starts (a
// side-effect marker), and a replay builds the guard from the recorded one:
// a deployment that changes Config changes the guard of new runs (and of
// runs that continue as new), never the decisions of a running one, which
// would break its replay. Models, Tools and the Registry's detectors are
// code: change them as you change workflow code (with workflow.GetVersion,
// or for new workflows only). For the same reason, add the interceptor to a
// worker for new workflows (Workflows, or a new workflow type): the history
// of a running workflow holds no marker, and may hold calls the guard would
// have refused.
//
// # Continue-as-new, query and signal
//
// Before the workflow continues as new, the guard's snapshot (redacted: no
// previews of arguments or text) and the limit changes made by signals are
// put in the new run's header under [HeaderSnapshot], and the new run
// restores them. The header is not passed through a payload codec. A
// snapshot that does not restore under the worker's options (its options
// document changed beyond limits) is dropped with a warning in the
// workflow's log, and the run starts afresh.
//
// The query [QuerySummary] returns the guard's [guard.Summary]. The signal
// [SignalControl] takes a [Control]: reset the run, or change the step and
// budget limits ([guard.Config.AllowLimitChanges]).
//
// The package name matches the SDK's temporal package; import one of them
// under another name:
//
//	import lgtemporal "github.com/loopguard/loopguard/adapters/temporal"
package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// The names the interceptor gives to the workflow's query, signal, header
// and errors.
const (
	// QuerySummary is the query that returns the guard's guard.Summary.
	QuerySummary = "loopguard.summary"
	// SignalControl is the signal that takes a Control.
	SignalControl = "loopguard.control"
	// HeaderSnapshot is the header that carries the guard across
	// continue-as-new.
	HeaderSnapshot = "loopguard-snapshot"
	// ErrorTypeRefused is the type of the application error of a refused
	// tool call.
	ErrorTypeRefused = "LoopguardRefused"
	// ErrorTypeStop is the type of the application error of a stopped
	// run.
	ErrorTypeStop = "LoopguardStop"
)

// Options configure the interceptor. Models is required; the zero value of
// every other field is useful.
type Options struct {
	// Models maps the activity type of each model call to the function
	// that reads its result. Each such activity ends a step.
	Models map[string]ModelFunc

	// Tools lists the activity types that are tool calls. Empty means
	// every activity type that is not in Models. Activities of other
	// types pass through untouched.
	Tools []string

	// Workflows lists the workflow types to guard. Empty means all.
	Workflows []string

	// Config is a loopguard options document, the format of
	// `loopguard --config` (see the README); empty means {}, the default
	// detectors.
	Config []byte

	// Registry builds the detectors from Config; nil means
	// detector.Standard(). Register detectors of your own on it.
	Registry *detector.Registry

	// Observer, when set, is the guard's observer
	// ([guard.Config.Observer]). It is not told of anything while the
	// workflow replays, so it sees each verdict and decision once. It
	// runs in the workflow: it must not block, and it gets
	// context.Background().
	Observer func(ctx context.Context, e guard.Event)

	// Feedback, when set, is the guard's [guard.Config.Feedback].
	Feedback func(v guard.Verdict, phase guard.Phase) string
}

// A ModelFunc reads the result of a model activity into the step it
// begins: the model's text, finish reason and usage. decode fills a pointer
// to a value of the activity's result type, as Future.Get does. The step's
// ToolCalls and Refused are ignored: the guard sees the calls the workflow
// makes. [Model] builds one from a function of the result.
type ModelFunc func(decode func(valuePtr any) error) (guard.Step, error)

// Model returns the ModelFunc of a model activity whose result is a T:
//
//	lgtemporal.Model(lgopenai.StepFromChatCompletion) // T is *openai.ChatCompletion
func Model[T any](step func(T) guard.Step) ModelFunc {
	return func(decode func(any) error) (guard.Step, error) {
		var r T
		if err := decode(&r); err != nil {
			return guard.Step{}, err
		}
		return step(r), nil
	}
}

// Control is the payload of the signal SignalControl. A step is open from a
// model activity to the next one: a control that arrives meanwhile is
// applied when the step ends (at the next model activity, after the step is
// checked); one that arrives while the run is stopped, at once.
type Control struct {
	// Reset forgets the run ([guard.Guard.Reset]) and lifts a stop.
	Reset bool `json:"reset,omitempty"`
	// Limits replaces top-level keys of the options document, such as
	// {"maxSteps": 300} or {"budget": {"maxCostUsd": 5}}. Only limits may
	// change ([guard.Config.AllowLimitChanges]): a change to another
	// rule's options is refused, with a warning in the workflow's log.
	// When the run was stopped by a limit, the change lifts the stop.
	// The changes are carried across continue-as-new.
	Limits json.RawMessage `json:"limits,omitempty"`
}

// NewInterceptor returns the worker interceptor for these options, or an
// error that names each invalid field (a *guard.OptionError for each, so
// errors.Is(err, guard.ErrInvalidOption) holds): no Models, a nil ModelFunc, an
// activity type that is both a model and a tool, an options document that
// does not build.
func NewInterceptor(o Options) (interceptor.WorkerInterceptor, error) {
	var errs []error
	bad := func(field string, err error) {
		errs = append(errs, &guard.OptionError{Field: field, Err: err})
	}
	if len(o.Models) == 0 {
		bad("Models", errors.New("no model activity type"))
	}
	for _, name := range slices.Sorted(maps.Keys(o.Models)) {
		if o.Models[name] == nil {
			bad("Models["+name+"]", errors.New("nil ModelFunc"))
		}
		if slices.Contains(o.Tools, name) {
			bad("Tools", fmt.Errorf("%q is also a model activity type", name))
		}
	}
	if o.Registry == nil {
		o.Registry = detector.Standard()
	}
	if len(o.Config) == 0 {
		o.Config = []byte("{}")
	}
	if _, err := build(o.Registry, o.Config, nil); err != nil {
		bad("Config", err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.Models = maps.Clone(o.Models)
	o.Tools = slices.Clone(o.Tools)
	o.Workflows = slices.Clone(o.Workflows)
	o.Config = slices.Clone(o.Config)
	return &workerInterceptor{o: o}, nil
}

// build reads an options document into the guard's configuration.
func build(r *detector.Registry, doc []byte, now func() time.Time) (guard.Config, error) {
	return r.Build(doc, detector.BuildOptions{Now: now})
}

// workerInterceptor guards the workflows of a worker.
type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	o Options
}

// InterceptWorkflow guards the workflow when its type is in o.Workflows (or
// that list is empty).
func (w *workerInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	if len(w.o.Workflows) > 0 && !slices.Contains(w.o.Workflows, workflow.GetInfo(ctx).WorkflowType.Name) {
		return next
	}
	return &workflowInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, r: &run{o: &w.o}}
}

// kind returns what an activity type is to the guard.
func (o *Options) kind(activityType string) activityKind {
	if _, ok := o.Models[activityType]; ok {
		return kindModel
	}
	if len(o.Tools) == 0 || slices.Contains(o.Tools, activityType) {
		return kindTool
	}
	return kindOther
}

type activityKind int

const (
	kindOther activityKind = iota
	kindModel
	kindTool
)
