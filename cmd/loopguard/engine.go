package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/escape"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

// This file is the engine replay and audit share: how an input is opened
// and read (one trace.Reader, with the same options), and how its entries go
// through a guard. replay prints every record; audit sums them up. So one
// file gives both commands the same verdicts on the same lines.

// A record is what the engine says about one entry. Its JSON form is replay's
// output contract.
type record struct {
	Line int `json:"line"`
	// Run names the entry's run in an input that holds several (OTLP).
	Run      string          `json:"run,omitempty"`
	Kind     string          `json:"kind"`
	Step     *int            `json:"step,omitempty"`
	Verdict  *guard.Verdict  `json:"verdict,omitempty"`
	Decision *guard.Decision `json:"decision,omitempty"`
	Bytes    *int            `json:"bytes,omitempty"`
}

// The kinds of records: those of the entries.
const (
	kindCheck     = "check"
	kindPreflight = "preflight"
	kindSnapshot  = "snapshot"
	kindReset     = "reset"
)

// A session feeds the entries of one log through a guard.
type session struct {
	conf *guardConfig
	g    *guard.Guard
	step int // the index the next step will have
	// probe, when not nil, is a rule after the others that records
	// each step's facts as the rules see them (audit --html). It judges
	// nothing.
	probe *probe
}

func newSession(conf *guardConfig) (*session, error) {
	g, err := conf.newGuard()
	if err != nil {
		return nil, err
	}
	return &session{conf: conf, g: g}, nil
}

// newProbedSession returns a session whose guard holds a probe.
func newProbedSession(conf *guardConfig) (*session, error) {
	p := &probe{}
	g, err := conf.newGuard(p)
	if err != nil {
		return nil, err
	}
	return &session{conf: conf, g: g, probe: p}, nil
}

// extra returns the rules the session adds to those of the options.
func (s *session) extra() []rule.Rule {
	if s.probe == nil {
		return nil
	}
	return []rule.Rule{s.probe}
}

// A failure is an error of the guard itself, not of the input.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }

// apply feeds one entry to the guard. Its errors are failures.
func (s *session) apply(e trace.Entry) (record, error) {
	ctx := context.Background() // a guard in memory: never an error
	rec := record{Line: e.Line, Run: e.Run}
	switch e.Kind {
	case trace.PreflightEntry:
		d, err := s.g.Preflight(ctx, e.Calls...)
		if err != nil {
			return record{}, failure{fmt.Errorf("preflight: %w", err)}
		}
		rec.Kind, rec.Decision = kindPreflight, &d
	case trace.SnapshotEntry:
		data, err := s.g.Snapshot(ctx, guard.SnapshotOptions{Previews: true}) // previews: the output stays as without a snapshot
		if err != nil {
			return record{}, failure{fmt.Errorf("snapshot: %w", err)}
		}
		g, err := s.conf.restore(data, s.extra()...)
		if err != nil {
			return record{}, failure{fmt.Errorf("restoring the snapshot: %w", err)}
		}
		s.g = g
		size := len(data)
		rec.Kind, rec.Bytes = kindSnapshot, &size
	case trace.ResetEntry:
		if err := s.g.Reset(ctx); err != nil {
			return record{}, failure{fmt.Errorf("reset: %w", err)}
		}
		s.step = 0
		rec.Kind = kindReset
	default:
		v, err := s.g.Check(ctx, e.Step)
		if err != nil {
			return record{}, failure{fmt.Errorf("check: %w", err)}
		}
		i := s.step
		s.step++
		rec.Kind, rec.Step, rec.Verdict = kindCheck, &i, &v
	}
	return rec, nil
}

// readOptions are how both commands read their inputs.
type readOptions struct {
	format  trace.Format
	keys    trace.KeyPolicy
	maxSize int64 // the most bytes of one input; 0: no limit
}

