//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// These tests measure the peak memory of the command in a child process:
// Linux gives a child's maximum resident set, in KiB, in its rusage.

// TestHTMLMemoryBound audits a million steps of {} (3 MB) with --html in a
// child process, and checks its peak memory (the child's maximum resident
// set): under 200 MB, where it was 1.1 GB when every step was kept and
// drawn. The page draws maxDrawnSteps of the steps, says so, and counts the
// others in its gap.
func TestHTMLMemoryBound(t *testing.T) {
	if args := os.Getenv("LOOPGUARD_TEST_ARGS"); args != "" {
		// The child: run the command, and exit with its status.
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr))
	}
	if testing.Short() {
		t.Skip("a million steps")
	}
	dir := t.TempDir()
	input := filepath.Join(dir, "million.jsonl")
	if err := os.WriteFile(input, []byte(strings.Repeat("{}\n", 1_000_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "page.html")
	rss, code := childRSS(t, "audit", "--html", page, input)
	t.Logf("audit --html of 1,000,000 steps: peak RSS %d KiB", rss)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1 (a stop)", code)
	}
	if rss > 200<<10 {
		t.Errorf("peak RSS %d KiB, more than 200 MiB", rss)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 1<<20 {
		t.Errorf("the page is %d bytes, more than 1 MiB", len(data))
	}
	root := parsePage(t, data)
	hits := root.find(byClass("rect", "hit"))
	gaps := root.find(byClass("g", "gap"))
	steps := len(hits)
	for _, g := range gaps {
		n, _ := strconv.Atoi(g.Attrs["data-steps"])
		steps += n
	}
	if len(hits) != maxDrawnSteps || steps != 1_000_000 {
		t.Errorf("%d steps drawn and %d in %d gaps, want %d drawn of 1,000,000", len(hits), steps-len(hits), len(gaps), maxDrawnSteps)
	}
	for _, want := range []string{
		fmt.Sprintf("1 run longer than %d steps is drawn in part", maxDrawnSteps),
		fmt.Sprintf("%d of the 1000000 steps are drawn", maxDrawnSteps),
		"999500 steps not drawn",
	} {
		if !strings.Contains(root.text(), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// childRSS runs the command with args in a child process (this test binary,
// running the test that called it) and returns the child's peak resident
// set in KiB, and its exit status.
func childRSS(t *testing.T, args ...string) (int64, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), "LOOPGUARD_TEST_ARGS="+strings.Join(args, "\x1f"))
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this system")
	}
	if code > exitFailed {
		t.Logf("%v: exit %d:\n%.2000s", args, code, out)
	}
	return ru.Maxrss, code
}

// TestOTLPMemoryBound audits an OTLP file of 50,000 runs (16.75 MB, a
// model span each) in a child process with the audit's own collector
// settings, and checks its peak memory: under 200 MB, where it was 443 MB
// (26 times the file) when each span kept its attributes, the reports of
// the file were gathered, and every guard outlived a collection.
func TestOTLPMemoryBound(t *testing.T) {
	if os.Getenv("LOOPGUARD_TEST_ARGS") != "" {
		os.Exit(run(strings.Split(os.Getenv("LOOPGUARD_TEST_ARGS"), "\x1f"), os.Stdin, os.Stdout, os.Stderr))
	}
	if testing.Short() || raceEnabled {
		t.Skip("50,000 runs; the race detector takes several times the memory")
	}
	const runs = 50_000
	var b strings.Builder
	for i := 1; i <= runs; i++ {
		fmt.Fprintf(&b, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%032x","spanId":"%016x","name":"chat m",`+
			`"startTimeUnixNano":"%d","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},`+
			`{"key":"gen_ai.usage.output_tokens","value":{"intValue":"12"}}],"status":{}}]}]}]}`+"\n", i, i, 1772442000000000000+i)
	}
	input := filepath.Join(t.TempDir(), "runs.otlp.json")
	if err := os.WriteFile(input, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	rss, code := childRSS(t, "audit", "--format", "json", input)
	t.Logf("audit of %d OTLP runs (%d bytes): peak RSS %d KiB", runs, b.Len(), rss)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if rss > 200<<10 {
		t.Errorf("peak RSS %d KiB, more than 200 MiB", rss)
	}
}
