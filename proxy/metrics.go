package proxy

import (
	"net/http"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the proxy's Prometheus metrics, served at
// /loopguard/metrics:
//
//	loopguard_proxy_requests_total{api, outcome}     requests, by what became of them
//	loopguard_proxy_verdicts_total{api, code}        verdicts of the steps checked ("none": go on)
//	loopguard_proxy_stops_total{api, policy, code}   requests answered with a stop
//	loopguard_proxy_refusals_total{api, code}        responses with a refused tool call
//	loopguard_proxy_upstream_seconds{api}            time to the upstream's response headers
//
// A nil *Metrics counts nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	verdicts *prometheus.CounterVec
	stops    *prometheus.CounterVec
	refusals *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
}

// NewMetrics registers the proxy's metrics with reg and serves reg's
// metrics (the proxy's and any others it holds) at /loopguard/metrics.
// A nil reg means a new registry of the proxy's own (with the Go runtime's
// and the process's collectors).
func NewMetrics(reg *prometheus.Registry) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loopguard_proxy_requests_total",
			Help: "Requests through the proxy, by API and outcome (judged, passthrough, unjudged-*, upstream-error, client-error).",
		}, []string{"api", "outcome"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loopguard_proxy_verdicts_total",
			Help: "Verdicts of the steps checked, by API and rule code (none: the run goes on).",
		}, []string{"api", "code"}),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loopguard_proxy_stops_total",
			Help: "Requests answered with a stop, by API, policy and rule code.",
		}, []string{"api", "policy", "code"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loopguard_proxy_refusals_total",
			Help: "Responses with at least one refused tool call, by API and rule code.",
		}, []string{"api", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "loopguard_proxy_upstream_seconds",
			Help:    "Time from the request's arrival to the upstream's response headers.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"api"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.verdicts, m.stops, m.refusals, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m, nil
}

func (m *Metrics) request(api, outcome string) {
	if m != nil {
		m.requests.WithLabelValues(api, outcome).Inc()
	}
}

func (m *Metrics) verdict(api string, v guard.Verdict) {
	if m != nil {
		code := v.Code
		if !v.Stop {
			code = "none"
		}
		m.verdicts.WithLabelValues(api, code).Inc()
	}
}

func (m *Metrics) stop(api string, p Policy, code string) {
	if m != nil {
		m.stops.WithLabelValues(api, p.String(), code).Inc()
	}
}

func (m *Metrics) refusal(api, code string) {
	if m != nil {
		m.refusals.WithLabelValues(api, code).Inc()
	}
}

func (m *Metrics) upstream(api string, d time.Duration) {
	if m != nil {
		m.latency.WithLabelValues(api).Observe(d.Seconds())
	}
}
