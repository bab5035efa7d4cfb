package repeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/rule"
)

// LooseBytes is how many bytes of a result's text are compared to tell a
// poll's new output from a repeat.
const LooseBytes = 1024

// lastResult is what the rule keeps of the newest call's result: enough to
// tell whether the next same call got new output. Its text is copied into a
// buffer that is reused, and hashed only when a same call returns another
// result.
type lastResult struct {
	ok       bool          // the call succeeded with a text result
	exact    canonical.Sum // its rule.Call.Result; zero after a Restore
	text     []byte        // its first LooseBytes bytes; nil after a Restore
	loose    uint64        // looseHash(text), once hasLoose
	hasLoose bool
}

// resultText returns the text of a result that is a string, a []byte or a
// json.RawMessage, without copying it, and whether it is one.
func resultText(r any) (string, []byte, bool) {
	switch r := r.(type) {
	case string:
		return r, nil, true
	case []byte:
		return "", r, true
	case json.RawMessage:
		return "", r, true
	}
	return "", nil, false
}

// succeeded returns the text of c's result when c succeeded with a text
// result.
func succeeded(c *rule.Call) (string, []byte, bool) {
	if c.Failed || c.Result == (canonical.Sum{}) || c.ToolCall() == nil {
		return "", nil, false
	}
	return resultText(c.ToolCall().Result)
}

// push makes c the newest call and reports whether it brought new output:
// same tells that c is a same call as the newest, and the answer is true
// only when both succeeded with text results that differ beyond numbers
// and ids. The loose hashes are computed only then, each once.
func (l *lastResult) push(c *rule.Call, same bool) (newOutput bool) {
	str, b, ok := succeeded(c)
	var h uint64
	hashed := false
	if same && ok && l.ok && (l.exact == (canonical.Sum{}) || c.Result != l.exact) {
		if !l.hasLoose {
			l.loose, l.hasLoose = looseHash(l.text), true
		}
		h, hashed = looseOf(str, b), true
		newOutput = h != l.loose
	}
	l.ok, l.exact, l.loose, l.hasLoose = ok, c.Result, h, hashed
	l.text = l.text[:0]
	if ok && !hashed {
		if str != "" {
			l.text = append(l.text, str[:min(len(str), LooseBytes)]...)
		} else {
			l.text = append(l.text, b[:min(len(b), LooseBytes)]...)
		}
	}
	return newOutput
}

// clear forgets the newest call's result.
func (l *lastResult) clear() {
	l.ok, l.exact, l.hasLoose = false, canonical.Sum{}, false
	l.text = l.text[:0]
}

// saved returns the loose hash of the newest result in 16 hex digits, or ""
// when there is none to compare with.
func (l *lastResult) saved() string {
	if !l.ok {
		return ""
	}
	if !l.hasLoose {
		l.loose, l.hasLoose = looseHash(l.text), true
	}
	return fmt.Sprintf("%016x", l.loose)
}

// errLast is the error of a malformed saved newest result.
var errLast = errors.New("newest result: not 16 lower-case hex digits")

// restore reads what saved wrote.
func (l *lastResult) restore(s string) error {
	if len(s) != 16 {
		return errLast
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return errLast
		}
	}
	h, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return errLast
	}
	*l = lastResult{ok: true, loose: h, hasLoose: true}
	return nil
}

// looseHash hashes the first LooseBytes bytes of a text as outputs are
// compared: ASCII letters lower-cased, each run of white space one space,
// and each run of letters, digits and '_' that holds a digit one '#', so
// that counters, timestamps and ids within a text do not count as new
// output; a text that is one number and nothing else is hashed as that
// number (see bareNumber). It is FNV-1a, 64 bits.
func looseHash[T ~string | ~[]byte](t T) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	t = t[:min(len(t), LooseBytes)]
	h := uint64(offset)
	if n, ok := bareNumber(t); ok {
		// The number is all the result says: it is compared as it is
		// (a counter polled until it reaches a target goes on), white
		// space and quotes around it aside.
		for i := range len(n) {
			h = (h ^ uint64(n[i])) * prime
		}
		return h
	}
	space := false
	for i := 0; i < len(t); {
		c := t[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			space = true
			i++
			continue
		}
		if space {
			h = (h ^ ' ') * prime
			space = false
		}
		if !isWord(c) {
			h = (h ^ uint64(c)) * prime
			i++
			continue
		}
		j, digit := i, false
		for ; j < len(t) && isWord(t[j]); j++ {
			digit = digit || '0' <= t[j] && t[j] <= '9'
		}
		if digit {
			h = (h ^ '#') * prime
		} else {
			for _, d := range []byte(t[i:j]) {
				if 'A' <= d && d <= 'Z' {
					d += 'a' - 'A'
				}
				h = (h ^ uint64(d)) * prime
			}
		}
		i = j
	}
	return h
}

// looseOf is looseHash of a result's text: str, or b when str is empty.
func looseOf(str string, b []byte) uint64 {
	if str != "" {
		return looseHash(str)
	}
	return looseHash(b)
}

// isWord reports whether c is an ASCII letter, digit or '_'.
func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// bareNumber returns t without the white space around it, and without the
// quotes of a JSON string around that (and the white space within them),
// when what is left is one number and nothing else: a sign, digits (with
// ',' or '_' between them), at most one decimal point and an exponent
// ("42", "-3.5", "1,024", "6.02e23", `"42"`). A date, a version or an
// address ("2024-06-01", "1.2.3", "10.0.0.1") is no number.
func bareNumber[T ~string | ~[]byte](t T) (T, bool) {
	i, j := trimSpace(t, 0, len(t))
	if j-i >= 2 && t[i] == '"' && t[j-1] == '"' { // a JSON string
		i, j = trimSpace(t, i+1, j-1)
	}
	n := t[i:j]
	k := 0
	if k < len(n) && (n[k] == '-' || n[k] == '+') {
		k++
	}
	digits, point := 0, false
mantissa:
	for ; k < len(n); k++ {
		switch c := n[k]; {
		case '0' <= c && c <= '9':
			digits++
		case (c == ',' || c == '_') && digits > 0 && k+1 < len(n) && '0' <= n[k+1] && n[k+1] <= '9':
		case c == '.' && !point:
			point = true
		default:
			break mantissa
		}
	}
	if digits == 0 {
		return n, false
	}
	if k < len(n) && (n[k] == 'e' || n[k] == 'E') {
		k++
		if k < len(n) && (n[k] == '-' || n[k] == '+') {
			k++
		}
		e := k
		for k < len(n) && '0' <= n[k] && n[k] <= '9' {
			k++
		}
		if k == e {
			return n, false
		}
	}
	return n, k == len(n)
}

// trimSpace returns the bounds of t[i:j] without the ASCII white space
// around it.
func trimSpace[T ~string | ~[]byte](t T, i, j int) (int, int) {
	for i < j && isSpace(t[i]) {
		i++
	}
	for j > i && isSpace(t[j-1]) {
		j--
	}
	return i, j
}

// isSpace reports whether c is ASCII white space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
