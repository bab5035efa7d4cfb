package core

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/strictjson"
)

// The keys of a snapshot's envelope that must be present and not null, in
// the order they are checked, as bits of envelope.present and envelope.null.
const (
	keySteps = iota
	keyToolCalls
	keyFailedToolCalls
	keyTotals
	keyGuard
	keyDetectors
	numEnvelopeKeys
)

// envelopeKeys are the keys of the envelope, indexed as above, then
// "version".
var envelopeKeys = [...]string{"steps", "toolCalls", "failedToolCalls", "totals", "guard", "detectors", "version"}

// The keys of a detector's record, as bits of record.present and record.null.
const (
	keyName = iota
	keyFingerprint
	keyState
)

var recordKeys = [...]string{"name", "fingerprint", "state"}

// envelope is a snapshot's envelope as read by readSnapshot: its values,
// and which keys were present and which were null.
type envelope struct {
	version       []byte // the text of its value, nil when missing
	counts        [3]int // steps, toolCalls, failedToolCalls
	totals        []byte // the text of its value
	guard         canonical.Sum
	present, null uint8
	records       []record
	firstStop     []byte // the text of its value; nil when missing or null
}

// record is one detector's record in a snapshot.
type record struct {
	name          []byte // decoded
	fingerprint   canonical.Sum
	state         []byte // the text of its value
	present, null uint8
}

// snapshotReader reads the JSON text of a snapshot in one pass. It checks
// that the text is one JSON object, valid as json.Valid has it, no deeper
// than MaxSnapshotDepth; that no object anywhere has a key twice (after
// unescaping, as encoding/json compares them); and that the keys of the
// envelope and of the detectors' records are spelt in their case (a key
// that equals one of theirs in another case would be read by
// encoding/json). It reads the envelope's values as it goes; the totals and
// the detectors' states are kept as text, for their own strict readers.
type snapshotReader struct {
	data  []byte
	i     int
	depth int
	keys  strictjson.Keys // of the objects open
}

// readSnapshot reads a snapshot's envelope; records, when not nil, is room
// for the detectors' records.
func readSnapshot(data []byte, records []record) (envelope, error) {
	r := snapshotReader{data: data}
	e := envelope{records: records[:0]}
	r.space()
	if r.i >= len(data) || data[r.i] != '{' {
		return e, stateErr("not a JSON object")
	}
	if err := r.envelope(&e); err != nil {
		return e, err
	}
	if r.space(); r.i != len(data) {
		return e, r.invalid()
	}
	return e, nil
}

func (r *snapshotReader) invalid() error {
	if r.i >= len(r.data) {
		return stateErr("not a JSON object: the text ends early")
	}
	return stateErr("not a JSON object: invalid JSON at byte %d", r.i)
}

// typeErr reports a value of the wrong type for a key.
func (r *snapshotReader) typeErr(key string) error {
	return stateErr("%q: a value of the wrong type at byte %d", key, r.i)
}

func (r *snapshotReader) space() { r.i = strictjson.SkipSpace(r.data, r.i) }

// open enters an object or an array whose bracket is next.
func (r *snapshotReader) open() error {
	if r.depth++; r.depth > MaxSnapshotDepth {
		return stateErr("snapshot is nested deeper than %d levels", MaxSnapshotDepth)
	}
	r.i++
	return nil
}

// members reads the members of an object whose '{' is next, calling member
// for each with its decoded key; member reads the value. It checks that no
// key comes twice.
func (r *snapshotReader) members(member func(key []byte) error) error {
	if err := r.open(); err != nil {
		return err
	}
	keys := r.keys.Open()
	if r.space(); r.i < len(r.data) && r.data[r.i] == '}' {
		r.i++
		r.depth--
		return nil
	}
	for {
		if r.space(); r.i >= len(r.data) || r.data[r.i] != '"' {
			return r.invalid()
		}
		key, err := r.key()
		if err != nil {
			return err
		}
		if r.keys.Add(&keys, key) {
			return stateErr("key %q appears twice", cutKey(string(key)))
		}
		if r.space(); r.i >= len(r.data) || r.data[r.i] != ':' {
			return r.invalid()
		}
		r.i++
		r.space()
		if err := member(key); err != nil {
			return err
		}
		if r.space(); r.i >= len(r.data) {
			return r.invalid()
		}
		c := r.data[r.i]
		r.i++
		if c == '}' {
			r.keys.Close(keys)
			r.depth--
			return nil
		}
		if c != ',' {
			r.i--
			return r.invalid()
		}
	}
}

