package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRun runs the example and compares what the collector received with
// what the guard decided: the workflow's refusals and stop as metrics, the
// hand-written loop's as span events too.
func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	want := `workflow: stopped: REPEATED_REFUSAL; Search ran 2 times
collector: span agent.run: event loopguard.refusal {error.type=REPEATED_TOOL_CALL gen_ai.tool.call.id=2 gen_ai.tool.name=read_file loopguard.code=REPEATED_TOOL_CALL loopguard.detector=repeat loopguard.reason=repeated-tool-call loopguard.step=2}
collector: span agent.run: event loopguard.refusal {error.type=REPEATED_TOOL_CALL gen_ai.tool.call.id=3 gen_ai.tool.name=read_file loopguard.code=REPEATED_TOOL_CALL loopguard.detector=repeat loopguard.reason=repeated-tool-call loopguard.step=3}
collector: span agent.run: event loopguard.refusal {error.type=REPEATED_TOOL_CALL gen_ai.tool.call.id=4 gen_ai.tool.name=read_file loopguard.code=REPEATED_TOOL_CALL loopguard.detector=repeat loopguard.reason=repeated-tool-call loopguard.step=4}
collector: span agent.run: event loopguard.stop {error.type=REPEATED_REFUSAL gen_ai.tool.name=read_file loopguard.code=REPEATED_REFUSAL loopguard.detector=refusal loopguard.fault=true loopguard.reason=repeated-refusal loopguard.step=4}
collector: metric loopguard.refusals{loopguard.code=REPEATED_TOOL_CALL loopguard.reason=repeated-tool-call} = 6
collector: metric loopguard.run.steps: 2 runs, 10 steps in all
collector: metric loopguard.stops{loopguard.code=REPEATED_REFUSAL loopguard.fault=true loopguard.reason=repeated-refusal} = 2
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
