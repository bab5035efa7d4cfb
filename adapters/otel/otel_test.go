package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	lgotel "github.com/loopguard/loopguard/adapters/otel"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/guard"
)

// rig is an observer wired to an in-memory span recorder, an in-memory log
// exporter and a manual metric reader.
type rig struct {
	obs    *lgotel.Observer
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	logs   *logSink
	reader *sdkmetric.ManualReader
}

// logSink is an in-memory exporter of the log SDK: it keeps the records.
type logSink struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (s *logSink) Export(_ context.Context, rs []sdklog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		s.records = append(s.records, r.Clone())
	}
	return nil
}
func (*logSink) Shutdown(context.Context) error   { return nil }
func (*logSink) ForceFlush(context.Context) error { return nil }

func newRig(t *testing.T, o lgotel.Options) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), logs: &logSink{}}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	o.LoggerProvider = sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(r.logs)))
	obs, err := lgotel.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.obs = obs
	return r
}

// record is a log record as the tests compare it: its event name,
// severity, attributes as plain values, and the span it is correlated with.
type record struct {
	Name     string
	Severity log.Severity
	Attrs    map[string]any
	Span     trace.SpanID
}

func (s *logSink) got() []record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []record
	for _, r := range s.records {
		rec := record{Name: r.EventName(), Severity: r.Severity(), Attrs: make(map[string]any), Span: r.SpanID()}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			rec.Attrs[string(kv.Key)] = kv.Value.AsInterface()
			return true
		})
		out = append(out, rec)
	}
	return out
}

// span finds an ended span by name.
func (r *rig) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return nil
}

