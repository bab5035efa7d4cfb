package guard

import (
	"bytes"
	"encoding/binary"
)

// maxCompactDepth is the deepest nesting appendCompact accepts: that of
// encoding/json's scanner, so that it accepts exactly what json.Valid does.
const maxCompactDepth = 10000

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
	if c.depth++; c.depth > maxCompactDepth {
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
	d := c.src
	start := c.i
	i := start + 1
	for {
		for i+8 <= len(d) && !special(binary.LittleEndian.Uint64(d[i:])) {
			i += 8
		}
		if i >= len(d) {
			return false
		}
		switch b := d[i]; {
		case b == '"':
			c.dst = append(c.dst, d[start:i+1]...)
			c.i = i + 1
			return true
		case b == '\\':
			if i+1 >= len(d) {
				return false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return false
				}
				i += 6
			default:
				return false
			}
		case b < 0x20:
			return false
		default:
			i++
		}
	}
}

// number copies a number that is next.
func (c *compacter) number() bool {
	d := c.src
	start, i := c.i, c.i
	digits := func() bool {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > j
	}
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	c.dst = append(c.dst, d[start:i]...)
	c.i = i
	return true
}
