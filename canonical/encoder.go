package canonical

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The canonical encoding.
//
// Every value is first written in a compact binary form, the canonical
// encoding, in which equal values have equal bytes: object members are
// sorted by the UTF-16 code units of their names and de-duplicated (the
// last wins), strings are decoded, numbers are IEEE-754 doubles. Hash is
// MurmurHash3 of that encoding, and Transform and Append print it as RFC
// 8785 text. The encoding is part of the compatibility promise (sums are
// stored): never change it.
//
//	null, true, false  'n', 't', 'f'
//	number             'd' + 8 bytes little-endian IEEE-754 bits (-0 is
//	                   written as 0; every NaN as 0x7ff8000000000001)
//	string             's' + UTF-8 bytes + 0xFF (0xFF never occurs in UTF-8)
//	array              '[' + elements + ']'
//	object             '{' + members + ['T'] + '}', member = string + value
//
// Extensions, for values JSON cannot express:
//
//	'C' + 8 bytes n       [Circular:n] a reference back to the container n
//	                      levels up (0: the same level, through pointers)
//	'D'                   [TooDeep] a container nested deeper than 64
//	'T'                   [Truncated] the rest of a container, cut after
//	                      200,000 values
//	'E' + 16 bytes        [Failed:n] a value whose reading failed; unique
//	'X' + 8 bytes len + b [InvalidJSON:hex] JSON text that is not valid
//	'U' + 8 bytes len + b [InvalidUTF8:hex] a string that is not UTF-8
//	'Z' + 8 bytes len + b [Unsupported:b] a func, chan, complex number...
const (
	tagNull        = 'n'
	tagTrue        = 't'
	tagFalse       = 'f'
	tagNumber      = 'd'
	tagString      = 's'
	tagArray       = '['
	tagArrayEnd    = ']'
	tagObject      = '{'
	tagObjectEnd   = '}'
	tagCircular    = 'C'
	tagTooDeep     = 'D'
	tagTruncated   = 'T'
	tagFailed      = 'E'
	tagInvalidJSON = 'X'
	tagInvalidUTF8 = 'U'
	tagUnsupported = 'Z'
	stringEnd      = 0xFF
)

// Limits on what is hashed; past them values are replaced by markers.
const (
	// MaxDepth is how deeply arrays and objects may nest; a container
	// nested deeper is replaced by the marker [TooDeep].
	MaxDepth = 64
	// MaxValues is how many values (scalars, containers and markers,
	// counted in canonical order) are read; the rest of every container
	// still open is replaced by the marker [Truncated].
	MaxValues = 200_000
	// maxTextDepth is how deeply JSON text may nest to be valid at all, as
	// in encoding/json.
	maxTextDepth = 10_000
)

const canonicalNaN = 0x7ff8000000000001

// failures numbers the placeholders of values whose reading failed. Together
// with processNonce, which keeps placeholders of different processes apart,
// it is the package's only global state.
var (
	failures     atomic.Uint64
	processNonce = sync.OnceValue(rand.Uint64)
)

// ref is a pointer, map or slice on the path from the root to the value
// being encoded, for finding cycles.
type ref struct {
	typ   any // reflect.Type, or a type descriptor for the fast paths
	ptr   uintptr
	len   int
	depth int
}

// encoder writes the canonical encoding of one value into buf.
type encoder struct {
	buf     []byte
	tmp     []byte
	members []member

	// The careful pass reads a map's names and values before it sorts
	// them: the names go to keys, the values to anys or vals (stacks, as
	// members is).
	keys []byte
	anys []any
	vals []reflect.Value
	refs []ref

	depth     int  // containers open around the current value
	hops      int  // pointers followed to reach the current value
	count     int  // values read so far
	maxDepth  int  // containers nested deeper are cut
	maxValues int  // values past this are cut
	careful   bool // visit members in canonical order, so cuts are exact
	sized     int  // the length of the JSON text sizeFor made room for
	idle      int  // calls in a row that did not need big buffers (see trim)

	// orders holds orders found for objects of n members whose prefixes
	// were all distinct (n is 0 for an empty slot; see reorderFew).
	orders [64]struct {
		n        int
		prefixes [insertionMax]uint64
		order    [insertionMax]uint8
	}

	// When JSON text is cut (see jsonTextCut), only the first rootMembers
	// members of an object at depth rootDepth (the text's root) are kept.
	rootDepth, rootMembers int
}

