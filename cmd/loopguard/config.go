package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
	"github.com/loopguard/loopguard/rule"
)

// This file holds what the subcommands share: reading the options document,
// building guards from it, and parsing flags that may come after the
// positional arguments.

// epoch is the frozen time of a replay: the detectors' clock always reads it,
// so that only the durations the steps report count, and the output never
// depends on how fast the machine is.
var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

func frozenClock() time.Time { return epoch }

// guardConfig is an options document and the registry that reads it; it
// builds any number of guards with the same options.
type guardConfig struct {
	registry *detector.Registry
	doc      []byte
}

// loadConfig reads the options document at path ("" for none: the defaults)
// and checks it by building it once. Its errors are meant to follow
// "config: " in a message.
func loadConfig(path string) (*guardConfig, error) {
	c := &guardConfig{registry: detector.Standard(), doc: []byte("{}")}
	if path != "" {
		doc, err := readDoc(path)
		if errors.Is(err, errDocTooLarge) {
			return nil, &fileError{path: path, err: err}
		}
		if err != nil {
			return nil, err
		}
		c.doc = doc
	}
	if _, err := c.build(nil); err != nil {
		if path != "" {
			return nil, &fileError{path: path, err: err}
		}
		return nil, err
	}
	return c, nil
}

// maxDocSize is the most bytes of an options file (--config) or a manifest
// (--labels), which are read whole: far more than either holds (the
// manifest of 100,000 runs is about 10 MiB), and little enough that
// /dev/zero or a runaway file ends in an error, not in running out of memory.
const maxDocSize = 16 << 20

// errDocTooLarge is wrapped by the error of readDoc for a file past
// maxDocSize.
var errDocTooLarge = errors.New("too large")

// readDoc reads the options file or manifest at path, up to maxDocSize
// bytes.
func readDoc(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDocSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDocSize {
		return nil, fmt.Errorf("%w: more than %s (options files and manifests are read whole)", errDocTooLarge, formatSize(maxDocSize))
	}
	return data, nil
}

// A fileError is the problems of an options file: each of its lines names
// the file, as a compiler's do, so that none of them is read as another
// file's.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	lines := strings.Split(e.err.Error(), "\n")
	for i, l := range lines {
		lines[i] = e.path + ": " + l
	}
	return strings.Join(lines, "\n")
}

func (e *fileError) Unwrap() error { return e.err }

// build returns the guard's configuration, with the frozen clock and the
// extra rules after those of the options.
func (c *guardConfig) build(extra []rule.Rule) (guard.Config, error) {
	cfg, err := c.registry.Build(c.doc, detector.BuildOptions{Now: frozenClock})
	if err != nil {
		return guard.Config{}, err
	}
	cfg.Rules = append(slices.Clip(cfg.Rules), extra...)
	return cfg, nil
}

// newGuard returns a fresh guard, with the extra rules after those of the
// options.
func (c *guardConfig) newGuard(extra ...rule.Rule) (*guard.Guard, error) {
	cfg, err := c.build(extra)
	if err != nil {
		return nil, err
	}
	return guard.New(cfg)
}

// restore returns a guard restored from a snapshot, with the rules of the
// same options and the extra rules.
func (c *guardConfig) restore(snapshot []byte, extra ...rule.Rule) (*guard.Guard, error) {
	cfg, err := c.build(extra)
	if err != nil {
		return nil, err
	}
	return guard.Restore(snapshot, cfg)
}

// reportConfigError writes err, one "config: " line per problem.
func reportConfigError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "config: %s\n", escape.String(line))
	}
}

// parseFlags parses flags that may stand before, between or after the
// positional arguments, and returns the positional ones. Everything after
// "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
