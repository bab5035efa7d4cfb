package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loopguard/loopguard/guard"
)

// This file reads the common step line in one pass. It gives exactly what
// guard.Step.UnmarshalJSON gives (a differential fuzz test holds it to that),
// or gives up on anything out of the ordinary: invalid JSON, a key that
// appears twice or differs from a field's name only in case or by an escape,
// deep nesting. The caller then falls back to guard.Step.UnmarshalJSON, which
// also writes the error. Audits spend most of their time reading steps, and
// encoding/json goes over each value several times.

// maxFastDepth is the deepest nesting the fast reader follows.
const maxFastDepth = 512

// scanner walks JSON text. Its methods return false on anything they do not
// accept.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a string and returns its contents without the quotes, and
// whether it holds escapes or bytes that are not ASCII.
func (s *scanner) str() (raw []byte, plain, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	plain = true
	for s.i < len(s.b) {
		// Skip eight ordinary bytes at a time.
		for s.i+8 <= len(s.b) && !special(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, plain, true
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false, false
					}
				}
				s.i += 5
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			plain = false
			s.i++
		default:
			s.i++
		}
	}
	return nil, false, false
}

// special reports whether any of the eight bytes in w may need a look inside
// a string: a quote, a backslash, a control character or a byte of a
// multi-byte character. It may say so of a word that holds none.
func special(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	return w&highs != 0 || (w-ones*0x20)&^w&highs != 0 || zero(w^(ones*'"')) != 0 || zero(w^(ones*'\\')) != 0
}

// text returns the Go string of a JSON string's contents (checked by str),
// as encoding/json decodes it: escapes resolved, a lone surrogate and each
// byte of invalid UTF-8 made U+FFFD.
func text(raw []byte, plain bool) string {
	if plain || (bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw)) {
		return string(raw)
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			i++
			switch raw[i] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(raw[i+1:])
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
						r2 = hex4(raw[i+3:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
						r = dec
						i += 6
					} else {
						r = unicode.ReplacementChar
					}
				}
				b = utf8.AppendRune(b, r)
			default: // '"', '\\', '/'
				b = append(b, raw[i])
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, raw[i:i+size]...)
			}
			i += size
		}
	}
	return string(b)
}

// hex4 reads the four hex digits that str has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// number reads a JSON number.
func (s *scanner) number() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// value skips one value of any kind and returns its text.
func (s *scanner) value(depth int) ([]byte, bool) {
	c := s.peek()
	start := s.i
	switch {
	case c == '"':
		if _, _, ok := s.str(); !ok {
			return nil, false
		}
	case c == '{' || c == '[':
		if depth >= maxFastDepth {
			return nil, false
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		s.i++
		if s.peek() == close {
			s.i++
			break
		}
		for more := true; more; {
			if c == '{' {
				if _, _, ok := s.str(); !ok || s.peek() != ':' {
					return nil, false
				}
				s.i++
			}
			if _, ok := s.value(depth + 1); !ok {
				return nil, false
			}
			switch s.peek() {
			case ',':
				s.i++
			case close:
				s.i++
				more = false
			default:
				return nil, false
			}
		}
	case c == '-' || '0' <= c && c <= '9':
		if _, ok := s.number(); !ok {
			return nil, false
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return s.b[start:s.i], true
			}
		}
		return nil, false
	default:
		return nil, false
	}
	return s.b[start:s.i], true
}