var encoderPool = sync.Pool{New: func() any { return new(encoder) }}

// What an encoder keeps of its buffers when it goes back to the pool.
//
// Hashing a value up to maxPooledBytes long (its JSON text, or its
// encoding) allocates nothing once the pool holds an encoder that did it
// before: buffers that grew by doubling to hold such a value are at most
// twice as big, and are kept. Without them each call would allocate and
// clear about twice the value's size and set off garbage collections, and
// a byte cost 1.7 to 4 times more at 1 MiB than at 300 KiB (BENCHMARKS.md).
//
// So that the memory is held only while such values come, buffers of more
// than smallBytes go after bigIdleUses calls in a row that did not need
// them (and with the encoder, after two garbage collections without a
// call); buffers of more than twice maxPooledBytes are never kept.
const (
	maxPooledBytes = 16 << 20
	smallBytes     = 1 << 20
	bigIdleUses    = 64
)

func getEncoder() *encoder {
	e := encoderPool.Get().(*encoder)
	e.reset()
	e.sized = 0
	return e
}

func putEncoder(e *encoder) {
	e.trim()
	encoderPool.Put(e)
}

// trim drops the buffers the pool should not keep (see maxPooledBytes). A
// call needed big buffers if its encoding or its text was more than half
// smallBytes long: a buffer grown to hold it may be bigger than smallBytes.
func (e *encoder) trim() {
	if max(len(e.buf), e.sized) > smallBytes/2 {
		e.idle = 0
	} else if e.idle < bigIdleUses {
		e.idle++
	}
	limit := 2 * maxPooledBytes
	if e.idle >= bigIdleUses {
		limit = smallBytes
	}
	const (
		memberSize = int(unsafe.Sizeof(member{}))
		anySize    = int(unsafe.Sizeof(any(nil)))
		valueSize  = int(unsafe.Sizeof(reflect.Value{}))
	)
	if cap(e.buf) > limit {
		e.buf = nil
	}
	if cap(e.tmp) > limit {
		e.tmp = nil
	}
	if cap(e.keys) > limit {
		e.keys = nil
	}
	if cap(e.members)*memberSize > limit {
		e.members = nil
	}
	if cap(e.anys)*anySize > limit {
		e.anys = nil
	}
	if cap(e.vals)*valueSize > limit {
		e.vals = nil
	}
}

func (e *encoder) reset() {
	e.buf = e.buf[:0]
	e.members = e.members[:0]
	e.refs = e.refs[:0]
	e.depth, e.count, e.hops = 0, 0, 0
	e.maxDepth, e.maxValues = MaxDepth, MaxValues
	e.careful = false
	e.rootMembers = 0
}

// overflow is panicked (and recovered by run) when a quick pass reads more
// than maxValues values: the cut must then be made in canonical order, by a
// careful pass.
type overflow struct{}

// run encodes with f, first quickly, and again carefully if the quick pass
// met the value limit. Should f panic otherwise (a bug: user code is called
// under its own recover), the value becomes a [Failed] placeholder rather
// than a crash of the caller.
func (e *encoder) run(f func(e *encoder)) {
	maxDepth, maxValues := e.maxDepth, e.maxValues
	if e.try(f) == nil {
		return
	}
	e.reset()
	e.maxDepth, e.maxValues = maxDepth, maxValues
	e.careful = true
	if e.try(f) != nil {
		e.reset()
		e.failed()
	}
}

// try runs f and returns what it panicked with, or nil.
func (e *encoder) try(f func(e *encoder)) (panicked any) {
	defer func() { panicked = recover() }()
	f(e)
	return nil
}

// next counts one more value inside a container and reports whether it may
// be read. When it may not, the container gets the [Truncated] marker and
// must be closed.
func (e *encoder) next() bool {
	if e.count < e.maxValues {
		return true
	}
	if !e.careful {
		panic(overflow{})
	}
	e.buf = append(e.buf, tagTruncated)
	return false
}

// sizeFor gives buf room for the encoding of the JSON text src, which is
// about as long, when src is long: buf would otherwise grow by doubling.
func (e *encoder) sizeFor(src []byte) {
	e.sized = len(src)
	if len(src) > cap(e.buf) {
		e.buf = make([]byte, 0, len(src)+len(src)/8)
	}
}

