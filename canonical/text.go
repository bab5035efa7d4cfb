package canonical

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
)

// This file prints the canonical encoding as RFC 8785 text, with the
// extension markers as bare bracketed words, which no JSON text contains.

// appendText prints the encoded value at enc[0:] and returns the rest.
func appendText(dst, enc []byte) ([]byte, []byte) {
	tag := enc[0]
	enc = enc[1:]
	switch tag {
	case tagNull:
		dst = append(dst, "null"...)
	case tagTrue:
		dst = append(dst, "true"...)
	case tagFalse:
		dst = append(dst, "false"...)
	case tagNumber:
		dst = appendNumber(dst, math.Float64frombits(binary.LittleEndian.Uint64(enc)))
		enc = enc[8:]
	case tagString:
		dst, enc = appendString(dst, enc)
	case tagArray:
		dst = append(dst, '[')
		for i := 0; enc[0] != tagArrayEnd; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst, enc = appendText(dst, enc)
		}
		dst = append(dst, ']')
		enc = enc[1:]
	case tagObject:
		dst = append(dst, '{')
		for i := 0; enc[0] != tagObjectEnd; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if enc[0] == tagTruncated {
				dst, enc = appendText(dst, enc)
				continue
			}
			dst, enc = appendText(dst, enc) // the name
			dst = append(dst, ':')
			dst, enc = appendText(dst, enc)
		}
		dst = append(dst, '}')
		enc = enc[1:]
	case tagCircular:
		dst = append(dst, "[Circular:"...)
		dst = strconv.AppendUint(dst, binary.LittleEndian.Uint64(enc), 10)
		dst = append(dst, ']')
		enc = enc[8:]
	case tagTooDeep:
		dst = append(dst, "[TooDeep]"...)
	case tagTruncated:
		dst = append(dst, "[Truncated]"...)
	case tagFailed:
		dst = append(dst, "[Failed:"...)
		dst = strconv.AppendUint(dst, binary.LittleEndian.Uint64(enc[8:]), 10)
		dst = append(dst, ']')
		enc = enc[16:]
	case tagInvalidJSON, tagInvalidUTF8, tagUnsupported:
		n := binary.LittleEndian.Uint64(enc)
		b := enc[8 : 8+n]
		enc = enc[8+n:]
		switch tag {
		case tagInvalidJSON:
			dst = append(dst, "[InvalidJSON:"...)
			dst = hex.AppendEncode(dst, b)
		case tagInvalidUTF8:
			dst = append(dst, "[InvalidUTF8:"...)
			dst = hex.AppendEncode(dst, b)
		default:
			dst = append(dst, "[Unsupported:"...)
			dst = append(dst, b...)
		}
		dst = append(dst, ']')
	}
	return dst, enc
}

// appendString prints an encoded string (after its tag) with the minimal
// escaping of RFC 8785.
func appendString(dst, enc []byte) ([]byte, []byte) {
	dst = append(dst, '"')
	i, run := 0, 0
	for ; enc[i] != stringEnd; i++ {
		c := enc[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, enc[run:i]...)
		run = i + 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const digits = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', digits[c>>4], digits[c&15])
		}
	}
	dst = append(dst, enc[run:i]...)
	dst = append(dst, '"')
	return dst, enc[i+1:]
}

// appendNumber prints f as ECMAScript's Number::toString does (ECMA-262,
// 7.1.12.1), which RFC 8785 adopts; NaN and the infinities, which JSON
// lacks, print as in ECMAScript.
func appendNumber(dst []byte, f float64) []byte {
	switch {
	case f != f:
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		return append(dst, '0')
	case f < 0:
		dst = append(dst, '-')
		f = -f
	}
	// Shortest digits that round-trip, as d.ddde±x.
	var a [32]byte
	s := strconv.AppendFloat(a[:0], f, 'e', -1, 64)
	e := len(s) - 1
	for s[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range s[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if s[e+1] == '-' {
		exp = -exp
	}
	var d [24]byte
	digits := append(d[:0], s[0]) // the digits without the dot
	if e > 1 {
		digits = append(digits, s[2:e]...)
	}
	k := len(digits)
	n := exp + 1 // the value is 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for i := k; i < n; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := n; i < 0; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
