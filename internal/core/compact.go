package core

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// maxJSONDepth is the deepest nesting that appendCompact and UnmarshalState
// accept: that of encoding/json's scanner, so that they accept what
// json.Valid and json.Unmarshal do.
const maxJSONDepth = 10000

// appendCompact appends src to dst without its insignificant white space,
// as json.Compact does, and reports whether src is one valid JSON value, as
// json.Valid does (strings are not checked for UTF-8; nesting deeper than
// 10,000 levels is invalid). A snapshot holds the detectors' states this
// way; where json.Compact steps through every byte of a long string (the
// no-progress window is 22 KB of base64), this skips eight bytes at a time.
// On invalid input, what it appended is not meaningful.
func appendCompact(dst, src []byte) ([]byte, bool) {
	c := compacter{src: src, dst: dst}
	c.space()
	if !c.value() {
		return dst, false
	}
	if c.space(); c.i != len(src) {
		return dst, false
	}
	return c.dst, true
}

// compacter is appendCompact's state: src read up to i, dst written.
type compacter struct {
	src   []byte
	i     int
	dst   []byte
	depth int
}

func (c *compacter) space() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// next reports whether the next byte is b, and if so copies it.
func (c *compacter) next(b byte) bool {
	if c.i < len(c.src) && c.src[c.i] == b {
		c.dst = append(c.dst, b)
		c.i++
		return true
	}
	return false
}

func (c *compacter) value() bool {
	if c.i >= len(c.src) {
		return false
	}
	switch b := c.src[c.i]; {
	case b == '{':
		return c.container('}')
	case b == '[':
		return c.container(']')
	case b == '"':
		return c.str()
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(c.src[c.i:], []byte(lit)) {
			c.dst = append(c.dst, lit...)
			c.i += len(lit)
			return true
		}
	}
	return false
}

// container copies an object or an array whose bracket is next; end is its
// closing bracket.
func (c *compacter) container(end byte) bool {
	if c.depth++; c.depth > maxJSONDepth {
		return false
	}
	c.dst = append(c.dst, c.src[c.i])
	c.i++
	c.space()
	if !c.next(end) {
		for {
			if end == '}' {
				if c.i >= len(c.src) || c.src[c.i] != '"' || !c.str() {
					return false
				}
				if c.space(); !c.next(':') {
					return false
				}
				c.space()
			}
			if !c.value() {
				return false
			}
			c.space()
			if c.next(end) {
				break
			}
			if !c.next(',') {
				return false
			}
			c.space()
		}
	}
	c.depth--
	return true
}

// str copies a string whose '"' is next.
func (c *compacter) str() bool {
	end, _, ok := scanString(c.src, c.i)
	if ok {
		c.dst = append(c.dst, c.src[c.i:end]...)
		c.i = end
	}
	return ok
}

// number copies a number that is next.
func (c *compacter) number() bool {
	end, ok := scanNumber(c.src, c.i)
	if ok {
		c.dst = append(c.dst, c.src[c.i:end]...)
		c.i = end
	}
	return ok
}

// scanString reads the JSON string whose '"' is d[i]. It returns the index
// after its closing quote, and whether its contents are plain: no escape and
// no byte beyond ASCII, so that they are also the decoded string. When the
// string is not valid JSON, ok is false and end is where it fails. Strings
// are not checked for UTF-8, as encoding/json does not check them.
func scanString(d []byte, i int) (end int, plain, ok bool) {
	i++
	plain = true
	for {
		for i+8 <= len(d) && !special(binary.LittleEndian.Uint64(d[i:])) {
			if binary.LittleEndian.Uint64(d[i:])&highs != 0 {
				plain = false
			}
			i += 8
		}
		if i >= len(d) {
			return i, false, false
		}
		switch b := d[i]; {
		case b == '"':
			return i + 1, plain, true
		case b == '\\':
			plain = false
			if i+1 >= len(d) {
				return i + 1, false, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return i, false, false
				}
				i += 6
			default:
				return i, false, false
			}
		case b < 0x20:
			return i, false, false
		default:
			if b >= utf8.RuneSelf {
				plain = false
			}
			i++
		}
	}
}

// scanNumber reads the JSON number that starts at d[i] and returns the
// index after it; when it is not a number, ok is false and end is where it
// fails.
func scanNumber(d []byte, i int) (end int, ok bool) {
	digits := func() bool {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}
