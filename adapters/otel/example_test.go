package otel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	lgotel "github.com/loopguard/loopguard/adapters/otel"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// The observer is the guard's Observer option. Here its metrics go to a
// manual reader; in a program, to your meter provider's exporter.
func Example() {
	reader := sdkmetric.NewManualReader()
	obs, err := lgotel.New(lgotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		panic(err)
	}
	g, err := guard.New(guard.Config{Observer: obs.Observe, Rules: detector.Defaults()})
	if err != nil {
		panic(err)
	}
	call := guard.ToolCall{Name: "search", Args: map[string]any{"q": "loop guard"}, Result: "nothing"}
	for range 3 {
		if _, err := g.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{call}, FinishReason: "tool-calls"}); err != nil {
			panic(err)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == lgotel.MetricStops {
			dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			code, _ := dp.Attributes.Value(lgotel.AttrCode)
			fmt.Println(m.Name, code.AsString(), dp.Value)
		}
	}
	// Output: loopguard.stops REPEATED_TOOL_CALL 1
}
