// Package otel reports what a loopguard guard decides to OpenTelemetry
// (go.opentelemetry.io/otel): events through the Logs API, the status of the
// spans concerned, and metrics.
//
//	obs, err := lgotel.New(lgotel.Options{}) // the global meter and logger providers
//	if err != nil {
//		return err
//	}
//	g, err := guard.New(guard.Config{Rules: detector.Defaults(), Observer: obs.Observe})
//
// As the guard tells it of each verdict and decision, Observe emits an event,
// a log record whose event name is
//
//   - EventStop for a stop verdict (a fault, or the model's normal finish);
//   - EventRefusal for a refused call;
//   - EventWarning for each warning of a verdict. (A preflight decision
//     repeats the warnings that the last verdict gave; they are not
//     recorded again.)
//
// through the logger of Options.LoggerProvider, with the call's context, so
// that the record is correlated with the span in it. OpenTelemetry is
// deprecating the Span Event API for log-based events, but the bridge that
// copies such events back onto spans is still in development, so the same
// events are also added to the span in the context (one that is recording)
// as span events, unless Options.NoSpanEvents is set.
//
// Attributes follow the OpenTelemetry semantic conventions for generative AI
// (the semconv v1.41.0 package) where they have a name: gen_ai.tool.name
// (AttrToolName) for the tool a rule or a decision is about,
// gen_ai.tool.call.id (AttrToolCallID) for the call an event is about
// (guard.Event.CallID), error.type (AttrErrorType) for a stop that is a fault
// and for a refusal; loopguard.* otherwise (AttrReason, AttrCode,
// AttrDetector, AttrStep, ...). They hold names, IDs, codes and counts, never
// arguments, results or text: the verdict's Detail and Feedback, and the
// previews in its evidence, are left out.
//
// Spans, as the conventions ask of an operation that ends in an error:
//
//   - a stop that is a fault sets error.type (the stop's code) and the
//     status Error on the span in the context, the run's (invoke_agent);
//     the model's normal finish leaves the status alone;
//   - a refused call is a tool execution that failed: when the span in the
//     context is that call's own execute_tool span (an SDK span with
//     gen_ai.operation.name execute_tool and, if it has one, the call's
//     gen_ai.tool.call.id), it gets error.type, the status Error and the
//     call's gen_ai.tool.call.id; otherwise, the refused call having no span
//     of its own, Observe records one, "execute_tool {gen_ai.tool.name}", a
//     child of the span in the context, with those attributes, the
//     refusal's and the status Error.
//
// It records the metrics MetricStops, MetricRefusals and MetricWarnings
// (counters by reason and code) and MetricRunSteps (a histogram of the steps
// of a run, recorded at each stop verdict: the run ends there, by a fault or
// by the model's answer). A run that ends without a stop verdict (the loop
// gave up by itself) is not in the histogram.
//
// Observe is safe for concurrent use, and allocates nothing for a verdict
// that goes on without warnings (the common case).
//
// The package name matches OpenTelemetry's; import one of them under
// another name:
//
//	import lgotel "github.com/loopguard/loopguard/adapters/otel"
package otel

import (
	"context"
	"reflect"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	logglobal "go.opentelemetry.io/otel/log/global"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/loopguard/loopguard/guard"
)

// ScopeName is the instrumentation scope of the meter, the logger and the
// tracer of refused calls' spans.
const ScopeName = "github.com/loopguard/loopguard/adapters/otel"

// The names of the events (the event name of the log records, and the name
// of the span events).
const (
	EventStop    = "loopguard.stop"
	EventRefusal = "loopguard.refusal"
	EventWarning = "loopguard.warning"
)

// The names of the metrics.
const (
	MetricStops    = "loopguard.stops"
	MetricRefusals = "loopguard.refusals"
	MetricWarnings = "loopguard.warnings"
	MetricRunSteps = "loopguard.run.steps"
)

