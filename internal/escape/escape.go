// Package escape is the one policy for showing untrusted text to people:
// what a model, a log or a file name holds, before a terminal, a table or a
// page shows it. Package guard cuts and quotes model-chosen strings with it
// (guard.Clean, guard.Quote, details and previews), and the loopguard command
// escapes everything it prints for people with it (tables, standard error,
// the HTML page before its markup is escaped).
//
// The policy: a space and every character strconv.IsPrint accepts (letters,
// marks, numbers, punctuation and symbols, in any script) are kept; every
// other character is written as a Go escape (\n, \t, \x1b, \a, \u202e,
// \u200b): control characters (C0, DEL, C1), format characters such as the
// bidirectional controls and zero-width characters, the line and paragraph
// separators, non-characters (U+FFFE) and unassigned code points. Each byte
// of invalid UTF-8 is written as \xff. Backslashes are kept, so the result
// is for people to read, not to unquote.
package escape

import (
	"strconv"
	"unicode/utf8"
)

// String returns s with every character the policy does not keep escaped.
// Text that needs no escape is returned as it is, without allocating.
func String(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !keep(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	// An escape is at most 4 bytes per byte escaped (\x1b for one byte).
	return string(Append(b, s[i:], false, 4*len(s)))
}

// Append appends s to dst escaped as String escapes it (and, with quote,
// '"' and '\\' escaped too, as in a Go string), stopping before dst would
// grow by more than limit bytes: never inside a character or an escape.
func Append(dst []byte, s string, quote bool, limit int) []byte {
	end := len(dst) + limit
	var buf [utf8.UTFMax + 10]byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece := buf[:0]
		if r == utf8.RuneError && size == 1 {
			piece = append(piece, '\\', 'x', hexDigit(s[i]>>4), hexDigit(s[i]&0xf))
		} else {
			piece = AppendRune(piece, r, quote)
		}
		if len(dst)+len(piece) > end {
			break
		}
		dst = append(dst, piece...)
		i += size
	}
	return dst
}

// AppendRune appends r as it is when the policy keeps it, and as a Go
// escape otherwise; with quote, '"' and '\\' are escaped too. A
// utf8.RuneError is kept: it is the replacement character, and what was
// invalid UTF-8 before decoding is for Append to escape.
func AppendRune(dst []byte, r rune, quote bool) []byte {
	switch {
	case quote && (r == '"' || r == '\\'):
		return append(dst, '\\', byte(r))
	case keep(r, 0):
		return utf8.AppendRune(dst, r)
	}
	q := strconv.AppendQuoteRuneToASCII(dst, r) // '\x1b', '\u202e'
	// Drop the single quotes around the escape.
	n := len(dst)
	copy(q[n:], q[n+1:len(q)-1])
	return q[:len(q)-2]
}

// keep reports whether the policy keeps r, decoded from size bytes (0 when
// not decoded from bytes).
func keep(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return false
	}
	return r == ' ' || strconv.IsPrint(r)
}

func hexDigit(b byte) byte { return "0123456789abcdef"[b] }
