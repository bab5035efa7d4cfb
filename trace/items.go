package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/loopguard/loopguard/internal/strictjson"
)

// items walks the values of a transcript: JSON values one after the other
// (JSON Lines among them), where an array stands for its elements and an
// object with a "messages" (or "input") array for those items. Each value comes with
// the line it starts on.
type items struct {
	data  []byte
	top   *json.Decoder
	sub   *json.Decoder // the array being walked, or nil
	base  int64         // offset of sub's input in data
	lines lineCounter
	// lastStart is the offset in data where the item next returned last
	// starts.
	lastStart int64
}

func newItems(data []byte) *items {
	return &items{data: data, top: json.NewDecoder(bytes.NewReader(data)), lines: lineCounter{data: data, line: 1}}
}

// next returns the next item and its line, or io.EOF after the last.
func (it *items) next() (json.RawMessage, int, error) {
	for {
		if it.sub != nil {
			if it.sub.More() {
				from := it.base + it.sub.InputOffset()
				var raw json.RawMessage
				if err := it.sub.Decode(&raw); err != nil {
					return nil, 0, it.syntax(err, it.base, from)
				}
				start := it.base + it.sub.InputOffset() - int64(len(raw))
				it.lastStart = start
				return raw, it.lines.at(start), nil
			}
			it.sub = nil
		}
		from := it.top.InputOffset()
		var raw json.RawMessage
		if err := it.top.Decode(&raw); err != nil {
			if err == io.EOF {
				return nil, 0, io.EOF
			}
			return nil, 0, it.syntax(err, 0, from)
		}
		start := it.top.InputOffset() - int64(len(raw))
		if sub := openArray(raw); sub != nil {
			it.sub, it.base = sub, start
			continue
		}
		it.lastStart = start
		return raw, it.lines.at(start), nil
	}
}

// openArray returns a decoder positioned inside raw's array of items when raw
// is an array or an object with a "messages" array (a Chat Completions or
// Messages request) or an "input" array (a Responses request), and nil
// otherwise.
func openArray(raw json.RawMessage) *json.Decoder {
	if len(raw) == 0 {
		return nil
	}
	switch {
	case raw[0] == '[':
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil
		}
		return dec
	case raw[0] != '{':
		return nil
	}
	if bytes.Contains(raw, []byte(`"messages"`)) {
		if dec := memberArray(raw, "messages"); dec != nil {
			return dec
		}
	}
	if bytes.Contains(raw, []byte(`"input"`)) {
		return memberArray(raw, "input")
	}
	return nil
}

// memberArray returns a decoder positioned inside the array that is the
// value of the object raw's member key, or nil when there is none.
func memberArray(raw json.RawMessage, key string) *json.Decoder {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k != key {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil
		}
		return dec
	}
	return nil
}

// syntax turns a decoding error into an *Error on the line where it
// occurred: the line of the offending byte, or, when the input ends inside a
// value, the line where that value starts (the decoder read on from offset
// from).
func (it *items) syntax(err error, base, from int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{Line: it.lines.at(base + max(se.Offset-1, 0)), Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	for from < int64(len(it.data)) && strings.IndexByte(" \t\r\n,", it.data[from]) >= 0 {
		from++
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("unexpected end of input")
	}
	return &Error{Line: it.lines.at(from), Err: fmt.Errorf("invalid JSON: %w", err)}
}

// lineCounter turns offsets into 1-based line numbers, counting forward from
// the last offset asked about.
type lineCounter struct {
	data []byte
	off  int64
	line int
}

func (c *lineCounter) at(off int64) int {
	off = min(max(off, 0), int64(len(c.data)))
	if off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.off = off
	return c.line
}

// lineOf returns the 1-based line of an offset.
func lineOf(data []byte, off int) int {
	return 1 + bytes.Count(data[:min(max(off, 0), len(data))], []byte{'\n'})
}

// firstNonSpace returns the offset of the first byte that is not JSON white
// space, or len(data).
func firstNonSpace(data []byte) int {
	for i, c := range data {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return i
		}
	}
	return len(data)
}

// object unmarshals an item into v, which must be a pointer to a struct; an
// item that is not a JSON object, or whose fields have the wrong types, is an
// *Error on its line.
func object(raw json.RawMessage, line int, what string, v any) error {
	if len(raw) == 0 || raw[0] != '{' {
		return &Error{Line: line, Err: fmt.Errorf("%s must be a JSON object, not %s", what, kind(raw))}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &Error{Line: line, Err: fmt.Errorf("%s: field %s must be %s, not %s", what, te.Field, typeName(te), te.Value)}
		}
		return &Error{Line: line, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

func typeName(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind().String() {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int64", "float64":
		return "a number"
	}
	return te.Type.String()
}

// kind names the kind of a JSON value for error messages.
func kind(raw json.RawMessage) string { return strictjson.Kind(raw) }