// The attribute keys. AttrToolName, AttrToolCallID and AttrErrorType are
// the semantic conventions' (semconv v1.41.0); the others are loopguard's
// own.
const (
	// AttrToolName is the tool a rule or a decision is about
	// (gen_ai.tool.name), when there is one: the repeated call's, the
	// capped tool's, the refused call's, the warning's.
	AttrToolName = semconv.GenAIToolNameKey
	// AttrToolCallID is the ID of the call an event is about
	// (gen_ai.tool.call.id): see guard.Event.CallID.
	AttrToolCallID = semconv.GenAIToolCallIDKey
	// AttrErrorType is the code of a stop that is a fault, or of a
	// refusal (error.type), such as "REPEATED_TOOL_CALL".
	AttrErrorType = semconv.ErrorTypeKey
	// AttrTools lists the tools of a cycle, for the oscillation rule.
	AttrTools = attribute.Key("loopguard.tools")
	// AttrReason is the verdict's reason, such as "repeated-tool-call".
	AttrReason = attribute.Key("loopguard.reason")
	// AttrCode is the verdict's or warning's code, such as
	// "REPEATED_TOOL_CALL".
	AttrCode = attribute.Key("loopguard.code")
	// AttrDetector is the name of the detector that spoke.
	AttrDetector = attribute.Key("loopguard.detector")
	// AttrFault is true for a stop that is a fault, false for the model's
	// normal finish (see guard.IsFault).
	AttrFault = attribute.Key("loopguard.fault")
	// AttrStep is the index of the step, from 0 (guard.Event.Step).
	AttrStep = attribute.Key("loopguard.step")
	// AttrMetric is what a warning measures, such as "totalTokens".
	AttrMetric = attribute.Key("loopguard.metric")
	// AttrValue and AttrLimit are a warning's value and the limit at
	// which its rule stops the run.
	AttrValue = attribute.Key("loopguard.value")
	AttrLimit = attribute.Key("loopguard.limit")
)

// maxName is the longest tool name, call ID, reason or code an attribute
// holds, in bytes: names come from the model.
const maxName = 256

// The severities of the events' log records.
const (
	severityFault   = log.SeverityError // a stop for a fault
	severityFinish  = log.SeverityInfo  // the model's normal finish
	severityRefusal = log.SeverityWarn
	severityWarning = log.SeverityWarn
)

// Options configure an Observer. The zero value uses the global meter and
// logger providers and adds span events too.
type Options struct {
	// MeterProvider provides the meter; nil means the global one
	// (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
	// LoggerProvider provides the logger of the events; nil means the
	// global one (go.opentelemetry.io/otel/log/global).
	LoggerProvider log.LoggerProvider
	// NoSpanEvents leaves out the span events: the events go out as log
	// records only, as OpenTelemetry's deprecation of span events has it.
	NoSpanEvents bool
	// StepBuckets are the bucket boundaries of MetricRunSteps; nil means
	// 1, 2, 5, 10, 20, 50, 100, 200 and 500.
	StepBuckets []float64
}

// An Observer turns a guard's events into log-based events, span status and
// metrics. Create it with [New]; pass its Observe method as
// [guard.Config.Observer]. One Observer may serve many guards.
type Observer struct {
	stops, refusals, warnings metric.Int64Counter
	steps                     metric.Int64Histogram
	logger                    log.Logger
	spanEvents                bool
}

// New returns an Observer whose instruments come from o's meter provider and
// whose logger from o's logger provider. The error is the meter's, if it
// could not create an instrument.
func New(o Options) (*Observer, error) {
	mp := o.MeterProvider
	if mp == nil {
		mp = global.GetMeterProvider()
	}
	lp := o.LoggerProvider
	if lp == nil {
		lp = logglobal.GetLoggerProvider()
	}
	buckets := o.StepBuckets
	if buckets == nil {
		buckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}
	}
	m := mp.Meter(ScopeName)
	obs := Observer{logger: lp.Logger(ScopeName), spanEvents: !o.NoSpanEvents}
	var err error
	if obs.stops, err = m.Int64Counter(MetricStops, metric.WithUnit("{stop}"),
		metric.WithDescription("Runs the guard stopped, or saw finish, by reason and code.")); err != nil {
		return nil, err
	}
	if obs.refusals, err = m.Int64Counter(MetricRefusals, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls the guard refused, by reason and code.")); err != nil {
		return nil, err
	}
	if obs.warnings, err = m.Int64Counter(MetricWarnings, metric.WithUnit("{warning}"),
		metric.WithDescription("Warnings the guard gave, by code and detector.")); err != nil {
		return nil, err
	}
	if obs.steps, err = m.Int64Histogram(MetricRunSteps, metric.WithUnit("{step}"),
		metric.WithDescription("Steps of a run, recorded when the guard stops it or it finishes."),
		metric.WithExplicitBucketBoundaries(buckets...)); err != nil {
		return nil, err
	}
	return &obs, nil
}

