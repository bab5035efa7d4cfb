package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/loopguard/loopguard/guard"
)

// parseSteps reads step lines, or a JSON array of steps.
func parseSteps(data []byte) (*Trace, error) {
	if off := firstNonSpace(data); off < len(data) && data[off] == '[' {
		return parseStepArray(data)
	}
	t := &Trace{}
	// The steps' arguments and results point into one copy of data, so
	// that they do not change when the caller reuses data.
	data = bytes.Clone(data)
	n := bytes.Count(data, []byte{'\n'}) + 1
	t.Steps = make([]guard.Step, 0, n)
	t.Lines = make([]int, 0, n)
	for line := 1; len(data) > 0; line++ {
		var text []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			text, data = data, nil
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		s, ok := fastStep(text)
		if !ok {
			if err := unmarshalStep(text, &s); err != nil {
				return nil, &Error{Line: line, Err: err}
			}
		}
		t.Steps = append(t.Steps, s)
		t.Lines = append(t.Lines, line)
	}
	return t, nil
}

// parseStepArray reads a JSON array of steps.
func parseStepArray(data []byte) (*Trace, error) {
	t := &Trace{}
	it := newItems(data)
	for {
		raw, line, err := it.next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		var s guard.Step
		if err := unmarshalStep(raw, &s); err != nil {
			return nil, &Error{Line: line, Err: err}
		}
		t.Steps = append(t.Steps, s)
		t.Lines = append(t.Lines, line)
	}
}

// unmarshalStep reads one step, with errors that say what is wrong.
func unmarshalStep(text []byte, s *guard.Step) error {
	if text[0] != '{' {
		if !json.Valid(text) {
			return invalidJSON(text)
		}
		return fmt.Errorf("a step must be a JSON object, not %s", kind(text))
	}
	if err := json.Unmarshal(text, s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		return err
	}
	return nil
}

// invalidJSON returns the syntax error of text.
func invalidJSON(text []byte) error {
	var v any
	err := json.Unmarshal(text, &v)
	if err == nil {
		return errors.New("invalid JSON")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}
