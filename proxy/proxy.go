// Package proxy is loopguard's reverse proxy: it stands between an agent,
// written in any language, and its model's HTTP API, rebuilds the run's
// steps from the requests and responses that pass through it, and judges
// them with a guard.Guard, with the same rules and options as the library.
// When a run loops it ends the run as the Policy says.
//
// Three APIs are judged, in their wire formats, streamed or not: OpenAI
// Chat Completions (POST …/chat/completions), OpenAI Responses (POST
// …/responses) and Anthropic Messages (POST …/messages). Every other
// request, and every field the proxy does not know, passes through
// untouched.
//
// A run is named by the Loopguard-Run header when the agent sends it,
// else by the API's own conversation or user metadata, else by the
// conversation's beginning (see RunHeader). Each request carries the whole
// history; the proxy reads only what is new since the run's last request
// (the model's previous turn and the tool results that answer it) and
// checks it, and it preflights the tool calls of each response.
//
// The proxy is an http.Handler:
//
//	cfg, _ := detector.FromJSON(optionsFile) // or guard.Config{Rules: detector.Defaults()}
//	p, err := proxy.New(proxy.Options{Upstream: upstreamURL, Config: cfg, Policy: proxy.End})
//	...
//	http.ListenAndServe("127.0.0.1:8787", p)
//
// The loopguard-proxy command (cmd/loopguard-proxy) runs it with flags.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// Header names the proxy reads from requests and writes on responses.
const (
	// RunHeader names the run a request belongs to. Any printable ASCII
	// of up to 128 bytes from [A-Za-z0-9._:@/+=-] is used as it is; any
	// other value is replaced by a hash of it ("h:" and 32 hex digits).
	RunHeader = "Loopguard-Run"
	// PolicyHeader chooses the policy of a request's run: observe, end
	// or error. It overrides Options.Policy.
	PolicyHeader = "Loopguard-Policy"

	// VerdictHeader says on a response what the guard made of it:
	// "continue", "stop", "refused" (a tool call of the response was
	// refused) or "unjudged".
	VerdictHeader = "Loopguard-Verdict"
	// CodeHeader is the rule's code of a stop or a refusal, such as
	// REPEATED_TOOL_CALL.
	CodeHeader = "Loopguard-Code"
	// RuleHeader is the name of the rule that stopped or refused.
	RuleHeader = "Loopguard-Rule"
	// FeedbackHeader is the safe feedback text of a stop or a refusal.
	FeedbackHeader = "Loopguard-Feedback"
	// StepsHeader is the number of new steps the request's history held.
	StepsHeader = "Loopguard-Steps"
	// UnjudgedHeader says why a request passed unjudged: "too-large",
	// "unreadable", "store" (the store could not be reached) or
	// "response-too-large" / "response-unreadable".
	UnjudgedHeader = "Loopguard-Unjudged"
)

// Policy says what the proxy does when a run must stop.
type Policy int

const (
	// Observe forwards everything: the verdict goes only into the
	// response's headers and the proxy's log.
	Observe Policy = iota + 1
	// End answers a stopped run without calling the upstream: a normal
	// final assistant message in the API's shape, whose text is the safe
	// feedback, with no tool calls and a finish reason of stop (end_turn,
	// completed). A refused tool call is removed from the response and the
	// feedback added as text. The agent's framework then ends its loop as
	// for any final answer. It is the default.
	End
	// Error answers a stopped run with an HTTP error in the provider's
	// error shape: status 422 (Unprocessable Entity) with the header
	// x-should-retry: false. The OpenAI and Anthropic clients retry 408,
	// 409, 429 and 5xx statuses (and honour x-should-retry), so 422 reaches
	// the agent at once as an error, once. In a stream whose headers went
	// out, the API's error event ends the stream.
	Error
)

