package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const want = `process 1, step 0: go on
process 1, step 1: go on
process 1, step 2: go on
process 1: saved BYTES bytes
process 2: restored after 3 steps
process 2, step 3: stop: repeated-tool-call (REPEATED_TOOL_CALL): `

// TestTwoProcesses runs the example as it runs from the command line: the
// second half in a process of its own (this test binary, re-executed).
func TestTwoProcesses(t *testing.T) {
	if os.Getenv("LOOPGUARD_RESUME_CHILD") == "1" {
		return
	}
	var out strings.Builder
	err := run(nil, &out, func(path string) error {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChild$")
		cmd.Env = append(os.Environ(), "LOOPGUARD_RESUME_CHILD=1", "LOOPGUARD_RESUME_FILE="+path)
		b, err := cmd.CombinedOutput()
		out.Write(b)
		return err
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	if i := strings.Index(got, "saved "); i > 0 {
		j := strings.Index(got[i:], " bytes")
		got = got[:i] + "saved BYTES" + got[i+j:]
	}
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "feedback for the model: You have called `search` 4 times in a row") {
		t.Errorf("output:\n%s\nwant it to start with:\n%s", got, want)
	}
}

// TestChild is the second process of TestTwoProcesses.
func TestChild(t *testing.T) {
	path := os.Getenv("LOOPGUARD_RESUME_FILE")
	if os.Getenv("LOOPGUARD_RESUME_CHILD") != "1" || path == "" {
		t.Skip("only run as the child of TestTwoProcesses")
	}
	if err := run([]string{"resume", path}, os.Stdout, nil); err != nil {
		t.Fatal(err)
	}
}
