package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// run is the guard of one workflow run and the step it is in. Only the
// workflow's coroutines and its query handler touch it, one at a time (see
// the package documentation), so it has no lock.
type run struct {
	o      *Options
	wctx   workflow.Context // the root context: clock, log, replay state
	config []byte           // the options document, as the run recorded it

	g      *guard.Guard
	limits map[string]json.RawMessage // limit changes made by signals

	// The open step: the reply of the last model call, and the turn of
	// the tool calls made since.
	turn   *guard.Turn
	reply  workflow.Future
	read   ModelFunc
	calls  []pendingCall
	nextID int

	stop    *guard.StopError // the stop that holds the run, if any
	pending []Control        // controls waiting for the open step to end
}

// pendingCall is an allowed tool call of the open step.
type pendingCall struct {
	id     string
	future workflow.Future
}

// carried is what crosses continue-as-new in the header.
type carried struct {
	Snapshot json.RawMessage            `json:"snapshot"`
	Limits   map[string]json.RawMessage `json:"limits,omitempty"`
}

// runKey is the workflow context key of the run.
type runKey struct{}

// Stopped returns the stop that holds the run of the workflow that ctx
// belongs to, or nil when the run may go on (or ctx is not a guarded
// workflow's). A workflow that waits for an operator's control signal can
// wait for it to become nil:
//
//	workflow.Await(ctx, func() bool { return lgtemporal.Stopped(ctx) == nil })
func Stopped(ctx workflow.Context) *guard.StopError {
	if r, ok := ctx.Value(runKey{}).(*run); ok {
		return r.stop
	}
	return nil
}

// workflowInbound guards one workflow run.
type workflowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *run
}

// Init puts the run's outbound interceptor in the chain.
func (i *workflowInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&workflowOutbound{
		WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound},
		r:                               i.r,
	})
}

// ExecuteWorkflow builds or restores the guard, registers the query and the
// signal, runs the workflow and checks its last step.
func (i *workflowInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	if err := i.r.start(ctx); err != nil {
		return nil, err
	}
	ctx = workflow.WithValue(ctx, runKey{}, i.r)
	result, err := i.Next.ExecuteWorkflow(ctx, in)
	i.r.endStep(ctx)
	return result, err
}

// workflowOutbound sees the activities the workflow schedules and its
// continue-as-new.
type workflowOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	r *run
}

// ExecuteActivity guards a model or tool activity.
func (o *workflowOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return o.r.activity(ctx, activityType, args, o.Next.ExecuteActivity)
}

// ExecuteLocalActivity guards a model or tool local activity.
func (o *workflowOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return o.r.activity(ctx, activityType, args, o.Next.ExecuteLocalActivity)
}

// NewContinueAsNewError checks the open step and puts the guard in the new
// run's header; a stop comes back instead of the continue-as-new error.
func (o *workflowOutbound) NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error {
	if err := o.r.carry(ctx); err != nil {
		return err
	}
	return o.Next.NewContinueAsNewError(ctx, wfn, args...)
}

// NewContinueAsNewErrorWithOptions is NewContinueAsNewError with options.
func (o *workflowOutbound) NewContinueAsNewErrorWithOptions(ctx workflow.Context, options workflow.ContinueAsNewErrorOptions, wfn any, args ...any) error {
	if err := o.r.carry(ctx); err != nil {
		return err
	}
	return o.Next.NewContinueAsNewErrorWithOptions(ctx, options, wfn, args...)
}

