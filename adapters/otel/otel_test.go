package otel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	lgotel "github.com/loopguard/loopguard/adapters/otel"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/guard"
)

// rig is an observer wired to an in-memory span recorder and a manual
// metric reader.
type rig struct {
	obs    *lgotel.Observer
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	obs, err := lgotel.New(lgotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))})
	if err != nil {
		t.Fatal(err)
	}
	r.obs = obs
	return r
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
	r := newRig(t)
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
	want := []event{
		warning(0, 600),
		warning(1, 700),
		{lgotel.EventRefusal, map[string]any{
			"loopguard.reason": "repeated-tool-call", "loopguard.code": "REPEATED_TOOL_CALL",
			"loopguard.detector": "repeat", "loopguard.step": int64(2), "gen_ai.tool.name": "search",
		}},
		warning(2, 800),
		{lgotel.EventStop, map[string]any{
			"loopguard.reason": "finish-reason", "loopguard.code": "FINISH_TERMINAL", "loopguard.fault": false,
			"loopguard.detector": "finish", "loopguard.step": int64(3),
		}},
		warning(3, 800),
	}
	got := events(r.spans.Ended())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span events (-want +got):\n%s", diff)
	}
	for _, s := range r.spans.Ended() {
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				if strings.Contains(kv.Value.Emit(), "secret") {
					t.Errorf("event %s: attribute %s quotes the run: %s", e.Name, kv.Key, kv.Value.Emit())
				}
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

// TestFaultStop: a fault stop is counted with fault true, and a stop
// without a span in the context is still counted.
func TestFaultStop(t *testing.T) {
	r := newRig(t)
	g, err := guard.New(guard.Config{Observer: r.obs.Observe, Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	call := guard.ToolCall{Name: "ls", Args: map[string]any{"path": "/secret"}, Result: "a b"}
	var v guard.Verdict
	for range 3 {
		if v, err = g.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"}); err != nil {
			t.Fatal(err)
		}
	}
	if v.Code != "REPEATED_TOOL_CALL" {
		t.Fatalf("verdict %v, want a repeat stop", v)
	}
	got := r.metrics(t)[lgotel.MetricStops].Data.(metricdata.Sum[int64])
	want := metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
		DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(
			lgotel.AttrReason.String("repeated-tool-call"), lgotel.AttrCode.String("REPEATED_TOOL_CALL"), lgotel.AttrFault.Bool(true)), Value: 1}}}
	metricdatatest.AssertEqual(t, want, got, metricdatatest.IgnoreTimestamp())
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
			r := newRig(t)
			ctx, span := r.tp.Tracer("test").Start(context.Background(), "agent")
			r.obs.Observe(ctx, guard.Event{Phase: guard.PhaseCheck, Step: 7, Verdict: guard.Verdict{
				Stop: true, Reason: "custom", Code: "CUSTOM", Detector: "mine", Detail: "secret", Feedback: "secret", Evidence: tt.evidence,
			}})
			span.End()
			want := map[string]any{"loopguard.reason": "custom", "loopguard.code": "CUSTOM", "loopguard.fault": true,
				"loopguard.detector": "mine", "loopguard.step": int64(7)}
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
	r := newRig(t)
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
