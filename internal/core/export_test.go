package core

// The Restore of before the one-pass reader (commit 430a9fe), kept as the
// reference that FuzzRestoreAgreesWithReference holds the new one to: it
// reads the snapshot with encoding/json, four times over, and checks its keys
// with referenceCheckKeys, an independent key checker on json.Decoder's
// tokens (not a copy of UnmarshalState's scanner).

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/loopguard/loopguard/canonical"
)

// snapshotJSON is the envelope of a snapshot, as encoding/json reads it:
// the shape that Snapshot writes by hand.
type snapshotJSON struct {
	Version         int              `json:"version"`
	Steps           int              `json:"steps"`
	ToolCalls       int              `json:"toolCalls"`
	FailedToolCalls int              `json:"failedToolCalls"`
	Totals          Totals           `json:"totals"`
	Guard           canonical.Sum    `json:"guard"`
	Detectors       []detectorRecord `json:"detectors"`
	FirstStop       json.RawMessage  `json:"firstStop"`
}

type detectorRecord struct {
	Name        string          `json:"name"`
	Fingerprint canonical.Sum   `json:"fingerprint"`
	State       json.RawMessage `json:"state"`
}

// ReferenceRestore is Restore as it was before the one-pass reader, taught
// the firstStop key.
func ReferenceRestore(data []byte, cfg Config) (*Guard, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := g.referenceRestore(data); err != nil {
		return nil, err
	}
	return g, nil
}

// referenceRestore is the restore of before.
func (g *Guard) referenceRestore(data []byte) error {
	o := g.opts
	if len(data) > MaxSnapshotBytes {
		return stateErr("snapshot is larger than %d bytes", MaxSnapshotBytes)
	}
	// The limits as they were, not the constants, so that a change of
	// them shows as a disagreement with the reference.
	if depth := jsonDepth(data); depth > 32 {
		return stateErr("snapshot is nested deeper than %d levels", 32)
	}
	var s snapshotJSON
	if err := strictObject(data); err != nil {
		return err
	}
	var version struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return stateErr("%v", err)
	}
	if string(version.Version) != "1" {
		return stateErr("unknown version %s (this build reads version %d)", orMissing(version.Version), SnapshotVersion)
	}
	// Keys in another case, or twice, anywhere in the document: encoding/json
	// would read the last of them, in any case.
	if err := referenceCheckKeys(data, reflect.TypeFor[snapshotJSON](), true); err != nil {
		return stateErr("%v", strings.TrimPrefix(err.Error(), "guard: state: "))
	}
	if err := requireKeys(data, "steps", "toolCalls", "failedToolCalls", "totals", "guard", "detectors"); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return stateErr("%v", err)
	}
	counters := Counters{Steps: s.Steps, ToolCalls: s.ToolCalls, FailedToolCalls: s.FailedToolCalls, Totals: s.Totals}
	if err := counters.check(); err != nil {
		return err
	}
	if s.Detectors == nil {
		return stateErr("no detectors list")
	}

	fe := &FingerprintError{}
	if s.Guard != o.fingerprint() {
		fe.Changed = append(fe.Changed, "guard")
	}
	var raws struct {
		Detectors []json.RawMessage `json:"detectors"`
	}
	if err := json.Unmarshal(data, &raws); err != nil {
		return stateErr("%v", err)
	}
	for i, r := range raws.Detectors {
		if err := requireKeys(r, "name", "fingerprint"); err != nil {
			return fmt.Errorf("detector #%d: %w", i, err)
		}
		if err := requirePresent(r, "state"); err != nil {
			return fmt.Errorf("detector #%d: %w", i, err)
		}
	}
	records := make(map[string]detectorRecord, len(s.Detectors))
	for _, r := range s.Detectors {
		if _, dup := records[r.Name]; dup {
			return stateErr("detector %q appears twice", r.Name)
		}
		records[r.Name] = r
	}
	for _, d := range g.rules {
		r, ok := records[d.Name()]
		if !ok {
			if !o.AllowNewRules {
				fe.Extra = append(fe.Extra, d.Name())
			}
			continue
		}
		if !fingerprintMatches(d, r.Fingerprint) {
			if l, ok := d.(Limiter); !(o.AllowLimitChanges && ok && l.OnlyLimits()) {
				fe.Changed = append(fe.Changed, d.Name())
			}
		}
		delete(records, d.Name())
	}
	for name := range records {
		fe.Missing = append(fe.Missing, name)
	}
	slices.Sort(fe.Missing)
	if len(fe.Changed)+len(fe.Missing)+len(fe.Extra) > 0 {
		return fe
	}
	for i, st := range g.states {
		if err := restoreState(st, recordState(s.Detectors, g.names[i]), counters); err != nil {
			return &DetectorError{Name: g.names[i], Err: errors.Join(ErrInvalidState, err)}
		}
	}
	if len(s.FirstStop) > 0 && string(s.FirstStop) != "null" {
		var fs firstStop
		if err := ReferenceUnmarshalState(s.FirstStop, &fs); err != nil {
			return stateErr("firstStop: %v", err)
		}
		if fs.Step < 0 || fs.Step >= counters.Steps || fs.Reason == "" || fs.Code == "" ||
			len(fs.Reason) > MaxNameLen || len(fs.Code) > MaxNameLen || len(fs.Rule) > MaxNameLen {
			return stateErr("firstStop: not a stop of this run")
		}
		g.first, g.firstStep = fs.verdict(), fs.Step
	}
	g.steps, g.toolCalls, g.failedCalls, g.totals = s.Steps, s.ToolCalls, s.FailedToolCalls, s.Totals
	return nil
}

