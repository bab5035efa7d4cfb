package canonical

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// This file puts an object's members in canonical order: sorted by the
// UTF-16 code units of their names, the last of equal names kept.
//
// Objects of a million members must be quick (issue 12 §4: a stable merge
// sort once took 36 s on one). Each member carries the first 16 bytes of
// its name, read while they are at hand, as two words whose order is the
// names' order; a radix sort orders them by the first word, then runs of
// equal first words by the second, then, reading the names again, by
// further words. Sorting n members takes O(n) time for each 8 bytes of
// name they share, and O(n log n) comparisons at worst for names that are
// not UTF-8 (which only Go maps have).

// member is an object member in the buffer: buf[start:end] is its encoded
// name, then its encoded value. (A careful pass over a map keeps its names
// in a buffer of their own; end then indexes the values.) prefix and next
// are the first and second 8 bytes of the name (see nameWords); sorting
// may overwrite them, but members of equal names always keep equal words.
type member struct {
	start, end   int
	prefix, next uint64
}

// Sizes at which the sort changes method.
const (
	insertionMax = 16  // up to this, insertion sort
	radixMin     = 256 // from this, radix sort; in between, pdqsort
	runMax       = 4   // runs of equal words up to this, comparison sort
)

// nameWords returns the words that order the encoded name at b[start:]
// (ending at keyEnd): its first and second 8 bytes, zero-padded, big-endian
// and in UTF-16 order (see utf16Order). Names that are not UTF-8 come after
// the others.
func nameWords(b []byte, start, keyEnd int) (prefix, next uint64) {
	if b[start] != tagString {
		return math.MaxUint64, math.MaxUint64
	}
	n := keyEnd - start - 2 // the name's length
	if b = b[:cap(b)]; start+17 <= len(b) {
		// Load 16 bytes (what follows the name is in the slice, if only
		// in its capacity) and keep n of them.
		prefix = binary.BigEndian.Uint64(b[start+1:])
		next = binary.BigEndian.Uint64(b[start+9:])
		switch {
		case n < 8:
			prefix &^= math.MaxUint64 >> (8 * n & 63)
			next = 0
		case n < 16:
			next &^= math.MaxUint64 >> (8 * (n - 8) & 63)
		}
		return utf16Order(prefix), utf16Order(next)
	}
	name := b[start+1 : keyEnd-1]
	return nameWord(name, 0), nameWord(name, 8)
}

// nameWord returns the 8 bytes of name from name[off], zero-padded,
// big-endian and in UTF-16 order (see utf16Order).
func nameWord(name []byte, off int) uint64 {
	if off >= len(name) {
		return 0
	}
	rest := name[off:]
	var p uint64
	if len(rest) >= 8 {
		p = binary.BigEndian.Uint64(rest)
	} else {
		for i, c := range rest {
			p |= uint64(c) << (56 - 8*i)
		}
	}
	return utf16Order(p)
}

// utf16Order remaps the bytes of a big-endian word of UTF-8 so that their
// order is that of UTF-16: lead bytes F0-F4 (characters above U+FFFF,
// surrogates in UTF-16) before EE-EF (U+E000 to U+FFFF). Continuation
// bytes (80-BF) and ASCII stay as they are.
func utf16Order(p uint64) uint64 {
	if p&msb == 0 {
		return p
	}
	var q uint64
	for i := 0; i < 8; i++ {
		c := byte(p >> (56 - 8*i))
		switch {
		case c >= 0xF0:
			c -= 2
		case c >= 0xEE:
			c += 5
		}
		q |= uint64(c) << (56 - 8*i)
	}
	return q
}

// nameEnd returns the end of the encoded name at b[start].
func nameEnd(b []byte, start int) int {
	if b[start] == tagString {
		return start + 2 + bytes.IndexByte(b[start+1:], stringEnd)
	}
	return start + 9 + int(binary.LittleEndian.Uint64(b[start+1:])) // opaque
}

// name returns the encoded name of m.
func (m *member) name(b []byte) []byte { return b[m.start:nameEnd(b, m.start)] }