// String returns "observe", "end" or "error".
func (p Policy) String() string {
	switch p {
	case Observe:
		return "observe"
	case End:
		return "end"
	case Error:
		return "error"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy reads "observe", "end" or "error".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "observe":
		return Observe, nil
	case "end":
		return End, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("proxy: policy %q: want observe, end or error: %w", s, guard.ErrInvalidOption)
}

// Recovery says what a new message of a person does to a stopped run.
type Recovery int

const (
	// Resume starts a new segment when a user's new message arrives after
	// a stop: the run's rules start afresh (guard.Guard.Reset) and the
	// request goes on to the upstream. A person is never locked out of
	// their own conversation; an agent that loops again is stopped again.
	// It is the default.
	Resume Recovery = iota + 1
	// Stay keeps a stopped run stopped: every later request of the run is
	// answered as the stop was, until the run expires (Options.TTL) or
	// the proxy forgets it.
	Stay
)

// String returns "resume" or "stay".
func (r Recovery) String() string {
	switch r {
	case Resume:
		return "resume"
	case Stay:
		return "stay"
	}
	return fmt.Sprintf("Recovery(%d)", int(r))
}

// ParseRecovery reads "resume" or "stay".
func ParseRecovery(s string) (Recovery, error) {
	switch s {
	case "resume":
		return Resume, nil
	case "stay":
		return Stay, nil
	}
	return 0, fmt.Errorf("proxy: recovery %q: want resume or stay: %w", s, guard.ErrInvalidOption)
}

// Options configure a Proxy. Upstream is required; every other zero value
// is a working default.
type Options struct {
	// Upstream is the API's base URL, such as https://api.openai.com or
	// https://api.anthropic.com. A request's path is appended to its path.
	Upstream *url.URL

	// Config is the guards' configuration (detector.FromJSON reads the
	// same options file as loopguard audit). The zero Config has no rules:
	// use detector.Defaults() for the standard ones.
	Config guard.Config

	// Policy is what a stop does: End when zero.
	Policy Policy
	// Recovery is what a person's new message does to a stopped run:
	// Resume when zero.
	Recovery Recovery

	// Store, when set, keeps the runs, so that many replicas share them
	// (a Redis store: package github.com/loopguard/loopguard/stores/redis).
	// When nil, runs live in this process's memory, at most MaxRuns.
	Store snapshot.Store
	// Snapshot tunes the runs kept in Store (policy when the store is down,
	// TTL, signing key, ...). Its OnError is called after the proxy logs.
	Snapshot snapshot.Options
	// MaxRuns bounds the runs kept in memory without a Store: the least
	// recently used is forgotten first. 0 means 10,000.
	MaxRuns int

	// MaxBody is the largest request or response body the proxy judges;
	// a larger one passes through unjudged, with the Loopguard-Unjudged
	// header. 0 means 16 MiB.
	MaxBody int64

	// Transport carries the requests to the upstream; nil means a clone of
	// http.DefaultTransport (TLS with the system's roots).
	Transport http.RoundTripper

	// Logger receives the proxy's structured log; nil means
	// slog.Default(). API keys and Authorization headers are never
	// logged; a stop's or refusal's detail is, and it may quote a short
	// preview of the arguments, as guard.Verdict.Detail does.
	Logger *slog.Logger

	// Metrics, when set, is told of requests, verdicts, stops, refusals
	// and upstream latencies (see NewMetrics).
	Metrics *Metrics

	// Steps, when set, receives each run's steps as loopguard step lines,
	// so that loopguard audit (and audit --html) can read the runs the
	// proxy saw. The lines hold the content of the steps (arguments,
	// results, text): see StepLog.
	Steps *StepLog
}

// Proxy is the reverse proxy. It is an http.Handler; its methods are safe
// for concurrent use.
type Proxy struct {
	upstream  *url.URL
	policy    Policy
	recovery  Recovery
	store     snapshot.Store
	runs      *snapshot.Runs
	maxBody   int64
	transport http.RoundTripper
	log       *slog.Logger
	metrics   *Metrics
	steps     *StepLog
	onError   func(string, error)
	draining  atomic.Bool
	mem       *memStore
	rp        *httputil.ReverseProxy

	runTTL, finishedTTL time.Duration
}

// New returns a proxy for o. Its errors name the bad option and wrap
// guard.ErrInvalidOption.
func New(o Options) (*Proxy, error) {
	if o.Upstream == nil || o.Upstream.Scheme == "" || o.Upstream.Host == "" {
		return nil, fmt.Errorf("proxy: Options.Upstream must be an absolute URL: %w", guard.ErrInvalidOption)
	}
	if o.Upstream.Scheme != "http" && o.Upstream.Scheme != "https" {
		return nil, fmt.Errorf("proxy: Options.Upstream: scheme %q: want http or https: %w", o.Upstream.Scheme, guard.ErrInvalidOption)
	}
	if o.Policy == 0 {
		o.Policy = End
	}
	if o.Policy < Observe || o.Policy > Error {
		return nil, fmt.Errorf("proxy: Options.Policy %d: %w", int(o.Policy), guard.ErrInvalidOption)
	}
	if o.Recovery == 0 {
		o.Recovery = Resume
	}
	if o.Recovery < Resume || o.Recovery > Stay {
		return nil, fmt.Errorf("proxy: Options.Recovery %d: %w", int(o.Recovery), guard.ErrInvalidOption)
	}
	if o.MaxRuns < 0 {
		return nil, fmt.Errorf("proxy: Options.MaxRuns %d is negative: %w", o.MaxRuns, guard.ErrInvalidOption)
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = 10_000
	}
	if o.MaxBody < 0 {
		return nil, fmt.Errorf("proxy: Options.MaxBody %d is negative: %w", o.MaxBody, guard.ErrInvalidOption)
	}
	if o.MaxBody == 0 {
		o.MaxBody = 16 << 20
	}
	p := &Proxy{
		upstream:  o.Upstream,
		policy:    o.Policy,
		recovery:  o.Recovery,
		store:     o.Store,
		maxBody:   o.MaxBody,
		transport: o.Transport,
		log:       o.Logger,
		metrics:   o.Metrics,
		steps:     o.Steps,
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.transport == nil {
		p.transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if p.store == nil {
		p.mem = newMemStore(o.MaxRuns)
		p.store = p.mem
	}
	so := o.Snapshot
	user := so.OnError
	so.OnError = func(key string, err error) {
		p.log.Warn("loopguard proxy: store", "run", key, "err", err)
		if user != nil {
			user(key, err)
		}
	}
	runs, err := snapshot.New(p.store, o.Config, so)
	if err != nil {
		return nil, err
	}
	p.runs = runs
	p.runTTL, p.finishedTTL = so.TTL, so.FinishedTTL
	p.rp = p.reverse()
	return p, nil
}

// Drain makes the readiness endpoint answer 503, so that a load balancer
// sends no new requests; requests in flight go on. Call it before
// http.Server.Shutdown.
func (p *Proxy) Drain() { p.draining.Store(true) }

// Ready reports whether the proxy takes requests: not draining, and its
// store answers a load within ctx.
func (p *Proxy) Ready(ctx context.Context) error {
	if p.draining.Load() {
		return errors.New("proxy: draining")
	}
	_, _, err := p.store.Load(ctx, "loopguard-proxy-ready"+cursorSuffix, 0)
	return err
}

// the paths of the proxy's own endpoints.
const (
	healthPath  = "/loopguard/healthz"
	readyPath   = "/loopguard/readyz"
	metricsPath = "/loopguard/metrics"
)

// ServeHTTP judges and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case healthPath:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
		return
	case readyPath:
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := p.Ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready")
			return
		}
		fmt.Fprintln(w, "ready")
		return
	case metricsPath:
		if p.metrics != nil {
			p.metrics.handler.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	p.serve(w, r)
}

// apiPath reports which judged API a path is, from its end, so that any
// prefix (/v1, /openai/v1, ...) works.
func apiPath(method, path string) string {
	if method != http.MethodPost {
		return ""
	}
	path = strings.TrimSuffix(path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return "chat"
	case strings.HasSuffix(path, "/responses"):
		return "responses"
	case strings.HasSuffix(path, "/messages"):
		return "messages"
	}
	return ""
}