// Observe records one event of a guard. Its signature is that of
// [guard.Config.Observer].
func (o *Observer) Observe(ctx context.Context, e guard.Event) {
	v := &e.Verdict
	check := e.Phase == guard.PhaseCheck
	if !v.Stop && (len(v.Warnings) == 0 || !check) {
		return
	}
	span := trace.SpanFromContext(ctx)
	recording := span.IsRecording()
	if v.Stop {
		attrs := []attribute.KeyValue{
			AttrReason.String(clip(string(v.Reason))),
			AttrCode.String(clip(v.Code)),
		}
		name, severity := EventRefusal, severityRefusal
		fault := false
		if !check {
			o.refusals.Add(ctx, 1, metric.WithAttributes(attrs...))
		} else {
			fault = guard.IsFault(*v)
			name, severity = EventStop, severityFinish
			if fault {
				severity = severityFault
			}
			attrs = append(attrs, AttrFault.Bool(fault))
			o.stops.Add(ctx, 1, metric.WithAttributes(attrs...))
			o.steps.Record(ctx, int64(e.Step)+1)
		}
		logged := o.logger.Enabled(ctx, log.EnabledParameters{Severity: severity, EventName: name})
		if recording || logged {
			attrs = append(attrs, AttrDetector.String(clip(v.Detector)), AttrStep.Int(e.Step))
			attrs = appendTools(attrs, v.Evidence, e.Tool)
			if e.CallID != "" {
				attrs = append(attrs, AttrToolCallID.String(clip(e.CallID)))
			}
			if fault || !check {
				attrs = append(attrs, AttrErrorType.String(clip(v.Code)))
			}
			if logged {
				o.emit(ctx, name, severity, attrs)
			}
		}
		if recording {
			if o.spanEvents {
				span.AddEvent(name, trace.WithAttributes(attrs...))
			}
			switch {
			case fault:
				span.SetAttributes(AttrErrorType.String(clip(v.Code)))
				span.SetStatus(codes.Error, "loopguard stopped the run: "+clip(v.Code))
			case !check:
				refusalSpan(ctx, span, &e, attrs)
			}
		}
	}
	if !check {
		return
	}
	for i := range v.Warnings {
		w := &v.Warnings[i]
		o.warnings.Add(ctx, 1, metric.WithAttributes(AttrCode.String(clip(w.Code)), AttrDetector.String(clip(w.Detector))))
		logged := o.logger.Enabled(ctx, log.EnabledParameters{Severity: severityWarning, EventName: EventWarning})
		if !logged && !(recording && o.spanEvents) {
			continue
		}
		attrs := []attribute.KeyValue{
			AttrCode.String(clip(w.Code)), AttrDetector.String(clip(w.Detector)),
			AttrStep.Int(e.Step), AttrValue.Float64(w.Value), AttrLimit.Float64(w.Limit),
		}
		if w.Metric != "" {
			attrs = append(attrs, AttrMetric.String(clip(w.Metric)))
		}
		if w.Tool != "" {
			attrs = append(attrs, AttrToolName.String(clip(w.Tool)))
		}
		if e.CallID != "" {
			attrs = append(attrs, AttrToolCallID.String(clip(e.CallID)))
		}
		if logged {
			o.emit(ctx, EventWarning, severityWarning, attrs)
		}
		if recording && o.spanEvents {
			span.AddEvent(EventWarning, trace.WithAttributes(attrs...))
		}
	}
}

