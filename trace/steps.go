package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/strictjson"
)

// This file reads loopguard's step lines: steps, and the control lines of
// replay (preflight, snapshot, reset). Keys are strict: a key that no step
// has is an *UnknownKeyError, or, under a lenient KeyPolicy and when it
// resembles no known key, a warning or nothing. Values are read as leniently
// as guard.Step.UnmarshalJSON reads them.

// A decoder reads the entries of one log and remembers which unknown keys
// it has been told about.
type decoder struct {
	policy KeyPolicy
	warn   func(error)
	benign map[keyID]bool // unknown keys already let through
	refs   []keyRef       // scratch for fastStep
}

// A keyID is an unknown key wherever it stands in its place: the key of the
// third call and that of the first are one key.
type keyID struct {
	place place
	key   string
}

func newDecoder(policy KeyPolicy, warn func(error)) *decoder {
	return &decoder{policy: policy, warn: warn, benign: make(map[keyID]bool)}
}

// entry reads one step line (or element of a JSON array of steps), already
// trimmed and not empty. The step's arguments and results point into text.
func (d *decoder) entry(text []byte, line int) (Entry, error) {
	if text[0] != '{' {
		if !json.Valid(text) {
			return Entry{}, &Error{Line: line, Err: invalidJSON(text)}
		}
		return Entry{}, &Error{Line: line, Err: fmt.Errorf("a step must be a JSON object, not %s", kind(text))}
	}
	d.refs = d.refs[:0]
	if s, ok := fastStep(text, &d.refs); ok && !hasControlKey(d.refs) {
		if err := d.unknown(line, d.refs); err != nil {
			return Entry{}, err
		}
		return Entry{Kind: StepEntry, Line: line, Step: s}, nil
	}
	return d.slow(text, line)
}

func hasControlKey(refs []keyRef) bool {
	for _, r := range refs {
		if r.place == placeStep && slices.Contains(controlKeys, r.key) {
			return true
		}
	}
	return false
}

// unknown lets the unknown keys through, warns of them, or returns the
// error of the first that the policy does not let through.
func (d *decoder) unknown(line int, refs []keyRef) error {
	for _, r := range refs {
		id := keyID{r.place, r.key}
		if d.benign[id] {
			continue
		}
		e := unknownKey(r.prefix, r.place, r.key)
		if e.Resembles() || d.policy == RejectUnknownKeys {
			return &Error{Line: line, Err: e}
		}
		d.benign[id] = true
		if d.policy == WarnUnknownKeys && d.warn != nil {
			d.warn(&Error{Line: line, Err: e})
		}
	}
	return nil
}

// slow reads a line that fastStep did not: a control line, or a step with
// something out of the ordinary (a key in another case, a key given twice,
// deep nesting, invalid JSON).
func (d *decoder) slow(text []byte, line int) (Entry, error) {
	if !json.Valid(text) {
		return Entry{}, &Error{Line: line, Err: invalidJSON(text)}
	}
	ms, err := strictjson.Members(text)
	if err != nil {
		return Entry{}, &Error{Line: line, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	for _, m := range ms {
		if slices.Contains(controlKeys, m.Key) {
			return d.control(m.Key, ms, line)
		}
	}
	var refs []keyRef
	for _, m := range ms {
		if !isKnown(placeStep, m.Key) {
			refs = append(refs, keyRef{place: placeStep, key: m.Key})
			continue
		}
		switch m.Key {
		case "toolCalls", "refused":
			refs = callKeys(m.Value, m.Key, refs)
		case "usage":
			refs = objectKeys(m.Value, "usage", placeUsage, refs)
		}
	}
	if err := d.unknown(line, refs); err != nil {
		return Entry{}, err
	}
	var s guard.Step
	if err := s.UnmarshalJSON(text); err != nil {
		return Entry{}, &Error{Line: line, Err: err}
	}
	return Entry{Kind: StepEntry, Line: line, Step: s}, nil
}

// callKeys appends the unknown keys of the calls in the array raw (the value
// of the field named array) to refs. Values that are not calls are left to
// the lenient reading of values.
func callKeys(raw json.RawMessage, array string, refs []keyRef) []keyRef {
	var calls []json.RawMessage
	if kind(raw) != "an array" || json.Unmarshal(raw, &calls) != nil {
		return refs
	}
	for i, c := range calls {
		refs = objectKeys(c, strictjson.Index(array, i), placeCall, refs)
	}
	return refs
}

// objectKeys appends the unknown keys of the object raw, at place p under
// prefix, to refs. A value that is no object has no keys.
func objectKeys(raw json.RawMessage, prefix string, p place, refs []keyRef) []keyRef {
	if kind(raw) != "an object" {
		return refs
	}
	ms, err := strictjson.Members(bytes.TrimSpace(raw))
	if err != nil {
		return refs
	}
	for _, m := range ms {
		if !isKnown(p, m.Key) {
			refs = append(refs, keyRef{prefix: prefix, place: p, key: m.Key})
		}
	}
	return refs
}

// control reads a control line: {"preflight": CALL or [CALL, ...]},
// {"snapshot": true} or {"reset": true}, each with an optional "meta".
func (d *decoder) control(key string, ms []strictjson.Member, line int) (Entry, error) {
	fail := func(format string, args ...any) (Entry, error) {
		return Entry{}, &Error{Line: line, Err: fmt.Errorf(format, args...)}
	}
	var value json.RawMessage
	for _, m := range ms {
		switch {
		case m.Key == key:
			value = m.Value
		case m.Key == "meta":
		case slices.Contains(controlKeys, m.Key):
			return fail("a line with both %q and %q: give each its own line", key, m.Key)
		default:
			return fail("a %s line holds %q and nothing else (but \"meta\"), not %q", key, key, m.Key)
		}
	}
	switch key {
	case "snapshot", "reset":
		if string(bytes.TrimSpace(value)) != "true" {
			return fail("%q must be true, not %s", key, bytes.TrimSpace(value))
		}
		kind := SnapshotEntry
		if key == "reset" {
			kind = ResetEntry
		}
		return Entry{Kind: kind, Line: line}, nil
	}
	value = bytes.TrimSpace(value)
	var refs []keyRef
	var doc []byte
	switch {
	case len(value) > 0 && value[0] == '[':
		refs = callKeys(value, "preflight", refs)
		doc = append(append([]byte(`{"toolCalls":`), value...), '}')
	case len(value) > 0 && value[0] == '{':
		refs = objectKeys(value, "preflight", placeCall, refs)
		doc = append(append([]byte(`{"toolCalls":[`), value...), "]}"...)
	}
	if err := d.unknown(line, refs); err != nil {
		return Entry{}, err
	}
	e := Entry{Kind: PreflightEntry, Line: line}
	if doc != nil {
		var s guard.Step
		if s.UnmarshalJSON(doc) == nil {
			e.Calls = s.ToolCalls
		}
	}
	return e, nil
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