// start builds the guard, from the header's snapshot when the run continues
// an earlier one, and registers the query and the control signal.
func (r *run) start(ctx workflow.Context) error {
	r.wctx = ctx
	// The options document is recorded in the history (a side-effect
	// marker), so that a replay builds the guard the run was built with,
	// whatever the worker's options are by then: a new deployment changes
	// the guard of new runs, never the decisions of a running one.
	r.config = r.o.Config
	var doc string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return string(r.o.Config) }).Get(&doc); err != nil {
		r.warn("loopguard: the recorded options are unreadable; using the worker's", err)
	} else if _, err := build(r.o.Registry, []byte(doc), nil); err != nil {
		r.warn("loopguard: the recorded options do not build; using the worker's", err)
	} else {
		r.config = []byte(doc)
	}
	var c carried
	if p := interceptor.WorkflowHeader(ctx)[HeaderSnapshot]; p != nil {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &c); err != nil {
			r.warn("loopguard: the carried guard is unreadable; starting afresh", err)
			c = carried{}
		}
	}
	r.limits = c.Limits
	g, err := r.newGuard(c.Snapshot)
	if err != nil && (c.Snapshot != nil || c.Limits != nil) {
		r.warn("loopguard: the carried guard does not restore under this worker's options; starting afresh", err)
		r.limits = nil
		g, err = r.newGuard(nil)
	}
	if err != nil {
		return err
	}
	r.g = g
	if err := workflow.SetQueryHandler(ctx, QuerySummary, func() (guard.Summary, error) {
		return r.g.Summary(context.Background())
	}); err != nil {
		return err
	}
	workflow.Go(ctx, r.receiveControls)
	return nil
}

// newGuard builds a guard from the options document with the run's limit
// changes, restored from snapshot when it is not nil.
func (r *run) newGuard(snapshot []byte) (*guard.Guard, error) {
	cfg, err := r.runConfig()
	if err != nil {
		return nil, err
	}
	if r.o.Observer != nil {
		cfg.Observer = r.observe
	}
	cfg.Feedback = r.o.Feedback
	if len(snapshot) == 0 || string(snapshot) == "null" {
		return guard.New(cfg)
	}
	// The worker's limits may have changed since the snapshot was taken
	// (a new deployment, or a signal): they apply from now on.
	cfg.AllowLimitChanges = true
	// A rule that a newer release adds to the defaults starts fresh on a
	// workflow saved before the worker was upgraded.
	cfg.AllowNewRules = true
	return guard.Restore(snapshot, cfg)
}

// runConfig builds the configuration of the options document with the
// run's limit changes, on the workflow's clock.
func (r *run) runConfig() (guard.Config, error) {
	doc, err := r.document()
	if err != nil {
		return guard.Config{}, err
	}
	return build(r.o.Registry, doc, r.now)
}