// object reads an object, calling member for each key (already checked to
// be plain, so its bytes are its text) with the scanner on the value. member
// must consume the value.
func (s *scanner) object(depth int, member func(key []byte) bool) bool {
	if s.peek() != '{' || depth >= maxFastDepth {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, plain, ok := s.str()
		if !ok || !plain || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// field finds key among names: its index, or -1 for a key that is no field.
// ok is false for a key that encoding/json would match to a field all the
// same (it ignores case).
func field(key []byte, names []string) (i int, ok bool) {
	for i, n := range names {
		if string(key) == n {
			return i, true
		}
		if bytes.EqualFold(key, []byte(n)) {
			return -1, false
		}
	}
	return -1, true
}

var (
	stepFields  = knownKeys[placeStep]
	callFields  = knownKeys[placeCall]
	usageFields = knownKeys[placeUsage]
)

// The indexes of the fields in stepFields and callFields.
const (
	fText, fToolCalls, fFinishReason, fUsage, fInput, fUserReply, fRefused, fStepMeta = 0, 1, 2, 3, 4, 5, 6, 7
	fName, fArgs, fResult, fError, fID                                                = 0, 1, 2, 3, 4
)

// A keyRef is a key that is not a field of its place.
type keyRef struct {
	prefix string // the path of the object the key is in: "", "usage", "toolCalls[2]"
	place  place
	key    string
}

// fastStep reads one step line as guard.Step.UnmarshalJSON would, or reports
// that it cannot. It appends the keys that no field has to unknown, when
// unknown is not nil.
func fastStep(line []byte, unknown *[]keyRef) (guard.Step, bool) {
	s := &scanner{b: line}
	var raws [8][]byte // the last value of each step field
	var seen [8]bool
	ok := s.object(0, func(key []byte) bool {
		f, ok := field(key, stepFields)
		if !ok {
			return false
		}
		v, ok := s.value(1)
		if ok && f < 0 && unknown != nil {
			*unknown = append(*unknown, keyRef{place: placeStep, key: string(key)})
		}
		if !ok || f < 0 {
			return ok
		}
		if seen[f] {
			return false // encoding/json keeps the last; leave that to it
		}
		seen[f], raws[f] = true, v
		return true
	})
	if !ok {
		return guard.Step{}, false
	}
	if s.space(); s.i != len(s.b) {
		return guard.Step{}, false
	}
	step := guard.Step{
		Text:         stringValue(raws[fText]),
		FinishReason: stringValue(raws[fFinishReason]),
		Input:        stringValue(raws[fInput]),
	}
	if step.Input == "" {
		step.Input = stringValue(raws[fUserReply])
	}
	if v := raws[fToolCalls]; len(v) > 0 && v[0] == '[' {
		calls, ok := fastCalls(v, "toolCalls", unknown)
		if !ok {
			return guard.Step{}, false
		}
		step.ToolCalls = calls
	}
	if v := raws[fRefused]; len(v) > 0 && v[0] == '[' {
		calls, ok := fastCalls(v, "refused", unknown)
		if !ok {
			return guard.Step{}, false
		}
		for i := range calls {
			calls[i].Result, calls[i].Err = nil, nil // refused calls did not run
		}
		step.Refused = calls
	}
	if v := raws[fUsage]; len(v) > 0 && v[0] == '{' {
		u, ok := fastUsage(v, unknown)
		if !ok {
			return guard.Step{}, false
		}
		step.Usage = u
	}
	return step, true
}

// stringValue returns the text of a JSON string value, or "" for any other.
func stringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	raw := v[1 : len(v)-1]
	return text(raw, false)
}

// fastCalls reads the calls of the array v, which is the value of the step
// field array.
func fastCalls(v []byte, array string, unknown *[]keyRef) ([]guard.ToolCall, bool) {
	s := &scanner{b: v, i: 1}
	var calls []guard.ToolCall
	if s.peek() == ']' {
		return nil, true
	}
	for index := 0; ; index++ {
		if s.peek() != '{' {
			if _, ok := s.value(2); !ok {
				return nil, false
			}
		} else {
			var raws [6][]byte
			var seen [6]bool
			ok := s.object(2, func(key []byte) bool {
				f, ok := field(key, callFields)
				if !ok {
					return false
				}
				v, ok := s.value(3)
				if ok && f < 0 && unknown != nil {
					*unknown = append(*unknown, keyRef{prefix: array + "[" + strconv.Itoa(index) + "]", place: placeCall, key: string(key)})
				}
				if !ok || f < 0 {
					return ok
				}
				if seen[f] {
					return false
				}
				seen[f], raws[f] = true, v
				return true
			})
			if !ok {
				return nil, false
			}
			if name := raws[fName]; len(name) > 0 && name[0] == '"' {
				c := guard.ToolCall{ID: stringValue(raws[fID]), Name: stringValue(name), Args: rawValue(raws[fArgs]), Result: rawValue(raws[fResult])}
				if e := raws[fError]; len(e) > 0 && string(e) != "null" {
					msg := string(e)
					if e[0] == '"' {
						msg = stringValue(e)
					}
					c.Err = errors.New(msg)
				}
				calls = append(calls, c)
			}
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			return calls, true
		default:
			return nil, false
		}
	}
}

// rawValue keeps a value as JSON text, and null or nothing as nil.
func rawValue(v []byte) any {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return json.RawMessage(v)
}

func fastUsage(v []byte, unknown *[]keyRef) (guard.Usage, bool) {
	s := &scanner{b: v}
	var nums [5]float64
	var seen [5]bool
	ok := s.object(1, func(key []byte) bool {
		f, ok := field(key, usageFields)
		if !ok {
			return false
		}
		v, ok := s.value(2)
		if ok && f < 0 && unknown != nil {
			*unknown = append(*unknown, keyRef{prefix: "usage", place: placeUsage, key: string(key)})
		}
		if !ok || f < 0 {
			return ok
		}
		if seen[f] {
			return false
		}
		seen[f] = true
		if len(v) > 0 && (v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
			n, err := strconv.ParseFloat(string(v), 64)
			if err == nil && n >= 0 && !math.IsInf(n, 0) {
				nums[f] = n
			}
		}
		return true
	})
	if !ok {
		return guard.Usage{}, false
	}
	return guard.Usage{
		InputTokens:  wholeCount(nums[0]),
		OutputTokens: wholeCount(nums[1]),
		TotalTokens:  wholeCount(nums[2]),
		CostUSD:      nums[3],
		Duration:     msDuration(nums[4]),
	}, true
}

// wholeCount is guard's token count: a whole number below 2^63, or 0.
func wholeCount(f float64) int64 {
	if f != math.Trunc(f) || f >= math.MaxInt64 {
		return 0
	}
	return int64(f)
}

// msDuration is guard's conversion of milliseconds, saturating.
func msDuration(ms float64) time.Duration {
	const maxMs = float64(math.MaxInt64) / float64(time.Millisecond)
	if ms >= maxMs {
		return math.MaxInt64
	}
	return time.Duration(ms * float64(time.Millisecond))
}
