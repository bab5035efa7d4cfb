// Command loopguard-proxy runs loopguard's reverse proxy (package proxy) in
// front of a model API, so that an agent in any language is guarded by
// pointing its base URL at it:
//
//	loopguard-proxy -upstream https://api.openai.com
//	OPENAI_BASE_URL=http://127.0.0.1:8787/v1 python agent.py
//
// Flags:
//
//	-listen ADDR        where to listen (default 127.0.0.1:8787: loopback only)
//	-upstream URL       the API's base URL (required)
//	-config FILE        the guards' options, the JSON document of loopguard audit --config
//	-policy P           observe, end (default) or error
//	-recovery R         resume (default) or stay
//	-redis URL          share runs with other replicas through Redis (redis://host:port/db)
//	-ttl D              forget a run idle this long (default 24h; 0: never)
//	-max-body N         judge bodies of up to N bytes (default 16777216)
//	-max-runs N         runs kept in memory without -redis (default 10000)
//	-steps DIR          write each run's steps as step lines into DIR
//	-log-format F       text (default) or json
//	-log-level L        debug, info (default), warn or error
//	-grace D            how long SIGTERM waits for requests in flight (default 30s)
//
// The proxy answers /loopguard/healthz (alive), /loopguard/readyz (ready:
// not draining, the store answers) and /loopguard/metrics (Prometheus).
// On SIGTERM or SIGINT it stops taking requests, lets those in flight end
// (streams included) within -grace, and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/proxy"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/redis/go-redis/v9"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr, nil))
}

// run runs the proxy until ctx ends or a signal comes; ready, when set,
// is told the address it listens on.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) int {
	fs := flag.NewFlagSet("loopguard-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8787", "`address` to listen on (loopback only by default)")
	upstream := fs.String("upstream", "", "the model API's base `URL`, such as https://api.openai.com (required)")
	config := fs.String("config", "", "the guards' options `file` (the JSON document of loopguard audit --config)")
	policy := fs.String("policy", "end", "what a stop does: observe, end or error")
	recovery := fs.String("recovery", "resume", "what a person's new message does to a stopped run: resume or stay")
	redisURL := fs.String("redis", "", "share runs through Redis at this `URL` (redis://host:port/db)")
	ttl := fs.Duration("ttl", 24*time.Hour, "forget a run idle this long (0: never)")
	maxBody := fs.Int64("max-body", 16<<20, "judge request and response bodies of up to this many `bytes`")
	maxRuns := fs.Int("max-runs", 10_000, "runs kept in memory without -redis")
	steps := fs.String("steps", "", "write each run's steps as step lines into this `directory`")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	grace := fs.Duration("grace", 30*time.Second, "how long a shutdown waits for requests in flight")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loopguard-proxy: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "loopguard-proxy: "+format+"\n", a...)
		return 2
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("-log-level %q: want debug, info, warn or error", *logLevel)
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	case "json":
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	default:
		return fail("-log-format %q: want text or json", *logFormat)
	}
	log := slog.New(handler)

	if *upstream == "" {
		return fail("-upstream is required (the model API's base URL, such as https://api.openai.com)")
	}
	up, err := url.Parse(*upstream)
	if err != nil || up.Scheme == "" || up.Host == "" {
		return fail("-upstream %q: want an absolute http or https URL", *upstream)
	}
	doc := []byte("{}")
	if *config != "" {
		if doc, err = os.ReadFile(*config); err != nil {
			return fail("-config: %v", err)
		}
	}
	cfg, err := detector.FromJSON(doc)
	if err != nil {
		return fail("-config %s: %v", *config, err)
	}
	// Runs outlive a deploy in a shared store: a rule that a newer release
	// adds to the defaults starts fresh on the runs saved before it, instead
	// of making each of them fail to restore.
	cfg.AllowNewRules = true
	pol, err := proxy.ParsePolicy(*policy)
	if err != nil {
		return fail("-policy: %v", err)
	}
	rec, err := proxy.ParseRecovery(*recovery)
	if err != nil {
		return fail("-recovery: %v", err)
	}
	if *ttl < 0 {
		return fail("-ttl %v is negative", *ttl)
	}
	metrics, err := proxy.NewMetrics(nil)
	if err != nil {
		return fail("metrics: %v", err)
	}
	o := proxy.Options{
		Upstream: up, Config: cfg, Policy: pol, Recovery: rec,
		MaxBody: *maxBody, MaxRuns: *maxRuns, Logger: log, Metrics: metrics,
	}
	o.Snapshot.TTL = *ttl
	if *redisURL != "" {
		ro, err := redis.ParseURL(*redisURL)
		if err != nil {
			return fail("-redis: %v", err)
		}
		ro.ContextTimeoutEnabled = true
		client := redis.NewClient(ro)
		defer client.Close()
		store, err := lgredis.New(client, lgredis.Options{})
		if err != nil {
			return fail("-redis: %v", err)
		}
		o.Store = store
	}
	if *steps != "" {
		if o.Steps, err = proxy.NewStepLog(*steps); err != nil {
			return fail("-steps: %v", err)
		}
	}
	p, err := proxy.New(o)
	if err != nil {
		return fail("%v", err)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail("-listen: %v", err)
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("loopguard proxy: listening", "addr", ln.Addr().String(), "upstream", up.Redacted(),
		"policy", pol.String(), "recovery", rec.String(), "shared", *redisURL != "")
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-served:
		return fail("%v", err)
	case <-ctx.Done():
	}
	log.Info("loopguard proxy: shutting down", "grace", grace.String())
	p.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("loopguard proxy: requests still in flight at the end of the grace period", "err", err)
		return 1
	}
	log.Info("loopguard proxy: stopped")
	return 0
}