// compareNames orders members by name; b holds the names.
func compareNames(b []byte, x, y *member) int {
	switch {
	case x.prefix < y.prefix:
		return -1
	case x.prefix > y.prefix:
		return 1
	case x.next < y.next:
		return -1
	case x.next > y.next:
		return 1
	}
	return compareKeys(x.name(b), y.name(b))
}

// compareStarts orders members by name, then by start (their order in the
// object).
func compareStarts(b []byte, x, y *member) int {
	if c := compareNames(b, x, y); c != 0 {
		return c
	}
	return x.start - y.start
}

// sameName reports whether two members next to each other in sorted order
// have the same name. Members of the same name have the same words, so
// that most checks need not read the names.
func sameName(b []byte, x, y *member) bool {
	return x.prefix == y.prefix && x.next == y.next && bytes.Equal(x.name(b), y.name(b))
}

// endObject sorts the members written since members[mark:] by name,
// keeps the last of equal names, writes the object end and drops the
// members from the stack.
func (e *encoder) endObject(mark int, truncated bool) {
	ms := e.members[mark:]
	limit := len(ms)
	if e.rootMembers > 0 && e.depth == e.rootDepth {
		limit = min(limit, e.rootMembers)
	}
	for i := 1; i < len(ms); i++ {
		if x, y := &ms[i-1], &ms[i]; x.prefix > y.prefix || x.prefix == y.prefix && compareNames(e.buf, x, y) >= 0 {
			if len(ms) <= insertionMax {
				e.reorderFew(ms)
			} else {
				e.reorder(ms, limit)
			}
			break
		}
	}
	e.members = e.members[:mark]
	if truncated {
		e.buf = append(e.buf, tagTruncated)
	}
	e.buf = append(e.buf, tagObjectEnd)
}

