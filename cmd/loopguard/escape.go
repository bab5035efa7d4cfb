package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escape makes s safe to show on a terminal: control characters (C0, DEL,
// C1: escape sequences, carriage returns, newlines that would make a fake
// row), the Unicode line and paragraph separators and the bidirectional
// controls that reorder what follows are written as Go escapes (\n, \x1b,
// \u202e), and so is each byte of invalid UTF-8 (\xff). Everything else,
// backslashes included, is kept as it is. Every text the command writes for
// people goes through it: file names, and what rules and inputs say.
func escape(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, size):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether a rune of s (of size bytes) must be escaped.
func unsafeRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case unicode.IsControl(r): // C1
		return true
	case r == '\u2028' || r == '\u2029': // line and paragraph separators
		return true
	case r == '\u200e' || r == '\u200f' || '\u202a' <= r && r <= '\u202e' || '\u2066' <= r && r <= '\u2069': // bidi
		return true
	}
	return false
}

// width is the number of runes of s, which is how wide it shows once
// escaped, for the scripts a table of runs holds.
func width(s string) int { return utf8.RuneCountInString(s) }

// cutLeft shortens s to n runes by dropping its start, which it replaces by
// "...": the end of a path names the file.
func cutLeft(s string, n int) string {
	if width(s) <= n {
		return s
	}
	r := []rune(s)
	return "..." + string(r[len(r)-max(n-3, 0):])
}
