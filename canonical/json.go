package canonical

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// This file reads JSON text (RFC 8259) into the canonical encoding. Strings
// are decoded as encoding/json decodes them: escapes are resolved, and a
// \u escape of a surrogate that is not half of a pair becomes U+FFFD. Text
// is invalid if it breaks the grammar, holds bytes that are not UTF-8, has
// a number beyond the range of float64 or nests deeper than 10,000 levels.

// strSafe marks the bytes that stand for themselves inside a JSON string.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(src []byte, i int) int {
	for i < len(src) && isSpace(src[i]) {
		i++
	}
	return i
}

// jsonText encodes the whole text src. It reports false, leaving buf as it
// was, if src is not valid. In the careful pass the value limit cuts the
// encoding in canonical order (see jsonTextCut).
func (e *encoder) jsonText(src []byte) bool {
	if e.careful {
		return e.jsonTextCut(src)
	}
	start, members, depth := len(e.buf), len(e.members), e.depth
	i, ok := e.jsonValue(src, skipSpace(src, 0))
	if ok && skipSpace(src, i) == len(src) {
		return true
	}
	e.buf, e.members, e.depth = e.buf[:start], e.members[:members], depth
	return false
}

func (e *encoder) jsonValue(src []byte, i int) (int, bool) {
	if i >= len(src) {
		return i, false
	}
	switch c := src[i]; c {
	case '{':
		return e.jsonObject(src, i)
	case '[':
		return e.jsonArray(src, i)
	case '"':
		e.count++
		return e.jsonString(src, i)
	case 't':
		e.scalar(tagTrue)
		return literal(src, i, "true")
	case 'f':
		e.scalar(tagFalse)
		return literal(src, i, "false")
	case 'n':
		e.scalar(tagNull)
		return literal(src, i, "null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return e.jsonNumber(src, i)
		}
		return i, false
	}
}

func literal(src []byte, i int, lit string) (int, bool) {
	if len(src)-i >= len(lit) && string(src[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

func (e *encoder) jsonArray(src []byte, i int) (int, bool) {
	if !e.open() {
		return e.skipContainer(src, i, e.depth+1)
	}
	e.depth++
	e.buf = append(e.buf, tagArray)
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == ']' {
		e.depth--
		e.buf = append(e.buf, tagArrayEnd)
		return i + 1, true
	}
	for {
		if !e.next() {
			e.depth--
			e.buf = append(e.buf, tagArrayEnd)
			return e.skipRest(src, i, e.depth+1, ']')
		}
		e.grow()
		var ok bool
		if i, ok = e.jsonValue(src, i); !ok {
			return i, false
		}
		i = skipSpace(src, i)
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case ']':
			e.depth--
			e.buf = append(e.buf, tagArrayEnd)
			return i + 1, true
		default:
			return i, false
		}
	}
}

func (e *encoder) jsonObject(src []byte, i int) (int, bool) {
	if !e.open() {
		return e.skipContainer(src, i, e.depth+1)
	}
	e.depth++
	e.buf = append(e.buf, tagObject)
	mark := len(e.members)
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		e.depth--
		e.buf = append(e.buf, tagObjectEnd)
		return i + 1, true
	}
	for {
		if i >= len(src) || src[i] != '"' {
			return i, false
		}
		if !e.next() {
			e.buf = e.buf[:len(e.buf)-1] // endObject writes the marker
			e.depth--
			e.endObject(mark, true)
			return e.skipRest(src, i, e.depth+1, '}')
		}
		e.grow()
		start := len(e.buf)
		var ok bool
		var prefix, next uint64
		if i, prefix, next, ok = e.jsonKey(src, i); !ok {
			return i, false
		}
		i = skipSpace(src, i)
		if i >= len(src) || src[i] != ':' {
			return i, false
		}
		if i, ok = e.jsonValue(src, skipSpace(src, i+1)); !ok {
			return i, false
		}
		e.members = append(e.members, member{start, len(e.buf), prefix, next})
		i = skipSpace(src, i)
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case '}':
			e.depth--
			e.endObject(mark, false)
			return i + 1, true
		default:
			return i, false
		}
	}
}

