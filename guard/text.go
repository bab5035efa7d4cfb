package guard

import (
	"strconv"
	"unicode/utf8"
)

// MaxNameLen is the most bytes of a model-chosen string, such as a tool name
// or a finish reason, that details, evidence, [Explain] and log values show
// (see [Clean]).
const MaxNameLen = 256

// maxDetailLen is the most bytes of a detail that [Explain] and LogValue
// show.
const maxDetailLen = 4096

// Clean returns a model-chosen string (a tool name, a finish reason) as
// details, evidence and logs show it: every character that a terminal could
// act on (control characters, DEL, the C1 controls, format characters such as
// bidirectional overrides, invalid UTF-8) written as a Go escape (\x1b,
// \u202e), and the result cut to at most MaxNameLen bytes, on a character
// boundary. Printable text that short is returned as it is. The built-in
// detectors write every name and reason in their details and evidence
// through it.
func Clean(s string) string {
	if len(s) <= MaxNameLen && printableASCII(s) {
		return s
	}
	return string(appendEscaped(nil, s, false, MaxNameLen))
}

// Quote returns s as [Clean] does, between double quotes, with double quotes
// and backslashes escaped as in a Go string: for a name inside a detail
// (tool "search" called ...). At most MaxNameLen bytes are quoted.
func Quote(s string) string {
	b := append(make([]byte, 0, min(len(s), MaxNameLen)+2), '"')
	b = appendEscaped(b, s, true, MaxNameLen)
	return string(append(b, '"'))
}

// cleanDetail returns a detail (of any detector) with every character a
// terminal could act on escaped, cut to maxDetailLen bytes.
func cleanDetail(s string) string {
	if len(s) <= maxDetailLen && printableASCII(s) {
		return s
	}
	return string(appendEscaped(nil, s, false, maxDetailLen))
}

// printableASCII reports whether s is only printable ASCII characters.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// appendEscaped appends s to dst with every character that is not printable
// escaped (and, with quote, '"' and '\\' too), stopping before dst would
// grow by more than limit bytes.
func appendEscaped(dst []byte, s string, quote bool, limit int) []byte {
	end := len(dst) + limit
	var buf [utf8.UTFMax + 10]byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece := escapeRune(buf[:0], r, size == 1 && r == utf8.RuneError, s[i], quote)
		if len(dst)+len(piece) > end {
			break
		}
		dst = append(dst, piece...)
		i += size
	}
	return dst
}

// escapeRune appends r as it is when it is printable, and as a Go escape
// otherwise; invalid is set for a byte b that is not UTF-8.
func escapeRune(dst []byte, r rune, invalid bool, b byte, quote bool) []byte {
	switch {
	case invalid:
		return append(dst, '\\', 'x', hexDigit(b>>4), hexDigit(b&0xf))
	case quote && (r == '"' || r == '\\'):
		return append(dst, '\\', byte(r))
	case r == ' ' || strconv.IsPrint(r):
		return utf8.AppendRune(dst, r)
	}
	q := strconv.AppendQuoteRuneToASCII(dst, r) // '\x1b', '\u202e'
	// Drop the single quotes around the escape.
	n := len(dst)
	copy(q[n:], q[n+1:len(q)-1])
	return q[:len(q)-2]
}

func hexDigit(b byte) byte { return "0123456789abcdef"[b] }
