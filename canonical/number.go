package canonical

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"unsafe"
)

// This file reads JSON numbers. Most are converted here, exactly (correctly
// rounded, as strconv.ParseFloat does): those of at most 19 significant
// digits whose decimal exponent is small. The others go to ParseFloat.

// jsonNumber reads the number at src[i] and writes its float64 value.
func (e *encoder) jsonNumber(src []byte, i int) (int, bool) {
	start := i
	neg := false
	if i < len(src) && src[i] == '-' {
		neg = true
		i++
	}
	if i >= len(src) {
		return i, false
	}
	// The number is mant × 10^exp; mant holds the first 19 significant
	// digits (n of them), so that it is exact.
	var mant uint64
	n, exp, dropped := 0, 0, false
	switch c := src[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		mant = uint64(c - '0')
		n = 1
		for i++; i < len(src); i++ {
			c := src[i] - '0'
			if c > 9 {
				break
			}
			if n < 19 {
				mant = mant*10 + uint64(c)
				n++
			} else {
				dropped = dropped || c != 0
				exp++
			}
		}
	default:
		return i, false
	}
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || src[i]-'0' > 9 {
			return i, false
		}
		if mant == 0 {
			// Leading zeros of 0.000123 count for nothing.
			for i < len(src) && src[i] == '0' {
				exp--
				i++
			}
		}
		for n <= 19-8 && i+8 <= len(src) { // 8 digits at a time
			w := binary.LittleEndian.Uint64(src[i:])
			if (w&0xF0F0F0F0F0F0F0F0)|((w+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
				break
			}
			mant = mant*100_000_000 + eightDigits(w)
			n += 8
			exp -= 8
			i += 8
		}
		for ; i < len(src); i++ {
			c := src[i] - '0'
			if c > 9 {
				break
			}
			if n < 19 {
				mant = mant*10 + uint64(c)
				n++
				exp--
			} else {
				dropped = dropped || c != 0
			}
		}
	}
	if i < len(src) && src[i]|0x20 == 'e' {
		i++
		negExp := false
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			negExp = src[i] == '-'
			i++
		}
		if i >= len(src) || src[i]-'0' > 9 {
			return i, false
		}
		x := 0
		for ; i < len(src) && src[i]-'0' <= 9; i++ {
			if x < 1_000_000 { // beyond, ParseFloat decides
				x = x*10 + int(src[i]-'0')
			}
		}
		if negExp {
			x = -x
		}
		exp += x
	}
	var f float64
	if mant < 1<<53 && -22 <= exp && exp <= 22 && !dropped {
		// mant and 10^|exp| are exact doubles: one correctly rounded
		// operation gives the correctly rounded result.
		f = float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		} else {
			f *= pow10[exp]
		}
	} else {
		var ok bool
		if f, ok = decimalFloat(mant, exp, dropped); !ok {
			var err error
			if f, err = strconv.ParseFloat(unsafe.String(&src[start], i-start), 64); err != nil {
				return i, false // out of the range of float64
			}
			neg = false // f has its sign
		}
	}
	if neg {
		f = -f
	}
	e.number(f)
	return i, true
}

// eightDigits returns the value of the 8 ASCII digits in w, the first in
// its lowest byte.
func eightDigits(w uint64) uint64 {
	w = (w & 0x0F0F0F0F0F0F0F0F) * (10<<8 + 1) >> 8
	w = (w & 0x00FF00FF00FF00FF) * (100<<16 + 1) >> 16
	return (w & 0x0000FFFF0000FFFF) * (10000<<32 + 1) >> 32
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// pow10u holds the powers of ten that uint64 holds.
var pow10u = [...]uint64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// decimalFloat returns the float64 nearest to m × 10^exp (ties to even), if
// it can be computed exactly here: m must hold all the digits (dropped is
// false).
func decimalFloat(m uint64, exp int, dropped bool) (float64, bool) {
	switch {
	case dropped:
		return 0, false
	case m == 0:
		return 0, true
	case m < 1<<53 && -22 <= exp && exp <= 22:
		if exp < 0 {
			return float64(m) / pow10[-exp], true
		}
		return float64(m) * pow10[exp], true
	case m < 1<<53 && 22 < exp && exp <= 22+15 && m < (1<<53)/pow10u[exp-22]:
		return float64(m*pow10u[exp-22]) * 1e22, true // 1.5e30, 2e25
	case 0 <= exp && exp <= 19:
		hi, lo := bits.Mul64(m, pow10u[exp])
		if hi == 0 {
			return roundBits(lo, false, 0), true
		}
		// The top 64 bits, and whether any bit below them is set.
		z := bits.LeadingZeros64(hi)
		q := hi<<z | lo>>(64-z)
		if z == 0 {
			q = hi
		}
		return roundBits(q, lo<<z != 0, 64-z), true
	case -19 <= exp && exp < 0:
		// q = m·2^s / 10^-exp, with its top bit set, and the remainder.
		div := pow10u[-exp]
		s := 63 + bits.Len64(div) - bits.Len64(m) // 3 at least
		var hi, lo uint64
		if s >= 64 {
			hi = m << (s - 64)
		} else {
			hi, lo = m>>(64-s), m<<s
		}
		q, r := bits.Div64(hi, lo, div)
		if q < 1<<63 {
			// One more bit: q = 2q + (2r >= div), r = 2r mod div.
			s++
			q <<= 1
			if r >= div-r {
				q |= 1
				r -= div - r
			} else {
				r <<= 1
			}
		}
		return roundBits(q, r != 0, -s), true
	}
	return 0, false
}

// roundBits returns the float64 nearest to (q + ε) × 2^e2, where q is not
// zero and 0 <= ε < 1 is not zero if sticky (then q must have its top bit
// set): ties to even. The result must be a normal number.
func roundBits(q uint64, sticky bool, e2 int) float64 {
	z := bits.LeadingZeros64(q)
	q <<= z // sticky still holds: the bits shifted in are zeros
	e2 -= z
	m := q >> 11
	if rest := q & 0x7FF; rest > 0x400 || rest == 0x400 && (sticky || m&1 == 1) {
		m++
		if m == 1<<53 {
			m >>= 1
			e2++
		}
	}
	// The value is m × 2^(e2+11), with 2^52 <= m < 2^53.
	return math.Float64frombits(uint64(e2+11+52+1023)<<52 | m&(1<<52-1))
}
