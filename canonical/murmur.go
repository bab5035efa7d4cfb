package canonical

import (
	"math/bits"
)

// This file implements MurmurHash3 x64_128 (Austin Appleby, public domain)
// with seed 0. Its output is part of the package's compatibility promise:
// sums are stored in snapshots, so the golden values in murmur_test.go must
// never change.

const (
	murmurC1 = 0x87c37b91114253d5
	murmurC2 = 0x4cf5ad432745937f
)

// murmur3 returns MurmurHash3 x64_128 of b with seed 0, as the two 64-bit
// halves h1 and h2 of the reference implementation.
func murmur3(b []byte) (h1, h2 uint64) {
	n := len(b)
	i := 0
	for ; i+16 <= n; i += 16 {
		k1, k2 := load8(b, i), load8(b, i+8)

		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	b = b[i:]

	var k1, k2 uint64
	switch len(b) {
	case 15:
		k2 ^= uint64(b[14]) << 48
		fallthrough
	case 14:
		k2 ^= uint64(b[13]) << 40
		fallthrough
	case 13:
		k2 ^= uint64(b[12]) << 32
		fallthrough
	case 12:
		k2 ^= uint64(b[11]) << 24
		fallthrough
	case 11:
		k2 ^= uint64(b[10]) << 16
		fallthrough
	case 10:
		k2 ^= uint64(b[9]) << 8
		fallthrough
	case 9:
		k2 ^= uint64(b[8])
		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= uint64(b[7]) << 56
		fallthrough
	case 7:
		k1 ^= uint64(b[6]) << 48
		fallthrough
	case 6:
		k1 ^= uint64(b[5]) << 40
		fallthrough
	case 5:
		k1 ^= uint64(b[4]) << 32
		fallthrough
	case 4:
		k1 ^= uint64(b[3]) << 24
		fallthrough
	case 3:
		k1 ^= uint64(b[2]) << 16
		fallthrough
	case 2:
		k1 ^= uint64(b[1]) << 8
		fallthrough
	case 1:
		k1 ^= uint64(b[0])
		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1
	}

	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
