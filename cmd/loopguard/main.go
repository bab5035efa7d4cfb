// Command loopguard runs loopguard's rules over agent traces from
// outside Go.
//
// Usage:
//
//	loopguard replay [--config FILE] [--all] [--format text|json] [--input FORMAT] [--lenient] [--max-size SIZE] TRACE
//	loopguard audit [--config FILE] [--preset NAME] [--input FORMAT] [--format text|json] [--fail-on fault|any|never] [--strict] [--max-size SIZE] [--labels MANIFEST.json] [--html FILE] PATH...
//	loopguard proxy -upstream URL [FLAGS]
//	loopguard version
//	loopguard help [COMMAND]
//
// replay feeds a trace through a guard and prints the verdict on every line:
// see "loopguard help replay". audit replays many runs (loopguard step lines,
// OpenAI Chat Completions, OpenAI Responses or Anthropic Messages
// transcripts, OpenTelemetry
// GenAI traces; files, directories or -) through a fresh guard each and
// reports where each one stops, optionally as an HTML page with a timeline
// per run: see "loopguard help audit". Both read a file the same way, with
// one reader and one engine: the same file gives the same verdicts on the
// same lines. Options come from a JSON document with the names of the
// reference (see package detector); no --config means the default set.
//
// Exit status of replay: 0 when the input was read; 2 for a usage error, bad
// options or an unreadable input (the message names the file and line); 1
// when the guard itself failed. audit exits 1 when a run stops in a way
// --fail-on names (a fault, by default), so that it can gate CI, and 2 for an
// input that cannot be audited (unreadable, empty or too large), after
// reporting every other run.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/loopguard/loopguard/internal/escape"
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
	return []*command{replayCommand, auditCommand, proxyCommand, versionCommand}
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
				fmt.Fprintf(stderr, "loopguard help: unknown command %q (run \"loopguard help\" for the commands)\n", escape.String(args[1]))
				return exitUsage
			}
			c.help(stdout)
			return exitOK
		}
		overview(stdout)
		return exitOK
	case "-version", "--version":
		return versionCommand.run(nil, stdin, stdout, stderr)
	default:
		c := lookup(name)
		if c == nil {
			what := "command"
			if strings.HasPrefix(name, "-") {
				what = "flag"
			}
			fmt.Fprintf(stderr, "loopguard: unknown %s %q (run \"loopguard help\" for the commands)\n", what, escape.String(name))
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
	b.WriteString("\nRun \"loopguard help COMMAND\" (or \"loopguard COMMAND --help\") for a command's flags.\n")
	io.WriteString(w, b.String())
}

// newFlagSet returns a flag set that says nothing itself: parseArgs reports
// its errors, and help writes its flags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// writeHelp writes a command's usage text and its flags, each shown as
// --name.
func writeHelp(w io.Writer, usage string, fs *flag.FlagSet) {
	var b strings.Builder
	b.WriteString(usage)
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n    \t%s", strings.ReplaceAll(text, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		}
		b.WriteString("\n")
	})
	io.WriteString(w, b.String())
}

// parseArgs parses the flags of command cmd, which may stand before,
// between or after the positional arguments, and returns the positional
// ones. ok is false when the command is over: help was written to stdout
// (code 0), or a flag was wrong, which one line on stderr says (code 2).
func parseArgs(cmd string, fs *flag.FlagSet, help func(io.Writer), args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		help(stdout)
		return nil, exitOK, false
	}
	if err != nil {
		msg := err.Error()
		if name, found := strings.CutPrefix(msg, "flag provided but not defined: "); found {
			msg = fmt.Sprintf("unknown flag %s", dashes(name))
		} else {
			fs.VisitAll(func(f *flag.Flag) {
				for _, before := range []string{"flag -", "for -", "argument: -"} {
					msg = strings.ReplaceAll(msg, before+f.Name, before[:len(before)-1]+"--"+f.Name)
				}
			})
		}
		fmt.Fprintf(stderr, "loopguard %s: %s (run \"loopguard %s --help\" for the flags)\n", cmd, escape.String(msg), cmd)
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// dashes writes a flag's name as --name, however many dashes it was given
// with.
func dashes(name string) string { return "--" + strings.TrimLeft(name, "-") }

// usageError writes a usage problem of command cmd, with a pointer to its
// help, and returns the exit status for it.
func usageError(stderr io.Writer, cmd, format string, args ...any) int {
	fmt.Fprintf(stderr, "loopguard %s: %s (run \"loopguard %s --help\" for the flags)\n", cmd, escape.String(fmt.Sprintf(format, args...)), cmd)
	return exitUsage
}
