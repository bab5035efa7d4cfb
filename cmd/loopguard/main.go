// Command loopguard runs loopguard's detectors over agent traces from
// outside Go.
//
// Usage:
//
//	loopguard replay [--config FILE] [--all] [--format text|json] TRACE.jsonl
//	loopguard audit [--config FILE] [--preset NAME] [--input FORMAT] [--format text|json] [--fail-on fault|any|never] PATH...
//	loopguard help [COMMAND]
//
// replay feeds a trace, one JSON step per line, through a guard and prints
// the verdict on every line: see "loopguard help replay". audit replays many
// runs (loopguard step lines, OpenAI Chat Completions or Anthropic Messages
// transcripts; files, directories or -) through a fresh guard each and
// reports where each one stops: see "loopguard help audit". Options come from
// a JSON document with the names of the reference (see package detector); no
// --config means the default set.
//
// Exit status of replay: 0 when the input was read; 2 for a usage error, bad
// options or an unreadable input line (the message names the file and line);
// 1 when the guard itself failed. audit exits 1 when a run stops in a way
// --fail-on names (a fault, by default), so that it can gate CI, and 2 for
// unreadable input, after reporting every readable run.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // the guard itself failed (a snapshot could not be restored, ...)
	exitUsage  = 2 // bad arguments, bad options or unreadable input
)

// A command is one subcommand of loopguard. Each lives in a file of its own
// and is listed in commands.
type command struct {
	name    string
	summary string            // one line for the overview
	help    func(w io.Writer) // writes the full help text
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands returns the subcommands, in the order the overview lists them.
func commands() []*command {
	return []*command{replayCommand, auditCommand}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command, without the process around it: it reads
// arguments and input, writes output and messages, and returns the exit
// status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		overview(stderr)
		return exitUsage
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			c := lookup(args[1])
			if c == nil {
				fmt.Fprintf(stderr, "loopguard help: unknown command %q\n", args[1])
				overview(stderr)
				return exitUsage
			}
			c.help(stdout)
			return exitOK
		}
		overview(stdout)
		return exitOK
	default:
		c := lookup(name)
		if c == nil {
			fmt.Fprintf(stderr, "loopguard: unknown command %q\n", name)
			overview(stderr)
			return exitUsage
		}
		return c.run(args[1:], stdin, stdout, stderr)
	}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// overview prints the list of commands.
func overview(w io.Writer) {
	var b strings.Builder
	b.WriteString("loopguard watches LLM agent runs and says, with evidence, when one loops.\n\n")
	b.WriteString("Usage:\n\n\tloopguard COMMAND [ARGUMENTS]\n\nCommands:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "\t%-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun \"loopguard help COMMAND\" for a command's options.\n")
	io.WriteString(w, b.String())
}
