package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/loopguard/loopguard/guard"
)

// builder assembles steps from messages and pairs results with their calls.
type builder struct {
	t        Trace
	pending  map[string]callRef // call id -> call
	answered map[string]int     // call id -> line of its result
	function string             // the id given to the newest OpenAI function_call
	// lenient makes a result for no pending call (its call before the
	// items read, or answered already) nothing instead of an error, and
	// lets items of unknown roles or types through.
	lenient bool
	// open reports whether the newest step is a Responses model turn that
	// further output items join.
	open bool
}

type callRef struct{ step, call int }

func newBuilder() *builder {
	return &builder{pending: make(map[string]callRef), answered: make(map[string]int)}
}

// step starts a new step on line.
func (b *builder) step(line int) *guard.Step {
	b.t.Steps = append(b.t.Steps, guard.Step{})
	b.t.Lines = append(b.t.Lines, line)
	return &b.t.Steps[len(b.t.Steps)-1]
}

// call adds a call to the newest step; id, when not empty, is what its
// result will name.
func (b *builder) call(id string, c guard.ToolCall) {
	i := len(b.t.Steps) - 1
	s := &b.t.Steps[i]
	s.ToolCalls = append(s.ToolCalls, c)
	if id != "" {
		b.pending[id] = callRef{i, len(s.ToolCalls) - 1}
		delete(b.answered, id)
	}
}

// result pairs a result (or, with failed, an error) with the call named id;
// idField names the field that holds ids ("" when id describes itself).
func (b *builder) result(line int, idField, id string, result any, failed bool, errText string) error {
	ref, ok := b.pending[id]
	if !ok && b.lenient {
		return nil
	}
	if !ok {
		name := fmt.Sprintf("%s %q", idField, id)
		if idField == "" {
			name = id
		}
		if first, seen := b.answered[id]; seen {
			return &Error{Line: line, Err: fmt.Errorf("a second result for %s (the first is on line %d)", name, first)}
		}
		return &Error{Line: line, Err: fmt.Errorf("a result for %s, which no earlier call has", name)}
	}
	delete(b.pending, id)
	b.answered[id] = line
	c := &b.t.Steps[ref.step].ToolCalls[ref.call]
	if failed {
		if errText == "" {
			errText = "tool error"
		}
		c.Err = errors.New(errText)
		return nil
	}
	c.Result = result
	return nil
}

// input adds text to the newest step's input. Input before the first step is
// the task, not new input, and is dropped.
func (b *builder) input(text string) {
	if len(b.t.Steps) == 0 || text == "" {
		return
	}
	s := &b.t.Steps[len(b.t.Steps)-1]
	if s.Input != "" {
		s.Input += "\n"
	}
	s.Input += text
}

// An itemSeq calls fn for every item of a transcript, with its line, and
// stops at the first error.
type itemSeq func(fn func(raw json.RawMessage, line int) error) error

// itemsOf returns the items of data.
func itemsOf(data []byte) itemSeq {
	return func(fn func(raw json.RawMessage, line int) error) error { return each(data, fn) }
}

// each calls fn for every item of data.
func each(data []byte, fn func(raw json.RawMessage, line int) error) error {
	it := newItems(data)
	for {
		raw, line, err := it.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(raw, line); err != nil {
			return err
		}
	}
}

// arguments turns a JSON-string of arguments into a json.RawMessage when it
// holds valid JSON, and keeps the string otherwise.
func arguments(s string) any {
	if b := []byte(strings.TrimSpace(s)); len(b) > 0 && json.Valid(b) {
		return json.RawMessage(b)
	}
	return s
}

// count returns a token count: a non-negative whole number, or 0.
func count(f float64) int64 {
	if !(f >= 0) || f != math.Trunc(f) || f >= math.MaxInt64 {
		return 0
	}
	return int64(f)
}

// part is a content part or block of either provider: the fields of both
// that the importers read.
type part struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Refusal   *string         `json:"refusal"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// content reads a content field: a string, null, or an array of parts.
func content(raw json.RawMessage, line int, what string) (text string, parts []part, isText bool, err error) {
	switch kind(raw) {
	case "nothing", "null":
		return "", nil, true, nil
	case "a string":
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", nil, false, &Error{Line: line, Err: fmt.Errorf("%s content: %w", what, err)}
		}
		return text, nil, true, nil
	case "an array":
		var raws []json.RawMessage
		if err := json.Unmarshal(raw, &raws); err != nil {
			return "", nil, false, &Error{Line: line, Err: fmt.Errorf("%s content: %w", what, err)}
		}
		parts = make([]part, len(raws))
		for i, r := range raws {
			if err := object(r, line, fmt.Sprintf("%s content[%d]", what, i), &parts[i]); err != nil {
				return "", nil, false, err
			}
		}
		return "", parts, false, nil
	}
	return "", nil, false, &Error{Line: line, Err: fmt.Errorf("%s content must be a string, an array or null, not %s", what, kind(raw))}
}

// joinText joins the text of the parts of type "text" (and refusals, with
// refusal set), and says whether every part was one of them.
func joinText(parts []part, refusal bool) (string, bool) {
	var b strings.Builder
	all := true
	for _, p := range parts {
		var s string
		switch {
		case p.Type == "text" && p.Text != nil:
			s = *p.Text
		case refusal && p.Type == "refusal" && p.Refusal != nil:
			s = *p.Refusal
		default:
			all = false
			continue
		}
		if b.Len() > 0 && s != "" {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String(), all
}

// inputText is the text of user content: its text parts, and a mark such as
// "[image]" for each other part, since any of them is new input.
func inputText(parts []part, skip func(part) bool) string {
	var b strings.Builder
	for _, p := range parts {
		if skip(p) {
			continue
		}
		s := ""
		if p.Type == "text" && p.Text != nil {
			s = *p.Text
		} else {
			s = "[" + p.Type + "]"
		}
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

// resultValue is what a result's content becomes: its text when it is a
// string or only text parts, and the raw JSON otherwise (nil for none).
func resultValue(text string, parts []part, isText bool, raw json.RawMessage) (any, string) {
	if isText {
		if kind(raw) == "null" || kind(raw) == "nothing" {
			return nil, ""
		}
		return text, text
	}
	if s, all := joinText(parts, false); all {
		return s, s
	}
	return json.RawMessage(raw), string(raw)
}
