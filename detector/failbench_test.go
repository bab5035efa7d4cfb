package detector_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// BenchmarkCheckFailing measures guard.Check of a one-call step whose call
// fails, with the default set: every call has other arguments and another
// error (a request id), so nothing stops. It is the path the failure
// signature and the Retry sum are computed on.
func BenchmarkCheckFailing(b *testing.B) {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": 1000000000}`))
	if err != nil {
		b.Fatal(err)
	}
	g, err := cfg.New()
	if err != nil {
		b.Fatal(err)
	}
	steps := make([]guard.Step, 4096)
	for i := range steps {
		steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: fmt.Sprintf("fetch%d", i%64),
			Args: map[string]any{"url": fmt.Sprintf("https://api.example.com/v1/items/%d", i), "retries": 3},
			Err:  errors.New(fmt.Sprintf("service unavailable (request %08x-0628-45fb-9593-f629717be3ca) for item %d", i, i))}}}
	}
	for i := range 2048 {
		g.Check(steps[i])
	}
	b.ReportAllocs()
	i := 2048
	for b.Loop() {
		if v := g.Check(steps[i%len(steps)]); v.Stop {
			b.Fatalf("unexpected verdict: %v", v)
		}
		i++
	}
}
