package core

// The Restore of before the one-pass reader (commit 430a9fe), kept as the
// reference that FuzzRestoreAgreesWithReference holds the new one to: it
// reads the snapshot with encoding/json, four times over, and checks its keys
// with checkKeys.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
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
			fe.Extra = append(fe.Extra, d.Name())
			continue
		}
		if r.Fingerprint != Fingerprint(d) {
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

// ReferenceUnmarshalState is UnmarshalState as it was before presize and the
// allocation-free key checker (commit 430a9fe). It decodes a detector's state (JSON that the detector's
// Snapshot wrote) into v, as json.Unmarshal does but strictly, so that a
// detector's Restore accepts only what its Snapshot can write: every object
// key must be spelt exactly as the struct refField it sets (encoding/json would
// take it in any case) and appear once (encoding/json would keep the last),
// a key that no refField reads is an error, and the keys of a map appear once
// each. The built-in detectors read their states with it; a detector of your
// own may too.
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

// referenceCheckKeys checks the object keys of the JSON text data against the type t
// that it will be decoded into (nil for any value): exact spelling, no
// duplicates and, unless unknown is set, no key that no refField reads.
// Values whose type decodes itself (json.Unmarshaler, TextUnmarshaler) are
// only checked for duplicate keys. It reads the text without decoding any
// value, and reports text that is not JSON as an error.
func referenceCheckKeys(data []byte, t reflect.Type, unknown bool) error {
	k := refKeyChecker{data: data, unknown: unknown}
	if err := k.value(t); err != nil {
		return err
	}
	if k.space(); k.i != len(k.data) {
		return k.invalid()
	}
	return nil
}

type refKeyChecker struct {
	data    []byte
	i       int
	unknown bool
	depth   int       // arrays and objects open
	keys    []string  // the keys of the objects open, in order
	path    []refStep // to the value being checked
}

// Limits of the key checker: as deep as encoding/json reads, and the keys
// of one object looked up in a list up to a few, in a map beyond.
const (
	refMaxCheckDepth = 10_000
	refListedKeys    = 16
)

// refStep is one step of the path to the value being checked: a key, or for an
// array element its index (key "").
type refStep struct {
	key   string
	index int
}

// where returns the path of the value being checked, for an error.
func (k *refKeyChecker) where() string {
	var b strings.Builder
	for i, p := range k.path {
		switch {
		case p.key == "":
			fmt.Fprintf(&b, "[%d]", p.index)
		case i > 0:
			b.WriteString("." + p.key)
		default:
			b.WriteString(p.key)
		}
	}
	return refCutKey(b.String())
}

var (
	refJSONUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	refTextUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// refDecodesItself reports whether values of t decode themselves.
func refDecodesItself(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer {
		t = reflect.PointerTo(t)
	}
	return t.Implements(refJSONUnmarshaler) || t.Implements(refTextUnmarshaler)
}

// refField is what a key of a struct's object may set.
type refField struct {
	name string
	typ  reflect.Type
}

// refFieldsOf lists the JSON keys of struct type t, as encoding/json names its
// fields (embedded structs are not flattened: the states have none).
func refFieldsOf(t reflect.Type) []refField {
	var out []refField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			tagName, _, _ := strings.Cut(tag, ",")
			if tagName == "-" && !strings.Contains(tag, ",") {
				continue
			}
			if tagName != "" {
				name = tagName
			}
		}
		out = append(out, refField{name, f.Type})
	}
	return out
}

func (k *refKeyChecker) invalid() error {
	return fmt.Errorf("guard: state: not valid JSON (at byte %d)", k.i)
}

func (k *refKeyChecker) space() {
	for k.i < len(k.data) {
		switch k.data[k.i] {
		case ' ', '\t', '\n', '\r':
			k.i++
		default:
			return
		}
	}
}

// str reads a string whose '"' is next and returns its raw contents and
// whether they hold an escape.
func (k *refKeyChecker) str() (raw []byte, escaped bool, err error) {
	start := k.i + 1
	for i := start; i < len(k.data); i++ {
		switch k.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			k.i = i + 1
			return k.data[start:i], escaped, nil
		}
	}
	return nil, false, k.invalid()
}