// key reads a key whose '"' is next and returns it decoded.
func (r *snapshotReader) key() ([]byte, error) {
	start := r.i
	raw, plain, err := r.str()
	if err != nil || plain {
		return raw, err
	}
	return r.unquote(start)
}

// unquote decodes the string that starts at start and ends at r.i, as
// encoding/json does (invalid UTF-8 becomes U+FFFD).
func (r *snapshotReader) unquote(start int) ([]byte, error) {
	var s string
	if err := json.Unmarshal(r.data[start:r.i], &s); err != nil {
		return nil, r.invalid()
	}
	return []byte(s), nil
}

// SWAR constants: a byte of each value in every byte of a word.
const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = ones * '"'
	slashs = ones * '\\'
)

// special reports, for eight bytes of a string, whether one may be a quote,
// a backslash or a control character (it may report others too).
func special(x uint64) bool {
	ctl := (x - ones*0x20) &^ x & highs
	q := x ^ quotes
	s := x ^ slashs
	return ctl|((q-ones)&^q&highs)|((s-ones)&^s&highs) != 0
}

// str reads a string whose '"' is next and returns its raw contents and
// whether they are plain: no escape and no byte beyond ASCII, so that they
// are also the decoded string.
func (r *snapshotReader) str() (raw []byte, plain bool, err error) {
	end, plain, ok := scanString(r.data, r.i)
	if !ok {
		r.i = end
		return nil, false, r.invalid()
	}
	raw = r.data[r.i+1 : end-1]
	r.i = end
	return raw, plain, nil
}

// number reads a JSON number that is next and returns its text.
func (r *snapshotReader) number() ([]byte, error) {
	start := r.i
	end, ok := scanNumber(r.data, r.i)
	r.i = end
	if !ok {
		return nil, r.invalid()
	}
	return r.data[start:end], nil
}

// literal reads true, false or null if one is next.
func (r *snapshotReader) literal() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(r.data[r.i:], []byte(lit)) {
			r.i += len(lit)
			return nil
		}
	}
	return r.invalid()
}

// isNull reads null if it is next.
func (r *snapshotReader) isNull() bool {
	if bytes.HasPrefix(r.data[r.i:], []byte("null")) {
		r.i += len("null")
		return true
	}
	return false
}

// value reads any value that is next.
func (r *snapshotReader) value() error {
	if r.i >= len(r.data) {
		return r.invalid()
	}
	switch c := r.data[r.i]; {
	case c == '{':
		return r.members(func([]byte) error { return r.value() })
	case c == '[':
		return r.elements(func(int) error { return r.value() })
	case c == '"':
		_, _, err := r.str()
		return err
	case c == '-' || '0' <= c && c <= '9':
		_, err := r.number()
		return err
	}
	return r.literal()
}

// elements reads the elements of an array whose '[' is next, calling elem
// for each; elem reads the value.
func (r *snapshotReader) elements(elem func(i int) error) error {
	if err := r.open(); err != nil {
		return err
	}
	if r.space(); r.i < len(r.data) && r.data[r.i] == ']' {
		r.i++
		r.depth--
		return nil
	}
	for n := 0; ; n++ {
		r.space()
		if err := elem(n); err != nil {
			return err
		}
		if r.space(); r.i >= len(r.data) {
			return r.invalid()
		}
		c := r.data[r.i]
		r.i++
		if c == ']' {
			r.depth--
			return nil
		}
		if c != ',' {
			r.i--
			return r.invalid()
		}
	}
}

// text reads any value that is next and returns its text.
func (r *snapshotReader) text() ([]byte, error) {
	start := r.i
	err := r.value()
	return r.data[start:r.i], err
}

// misspelt returns the name of names that key equals in another case (as
// strings.EqualFold has it, which folds as encoding/json matches keys), or
// "".
func misspelt(key []byte, names []string) string {
	for _, name := range names {
		// A character folds to an ASCII letter from at most 3 bytes (the
		// Kelvin sign).
		if len(key) <= 3*len(name) && string(key) != name && strings.EqualFold(string(key), name) {
			return name
		}
	}
	return ""
}

