package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// newCollector starts a local OTLP/HTTP receiver that prints the span
// events and the loopguard metrics it receives to w, one per line.
func newCollector(w io.Writer) *httptest.Server {
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		var lines []string
		var resp proto.Message
		switch r.URL.Path {
		case "/v1/traces":
			var req coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			lines = spanLines(&req)
			resp = &coltracepb.ExportTraceServiceResponse{}
		case "/v1/metrics":
			var req colmetricpb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			lines = metricLines(&req)
			resp = &colmetricpb.ExportMetricsServiceResponse{}
		default:
			http.NotFound(rw, r)
			return
		}
		mu.Lock()
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		mu.Unlock()
		b, _ := proto.Marshal(resp)
		rw.Header().Set("Content-Type", "application/x-protobuf")
		rw.Write(b)
	}))
}

// spanLines returns a line for each event of each span.
func spanLines(req *coltracepb.ExportTraceServiceRequest) []string {
	var lines []string
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				for _, e := range s.GetEvents() {
					lines = append(lines, fmt.Sprintf("collector: span %s: event %s %s", s.GetName(), e.GetName(), attrs(e.GetAttributes())))
				}
			}
		}
	}
	return lines
}

// metricLines returns a line for each data point of the loopguard metrics,
// sorted.
func metricLines(req *colmetricpb.ExportMetricsServiceRequest) []string {
	var lines []string
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if !strings.HasPrefix(m.GetName(), "loopguard.") {
					continue
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					lines = append(lines, fmt.Sprintf("collector: metric %s%s = %d", m.GetName(), attrs(dp.GetAttributes()), dp.GetAsInt()))
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					lines = append(lines, fmt.Sprintf("collector: metric %s%s: %d runs, %g steps in all",
						m.GetName(), attrs(dp.GetAttributes()), dp.GetCount(), dp.GetSum()))
				}
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// attrs prints attributes as {k=v ...}, sorted by key.
func attrs(kvs []*commonpb.KeyValue) string {
	if len(kvs) == 0 {
		return ""
	}
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, kv.GetKey()+"="+value(kv.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

// value prints an attribute's value.
func value(v *commonpb.AnyValue) string {
	switch v := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return v.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(v.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(v.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(v.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		items := make([]string, 0, len(v.ArrayValue.GetValues()))
		for _, x := range v.ArrayValue.GetValues() {
			items = append(items, value(x))
		}
		return "[" + strings.Join(items, " ") + "]"
	}
	return "?"
}
