package canonical

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"unsafe"
)

// Sum is a 128-bit hash. Sums are stable across processes, machines and
// versions of this package, so they may be stored. The zero Sum is not the
// hash of any value in practice; IsZero reports it.
type Sum [16]byte

// sumFrom returns the Sum of the two halves of a MurmurHash3 x64_128 digest,
// h1 then h2, each big-endian, as the reference implementation prints them.
func sumFrom(h1, h2 uint64) Sum {
	var s Sum
	binary.BigEndian.PutUint64(s[:8], h1)
	binary.BigEndian.PutUint64(s[8:], h2)
	return s
}

// HashBytes returns the raw 128-bit hash (MurmurHash3 x64_128, seed 0) of b,
// without any canonicalisation. It does not allocate. Use it to combine
// sums, for example a tool name with the Sum of its arguments.
func HashBytes(b []byte) Sum {
	return sumFrom(murmur3(b))
}

// HashString returns HashBytes([]byte(s)) without allocating.
func HashString(s string) Sum {
	// murmur3 only reads its argument.
	return sumFrom(murmur3(unsafe.Slice(unsafe.StringData(s), len(s))))
}

// IsZero reports whether s is the zero Sum (all 16 bytes zero).
func (s Sum) IsZero() bool { return s == Sum{} }

// String returns s as 32 lowercase hexadecimal characters.
func (s Sum) String() string {
	var b [32]byte
	hex.Encode(b[:], s[:])
	return string(b[:])
}

// AppendText appends the 32 lowercase hexadecimal characters of s to b.
func (s Sum) AppendText(b []byte) ([]byte, error) {
	return hex.AppendEncode(b, s[:]), nil
}

// MarshalText returns s as 32 lowercase hexadecimal characters.
func (s Sum) MarshalText() ([]byte, error) {
	return s.AppendText(make([]byte, 0, 32))
}

// UnmarshalText sets s from the form String prints; see ParseSum.
func (s *Sum) UnmarshalText(text []byte) error {
	v, err := parseSum(text)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ErrSyntax is returned by ParseSum and Sum.UnmarshalText for
// text that is not exactly 32 lowercase hexadecimal characters.
var ErrSyntax = errors.New("canonical: a Sum is 32 lowercase hexadecimal characters")

// ParseSum parses the form String prints: exactly 32 hexadecimal digits,
// lowercase only (0-9, a-f). Any other length or character, uppercase
// included, is an error, so each Sum has exactly one text form.
func ParseSum(s string) (Sum, error) {
	return parseSum(unsafe.Slice(unsafe.StringData(s), len(s)))
}

func parseSum(text []byte) (Sum, error) {
	var s Sum
	if len(text) != 32 {
		return s, ErrSyntax
	}
	for _, c := range text {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return s, ErrSyntax
		}
	}
	hex.Decode(s[:], text)
	return s, nil
}