// attrs returns a span's attributes as plain values.
func attrs(s sdktrace.ReadOnlySpan) map[string]any {
	out := make(map[string]any)
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// metrics collects the metrics of the observer's scope, by name.
func (r *rig) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != lgotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, lgotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// event is a span event with its attributes as plain values.
type event struct {
	Name  string
	Attrs map[string]any
}

func events(spans []sdktrace.ReadOnlySpan) []event {
	var out []event
	for _, s := range spans {
		for _, e := range s.Events() {
			ev := event{Name: e.Name, Attrs: make(map[string]any)}
			for _, kv := range e.Attributes {
				ev.Attrs[string(kv.Key)] = kv.Value.AsInterface()
			}
			out = append(out, ev)
		}
	}
	return out
}

// TestAgentRun runs a guard through four steps with a span in the context:
// budget warnings, a refused third search, and the model's answer. The span
// events and the metrics are asserted exactly, and none holds the
// arguments, results or text.
func TestAgentRun(t *testing.T) {
	r := newRig(t, lgotel.Options{})
	cfg, err := detector.FromJSON([]byte(`{"budget": {"maxTotalTokens": 1000, "warnAt": 0.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Observer = r.obs.Observe
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "agent")
	search := guard.ToolCall{ID: "c", Name: "search", Args: json.RawMessage(`{"q":"secret-arg"}`)}
	for i, usage := range []int64{600, 100, 100} {
		turn := g.Begin()
		ds, err := turn.Preflight(ctx, search)
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Allow != (i < 2) {
			t.Fatalf("step %d: allow %v", i, ds[0].Allow)
		}
		turn.SetResult("c", "secret-result", nil)
		if _, err := turn.End(ctx, guard.Step{Text: "secret text " + string(rune('a'+i)), FinishReason: "tool-calls",
			Usage: guard.Usage{TotalTokens: usage}}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := g.Begin().End(ctx, guard.Step{Text: "secret answer", FinishReason: "stop"})
	if err != nil || !v.Stop {
		t.Fatalf("last step: %v, %v; want a normal finish", v, err)
	}
	span.End()

	warning := func(step int, value float64) event {
		return event{lgotel.EventWarning, map[string]any{
			"loopguard.code": "BUDGET_WARNING", "loopguard.detector": "budget", "loopguard.step": int64(step),
			"loopguard.value": value, "loopguard.limit": float64(1000), "loopguard.metric": "totalTokens",
		}}
	}
	refusal := map[string]any{
		"loopguard.reason": "repeated-tool-call", "loopguard.code": "REPEATED_TOOL_CALL",
		"loopguard.detector": "repeat", "loopguard.step": int64(2), "gen_ai.tool.name": "search",
		"gen_ai.tool.call.id": "c", "error.type": "REPEATED_TOOL_CALL",
	}
	want := []event{
		warning(0, 600),
		warning(1, 700),
		{lgotel.EventRefusal, refusal},
		warning(2, 800),
		{lgotel.EventStop, map[string]any{
			"loopguard.reason": "finish-reason", "loopguard.code": "FINISH_TERMINAL", "loopguard.fault": false,
			"loopguard.detector": "finish", "loopguard.step": int64(3),
		}},
		warning(3, 800),
	}
	agent := r.span(t, "agent")
	got := events([]sdktrace.ReadOnlySpan{agent})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span events (-want +got):\n%s", diff)
	}
	// The same events as log records, correlated with the span.
	var wantLogs []record
	for _, e := range want {
		sev := log.SeverityWarn
		if e.Name == lgotel.EventStop {
			sev = log.SeverityInfo // the model's answer
		}
		wantLogs = append(wantLogs, record{e.Name, sev, e.Attrs, agent.SpanContext().SpanID()})
	}
	if diff := cmp.Diff(wantLogs, r.logs.got()); diff != "" {
		t.Errorf("log records (-want +got):\n%s", diff)
	}
	// The model's answer leaves the run's status alone; the refused call
	// has a span of its own, a failed execute_tool, under the run's.
	if agent.Status().Code != codes.Unset {
		t.Errorf("agent span status %v, want unset", agent.Status())
	}
	tool := r.span(t, "execute_tool search")
	wantTool := map[string]any{"gen_ai.operation.name": "execute_tool"}
	for k, v := range refusal {
		wantTool[k] = v
	}
	if diff := cmp.Diff(wantTool, attrs(tool)); diff != "" {
		t.Errorf("refused call's span attributes (-want +got):\n%s", diff)
	}
	if tool.Parent().SpanID() != agent.SpanContext().SpanID() || tool.Status() != (sdktrace.Status{Code: codes.Error, Description: "loopguard refused the call: REPEATED_TOOL_CALL"}) ||
		tool.SpanKind() != trace.SpanKindInternal {
		t.Errorf("refused call's span: parent %v, status %v, kind %v", tool.Parent().SpanID(), tool.Status(), tool.SpanKind())
	}
	if n := len(r.spans.Ended()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
	for _, s := range r.spans.Ended() {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.Emit(), "secret") {
				t.Errorf("span %s: attribute %s quotes the run: %s", s.Name(), kv.Key, kv.Value.Emit())
			}
		}
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				if strings.Contains(kv.Value.Emit(), "secret") {
					t.Errorf("event %s: attribute %s quotes the run: %s", e.Name, kv.Key, kv.Value.Emit())
				}
			}
		}
	}
	for _, rec := range r.logs.got() {
		for k, v := range rec.Attrs {
			if strings.Contains(fmt.Sprint(v), "secret") {
				t.Errorf("log record %s: attribute %s quotes the run: %v", rec.Name, k, v)
			}
		}
	}

	m := r.metrics(t)
	counter := func(name, unit, desc string, n int64, attrs ...attribute.KeyValue) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Unit: unit, Description: desc, Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(attrs...), Value: n}},
		}}
	}
	wantMetrics := []metricdata.Metrics{
		counter(lgotel.MetricRefusals, "{call}", "Tool calls the guard refused, by reason and code.", 1,
			lgotel.AttrReason.String("repeated-tool-call"), lgotel.AttrCode.String("REPEATED_TOOL_CALL")),
		counter(lgotel.MetricStops, "{stop}", "Runs the guard stopped, or saw finish, by reason and code.", 1,
			lgotel.AttrReason.String("finish-reason"), lgotel.AttrCode.String("FINISH_TERMINAL"), lgotel.AttrFault.Bool(false)),
		counter(lgotel.MetricWarnings, "{warning}", "Warnings the guard gave, by code and detector.", 4,
			lgotel.AttrCode.String("BUDGET_WARNING"), lgotel.AttrDetector.String("budget")),
		{Name: lgotel.MetricRunSteps, Unit: "{step}", Description: "Steps of a run, recorded when the guard stops it or it finishes.", Data: metricdata.Histogram[int64]{
			Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[int64]{{
				Attributes: attribute.NewSet(), Count: 1, Sum: 4,
				Min: metricdata.NewExtrema[int64](4), Max: metricdata.NewExtrema[int64](4),
				Bounds:       []float64{1, 2, 5, 10, 20, 50, 100, 200, 500},
				BucketCounts: []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
			}},
		}},
	}
	for _, w := range wantMetrics {
		got, ok := m[w.Name]
		if !ok {
			t.Errorf("no metric %s", w.Name)
			continue
		}
		metricdatatest.AssertEqual(t, w, got, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	}
	if len(m) != len(wantMetrics) {
		t.Errorf("%d metrics, want %d: %v", len(m), len(wantMetrics), keys(m))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFaultStop: a fault stop is counted with fault true, logged as an
// error, and sets error.type and the status Error on the run's span; a stop
// without a span in the context is still counted and logged.
func TestFaultStop(t *testing.T) {
	r := newRig(t, lgotel.Options{})
	g, err := guard.New(guard.Config{Observer: r.obs.Observe, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	call := guard.ToolCall{Name: "ls", Args: map[string]any{"path": "/secret"}, Result: "a b"}
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "agent")
	var v guard.Verdict
	for range 3 {
		if v, err = g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"}); err != nil {
			t.Fatal(err)
		}
	}
	span.End()
	if v.Code != "REPEATED_TOOL_CALL" {
		t.Fatalf("verdict %v, want a repeat stop", v)
	}
	agent := r.span(t, "agent")
	if diff := cmp.Diff(map[string]any{"error.type": "REPEATED_TOOL_CALL"}, attrs(agent)); diff != "" ||
		agent.Status() != (sdktrace.Status{Code: codes.Error, Description: "loopguard stopped the run: REPEATED_TOOL_CALL"}) {
		t.Errorf("agent span: status %v, attributes (-want +got):\n%s", agent.Status(), diff)
	}
	g.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"}) // no span
	stop := map[string]any{
		"loopguard.reason": "repeated-tool-call", "loopguard.code": "REPEATED_TOOL_CALL", "loopguard.fault": true,
		"loopguard.detector": "repeat", "loopguard.step": int64(2), "gen_ai.tool.name": "ls", "error.type": "REPEATED_TOOL_CALL",
	}
	stop3 := map[string]any{}
	for k, v := range stop {
		stop3[k] = v
	}
	stop3["loopguard.step"] = int64(3)
	want := []record{
		{lgotel.EventStop, log.SeverityError, stop, agent.SpanContext().SpanID()},
		{lgotel.EventStop, log.SeverityError, stop3, trace.SpanID{}},
	}
	if diff := cmp.Diff(want, r.logs.got()); diff != "" {
		t.Errorf("log records (-want +got):\n%s", diff)
	}
	got := r.metrics(t)[lgotel.MetricStops].Data.(metricdata.Sum[int64])
	wantSum := metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
		DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(
			lgotel.AttrReason.String("repeated-tool-call"), lgotel.AttrCode.String("REPEATED_TOOL_CALL"), lgotel.AttrFault.Bool(true)), Value: 2}}}
	metricdatatest.AssertEqual(t, wantSum, got, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}

// TestEvidenceTools: the tool names of evidence are read from Go evidence
// (a Tool field, a Tools list) and from evidence that went through JSON;
// long names are cut at 256 bytes.
func TestEvidenceTools(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	tests := []struct {
		name     string
		evidence any
		want     map[string]any
	}{
		{"struct", struct {
			Tool        string
			ArgsPreview string
		}{"search", "secret"}, map[string]any{"gen_ai.tool.name": "search"}},
		{"pointer", &struct{ Tool string }{"read"}, map[string]any{"gen_ai.tool.name": "read"}},
		{"cycle", struct{ Tools []string }{[]string{"a", "b"}}, map[string]any{"loopguard.tools": []string{"a", "b"}}},
		{"json", map[string]any{"tool": "fetch", "argsPreview": "secret"}, map[string]any{"gen_ai.tool.name": "fetch"}},
		{"json cycle", map[string]any{"tools": []any{"a", 1, "b"}}, map[string]any{"loopguard.tools": []string{"a", "b"}}},
		{"no tool", struct{ Steps int }{3}, map[string]any{}},
		{"not a struct", 42, map[string]any{}},
		{"long", struct{ Tool string }{long}, map[string]any{"gen_ai.tool.name": long[:256]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, lgotel.Options{})
			ctx, span := r.tp.Tracer("test").Start(context.Background(), "agent")
			r.obs.Observe(ctx, guard.Event{Phase: guard.PhaseCheck, Step: 7, Verdict: guard.Verdict{
				Stop: true, Reason: "custom", Code: "CUSTOM", Detector: "mine", Detail: "secret", Feedback: "secret", Evidence: tt.evidence,
			}})
			span.End()
			want := map[string]any{"loopguard.reason": "custom", "loopguard.code": "CUSTOM", "loopguard.fault": true,
				"loopguard.detector": "mine", "loopguard.step": int64(7), "error.type": "CUSTOM"}
			for k, v := range tt.want {
				want[k] = v
			}
			if diff := cmp.Diff([]event{{lgotel.EventStop, want}}, events(r.spans.Ended())); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGoOnAllocatesNothing: the common event, a verdict that goes on, costs
// no allocation.
func TestGoOnAllocatesNothing(t *testing.T) {
	r := newRig(t, lgotel.Options{})
	ctx := context.Background()
	e := guard.Event{Phase: guard.PhaseCheck, Step: 1}
	p := guard.Event{Phase: guard.PhasePreflight, Step: 1, Verdict: guard.Verdict{Warnings: []guard.Warning{{Code: "W"}}}}
	if n := testing.AllocsPerRun(100, func() { r.obs.Observe(ctx, e); r.obs.Observe(ctx, p) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// TestStepBuckets: the histogram's buckets can be chosen.
func TestStepBuckets(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	obs, err := lgotel.New(lgotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), StepBuckets: []float64{10, 100}})
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(context.Background(), guard.Event{Step: 49, Verdict: guard.Verdict{Stop: true, Reason: budget.ReasonMaxSteps, Code: "MAX_STEPS"}})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != lgotel.MetricRunSteps {
			continue
		}
		dp := m.Data.(metricdata.Histogram[int64]).DataPoints[0]
		if diff := cmp.Diff([]uint64{0, 1, 0}, dp.BucketCounts); diff != "" || dp.Sum != 50 {
			t.Errorf("sum %d, buckets (-want +got):\n%s", dp.Sum, diff)
		}
		return
	}
	t.Error("no histogram")
}

// TestRefusalOnToolSpan: a call refused as it is about to run, in the
// context of its own execute_tool span (as the SDKs make it, with or without
// gen_ai.tool.call.id), marks that span: error.type, the status Error and
// the call's ID; no span of its own is added. A tool span of another call is
// not the refused call's: the refusal gets a span of its own under it.
func TestRefusalOnToolSpan(t *testing.T) {
	tests := []struct {
		name      string
		spanID    string // the tool span's gen_ai.tool.call.id, if any
		wantOwn   bool   // the refusal has a span of its own
		wantAttrs map[string]any
	}{
		{"without ID", "", false, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
			"gen_ai.tool.call.id": "t2", "error.type": "REPEATED_TOOL_CALL"}},
		{"same ID", "t2", false, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
			"gen_ai.tool.call.id": "t2", "error.type": "REPEATED_TOOL_CALL"}},
		{"other ID", "t9", true, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
			"gen_ai.tool.call.id": "t9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, lgotel.Options{})
			g, err := repeatGuard(r)
			if err != nil {
				t.Fatal(err)
			}
			search := func(id string) guard.ToolCall {
				return guard.ToolCall{ID: id, Name: "search", Args: json.RawMessage(`{"q":"x"}`)}
			}
			ctx := context.Background()
			checkTwice(t, g, search("t1"))
			turn := g.Begin()
			toolAttrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName("search")}
			if tt.spanID != "" {
				toolAttrs = append(toolAttrs, semconv.GenAIToolCallID(tt.spanID))
			}
			toolCtx, span := r.tp.Tracer("sdk").Start(ctx, "execute_tool search", trace.WithAttributes(toolAttrs...))
			ran := false
			_, err = turn.Run(toolCtx, search("t2"), func(context.Context) (any, error) { ran = true; return "ok", nil })
			var refused *guard.RefusedError
			if ran || !errors.As(err, &refused) {
				t.Fatalf("ran %v, error %v; want a refusal", ran, err)
			}
			span.End()
			sdkSpan := r.spans.Ended()[len(r.spans.Ended())-1]
			for _, s := range r.spans.Ended() {
				if s.SpanContext().SpanID() == span.SpanContext().SpanID() {
					sdkSpan = s
				}
			}
			if diff := cmp.Diff(tt.wantAttrs, attrs(sdkSpan)); diff != "" {
				t.Errorf("tool span attributes (-want +got):\n%s", diff)
			}
			wantStatus := sdktrace.Status{Code: codes.Error, Description: "loopguard refused the call: REPEATED_TOOL_CALL"}
			if tt.wantOwn {
				wantStatus = sdktrace.Status{}
			}
			if sdkSpan.Status() != wantStatus {
				t.Errorf("tool span status %v, want %v", sdkSpan.Status(), wantStatus)
			}
			if n := len(r.spans.Ended()); (n == 2) != tt.wantOwn {
				t.Errorf("%d spans; a span of the refusal's own: %v", n, tt.wantOwn)
			}
			if tt.wantOwn {
				own := r.span(t, "execute_tool search")
				if own.SpanContext().SpanID() == span.SpanContext().SpanID() {
					own = r.spans.Ended()[0]
				}
				if own.Parent().SpanID() != span.SpanContext().SpanID() || attrs(own)["gen_ai.tool.call.id"] != "t2" || own.Status().Code != codes.Error {
					t.Errorf("the refusal's span: parent %v, attributes %v, status %v", own.Parent().SpanID(), attrs(own), own.Status())
				}
			}
			logs := r.logs.got()
			if len(logs) != 1 || logs[0].Name != lgotel.EventRefusal || logs[0].Attrs["gen_ai.tool.call.id"] != "t2" || logs[0].Span != span.SpanContext().SpanID() {
				t.Errorf("log records %+v, want the refusal of t2 on the tool span", logs)
			}
		})
	}
}

// repeatGuard returns a guard with the defaults (the repeat rule refuses a
// third same call) observed by r's observer.
func repeatGuard(r *rig) (*guard.Guard, error) {
	return guard.New(guard.Config{Observer: r.obs.Observe, Rules: detector.Defaults()})
}

// checkTwice records two steps of call, each with the same result.
func checkTwice(t *testing.T, g *guard.Guard, call guard.ToolCall) {
	t.Helper()
	for range 2 {
		call.Result = "r"
		if _, err := g.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoSpanEvents: with NoSpanEvents the events go out as log records
// only; the span status is still set.
func TestNoSpanEvents(t *testing.T) {
	r := newRig(t, lgotel.Options{NoSpanEvents: true})
	g, err := repeatGuard(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "agent")
	call := guard.ToolCall{Name: "ls", Args: map[string]any{"path": "/"}, Result: "a b"}
	for range 3 {
		g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"})
	}
	span.End()
	agent := r.span(t, "agent")
	if len(agent.Events()) != 0 || agent.Status().Code != codes.Error {
		t.Errorf("span events %v, status %v; want none, Error", agent.Events(), agent.Status())
	}
	if logs := r.logs.got(); len(logs) != 1 || logs[0].Name != lgotel.EventStop {
		t.Errorf("log records %+v, want the stop", logs)
	}
}