// envelope reads the envelope, whose '{' is next.
func (r *snapshotReader) envelope(e *envelope) error {
	return r.members(func(key []byte) error {
		k := -1
		for i, name := range envelopeKeys {
			if string(key) == name {
				k = i
				break
			}
		}
		if k < 0 && string(key) == "firstStop" {
			if r.isNull() {
				return nil
			}
			v, err := r.text()
			e.firstStop = v
			return err
		}
		if k < 0 {
			if name := misspelt(key, append(envelopeKeys[:len(envelopeKeys):len(envelopeKeys)], "firstStop")); name != "" {
				return stateErr("key %q is not spelt %q", cutKey(string(key)), name)
			}
			return r.value() // unknown keys are ignored
		}
		if k == len(envelopeKeys)-1 {
			v, err := r.text()
			e.version = v
			return err
		}
		e.present |= 1 << k
		if r.isNull() {
			e.null |= 1 << k
			return nil
		}
		switch k {
		case keySteps, keyToolCalls, keyFailedToolCalls:
			return r.count(&e.counts[k], envelopeKeys[k])
		case keyTotals:
			v, err := r.text()
			e.totals = v
			return err
		case keyGuard:
			return r.sum(&e.guard, "guard")
		}
		// keyDetectors
		if r.i >= len(r.data) || r.data[r.i] != '[' {
			return r.typeErr("detectors")
		}
		return r.elements(func(int) error {
			e.records = append(e.records, record{})
			return r.record(&e.records[len(e.records)-1])
		})
	})
}

// record reads a detector's record that is next: an object, or null (a
// record without keys).
func (r *snapshotReader) record(rec *record) error {
	if r.isNull() {
		return nil
	}
	if r.i >= len(r.data) || r.data[r.i] != '{' {
		return r.typeErr("detectors")
	}
	return r.members(func(key []byte) error {
		k := -1
		for i, name := range recordKeys {
			if string(key) == name {
				k = i
				break
			}
		}
		if k < 0 {
			if name := misspelt(key, recordKeys[:]); name != "" {
				return stateErr("key %q is not spelt %q", cutKey(string(key)), name)
			}
			return r.value()
		}
		rec.present |= 1 << k
		if k == keyState {
			v, err := r.text()
			rec.state = v
			return err
		}
		if r.isNull() {
			rec.null |= 1 << k
			return nil
		}
		if k == keyFingerprint {
			return r.sum(&rec.fingerprint, "fingerprint")
		}
		if r.i >= len(r.data) || r.data[r.i] != '"' {
			return r.typeErr("name")
		}
		start := r.i
		raw, plain, err := r.str()
		if err == nil && !plain {
			raw, err = r.unquote(start)
		}
		rec.name = raw
		return err
	})
}

// count reads a count that is next: a JSON number that encoding/json reads
// into an int.
func (r *snapshotReader) count(n *int, key string) error {
	if r.i >= len(r.data) || !(r.data[r.i] == '-' || '0' <= r.data[r.i] && r.data[r.i] <= '9') {
		return r.typeErr(key)
	}
	text, err := r.number()
	if err != nil {
		return err
	}
	v, ok := parseInt(text)
	if !ok {
		return stateErr("%q: %s is not an int", key, orMissing(text))
	}
	*n = v
	return nil
}

// parseInt parses the text of a JSON number as strconv.ParseInt does in base
// 10, for an int: no fraction, no exponent, no overflow.
func parseInt(text []byte) (int, bool) {
	neg := len(text) > 0 && text[0] == '-'
	if neg {
		text = text[1:]
	}
	if len(text) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<64-1)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u < uint64(c-'0') {
			return 0, false
		}
	}
	const maxInt = uint64(int(^uint(0) >> 1))
	switch {
	case !neg && u <= maxInt:
		return int(u), true
	case neg && u <= maxInt+1:
		return int(-u), true
	}
	return 0, false
}

// sum reads a canonical.Sum that is next: a string of 32 lowercase hex
// digits, as encoding/json reads it (escapes decoded).
func (r *snapshotReader) sum(s *canonical.Sum, key string) error {
	if r.i >= len(r.data) || r.data[r.i] != '"' {
		return r.typeErr(key)
	}
	start := r.i
	raw, plain, err := r.str()
	if err == nil && !plain {
		raw, err = r.unquote(start)
	}
	if err != nil {
		return err
	}
	if err := s.UnmarshalText(raw); err != nil {
		return stateErr("%q: %v", key, err)
	}
	return nil
}