// document returns the options document with the run's limit changes.
func (r *run) document() ([]byte, error) {
	if len(r.limits) == 0 {
		return r.config, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(r.config, &doc); err != nil {
		return nil, err
	}
	if doc == nil {
		doc = make(map[string]json.RawMessage)
	}
	maps.Copy(doc, r.limits)
	return json.Marshal(doc) // keys sorted: the same bytes on every replay
}

// now is the guard's clock: the workflow's.
func (r *run) now() time.Time { return workflow.Now(r.wctx) }

// observe tells the user's observer of an event, unless the workflow is
// replaying (it was told then already).
func (r *run) observe(ctx context.Context, e guard.Event) {
	if !workflow.IsReplaying(r.wctx) {
		r.o.Observer(ctx, e)
	}
}

// warn writes a warning to the workflow's log (which is quiet on replay).
func (r *run) warn(msg string, err error) {
	workflow.GetLogger(r.wctx).Warn(msg, "error", err)
}

// activity guards one activity: a model call ends the open step, a tool
// call is preflighted in it.
func (r *run) activity(ctx workflow.Context, activityType string, args []any,
	next func(workflow.Context, string, ...any) workflow.Future) workflow.Future {
	switch r.o.kind(activityType) {
	case kindModel:
		if r.stop == nil {
			r.endStep(ctx)
		}
		if r.stop != nil {
			return failed(ctx, stopError(r.stop))
		}
		f := next(ctx, activityType, args...)
		r.reply, r.read = f, r.o.Models[activityType]
		return f
	case kindTool:
		if r.stop != nil {
			return failed(ctx, stopError(r.stop))
		}
		if r.turn == nil {
			r.turn = r.g.Begin()
		}
		id := strconv.Itoa(r.nextID)
		r.nextID++
		ds, err := r.turn.Preflight(context.Background(), guard.ToolCall{ID: id, Name: activityType, Args: callArgs(args)})
		if err != nil {
			return failed(ctx, err) // the turn ended: never, the run owns it
		}
		if !ds[0].Allow {
			d := ds[0]
			return failed(ctx, sdktemporal.NewNonRetryableApplicationError(
				(&guard.RefusedError{Decision: d}).Error(), ErrorTypeRefused, &guard.RefusedError{Decision: d}))
		}
		f := next(ctx, activityType, args...)
		r.calls = append(r.calls, pendingCall{id: id, future: f})
		return f
	}
	return next(ctx, activityType, args...)
}

// endStep checks the open step, if any: the last model reply, if it has
// come, and the tool calls made since, with the outcomes of those that have
// finished. A model call that failed, and made no tool call, is no step.
// Waiting controls are applied afterwards.
func (r *run) endStep(ctx workflow.Context) {
	defer r.applyControls()
	if r.turn == nil && r.reply == nil {
		return
	}
	turn, reply, read, calls := r.turn, r.reply, r.read, r.calls
	r.turn, r.reply, r.read, r.calls = nil, nil, nil, nil

	var step guard.Step
	replied := false
	if reply != nil && reply.IsReady() && reply.Get(ctx, nil) == nil {
		s, err := read(func(p any) error { return reply.Get(ctx, p) })
		if err != nil {
			r.warn("loopguard: the model's reply is unreadable; the step is checked without it", err)
		} else {
			step, replied = s, true
		}
	}
	if turn == nil {
		if !replied {
			return
		}
		turn = r.g.Begin()
	}
	for _, c := range calls {
		if c.future.IsReady() { // a call still running did not finish in this step
			result, err := outcome(ctx, c.future)
			turn.SetResult(c.id, result, err)
		}
	}
	_, err := turn.End(context.Background(), step)
	var stop *guard.StopError
	if errors.As(err, &stop) {
		r.stop = stop
	}
}

// carry checks the open step before the workflow continues as new and puts
// the guard in the new run's header. A stop is returned, as the error the
// workflow returns instead of continuing.
func (r *run) carry(ctx workflow.Context) error {
	if r.stop == nil {
		r.endStep(ctx)
	}
	if r.stop != nil {
		return stopError(r.stop)
	}
	snap, err := r.g.Snapshot(context.Background(), guard.SnapshotOptions{}) // no previews
	if err != nil {
		return fmt.Errorf("loopguard: snapshot for continue-as-new: %w", err)
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(carried{Snapshot: snap, Limits: r.limits})
	if err != nil {
		return fmt.Errorf("loopguard: snapshot for continue-as-new: %w", err)
	}
	h := interceptor.WorkflowHeader(ctx)
	if h == nil { // the SDK gives NewContinueAsNewError a header: never
		return errors.New("loopguard: continue-as-new without a header: the guard cannot be carried")
	}
	h[HeaderSnapshot] = p
	return nil
}

// receiveControls applies the control signals, each when no step is open.
func (r *run) receiveControls(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalControl)
	for {
		var c Control
		ch.Receive(ctx, &c) // a payload that does not decode is logged by the SDK and left zero
		r.pending = append(r.pending, c)
		if r.turn == nil && r.reply == nil {
			r.applyControls()
		}
	}
}

// applyControls applies the waiting controls in order.
func (r *run) applyControls() {
	for _, c := range r.pending {
		if c.Reset {
			_ = r.g.Reset(context.Background()) // in memory: never fails
			r.stop = nil
		}
		if len(c.Limits) > 0 {
			r.changeLimits(c.Limits)
		}
	}
	r.pending = nil
}

// changeLimits replaces top-level keys of the options document and restores
// the run under the new options; a change that is not only of limits is
// refused. A stop by a limit is lifted.
func (r *run) changeLimits(raw json.RawMessage) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
		r.warn("loopguard: control: limits must be a JSON object of options", err)
		return
	}
	old := r.limits
	r.limits = maps.Clone(old)
	if r.limits == nil {
		r.limits = make(map[string]json.RawMessage)
	}
	maps.Copy(r.limits, m)
	snap, err := r.g.Snapshot(context.Background(), guard.SnapshotOptions{Previews: true}) // in memory only
	lift := false
	if err == nil && r.stop != nil {
		lift, err = r.lifts(r.stop.Verdict.Detector)
	}
	if err == nil && lift {
		// The guard keeps the run's first stop through its snapshot and
		// refuses every call after it: the stop lifted, the restored run
		// must not hold it.
		snap, err = withoutFirstStop(snap)
	}
	var g *guard.Guard
	if err == nil {
		g, err = r.newGuard(snap)
	}
	if err != nil {
		r.limits = old
		r.warn("loopguard: control: the limits were not changed", err)
		return
	}
	r.g = g
	if lift {
		r.stop = nil
	}
}

