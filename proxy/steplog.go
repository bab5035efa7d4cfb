package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/loopguard/loopguard/guard"
)

// StepLog writes the steps of the runs the proxy sees as loopguard step
// lines, one file per run in a directory (the run's key, made a safe file
// name, with ".jsonl"), so that `loopguard audit DIR` and
// `loopguard audit --html report.html DIR` read and draw them. The lines
// hold what the steps hold, arguments, results and text included: keep the
// directory as private as the agents' own logs.
type StepLog struct {
	dir string
	mu  sync.Mutex
	err error
}

// NewStepLog writes into dir, which it creates if needed.
func NewStepLog(dir string) (*StepLog, error) {
	if dir == "" {
		return nil, fmt.Errorf("proxy: NewStepLog: empty directory: %w", guard.ErrInvalidOption)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &StepLog{dir: dir}, nil
}

// Err returns the first error a write met, or nil.
func (l *StepLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func fileName(key string) string {
	var b strings.Builder
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return strings.TrimLeft(b.String(), ".") + ".jsonl"
}

func (l *StepLog) write(key string, s guard.Step, _ guard.Verdict) {
	if l == nil {
		return
	}
	line, err := s.MarshalJSON()
	if err == nil {
		line = append(line, '\n')
		l.mu.Lock()
		defer l.mu.Unlock()
		var f *os.File
		f, err = os.OpenFile(filepath.Join(l.dir, fileName(key)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = f.Write(line)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil && l.err == nil {
			l.err = err
		}
		return
	}
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}