// jsonKey is jsonString for a member name, which also returns the name's
// words (see nameWords).
func (e *encoder) jsonKey(src []byte, i int) (int, uint64, uint64, bool) {
	// The common case: ASCII without escapes, and 16 bytes to read.
	if j := skipSafe(src, i+1); j < len(src) && src[j] == '"' && i+17 <= len(src) {
		p, q := binary.BigEndian.Uint64(src[i+1:]), binary.BigEndian.Uint64(src[i+9:])
		switch n := j - i - 1; {
		case n < 8:
			p &^= math.MaxUint64 >> (8 * n)
			q = 0
		case n < 16:
			q &^= math.MaxUint64 >> (8 * (n - 8))
		}
		e.buf = append(append(append(e.buf, tagString), src[i+1:j]...), stringEnd)
		return j + 1, p, q, true
	}
	start := len(e.buf)
	i, ok := e.jsonString(src, i)
	if !ok {
		return i, 0, 0, false
	}
	p, q := nameWords(e.buf, start, len(e.buf))
	return i, p, q, true
}

// jsonString decodes the string at src[i] (a quote) into buf as 's' + UTF-8
// + 0xFF.
func (e *encoder) jsonString(src []byte, i int) (int, bool) {
	e.buf = append(e.buf, tagString)
	i++
	run := i // start of bytes not yet copied
	for {
		if i = skipSafe(src, i); i >= len(src) {
			return i, false
		}
		switch c := src[i]; {
		case c == '"':
			e.buf = append(e.buf, src[run:i]...)
			e.buf = append(e.buf, stringEnd)
			return i + 1, true
		case c == '\\':
			e.buf = append(e.buf, src[run:i]...)
			if i+1 < len(src) && unescape[src[i+1]] != 0 {
				e.buf = append(e.buf, unescape[src[i+1]]) // inline: common
				i += 2
			} else {
				var ok bool
				if i, ok = e.escape(src, i); !ok {
					return i, false
				}
			}
			run = i
		case c < 0x20:
			return i, false
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// unsafeBytes returns a word with the top bit set in the lowest byte of w
// that needs care in a JSON string, if any (and perhaps in higher bytes).
func unsafeBytes(w uint64) uint64 {
	q, b := w^(lsb*'"'), w^(lsb*'\\')
	return ((w - lsb*0x20) | (q - lsb) | (b - lsb) | w) & msb
}

// skipSafe returns the index of the first byte at or after src[i] that does
// not stand for itself in a JSON string (below 0x20, above 0x7F, '"' or
// '\\'), or len(src).
func skipSafe(src []byte, i int) int {
	// 8 bytes at a time. For ASCII bytes, x - 0x20 and y - 1 (y = x^'"' or
	// x^'\\', zero for those) set the top bit for the bytes sought, and
	// above them through borrows, so the lowest top bit set is exact; x
	// itself sets it for bytes above 0x7F.
	for i+16 <= len(src) {
		m1 := unsafeBytes(binary.LittleEndian.Uint64(src[i:]))
		m2 := unsafeBytes(binary.LittleEndian.Uint64(src[i+8:]))
		if m1|m2 != 0 {
			if m1 != 0 {
				return i + bits.TrailingZeros64(m1)>>3
			}
			return i + 8 + bits.TrailingZeros64(m2)>>3
		}
		i += 16
	}
	if i+8 <= len(src) {
		if m := unsafeBytes(binary.LittleEndian.Uint64(src[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(src) && strSafe[src[i]] {
		i++
	}
	return i
}

// unescape maps the byte after a backslash to the byte it stands for, for
// the escapes of one byte; \u escapes are decoded by escape.
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape at src[i] (a backslash).
func (e *encoder) escape(src []byte, i int) (int, bool) {
	if i+1 >= len(src) {
		return i, false
	}
	if c := unescape[src[i+1]]; c != 0 {
		e.buf = append(e.buf, c)
		return i + 2, true
	}
	if src[i+1] != 'u' {
		return i, false
	}
	r := hex4(src, i+2)
	if r < 0 {
		return i, false
	}
	i += 6
	if 0xD800 <= r && r < 0xE000 {
		// A surrogate: valid only as a high one followed by a low one;
		// otherwise U+FFFD, as in encoding/json.
		if r < 0xDC00 && i+1 < len(src) && src[i] == '\\' && src[i+1] == 'u' {
			if r2 := hex4(src, i+2); 0xDC00 <= r2 && r2 < 0xE000 {
				e.buf = utf8.AppendRune(e.buf, 0x10000+(r-0xD800)<<10+(r2-0xDC00))
				return i + 6, true
			}
		}
		r = utf8.RuneError
	}
	e.buf = utf8.AppendRune(e.buf, r)
	return i, true
}

// hex4 returns the value of the 4 hex digits at src[i:], or -1.
func hex4(src []byte, i int) rune {
	if i+4 > len(src) {
		return -1
	}
	var r rune
	for _, c := range src[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// jsonNumber reads the number at src[i] and writes its float64 value.
func (e *encoder) jsonNumber(src []byte, i int) (int, bool) {
	start := i
	neg := src[i] == '-'
	if neg {
		i++
	}
	// Integer part: 0 or [1-9][0-9]*.
	var mant uint64
	digits := 0 // significant digits in mant
	exp := 0    // decimal exponent to apply to mant
	if i >= len(src) {
		return i, false
	}
	if src[i] == '0' {
		i++
	} else if '1' <= src[i] && src[i] <= '9' {
		for ; i < len(src) && '0' <= src[i] && src[i] <= '9'; i++ {
			if digits < 19 {
				mant = mant*10 + uint64(src[i]-'0')
				digits++
			} else {
				exp++
				digits = 99 // too many digits for the fast path
			}
		}
	} else {
		return i, false
	}
	exact := true
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return i, false
		}
		for ; i < len(src) && '0' <= src[i] && src[i] <= '9'; i++ {
			if digits < 19 {
				if mant == 0 && src[i] == '0' {
					exp-- // leading zeros of 0.000123
					continue
				}
				mant = mant*10 + uint64(src[i]-'0')
				digits++
				exp--
			} else {
				digits = 99
			}
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return i, false
		}
		for ; i < len(src) && '0' <= src[i] && src[i] <= '9'; i++ {
		}
		exact = false
	}
	var f float64
	switch {
	case exact && mant < 1<<53 && -22 <= exp && exp <= 22 && digits <= 19:
		// Both mant and 10^|exp| are exact doubles, so one correctly
		// rounded operation gives the correctly rounded result.
		f = float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		} else {
			f *= pow10[exp]
		}
		if neg {
			f = -f
		}
	default:
		var err error
		f, err = strconv.ParseFloat(unsafe.String(&src[start], i-start), 64)
		if err != nil {
			return i, false // out of the range of float64
		}
	}
	e.number(f)
	return i, true
}

// skipContainer validates the array or object at src[i] without encoding
// it; depth is its nesting level.
func (e *encoder) skipContainer(src []byte, i, depth int) (int, bool) {
	end := byte(']')
	if src[i] == '{' {
		end = '}'
	}
	return e.skipRest(src, skipSpace(src, i+1), depth, end)
}

// skipRest validates the rest of a container, from src[i] (an element, a
// member or the end) to its end byte, without encoding it.
func (e *encoder) skipRest(src []byte, i, depth int, end byte) (int, bool) {
	if depth > maxTextDepth {
		return i, false
	}
	if i < len(src) && src[i] == end {
		return i + 1, true
	}
	n, count := len(e.buf), e.count
	defer func() { e.buf, e.count = e.buf[:n], count }()
	for {
		var ok bool
		if end == '}' {
			if i >= len(src) || src[i] != '"' {
				return i, false
			}
			if i, ok = e.jsonString(src, i); !ok {
				return i, false
			}
			i = skipSpace(src, i)
			if i >= len(src) || src[i] != ':' {
				return i, false
			}
			i = skipSpace(src, i+1)
		}
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case '[', '{':
			i, ok = e.skipContainer(src, i, depth+1)
		default:
			i, ok = e.jsonValue(src, i)
		}
		if !ok {
			return i, false
		}
		e.buf = e.buf[:n]
		i = skipSpace(src, i)
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}