// lifts reports whether the run's options document with its limit changes
// has a rule of this name whose options are only limits, so that a change
// to them lifts its stop.
func (r *run) lifts(name string) (bool, error) {
	cfg, err := r.runConfig()
	if err != nil {
		return false, err
	}
	for _, rl := range cfg.Rules {
		if l, ok := rl.(rule.Limiter); ok && l.OnlyLimits() && rl.Name() == name {
			return true, nil
		}
	}
	return false, nil
}

// withoutFirstStop returns a snapshot without the run's first stop.
func withoutFirstStop(snap []byte) ([]byte, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(snap, &env); err != nil {
		return nil, err
	}
	delete(env, "firstStop")
	return json.Marshal(env)
}

// failed returns a future that has failed with err.
func failed(ctx workflow.Context, err error) workflow.Future {
	f, s := workflow.NewFuture(ctx)
	s.SetError(err)
	return f
}

// stopError is the error of a stopped run's activities.
func stopError(s *guard.StopError) error {
	return sdktemporal.NewNonRetryableApplicationError("loopguard stopped the run", ErrorTypeStop, s)
}

// callArgs returns an activity's arguments as a call's: none is null, one is
// itself, several are a list.
func callArgs(args []any) any {
	switch len(args) {
	case 0:
		return nil
	case 1:
		return args[0]
	}
	return args
}

// outcome reads a finished tool activity: its result decoded as JSON-like
// data (or, when it does not decode so, the text of its payload), or its
// failure.
func outcome(ctx workflow.Context, f workflow.Future) (any, error) {
	if err := f.Get(ctx, nil); err != nil {
		return nil, failure(err)
	}
	var v any
	if f.Get(ctx, &v) == nil {
		return v, nil
	}
	var raw converter.RawValue
	if f.Get(ctx, &raw) == nil && raw.Payload() != nil {
		return string(raw.Payload().GetData()), nil
	}
	return nil, nil
}

// failure returns the part of an activity's error that says how it failed,
// without the IDs of events and attempts, so that the same failure reads the
// same every time.
func failure(err error) error {
	var app *sdktemporal.ApplicationError
	if errors.As(err, &app) {
		return errors.New(app.Message())
	}
	var timeout *sdktemporal.TimeoutError
	if errors.As(err, &timeout) {
		return errors.New("timeout: " + timeout.TimeoutType().String())
	}
	var canceled *sdktemporal.CanceledError
	if errors.As(err, &canceled) {
		return errors.New("canceled")
	}
	var act *sdktemporal.ActivityError
	if errors.As(err, &act) && errors.Unwrap(act) != nil {
		return errors.New(errors.Unwrap(act).Error())
	}
	return err
}