// reserve makes room in buf for n more bytes, for writes that do not
// check. The JSON reader reserves room for each element and member, so
// that buf doubles as it grows (append grows big slices by a quarter, so
// that they would be copied four times over).
func (e *encoder) reserve(n int) {
	if cap(e.buf)-len(e.buf) < n {
		e.growBuf(n)
	}
}

//go:noinline
func (e *encoder) growBuf(n int) {
	e.buf = slices.Grow(e.buf, max(n, len(e.buf)))
}

//go:noinline
func (e *encoder) growMembers() {
	e.members = slices.Grow(e.members, max(8, len(e.members)))
}

// expect is told that the container just opened has n elements or
// members. The quick pass gives up at once if it could not read them all,
// rather than after reading as many as the limit allows.
func (e *encoder) expect(n int) {
	if !e.careful && n > e.maxValues-e.count {
		panic(overflow{})
	}
}

// open reports whether a container may be opened at the current depth; if
// not, it writes the [TooDeep] marker instead.
func (e *encoder) open() bool {
	e.count++
	if e.depth >= e.maxDepth {
		e.buf = append(e.buf, tagTooDeep)
		return false
	}
	return true
}

func (e *encoder) scalar(tag byte) {
	e.count++
	e.buf = append(e.buf, tag)
}

func (e *encoder) number(f float64) {
	e.count++
	u := math.Float64bits(f)
	switch {
	case f == 0:
		u = 0
	case f != f:
		u = canonicalNaN
	}
	e.buf = append(e.buf, tagNumber)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, u)
}

func (e *encoder) opaque(tag byte, b []byte) {
	e.count++
	e.appendOpaque(tag, b)
}

// appendOpaque writes tagged opaque bytes without counting a value.
func (e *encoder) appendOpaque(tag byte, b []byte) {
	e.buf = appendOpaque(e.buf, tag, b)
}

func appendOpaque(dst []byte, tag byte, b []byte) []byte {
	dst = append(dst, tag)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(b)))
	return append(dst, b...)
}

func (e *encoder) failed() {
	e.count++
	e.buf = append(e.buf, tagFailed)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, processNonce())
	e.buf = binary.LittleEndian.AppendUint64(e.buf, failures.Add(1))
}

func (e *encoder) circular(levels int) {
	e.count++
	e.buf = append(e.buf, tagCircular)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(levels))
}

// pushRef records an ancestor; if it is already one, it writes the
// [Circular] marker and reports false.
func (e *encoder) pushRef(typ any, ptr uintptr, n int) bool {
	for i := len(e.refs) - 1; i >= 0; i-- {
		r := &e.refs[i]
		if r.ptr == ptr && r.len == n && r.typ == typ {
			e.circular(e.depth - r.depth)
			return false
		}
	}
	e.refs = append(e.refs, ref{typ, ptr, n, e.depth})
	return true
}

func (e *encoder) popRef() { e.refs = e.refs[:len(e.refs)-1] }

// addMember records the member that starts at buf[start], whose name ends
// at buf[keyEnd] and whose value ends at the end of buf.
func (e *encoder) addMember(start, keyEnd int) {
	p, q := nameWords(e.buf, start, keyEnd)
	if len(e.members) == cap(e.members) {
		e.growMembers()
	}
	e.members = append(e.members, member{start, len(e.buf), p, q})
}

// compareKeys orders encoded member names: strings by their UTF-16 code
// units, as RFC 8785 asks; names that are not UTF-8 after them, bytewise.
func compareKeys(a, b []byte) int {
	if a[0] != b[0] || a[0] != tagString {
		if a[0] != b[0] {
			if a[0] == tagString {
				return -1
			}
			return 1
		}
		return bytesCompare(a, b)
	}
	return compareUTF16(a[1:len(a)-1], b[1:len(b)-1])
}

func bytesCompare(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code
// units. That is their byte order, except that characters above U+FFFF
// (lead bytes F0-F4; surrogates D800-DFFF in UTF-16) come before U+E000 to
// U+FFFF (lead bytes EE and EF).
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	ca, cb := a[i], b[i]
	if ca >= 0xEE && cb >= 0xEE && (ca >= 0xF0) != (cb >= 0xF0) {
		if ca >= 0xF0 {
			return -1
		}
		return 1
	}
	return int(ca) - int(cb)
}
