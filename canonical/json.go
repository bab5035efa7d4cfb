package canonical

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
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

// skipSpace returns the index of the first byte at or after src[i] that is
// not whitespace, or len(src).
func skipSpace(src []byte, i int) int {
	for i < len(src) && src[i] <= ' ' && isSpace(src[i]) {
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

// The functions below read a value at src[i] into buf and return the index
// after it, and whether it is valid. They run in the quick pass only (see
// jsonTextCut), where next never reports false: it panics.

func (e *encoder) jsonValue(src []byte, i int) (int, bool) {
	if i >= len(src) {
		return i, false
	}
	switch c := src[i]; c {
	case '"':
		e.count++
		return e.jsonString(src, i)
	case '{':
		return e.jsonObject(src, i)
	case '[':
		return e.jsonArray(src, i)
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
		return e.jsonNumber(src, i)
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
		e.next()
		e.reserve(64)
		var ok bool
		if i, ok = e.jsonValue(src, i); !ok {
			return i, false
		}
		if i < len(src) && src[i] <= ' ' {
			i = skipSpace(src, i)
		}
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			if i++; i < len(src) && src[i] <= ' ' {
				i = skipSpace(src, i)
			}
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
		e.next()
		e.reserve(64)
		start := len(e.buf)
		var prefix, next uint64
		if j := i + 1; j+16 <= len(src) {
			// The common case, inline: a name of ASCII without escapes,
			// shorter than 8 bytes. Its word is stored whole: the bytes
			// after the name are overwritten next.
			w := load8(src, j)
			m := unsafeBytes(w)
			k := bits.TrailingZeros64(m) >> 3
			if m != 0 && src[j+k] == '"' {
				b := e.buf[:start+10]
				b[start] = tagString
				store8(b, start+1, w)
				b[start+1+k] = stringEnd
				e.buf = b[:start+2+k]
				prefix = bits.ReverseBytes64(w) &^ (math.MaxUint64 >> (8 * k & 63))
				i = j + k + 1
			} else {
				var ok bool
				if i, prefix, next, ok = e.jsonKey(src, i); !ok {
					return i, false
				}
			}
		} else {
			var ok bool
			if i, prefix, next, ok = e.jsonKey(src, i); !ok {
				return i, false
			}
		}
		if i < len(src) && src[i] <= ' ' {
			i = skipSpace(src, i)
		}
		if i >= len(src) || src[i] != ':' {
			return i, false
		}
		if i++; i < len(src) && src[i] <= ' ' {
			i = skipSpace(src, i)
		}
		var ok bool
		if i >= len(src) {
			return i, false
		}
		switch c := src[i]; {
		case c == '"':
			e.count++
			i, ok = e.jsonString(src, i)
		case c-'0' <= 9 || c == '-':
			i, ok = e.jsonNumber(src, i)
		default:
			i, ok = e.jsonValue(src, i)
		}
		if !ok {
			return i, false
		}
		if len(e.members) == cap(e.members) {
			e.growMembers()
		}
		e.members = append(e.members, member{start, len(e.buf), prefix, next})
		if i < len(src) && src[i] <= ' ' {
			i = skipSpace(src, i)
		}
		if i >= len(src) {
			return i, false
		}
		switch src[i] {
		case ',':
			if i++; i < len(src) && src[i] <= ' ' {
				i = skipSpace(src, i)
			}
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
// words (see nameWords). buf must have room for 18 bytes.
func (e *encoder) jsonKey(src []byte, i int) (int, uint64, uint64, bool) {
	// A name of ASCII without escapes, shorter than 16 bytes, found 8
	// bytes at a time. The words are stored whole: the bytes after the name
	// are overwritten next.
	if j := i + 1; j+16 <= len(src) {
		n := len(e.buf)
		b := e.buf[n : n+18]
		b[0] = tagString
		w := binary.LittleEndian.Uint64(src[j:])
		binary.LittleEndian.PutUint64(b[1:], w)
		if unsafeBytes(w) == 0 {
			w2 := binary.LittleEndian.Uint64(src[j+8:])
			binary.LittleEndian.PutUint64(b[9:], w2)
			if m := unsafeBytes(w2); m != 0 {
				if k := bits.TrailingZeros64(m) >> 3; src[j+8+k] == '"' {
					b[9+k] = stringEnd
					e.buf = e.buf[:n+10+k]
					return j + 9 + k, bits.ReverseBytes64(w), bits.ReverseBytes64(w2) &^ (math.MaxUint64 >> (8 * k & 63)), true
				}
			}
		}
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
// + 0xFF. Bytes that stand for themselves are copied 8 at a time, as they
// are checked.
func (e *encoder) jsonString(src []byte, i int) (int, bool) {
	buf := append(e.buf, tagString)
	i++
	for {
		if i+8 <= len(src) {
			n := len(buf)
			if cap(buf)-n < 8 {
				buf = slices.Grow(buf, max(8, n))
			}
			w := load8(src, i)
			store8(buf, n, w)
			m := unsafeBytes(w)
			if m == 0 {
				buf = buf[:n+8]
				i += 8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			buf = buf[:n+k]
			i += k
		} else {
			for i < len(src) && strSafe[src[i]] {
				buf = append(buf, src[i])
				i++
			}
			if i >= len(src) {
				e.buf = buf
				return i, false
			}
		}
		switch c := src[i]; {
		case c == '"':
			e.buf = append(buf, stringEnd)
			return i + 1, true
		case c == '\\':
			if i+1 < len(src) && unescape[src[i+1]] != 0 {
				buf = append(buf, unescape[src[i+1]])
				i += 2
				continue
			}
			e.buf = buf
			var ok bool
			if i, ok = e.escape(src, i); !ok {
				return i, false
			}
			buf = e.buf
		case c < 0x20:
			e.buf = buf
			return i, false
		default:
			// UTF-8: a run of characters past ASCII, checked, then copied.
			j := i
			for j < len(src) && src[j] >= utf8.RuneSelf {
				r, size := utf8.DecodeRune(src[j:])
				if r == utf8.RuneError && size == 1 {
					e.buf = buf
					return j, false
				}
				j += size
			}
			buf = append(buf, src[i:j]...)
			i = j
		}
	}
}

// load8 returns the 8 bytes at p[i:], little-endian, and store8 stores v
// there, beyond len(p) if need be: the callers have checked that i+8 is at
// most len(p) for load8, cap(p) for store8. They compile to one move.
func load8(p []byte, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(p)), i))[:])
}

func store8(p []byte, i int, v uint64) {
	binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(p)), i))[:], v)
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// unsafeBytes returns a word with the top bit set in the lowest byte of w
// (little-endian) that needs care in a JSON string, if any (and perhaps in
// higher bytes): for ASCII bytes, x - 0x20 and y - 1 (y = x^'"' or x^'\\',
// zero for those) set the top bit for the bytes sought, and above them
// through borrows, so that the lowest top bit set is exact; x itself sets
// it for bytes above 0x7F.
func unsafeBytes(w uint64) uint64 {
	q, b := w^(lsb*'"'), w^(lsb*'\\')
	return ((w - lsb*0x20) | (q - lsb) | (b - lsb) | w) & msb
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
	a, b, c, d := hexValue[src[i]], hexValue[src[i+1]], hexValue[src[i+2]], hexValue[src[i+3]]
	if a|b|c|d < 0 {
		return -1
	}
	return rune(a)<<12 | rune(b)<<8 | rune(c)<<4 | rune(d)
}

// hexValue maps hexadecimal digits to their values, other bytes to -1.
var hexValue = func() (t [256]int8) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = int8(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = int8(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			t[c] = int8(c - 'A' + 10)
		default:
			t[c] = -1
		}
	}
	return t
}()

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
