package strictjson

import "bytes"

// ListedKeys is how many keys of one object Keys looks up in a list; beyond,
// it looks them up in a map.
const ListedKeys = 16

// A Stack is a stack with room for its first 32 elements in itself, so that
// a one-pass reader on the goroutine's stack allocates nothing while its
// stacks stay short. The zero value is empty.
type Stack[T any] struct {
	buf  [32]T
	more []T // the elements beyond buf
	n    int
}

// Push puts x on top.
func (s *Stack[T]) Push(x T) {
	switch i := s.n - len(s.buf); {
	case i < 0:
		s.buf[s.n] = x
	case i < len(s.more):
		s.more[i] = x
	default:
		s.more = append(s.more, x)
	}
	s.n++
}

// At returns element i, counted from the bottom.
func (s *Stack[T]) At(i int) T {
	if i < len(s.buf) {
		return s.buf[i]
	}
	return s.more[i-len(s.buf)]
}

// Len returns the number of elements.
func (s *Stack[T]) Len() int { return s.n }

// Truncate drops the elements from n on; n must be at most Len.
func (s *Stack[T]) Truncate(n int) { s.n = n }

// Keys finds a key given twice in the objects that a one-pass reader has
// open (encoding/json would keep the last). It has room for its first keys
// in itself, so that a reader on the goroutine's stack allocates nothing
// while its objects are small: keys are kept as the reader's slices, not
// copied. The zero value is ready to use.
type Keys struct {
	s Stack[[]byte]
}

// A Scope is the part of Keys of one open object; [Keys.Open] makes it.
type Scope struct {
	first int             // its first key in Keys
	seen  map[string]bool // its keys, once it has more than ListedKeys
}

// Open starts the keys of an object whose '{' the reader has read, inside
// the objects open so far.
func (k *Keys) Open() Scope { return Scope{first: k.s.n} }

// Close forgets the keys of o, which is the innermost object open.
func (k *Keys) Close(o Scope) { k.s.n = o.first }

// Add records key, decoded, as a key of o, the innermost object open, and
// reports whether o had it already. key must not change while o is open.
func (k *Keys) Add(o *Scope, key []byte) (twice bool) {
	switch {
	case o.seen != nil:
		if o.seen[string(key)] {
			return true
		}
		o.seen[string(key)] = true
		return false
	case k.has(o.first, key):
		return true
	case k.s.n-o.first == ListedKeys:
		o.seen = make(map[string]bool, 2*ListedKeys)
		for i := o.first; i < k.s.n; i++ {
			o.seen[string(k.s.At(i))] = true
		}
		o.seen[string(key)] = true
		k.s.n = o.first
		return false
	}
	k.s.Push(key)
	return false
}

// has reports whether key is among the keys from first on.
func (k *Keys) has(first int, key []byte) bool {
	for i := first; i < k.s.n; i++ {
		if bytes.Equal(k.s.At(i), key) {
			return true
		}
	}
	return false
}

// SkipSpace returns the offset of the first byte of data from i on that is
// not JSON white space, or len(data).
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
