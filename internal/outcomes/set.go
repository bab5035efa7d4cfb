// Package outcomes holds the set of remembered tool outcomes that the
// no-progress and stall rules share: the newest N distinct sums, forgotten
// first in, first out, without allocating once it has grown.
package outcomes

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/ring"
)

// A Set remembers the newest limit distinct sums, in the order they were
// first added: a set with first-in, first-out eviction. Its zero value
// remembers nothing; call Init first.
//
// The set is an open-addressing hash table with linear probing and
// backward-shift deletion, so that adding and evicting never allocate once
// the table has grown to its final size (a Go map may allocate when it
// rehashes after deletions). The zero Sum marks an empty slot; the zero Sum
// itself, should it ever be added, is kept aside in hasZero.
type Set struct {
	limit int
	// fifo holds the sums in the order they were added; its storage grows
	// to limit.
	fifo ring.Ring[canonical.Sum]
	// table has a power-of-two length, at least twice the number of sums
	// in it (so probes stay short).
	table   []canonical.Sum
	hasZero bool
	// seed makes the slot of a sum unpredictable, so that a crafted
	// snapshot cannot pile its sums into one probe sequence.
	seed uint64
}

// minTable is the smallest table allocated.
const minTable = 16

// Init empties the set and makes it remember at most limit sums (limit must be
// at least 1).
func (s *Set) Init(limit int) {
	*s = Set{limit: limit, fifo: ring.NewGrowing[canonical.Sum](limit), seed: rand.Uint64()}
}

// Len returns the number of sums remembered.
func (s *Set) Len() int { return s.fifo.Len() }

// Reset empties the set and keeps its memory.
func (s *Set) Reset() {
	clear(s.table)
	s.fifo.Clear()
	s.hasZero = false
}

// slot returns the home slot of x in a table of the given mask.
func (s *Set) slot(x canonical.Sum, mask uint64) uint64 {
	h := binary.LittleEndian.Uint64(x[:8]) ^ s.seed
	h ^= bits.RotateLeft64(binary.LittleEndian.Uint64(x[8:]), 29)
	// The splitmix64 finaliser.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h & mask
}

// Contains reports whether x is in the set.
func (s *Set) Contains(x canonical.Sum) bool {
	if x.IsZero() {
		return s.hasZero
	}
	if len(s.table) == 0 {
		return false
	}
	mask := uint64(len(s.table) - 1)
	for i := s.slot(x, mask); ; i = (i + 1) & mask {
		switch s.table[i] {
		case x:
			return true
		case canonical.Sum{}:
			return false
		}
	}
}

// Add adds x and reports whether it was new. When the set is full, the oldest
// sum makes room for it.
func (s *Set) Add(x canonical.Sum) bool {
	if s.Contains(x) {
		return false
	}
	if old, evicted := s.fifo.Push(x); evicted {
		s.remove(old)
	} else if 2*s.fifo.Len() > len(s.table) {
		s.grow()
		return true // grow inserted every sum of fifo, x included
	}
	s.insert(x)
	return true
}

// insert puts x, which is not in the set, into the table.
func (s *Set) insert(x canonical.Sum) {
	if x.IsZero() {
		s.hasZero = true
		return
	}
	mask := uint64(len(s.table) - 1)
	i := s.slot(x, mask)
	for !s.table[i].IsZero() {
		i = (i + 1) & mask
	}
	s.table[i] = x
}

// grow doubles the table (up to what limit needs) and puts every sum of fifo
// into it.
func (s *Set) grow() {
	size := max(len(s.table)*2, minTable)
	for size < 2*s.fifo.Len() {
		size *= 2
	}
	s.table = make([]canonical.Sum, size)
	for _, x := range s.fifo.Unordered() {
		s.insert(x)
	}
}

// remove takes x, which is in the set, out of the table, shifting back the
// entries after it that would otherwise no longer be found.
func (s *Set) remove(x canonical.Sum) {
	if x.IsZero() {
		s.hasZero = false
		return
	}
	mask := uint64(len(s.table) - 1)
	i := s.slot(x, mask)
	for s.table[i] != x {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; !s.table[j].IsZero(); j = (j + 1) & mask {
		// The entry at j may move to the hole at i unless its home slot
		// lies cyclically in (i, j].
		if home := s.slot(s.table[j], mask); (j-home)&mask >= (j-i)&mask {
			s.table[i] = s.table[j]
			i = j
		}
	}
	s.table[i] = canonical.Sum{}
}

// AppendOldestFirst appends the bytes of the sums, oldest first, to dst.
func (s *Set) AppendOldestFirst(dst []byte) []byte {
	for _, x := range s.fifo.All() {
		dst = append(dst, x[:]...)
	}
	return dst
}

// Encode returns the sums, oldest first, as the base64 (standard alphabet,
// no padding) of their concatenated 16 bytes: a compact form for snapshots.
func (s *Set) Encode() string {
	return string(s.AppendEncode(nil))
}

// AppendEncode appends what Encode returns to dst: base64 has nothing that
// JSON escapes, so a state may write it between quotes as it is.
func (s *Set) AppendEncode(dst []byte) []byte {
	return base64.RawStdEncoding.AppendEncode(dst, s.AppendOldestFirst(make([]byte, 0, 16*s.Len())))
}

// Decode replaces the sums by those of text, which Encode returned: whole
// sums, at most the set's limit of them, none twice. On an error the set is
// left as it was.
func (s *Set) Decode(text string) error {
	// limit sums take 16*limit bytes: 4 characters for every 3 of them,
	// and a partial group at the end.
	if max := (s.limit*16*4 + 2) / 3; len(text) > max {
		return fmt.Errorf("more than %d outcomes", s.limit)
	}
	raw, err := base64.RawStdEncoding.Strict().DecodeString(text)
	if err != nil {
		return fmt.Errorf("outcomes: %w", err)
	}
	if len(raw)%16 != 0 {
		return fmt.Errorf("outcomes are %d bytes, not a multiple of 16", len(raw))
	}
	var next Set
	next.Init(s.limit)
	if n := len(raw) / 16; n > 0 {
		// Room for them all at once, rather than growing as they come.
		next.fifo.Grow(n)
		size := minTable
		for size < 2*n {
			size *= 2
		}
		next.table = make([]canonical.Sum, size)
	}
	for i := 0; i < len(raw)/16; i++ {
		if !next.Add(canonical.Sum(raw[16*i : 16*i+16])) {
			return fmt.Errorf("outcome %d appears twice", i)
		}
	}
	*s = next
	return nil
}
