// Command resume saves a run's guard to a file in one process and resumes it
// in a second one.
//
// The first process records three steps of an agent that searches for the
// same thing, saves the guard (g.Snapshot) and starts a second process
// of this same program. The second process rebuilds the guard with
// guard.Restore and the same options, records the next search, and is
// stopped by the repeated-call rule exactly where an uncut run would be: the
// fourth identical search makes the run of calls reach the threshold of 4.
//
//	go run ./examples/resume
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
)

// config builds the run's configuration. Both processes must build its rules
// with the same options: a snapshot holds their fingerprints, not the
// options.
func config() guard.Config {
	b, err := budget.New(budget.Options{MaxSteps: 40})
	if err != nil {
		panic(err) // fixed, valid options
	}
	r, err := repeat.New(repeat.Options{Threshold: 4})
	if err != nil {
		panic(err)
	}
	return guard.Config{Rules: []guard.Rule{b, r}}
}

func search(q string) guard.Step {
	return guard.Step{ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(fmt.Sprintf(`{"q":%q}`, q)), Result: "no results"}}}
}

// first records the start of the run and saves the guard to path.
func first(path string, out io.Writer) error {
	ctx := context.Background()
	g, err := guard.New(config())
	if err != nil {
		return err
	}
	for i := range 3 {
		v, err := g.Check(ctx, search("loopguard snapshot"))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "process 1, step %d: %s\n", i, guard.Explain(v))
	}
	// The default options: no previews, and tool names that do not look
	// like identifiers hashed.
	data, err := g.Snapshot(ctx, guard.SnapshotOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "process 1: saved %d bytes\n", len(data))
	return os.WriteFile(path, data, 0o600)
}

// second restores the guard from path and goes on with the run.
func second(path string, out io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	g, err := guard.Restore(data, config())
	if err != nil {
		return err
	}
	s, err := g.Summary(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "process 2: restored after %d steps\n", s.Steps)
	v, err := g.Check(ctx, search("loopguard snapshot"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "process 2, step %d: %s\n", s.Steps, guard.Explain(v))
	if v.Stop {
		fmt.Fprintf(out, "feedback for the model: %s\n", v.Feedback)
	}
	return nil
}

// run is the whole program. With no arguments it is the first process and
// starts the second with self (nil: call second in this process).
func run(args []string, out io.Writer, self func(path string) error) error {
	if len(args) == 2 && args[0] == "resume" {
		return second(args[1], out)
	}
	dir, err := os.MkdirTemp("", "loopguard-resume")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "guard.json")
	if err := first(path, out); err != nil {
		return err
	}
	if self == nil {
		return second(path, out)
	}
	return self(path)
}

func main() {
	err := run(os.Args[1:], os.Stdout, func(path string) error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(exe, "resume", path)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "resume:", err)
		os.Exit(1)
	}
}