func recordState(rs []detectorRecord, name string) []byte {
	for _, r := range rs {
		if r.Name == name {
			if len(r.State) == 0 {
				return []byte("null")
			}
			return r.State
		}
	}
	return []byte("null")
}

// requireKeys checks that the JSON object data has each key, spelt exactly
// (encoding/json would match any case), with a value that is not null
// (encoding/json would leave the zero value).
func requireKeys(data []byte, keys ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return stateErr("%v", err)
	}
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return stateErr("no %q", k)
		}
		if string(bytes.TrimSpace(v)) == "null" {
			return stateErr("%q is null", k)
		}
	}
	return nil
}

// requirePresent checks that the JSON object data has each key, spelt
// exactly; null is allowed (a detector's fresh state is null).
func requirePresent(data []byte, keys ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return stateErr("%v", err)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return stateErr("no %q", k)
		}
	}
	return nil
}

// strictObject checks that data is one JSON object.
func strictObject(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return stateErr("not a JSON object")
	}
	return nil
}

// ReferenceUnmarshalState is the oracle of UnmarshalState: it decodes a
// detector's state into v with json.Unmarshal after referenceCheckKeys has
// checked, on json.Decoder's tokens, the rules UnmarshalState promises: every
// object key spelt exactly as the struct field it sets, once, and read by
// some field; the keys of a map once each.
func ReferenceUnmarshalState(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return errors.New("guard: ReferenceUnmarshalState needs a pointer")
	}
	if err := referenceCheckKeys(data, t.Elem(), false); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// referenceCheckKeys checks the object keys of the JSON text data against
// the type t that it will be decoded into (nil for any value): exact
// spelling, no duplicates and, unless unknown is set, no key that no field
// reads. Values whose type decodes itself (json.Unmarshaler,
// TextUnmarshaler) are only checked for duplicate keys; text that is not
// JSON is an error. It walks json.Decoder's tokens, so that it shares no code
// with the one-pass scanner of UnmarshalState that it is the oracle of.
func referenceCheckKeys(data []byte, t reflect.Type, unknown bool) error {
	c := tokenChecker{dec: json.NewDecoder(bytes.NewReader(data)), unknown: unknown}
	if err := c.value(t, "", 0); err != nil {
		return err
	}
	if _, err := c.dec.Token(); err != io.EOF {
		return errors.New("guard: state: not valid JSON (text after the value)")
	}
	return nil
}

type tokenChecker struct {
	dec     *json.Decoder
	unknown bool
}

// target is the type that a value decoded into t sets: through pointers,
// and nil (any value) for an interface or a type that decodes itself.
func target(t reflect.Type) reflect.Type {
	self := func(t reflect.Type) bool {
		p := reflect.PointerTo(t)
		return p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
	}
	for ; t != nil; t = t.Elem() {
		switch {
		case self(t) || t.Kind() == reflect.Interface:
			return nil
		case t.Kind() != reflect.Pointer:
			return t
		}
	}
	return nil
}

// keyTypes maps the JSON names of struct t's fields to their types, as
// encoding/json names them (no embedded structs: the states have none).
func keyTypes(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for _, f := range reflect.VisibleFields(t) {
		tag, tagged := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		if !f.IsExported() || len(f.Index) > 1 || tag == "-" {
			continue
		}
		if !tagged || name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// value checks the next value of the token stream, to be decoded into t, at
// path, with depth arrays and objects open around it.
func (c *tokenChecker) value(t reflect.Type, path string, depth int) error {
	t = target(t)
	tok, err := c.dec.Token()
	if err != nil {
		return fmt.Errorf("guard: state: not valid JSON: %w", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: json.Unmarshal checks its type
	}
	if depth+1 > maxJSONDepth {
		return fmt.Errorf("guard: state: nested deeper than %d levels", maxJSONDepth)
	}
	var elem reflect.Type
	var fields map[string]reflect.Type
	switch {
	case t == nil:
	case delim == '{' && t.Kind() == reflect.Struct:
		fields = keyTypes(t)
	case delim == '{' && t.Kind() == reflect.Map,
		delim == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		elem = t.Elem()
	}
	seen := make(map[string]bool)
	for i := 0; c.dec.More(); i++ {
		at := fmt.Sprintf("%s[%d]", path, i)
		vt := elem
		if delim == '{' {
			tok, err := c.dec.Token()
			if err != nil {
				return fmt.Errorf("guard: state: not valid JSON: %w", err)
			}
			key := tok.(string)
			if at = key; path != "" {
				at = path + "." + key
			}
			if seen[key] {
				return fmt.Errorf("guard: state: key %q appears twice", at)
			}
			seen[key] = true
			if fields != nil {
				vt = fields[key]
				if _, known := fields[key]; !known {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return fmt.Errorf("guard: state: key %q is not spelt %q", at, name)
						}
					}
					if !c.unknown {
						return fmt.Errorf("guard: state: unknown key %q", at)
					}
				}
			}
		}
		if err := c.value(vt, at, depth+1); err != nil {
			return err
		}
	}
	if _, err := c.dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("guard: state: not valid JSON: %w", err)
	}
	return nil
}
