package noprogress

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/loopguard/loopguard/canonical"
)

// outcomeSet remembers the newest limit distinct sums, in the order they were
// first added: a set with first-in, first-out eviction.
//
// The set is an open-addressing hash table with linear probing and
// backward-shift deletion, so that adding and evicting never allocate once
// the table has grown to its final size (a Go map may allocate when it
// rehashes after deletions). The zero Sum marks an empty slot; the zero Sum
// itself, should it ever be added, is kept aside in hasZero.
type outcomeSet struct {
	limit int
	// fifo holds the sums in the order they were added. It grows to limit
	// and then is a ring whose oldest entry is fifo[head].
	fifo []canonical.Sum
	head int
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

func (s *outcomeSet) init(limit int) {
	*s = outcomeSet{limit: limit, seed: rand.Uint64()}
}

func (s *outcomeSet) len() int { return len(s.fifo) }

// reset empties the set and keeps its memory.
func (s *outcomeSet) reset() {
	clear(s.table)
	s.fifo, s.head, s.hasZero = s.fifo[:0], 0, false
}

// slot returns the home slot of x in a table of the given mask.
func (s *outcomeSet) slot(x canonical.Sum, mask uint64) uint64 {
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

// contains reports whether x is in the set.
func (s *outcomeSet) contains(x canonical.Sum) bool {
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

// add adds x and reports whether it was new. When the set is full, the oldest
// sum makes room for it.
func (s *outcomeSet) add(x canonical.Sum) bool {
	if s.contains(x) {
		return false
	}
	if len(s.fifo) == s.limit {
		s.remove(s.fifo[s.head])
		s.fifo[s.head] = x
		s.head = (s.head + 1) % s.limit
	} else {
		s.fifo = append(s.fifo, x)
		if 2*len(s.fifo) > len(s.table) {
			s.grow()
			return true // grow inserted every sum of fifo, x included
		}
	}
	s.insert(x)
	return true
}

// insert puts x, which is not in the set, into the table.
func (s *outcomeSet) insert(x canonical.Sum) {
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
func (s *outcomeSet) grow() {
	size := max(len(s.table)*2, minTable)
	for size < 2*len(s.fifo) {
		size *= 2
	}
	s.table = make([]canonical.Sum, size)
	for _, x := range s.fifo {
		s.insert(x)
	}
}

// remove takes x, which is in the set, out of the table, shifting back the
// entries after it that would otherwise no longer be found.
func (s *outcomeSet) remove(x canonical.Sum) {
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

// appendOldestFirst appends the bytes of the sums, oldest first, to dst.
func (s *outcomeSet) appendOldestFirst(dst []byte) []byte {
	for _, x := range s.fifo[s.head:] {
		dst = append(dst, x[:]...)
	}
	for _, x := range s.fifo[:s.head] {
		dst = append(dst, x[:]...)
	}
	return dst
}