// value checks the next value of the text, to be decoded into t (nil for
// any).
func (k *refKeyChecker) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		if refDecodesItself(t) {
			break
		}
		t = t.Elem()
	}
	if t != nil && (refDecodesItself(t) || t.Kind() == reflect.Interface) {
		t = nil
	}
	k.space()
	if k.i >= len(k.data) {
		return k.invalid()
	}
	switch k.data[k.i] {
	case '{', '[':
		if k.depth++; k.depth > refMaxCheckDepth {
			return fmt.Errorf("guard: state: nested deeper than %d levels", refMaxCheckDepth)
		}
		defer func() { k.depth-- }()
	}
	switch k.data[k.i] {
	case '{':
		k.i++
		return k.object(t)
	case '[':
		k.i++
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		if k.space(); k.i < len(k.data) && k.data[k.i] == ']' {
			k.i++
			return nil
		}
		for n := 0; ; n++ {
			k.path = append(k.path, refStep{index: n})
			err := k.value(elem)
			k.path = k.path[:len(k.path)-1]
			if err != nil {
				return err
			}
			if k.space(); k.i >= len(k.data) {
				return k.invalid()
			}
			c := k.data[k.i]
			k.i++
			if c == ']' {
				return nil
			}
			if c != ',' {
				return k.invalid()
			}
		}
	case '"':
		_, _, err := k.str()
		return err
	}
	// A number or a literal: json.Unmarshal checks it.
	for k.i < len(k.data) {
		switch k.data[k.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		k.i++
	}
	return nil
}

// object checks the members of an object whose '{' was read.
func (k *refKeyChecker) object(t reflect.Type) error {
	var fields []refField
	var elem reflect.Type
	isStruct := t != nil && t.Kind() == reflect.Struct
	switch {
	case isStruct:
		fields = refFieldsOf(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	if k.space(); k.i < len(k.data) && k.data[k.i] == '}' {
		k.i++
		return nil
	}
	first := len(k.keys)
	defer func() { k.keys = k.keys[:first] }()
	var seen map[string]bool // once the object has more than refListedKeys keys
	for {
		if k.space(); k.i >= len(k.data) || k.data[k.i] != '"' {
			return k.invalid()
		}
		raw, escaped, err := k.str()
		if err != nil {
			return err
		}
		key := string(raw)
		if escaped {
			var unquoted string
			if json.Unmarshal(k.data[k.i-len(raw)-2:k.i], &unquoted) != nil {
				return k.invalid()
			}
			key = unquoted
		}
		k.path = append(k.path, refStep{key: key})
		where := k.where
		switch {
		case seen != nil:
			if seen[key] {
				return fmt.Errorf("guard: state: key %q appears twice", where())
			}
			seen[key] = true
		case slices.Contains(k.keys[first:], key):
			return fmt.Errorf("guard: state: key %q appears twice", where())
		case len(k.keys)-first == refListedKeys:
			seen = make(map[string]bool, 2*refListedKeys)
			for _, old := range k.keys[first:] {
				seen[old] = true
			}
			seen[key] = true
		default:
			k.keys = append(k.keys, key)
		}
		vt := elem
		if isStruct {
			vt = nil
			known := false
			for _, f := range fields {
				if f.name == key {
					vt, known = f.typ, true
					break
				}
			}
			if !known {
				for _, f := range fields {
					if strings.EqualFold(f.name, key) {
						return fmt.Errorf("guard: state: key %q is not spelt %q", where(), f.name)
					}
				}
				if !k.unknown {
					return fmt.Errorf("guard: state: unknown key %q", where())
				}
			}
		}
		if k.space(); k.i >= len(k.data) || k.data[k.i] != ':' {
			return k.invalid()
		}
		k.i++
		if err := k.value(vt); err != nil {
			return err
		}
		k.path = k.path[:len(k.path)-1]
		if k.space(); k.i >= len(k.data) {
			return k.invalid()
		}
		c := k.data[k.i]
		k.i++
		if c == '}' {
			return nil
		}
		if c != ',' {
			return k.invalid()
		}
	}
}

func refCutKey(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