// endObjectAround is endObject for an object of distinct names whose
// members lie from buf[begin], but for one, of name k and the big string
// value s, left out: it sorts the others, then writes that member in its
// place, moving only the members after it. The string is copied once,
// from s to its place.
func (e *encoder) endObjectAround(begin, mark int, k, s string) {
	keys := len(e.keys)
	e.keys = appendStr(e.keys, k)
	name := e.keys[keys:]
	off := begin // where the member goes: after the names less than k
	for i := mark; i < len(e.members); i++ {
		if m := &e.members[i]; compareKeys(m.name(e.buf), name) < 0 {
			off += m.end - m.start
		}
	}
	e.endObject(mark, false)
	valid := utf8.ValidString(s)
	n := len(name) + 1 + len(s) + 1
	if !valid {
		n = len(name) + 9 + len(s)
	}
	end := len(e.buf)
	e.reserve(n)
	b := e.buf[:end+n]
	copy(b[off+n:], b[off:end])
	w := off + copy(b[off:], name)
	if valid {
		b[w] = tagString
		copy(b[w+1:], s)
		b[w+1+len(s)] = stringEnd
	} else {
		appendOpaque(b[:w], tagInvalidUTF8, unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	e.buf, e.keys = b, e.keys[:keys]
}

// reorder rewrites the members ms, which lie one after the other at the end
// of buf, sorted and de-duplicated. If limit is less than len(ms), only the
// first limit members are kept (for a cut).
func (e *encoder) reorder(ms []member, limit int) {
	begin := ms[0].start
	if limit < len(ms) {
		ms = firstMembers(e.buf, ms, limit)
	} else {
		sortMembers(e.buf, ms, len(ms))
	}
	// Copy the members in order, but for the earlier of equal names, into
	// tmp at the offset they will have in buf. Then swap the buffers, if
	// that copies less than copying the members back.
	size := len(e.buf) - begin
	swap := begin < size
	off := 0
	if swap {
		off = begin
	}
	tmp := slices.Grow(e.tmp[:0], off+size)[:off]
	for i := range ms {
		if i+1 < len(ms) && sameName(e.buf, &ms[i], &ms[i+1]) {
			continue // a later member has the same name
		}
		tmp = append(tmp, e.buf[ms[i].start:ms[i].end]...)
	}
	if swap {
		copy(tmp, e.buf[:begin])
		e.buf, e.tmp = tmp, e.buf[:0]
		return
	}
	e.buf = append(e.buf[:begin], tmp...)
	e.tmp = tmp[:0]
}

// reorderFew is reorder for at most insertionMax members, which it sorts by
// their prefixes with their indexes (a quarter of the bytes to move), and
// copies back into place through tmp.
func (e *encoder) reorderFew(ms []member) {
	var order [insertionMax]uint8
	var drop uint32 // members that a later member of the same name replaces
	// Arrays of records repeat their objects' names: the orders found are
	// kept, with their prefixes, in a small table indexed by the number of
	// members and the first two prefixes (kinds of records may alternate).
	last := &e.orders[(uint64(len(ms))*0x9E3779B97F4A7C15^ms[0].prefix^ms[1].prefix*0xC2B2AE3D27D4EB4F)>>(64-6)]
	hit := last.n == len(ms)
	for i := 0; hit && i < len(ms); i++ {
		hit = ms[i].prefix == last.prefixes[i]
	}
	if hit {
		order = last.order
	}
	if !hit {
		var prefixes [insertionMax]uint64
		for i := range ms {
			p := ms[i].prefix
			j := i
			for ; j > 0 && (prefixes[j-1] > p || prefixes[j-1] == p && compareStarts(e.buf, &ms[order[j-1]], &ms[i]) > 0); j-- {
				prefixes[j], order[j] = prefixes[j-1], order[j-1]
			}
			prefixes[j], order[j] = p, uint8(i)
		}
		distinct := true
		for k := 1; k < len(ms); k++ {
			if prefixes[k-1] == prefixes[k] {
				distinct = false
				if sameName(e.buf, &ms[order[k-1]], &ms[order[k]]) {
					drop |= 1 << (k - 1)
				}
			}
		}
		// Prefixes that are all distinct decide the order alone.
		if distinct {
			last.n = len(ms)
			for i := range ms {
				last.prefixes[i] = ms[i].prefix
			}
			last.order = order
		}
	}
	// A big member (a long text beside its type) is moved once, in place,
	// and only the others go through tmp (see reorderAround).
	if len(e.buf)-ms[0].start >= aroundMin {
		big, bigSize := -1, 0
		for k := range ms {
			if m := &ms[order[k]]; drop&(1<<k) == 0 && m.end-m.start > bigSize {
				big, bigSize = k, m.end-m.start
			}
		}
		if bigSize >= aroundMin {
			e.reorderAround(ms, &order, drop, big)
			return
		}
	}
	// Copy the object to tmp, then its members back in order. Members of
	// up to 32 bytes are moved 16 or 32 bytes at once: both slices have
	// room for 32 bytes more, and each member overwrites what the one
	// before wrote past its end.
	begin, end := ms[0].start, len(e.buf)
	e.reserve(32)
	tmp := append(slices.Grow(e.tmp[:0], end-begin+32), e.buf[begin:]...)
	buf := e.buf[:cap(e.buf)]
	w := begin
	for k := range ms {
		if drop&(1<<k) != 0 {
			continue
		}
		m := &ms[order[k]]
		from, n := m.start-begin, m.end-m.start
		switch {
		case n <= 16:
			store8(buf, w, load8(tmp, from))
			store8(buf, w+8, load8(tmp, from+8))
		case n <= 32:
			store8(buf, w, load8(tmp, from))
			store8(buf, w+8, load8(tmp, from+8))
			store8(buf, w+16, load8(tmp, from+16))
			store8(buf, w+24, load8(tmp, from+24))
		default:
			copy(buf[w:], tmp[from:from+n])
		}
		w += n
	}
	e.buf, e.tmp = buf[:w], tmp
}

// aroundMin is the size of a member from which reorderFew moves the
// others around it rather than the whole object through tmp. Smaller
// objects stay within the caches, where two quick passes cost less than
// the copies of reorderAround (records of 1.1 KB, with aroundMin 1 KiB,
// took 4 to 8% more CPU per byte).
const aroundMin = 64 << 10

// reorderAround is the end of reorderFew when its member ms[order[big]] is
// big: it copies the other members to tmp, moves the big one to its place
// (once, within buf: memory, not the garbage collector, makes a byte of a
// 16 MiB value dear, so each pass over it counts), then copies the others
// back around it. order and drop are as in reorderFew.
func (e *encoder) reorderAround(ms []member, order *[insertionMax]uint8, drop uint32, big int) {
	begin, end := ms[0].start, len(e.buf)
	bm := &ms[order[big]]
	size := bm.end - bm.start
	tmp := append(append(e.tmp[:0], e.buf[begin:bm.start]...), e.buf[bm.end:end]...)
	w := begin // where the big member goes: after the members before it
	for k := range big {
		if drop&(1<<k) == 0 {
			w += ms[order[k]].end - ms[order[k]].start
		}
	}
	copy(e.buf[w:], e.buf[bm.start:bm.end])
	w = begin
	for k := range ms {
		if drop&(1<<k) != 0 {
			continue
		}
		m := &ms[order[k]]
		n := m.end - m.start
		if k != big {
			from := m.start - begin
			if m.start > bm.start {
				from -= size
			}
			copy(e.buf[w:], tmp[from:from+n])
		}
		w += n
	}
	e.buf, e.tmp = e.buf[:w], tmp
}

// firstMembers sorts enough of ms to return the first members, in order,
// that hold its first n names (with the earlier members of these names,
// which reorder drops). It sorts the least n members, then twice as many,
// and so on, until n names are found.
func firstMembers(b []byte, ms []member, n int) []member {
	for sorted := n; ; sorted = min(len(ms), 2*sorted) {
		sortMembers(b, ms, sorted)
		names, i := 0, 0
		for names < n && i < sorted {
			// The members of a name are next to each other, and all
			// sorted if the first is.
			i++
			for i < len(ms) && sameName(b, &ms[i-1], &ms[i]) {
				i++
			}
			names++
		}
		if names == n || sorted == len(ms) {
			return ms[:i]
		}
	}
}

// sortMembers sorts ms by name (b holds the names). Of equal names, the
// member that comes last in the object (greatest start) comes last; the
// order of the others, which are dropped, is left unspecified. The words
// of each member must be its name's; they may be overwritten. Only the
// first limit members need be in order: the others may be left unsorted,
// after them.
func sortMembers(b []byte, ms []member, limit int) {
	if len(ms) < radixMin {
		compareSort(b, ms)
		return
	}
	radixSort(b, ms, 0, limit)
}

// compareSort sorts ms by comparing names (words first), then starts:
// insertion sort for few members, else pdqsort.
func compareSort(b []byte, ms []member) {
	if len(ms) <= insertionMax {
		for i := 1; i < len(ms); i++ {
			m := ms[i]
			j := i
			for ; j > 0 && compareStarts(b, &m, &ms[j-1]) < 0; j-- {
				ms[j] = ms[j-1]
			}
			ms[j] = m
		}
		return
	}
	slices.SortFunc(ms, func(x, y member) int { return compareStarts(b, &x, &y) })
}

// radixSort sorts ms, whose names agree on their first 8×level bytes. The
// prefix of each member holds the next 8 bytes of its name (see nameWord),
// and at level 0 next holds the 8 after them. It sorts them by prefix, then
// each run of equal prefixes by the following bytes (see sortRun). Only
// ms[:limit] need be sorted.
func radixSort(b []byte, ms []member, level, limit int) {
	sortPrefixes(ms, limit)
	for i := 0; i < len(ms) && i < limit; {
		j := i + 1
		for j < len(ms) && ms[j].prefix == ms[i].prefix {
			j++
		}
		if j-i > 1 {
			sortRun(b, ms[i:j], level, limit-i)
		}
		i = j
	}
}

// sortRun sorts a run of members whose names agree on their first
// 8×(level+1) bytes, zero-padded, by the bytes that follow. It leaves each
// member's words as they were (their prefixes are all equal).
func sortRun(b []byte, run []member, level, limit int) {
	if len(run) <= runMax || b[run[0].start] != tagString {
		// Few members, or names that are not UTF-8 (their prefixes are
		// all MaxUint64), which are compared bytewise.
		compareSort(b, run)
		return
	}
	word := run[0].prefix
	defer func() {
		for i := range run {
			run[i].prefix = word
		}
	}()
	off := 8 * (level + 1) // of the bytes that follow
	goesOn := false
	if level == 0 {
		// The second 8 bytes are at hand, in next.
		for i := range run {
			run[i].prefix = run[i].next
			goesOn = goesOn || run[i].next != 0
		}
	}
	if !goesOn {
		for i := range run {
			m := &run[i]
			name := m.name(b)
			name = name[1 : len(name)-1]
			m.prefix = nameWord(name, off)
			goesOn = goesOn || len(name) > off
		}
	}
	if goesOn {
		radixSort(b, run, level+1, limit)
		return
	}
	// None of the names goes on: they differ at most by NUL bytes at their
	// ends, and are equal if their lengths are.
	for i := range run {
		m := &run[i]
		m.prefix = uint64(nameEnd(b, m.start) - m.start)
	}
	sortPrefixes(run, len(run))
	for i := 0; i < len(run); {
		j := i + 1
		for j < len(run) && run[j].prefix == run[i].prefix {
			j++
		}
		// Equal names: the last in the object must come last.
		last := i
		for k := i + 1; k < j; k++ {
			if run[k].start > run[last].start {
				last = k
			}
		}
		run[last], run[j-1] = run[j-1], run[last]
		i = j
	}
}

// sortPrefixes sorts ms by prefix, in place: an American flag sort (a
// most-significant-digit radix sort that moves members along cycles),
// which skips the bytes all prefixes share and ends with insertion sort on
// few members. It is not stable. Only ms[:limit] need be sorted.
func sortPrefixes(ms []member, limit int) {
	if len(ms) <= insertionMax {
		insertionSortPrefixes(ms)
		return
	}
	var diff uint64
	for i := range ms {
		diff |= ms[i].prefix ^ ms[0].prefix
	}
	flagSort(ms, diff, limit)
}

// flagSort sorts ms by prefix; diff has the bits in which prefixes differ.
func flagSort(ms []member, diff uint64, limit int) {
	if diff == 0 {
		return
	}
	// The most significant byte in which prefixes differ.
	shift := (63 - bits.LeadingZeros64(diff)) &^ 7
	var counts [256]int
	var first, diffs [256]uint64 // per bucket: a prefix, and diff
	for i := range ms {
		p := ms[i].prefix
		k := byte(p >> shift)
		if counts[k] == 0 {
			first[k] = p
		}
		counts[k]++
		diffs[k] |= p ^ first[k]
	}
	var next, ends [256]int
	sum := 0
	for k, c := range counts {
		next[k] = sum
		sum += c
		ends[k] = sum
	}
	for k := range 256 {
		for next[k] < ends[k] {
			m := ms[next[k]]
			for {
				t := byte(m.prefix >> shift)
				if int(t) == k {
					break
				}
				// m goes to the next free slot of its bucket t, whose
				// member goes on.
				ms[next[t]], m = m, ms[next[t]]
				next[t]++
			}
			ms[next[k]] = m
			next[k]++
		}
	}
	start := 0
	for k, c := range counts {
		if start >= limit {
			break // the rest need not be sorted
		}
		switch {
		case c > insertionMax:
			flagSort(ms[start:start+c], diffs[k], limit-start)
		case c > 1:
			insertionSortPrefixes(ms[start : start+c])
		}
		start += c
	}
}

func insertionSortPrefixes(ms []member) {
	for i := 1; i < len(ms); i++ {
		m := ms[i]
		j := i
		for ; j > 0 && m.prefix < ms[j-1].prefix; j-- {
			ms[j] = ms[j-1]
		}
		ms[j] = m
	}
}