// newReader returns the reader of one input. warn, when not nil, is told
// of the unknown keys the policy lets through with a warning.
func (o readOptions) newReader(in io.Reader, warn func(error)) *trace.Reader {
	max := o.maxSize
	if max <= 0 {
		max = -1
	}
	return trace.NewReader(in, &trace.Options{Format: o.format, UnknownKeys: o.keys, Warn: warn, MaxBytes: max})
}

// errTooLarge is the error of an input larger than --max-size.
type errTooLarge struct{ max int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("too large: more than %s (see --max-size)", formatSize(e.max))
}

// open opens the input named name ("-" for standard input) for reading.
// When onlyRegular is set (a file found in a directory), anything but a
// regular file is refused before it is opened: opening a named pipe would
// wait for a writer forever. A regular file larger than the limit is
// refused before it is read.
func (o readOptions) open(name string, stdin io.Reader, onlyRegular bool) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	info, err := os.Stat(name)
	if err != nil {
		return nil, pathError(err)
	}
	switch {
	case info.IsDir():
		return nil, errIsDir
	case onlyRegular && !info.Mode().IsRegular():
		return nil, errNotRegular
	case info.Mode().IsRegular() && o.maxSize > 0 && info.Size() > o.maxSize:
		return nil, errTooLarge{o.maxSize}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, pathError(err)
	}
	return f, nil
}

var (
	errIsDir      = errors.New("is a directory")
	errNotRegular = errors.New("not a regular file")
)

// pathError drops the operation and path from an *os.PathError, which the
// message names already.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// A readError is what is wrong with an input: the line (0 for the whole
// input) and why, for "NAME:LINE: why" or "NAME: why".
type readError struct {
	line int
	msg  string
}

// readErrorOf turns an error of a trace.Reader (or of opening an input)
// into a readError.
func readErrorOf(err error, max int64) readError {
	var te *trace.Error
	if !errors.As(err, &te) {
		return readError{msg: err.Error()}
	}
	if errors.Is(te.Err, trace.ErrTooLarge) {
		return readError{msg: errTooLarge{max}.Error()}
	}
	var ke *trace.UnknownKeyError
	if errors.As(te.Err, &ke) && ke.Provider {
		return readError{line: te.Line, msg: fmt.Sprintf("unknown key %q (an OpenAI or Anthropic message? use --input openai or --input anthropic)", ke.Key)}
	}
	return readError{line: te.Line, msg: te.Err.Error()}
}

// in writes the error after the input's name, escaped.
func (e readError) in(name string) string {
	if e.line > 0 {
		return fmt.Sprintf("%s:%d: %s", escape.String(name), e.line, escape.String(e.msg))
	}
	return fmt.Sprintf("%s: %s", escape.String(name), escape.String(e.msg))
}

// sizeFlag is a number of bytes, written with an optional K, M or G (powers
// of 1024).
type sizeFlag struct{ n int64 }

// defaultMaxSize is the default of --max-size: far more than an agent's run
// writes, and little enough that a few inputs read at once fit in memory.
const defaultMaxSize = trace.DefaultMaxBytes

func (s *sizeFlag) String() string { return formatSize(s.n) }

func (s *sizeFlag) Set(v string) error {
	text := strings.ToUpper(strings.TrimSpace(v))
	text = strings.TrimSuffix(strings.TrimSuffix(text, "B"), "I")
	mult := int64(1)
	if text != "" {
		switch text[len(text)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			text = text[:len(text)-1]
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a number of bytes such as 1048576, 512K, 64M or 2G (0: no limit), not %q", v)
	}
	s.n = n * mult
	return nil
}

// formatSize writes a number of bytes the way --max-size reads it.
func formatSize(n int64) string {
	switch {
	case n <= 0:
		return "0"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// parseInput reads --input.
func parseInput(name string) (trace.Format, error) {
	f, err := trace.ParseFormat(name)
	if err != nil {
		return 0, fmt.Errorf("--input must be auto, steps, openai, responses, anthropic or otlp, not %q", name)
	}
	return f, nil
}
