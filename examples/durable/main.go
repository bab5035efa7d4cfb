// Command durable runs an agent loop as a Temporal workflow under loopguard
// and reports what the guard decides to OpenTelemetry, over OTLP/HTTP.
//
// It runs offline: the workflow runs in Temporal's test environment (with a
// server, the same interceptor goes in worker.Options), the model is a
// script that asks for the same search again and again, and the OTLP
// collector is a local HTTP server that prints what it receives.
//
//	go run ./examples/durable
//
// The glue a user writes is small: for OpenTelemetry, lgotel.New and the
// guard's Observer option (5 lines); for Temporal, NewInterceptor with the
// model's activity type and a function that reads its reply, and the
// worker's Interceptors option (8 lines), plus, in the workflow, errors.As
// for the stop where it should end the loop gracefully (4 lines).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	lgotel "github.com/loopguard/loopguard/adapters/otel"
	lgtemporal "github.com/loopguard/loopguard/adapters/temporal"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the workflow and a hand-written loop, and prints what the
// collector receives.
func run(w io.Writer) error {
	ctx := context.Background()
	collector := newCollector(w)
	defer collector.Close()

	// OpenTelemetry, exporting to the collector.
	traces, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.URL+"/v1/traces"))
	if err != nil {
		return err
	}
	metrics, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(collector.URL+"/v1/metrics"))
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(traces))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))

	obs, err := lgotel.New(lgotel.Options{MeterProvider: mp})
	if err != nil {
		return err
	}

	// The workflow, guarded by the interceptor, whose observer is the
	// OpenTelemetry one. In a workflow there is no span: it records the
	// metrics.
	itc, err := lgtemporal.NewInterceptor(lgtemporal.Options{
		Models:   map[string]lgtemporal.ModelFunc{"Chat": lgtemporal.Model(replyStep)},
		Observer: obs.Observe,
	})
	if err != nil {
		return err
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))) // quiet
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{itc}})
	acts := &activities{}
	env.RegisterWorkflow(Agent)
	env.RegisterActivity(acts)
	env.ExecuteWorkflow(Agent, "find the loop guard docs")
	var res string
	if err := env.GetWorkflowResult(&res); err != nil {
		return err
	}
	fmt.Fprintf(w, "workflow: %s; Search ran %d times\n", res, acts.searches)

	// A loop of your own, in a span: the observer adds its events to the
	// span in the context it is given.
	if err := ownLoop(tp, obs); err != nil {
		return err
	}

	// Flush both to the collector.
	if err := tp.Shutdown(ctx); err != nil {
		return err
	}
	return mp.Shutdown(ctx)
}

// Reply is what the model activity returns.
type Reply struct {
	Text         string
	Tool, Query  string // the tool call it asks for, if any
	FinishReason string
}

// replyStep reads a Reply for the guard.
func replyStep(r Reply) guard.Step { return guard.Step{Text: r.Text, FinishReason: r.FinishReason} }

// Agent is the workflow: ask the model, run the tool it asks for, hand back
// the output, until it answers or the guard stops it.
func Agent(ctx workflow.Context, task string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	history := []string{task}
	for {
		var reply Reply
		if err := workflow.ExecuteActivity(ctx, "Chat", history).Get(ctx, &reply); err != nil {
			var stop *guard.StopError
			if errors.As(err, &stop) {
				return "stopped: " + stop.Verdict.Code, nil
			}
			return "", err
		}
		if reply.Tool == "" {
			return reply.Text, nil
		}
		var out string
		if err := workflow.ExecuteActivity(ctx, reply.Tool, reply.Query).Get(ctx, &out); err != nil {
			var app *sdktemporal.ApplicationError
			if !errors.As(err, &app) {
				return "", err
			}
			out = app.Message() // a failure, or the guard's refusal: its feedback
		}
		history = append(history, out)
	}
}

// activities are the model (a script) and the tool.
type activities struct{ turns, searches int }

// Chat asks for the same search every time, in other words.
func (a *activities) Chat(_ context.Context, history []string) (Reply, error) {
	a.turns++
	return Reply{Text: fmt.Sprintf("Searching again (%d).", a.turns), Tool: "Search", Query: "loop guard docs",
		FinishReason: "tool-calls"}, nil
}

// Search is the tool.
func (a *activities) Search(_ context.Context, query string) (string, error) {
	a.searches++
	return "no results for " + query, nil
}

// ownLoop is a hand-written loop with guard.Turn, in a span.
func ownLoop(tp *sdktrace.TracerProvider, obs *lgotel.Observer) error {
	g, err := guard.New(guard.Config{Rules: detector.Defaults(), Observer: obs.Observe})
	if err != nil {
		return err
	}
	ctx, span := tp.Tracer("agent").Start(context.Background(), "agent.run")
	defer span.End()
	for i := range 10 {
		turn := g.Begin()
		call := guard.ToolCall{ID: fmt.Sprint(i), Name: "read_file", Args: map[string]any{"path": "/etc/app.conf"}}
		_, err := turn.Run(ctx, call, func(context.Context) (any, error) { return "port=8080", nil })
		var refused *guard.RefusedError
		if err != nil && !errors.As(err, &refused) {
			return err
		}
		if _, err := turn.End(ctx, guard.Step{Text: fmt.Sprintf("Reading it again (%d).", i), FinishReason: "tool-calls"}); err != nil {
			return nil // stopped: a *guard.StopError
		}
	}
	return errors.New("the guard never stopped the loop")
}