// emit emits the log record of an event.
func (o *Observer) emit(ctx context.Context, name string, severity log.Severity, attrs []attribute.KeyValue) {
	var r log.Record
	r.SetEventName(name)
	r.SetSeverity(severity)
	r.AddAttributes(attrs...)
	o.logger.Emit(ctx, r)
}

// attributed is what an SDK span offers beside trace.Span: its attributes.
type attributed interface {
	Attributes() []attribute.KeyValue
}

// refusalSpan marks the refused call's execute_tool span: the span in ctx
// when it is that call's, else a span of its own under it. attrs are the
// refusal's attributes.
func refusalSpan(ctx context.Context, span trace.Span, e *guard.Event, attrs []attribute.KeyValue) {
	code := AttrErrorType.String(clip(e.Verdict.Code))
	desc := "loopguard refused the call: " + clip(e.Verdict.Code)
	if ro, ok := span.(attributed); ok {
		var op, id string
		for _, kv := range ro.Attributes() {
			switch kv.Key {
			case semconv.GenAIOperationNameKey:
				op = kv.Value.AsString()
			case AttrToolCallID:
				id = kv.Value.AsString()
			}
		}
		if op == semconv.GenAIOperationNameExecuteTool.Value.AsString() && (id == "" || e.CallID == "" || id == clip(e.CallID)) {
			span.SetAttributes(code)
			if id == "" && e.CallID != "" {
				span.SetAttributes(AttrToolCallID.String(clip(e.CallID)))
			}
			span.SetStatus(codes.Error, desc)
			return
		}
	}
	tool := clip(e.Tool)
	for _, kv := range attrs {
		if kv.Key == AttrToolName {
			tool = kv.Value.AsString()
		}
	}
	name := semconv.GenAIOperationNameExecuteTool.Value.AsString()
	if tool != "" {
		name += " " + tool
	}
	own := append([]attribute.KeyValue{semconv.GenAIOperationNameExecuteTool}, attrs...)
	_, child := span.TracerProvider().Tracer(ScopeName).Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(own...))
	child.SetStatus(codes.Error, desc)
	child.End()
}

// appendTools adds the tool names of a verdict's evidence: a string field
// Tool (the repeat, refusal, failure, window and tool-limit rules) as
// gen_ai.tool.name, a []string field Tools (a cycle) as loopguard.tools.
// Evidence that went through JSON is a map with the keys "tool" and
// "tools". Nothing else of the evidence is read. Without a tool in the
// evidence, the event's tool (guard.Event.Tool), if any, is
// gen_ai.tool.name.
func appendTools(attrs []attribute.KeyValue, ev any, eventTool string) []attribute.KeyValue {
	var tool string
	var tools []string
	switch ev := ev.(type) {
	case nil:
	case map[string]any:
		tool, _ = ev["tool"].(string)
		if list, ok := ev["tools"].([]any); ok {
			for _, t := range list {
				if s, ok := t.(string); ok {
					tools = append(tools, s)
				}
			}
		}
	default:
		rv := reflect.ValueOf(ev)
		for rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv = rv.Elem()
		}
		if rv.Kind() != reflect.Struct {
			break
		}
		if f := rv.FieldByName("Tool"); f.IsValid() && f.Kind() == reflect.String {
			tool = f.String()
		}
		if f := rv.FieldByName("Tools"); f.IsValid() && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String {
			for i := range f.Len() {
				tools = append(tools, f.Index(i).String())
			}
		}
	}
	if tool == "" {
		tool = eventTool
	}
	if tool != "" {
		attrs = append(attrs, AttrToolName.String(clip(tool)))
	}
	if len(tools) > 0 {
		for i := range tools {
			tools[i] = clip(tools[i])
		}
		attrs = append(attrs, AttrTools.StringSlice(tools))
	}
	return attrs
}

// clip cuts s to at most maxName bytes, at a rune boundary.
func clip(s string) string {
	if len(s) <= maxName {
		return s
	}
	i := maxName
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
