// Package otel reports what a loopguard guard decides to OpenTelemetry
// (go.opentelemetry.io/otel): span events on the span in the call's context,
// and metrics.
//
//	obs, err := lgotel.New(lgotel.Options{}) // the global meter provider
//	if err != nil {
//		return err
//	}
//	g, err := guard.New(guard.Config{Rules: detector.Defaults(), Observer: obs.Observe})
//
// Observe adds to the span in its context (one that is recording), as the
// guard tells it of each verdict and decision:
//
//   - EventStop for a stop verdict (a fault, or the model's normal finish);
//   - EventRefusal for a refused call;
//   - EventWarning for each warning of a verdict. (A preflight decision
//     repeats the warnings that the last verdict gave; they are not
//     recorded again.)
//
// Their attributes are named after the OpenTelemetry semantic conventions
// for generative AI where one exists (AttrToolName, gen_ai.tool.name, for the
// tool a rule is about) and loopguard.* otherwise (AttrReason, AttrCode,
// AttrDetector, AttrStep, ...). They hold names, codes and counts, never
// arguments, results or text: the verdict's Detail and Feedback, and the
// previews in its evidence, are left out.
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
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/loopguard/loopguard/guard"
)

// ScopeName is the instrumentation scope of the meter.
const ScopeName = "github.com/loopguard/loopguard/adapters/otel"

// The names of the span events.
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

// The attribute keys. AttrToolName is the GenAI semantic conventions' name
// of a tool; the others are loopguard's own.
const (
	// AttrToolName is the tool a rule is about (gen_ai.tool.name), when
	// there is one: the repeated call's, the capped tool's, the refused
	// call's, the warning's.
	AttrToolName = attribute.Key("gen_ai.tool.name")
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

// maxName is the longest tool name, reason or code an attribute holds, in
// bytes: names come from the model.
const maxName = 256

// Options configure an Observer. The zero value uses the global meter
// provider.
type Options struct {
	// MeterProvider provides the meter; nil means the global one
	// (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
	// StepBuckets are the bucket boundaries of MetricRunSteps; nil means
	// 1, 2, 5, 10, 20, 50, 100, 200 and 500.
	StepBuckets []float64
}

// An Observer turns a guard's events into span events and metrics. Create
// it with [New]; pass its Observe method as [guard.Config.Observer]. One
// Observer may serve many guards.
type Observer struct {
	stops, refusals, warnings metric.Int64Counter
	steps                     metric.Int64Histogram
}

// New returns an Observer whose instruments come from o's meter provider.
// The error is the meter's, if it could not create an instrument.
func New(o Options) (*Observer, error) {
	mp := o.MeterProvider
	if mp == nil {
		mp = global.GetMeterProvider()
	}
	buckets := o.StepBuckets
	if buckets == nil {
		buckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}
	}
	m := mp.Meter(ScopeName)
	var obs Observer
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
		if !check {
			o.refusals.Add(ctx, 1, metric.WithAttributes(attrs...))
		} else {
			fault := guard.IsFault(*v)
			attrs = append(attrs, AttrFault.Bool(fault))
			o.stops.Add(ctx, 1, metric.WithAttributes(attrs...))
			o.steps.Record(ctx, int64(e.Step)+1)
		}
		if recording {
			name := EventStop
			if !check {
				name = EventRefusal
			}
			attrs = append(attrs, AttrDetector.String(clip(v.Detector)), AttrStep.Int(e.Step))
			attrs = appendTools(attrs, v.Evidence)
			span.AddEvent(name, trace.WithAttributes(attrs...))
		}
	}
	if !check {
		return
	}
	for i := range v.Warnings {
		w := &v.Warnings[i]
		o.warnings.Add(ctx, 1, metric.WithAttributes(AttrCode.String(clip(w.Code)), AttrDetector.String(clip(w.Detector))))
		if recording {
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
			span.AddEvent(EventWarning, trace.WithAttributes(attrs...))
		}
	}
}

// appendTools adds the tool names of a verdict's evidence: a string field
// Tool (the repeat, refusal, failure, window and tool-limit rules) as
// gen_ai.tool.name, a []string field Tools (a cycle) as loopguard.tools.
// Evidence that went through JSON is a map with the keys "tool" and
// "tools". Nothing else of the evidence is read.
func appendTools(attrs []attribute.KeyValue, ev any) []attribute.KeyValue {
	var tool string
	var tools []string
	switch ev := ev.(type) {
	case nil:
		return attrs
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
			return attrs
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
