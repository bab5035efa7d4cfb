// Package ring holds the newest N elements of a sequence: the fixed-size,
// first-in first-out window that the rules keep of a run's steps and calls.
//
// A Ring never allocates once its storage has grown to its capacity, so a
// rule can push on every step of a long run. Elements are read oldest first
// by position (At, Ptr, All, AppendTo); rules that only count may read them
// in storage order (Unordered), which skips the index arithmetic.
package ring

import "iter"

// A Ring holds the newest Cap elements pushed, oldest first. The zero value
// has capacity 0 and holds nothing; make one with New or NewGrowing. A Ring
// copied by value shares its storage with the original: copy one with
// CopyFrom.
type Ring[T any] struct {
	// buf holds the elements: it grows by appending up to limit and is
	// then a circle whose oldest element is buf[start]. start stays 0
	// until buf is full, so buf is always exactly the elements held.
	buf   []T
	start int
	limit int
}

// New returns an empty ring of the given capacity (negative counts as 0)
// whose storage is allocated at once: pushing never allocates.
func New[T any](capacity int) Ring[T] {
	capacity = max(capacity, 0)
	return Ring[T]{buf: make([]T, 0, capacity), limit: capacity}
}

// NewGrowing returns an empty ring of the given capacity (negative counts as
// 0) whose storage grows as elements are pushed, as a slice's does with
// append: for a large capacity that a run rarely fills.
func NewGrowing[T any](capacity int) Ring[T] {
	return Ring[T]{limit: max(capacity, 0)}
}

// Len returns the number of elements held: at most Cap.
func (r *Ring[T]) Len() int { return len(r.buf) }

// Cap returns the most elements the ring holds.
func (r *Ring[T]) Cap() int { return r.limit }

// Full reports whether the ring holds Cap elements, so that the next Push
// evicts the oldest.
func (r *Ring[T]) Full() bool { return len(r.buf) == r.limit }

// index returns the position in buf of the i-th oldest element.
func (r *Ring[T]) index(i int) int {
	if uint(i) >= uint(len(r.buf)) {
		panic("ring: index out of range")
	}
	j := r.start + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return j
}

// At returns the i-th oldest element: At(0) is the oldest, At(Len()-1) the
// newest. It panics unless 0 <= i < Len().
func (r *Ring[T]) At(i int) T { return r.buf[r.index(i)] }

// Ptr returns a pointer to the i-th oldest element, valid until the next
// Push, Next, Clear or CopyFrom. It panics unless 0 <= i < Len().
func (r *Ring[T]) Ptr(i int) *T { return &r.buf[r.index(i)] }

// Push adds v as the newest element. When the ring was full, the oldest
// element makes room for it and is returned, with evicted true. A ring of
// capacity 0 holds nothing: v itself is returned as evicted.
func (r *Ring[T]) Push(v T) (old T, evicted bool) {
	if len(r.buf) < r.limit {
		r.buf = append(r.buf, v)
		return old, false
	}
	if r.limit == 0 {
		return v, true
	}
	old, r.buf[r.start] = r.buf[r.start], v
	if r.start++; r.start == len(r.buf) {
		r.start = 0
	}
	return old, true
}

// Next makes room for a new newest element and returns a pointer to it,
// valid until the next Push, Next, Clear or CopyFrom: the oldest element is
// dropped when the ring was full, and the new one then holds what the
// dropped one held (the zero value otherwise). A caller that fills a large
// element in place, setting what it reads, spares the copies of Push. A
// ring of capacity 0 holds nothing: the pointer is to an element of its
// own.
func (r *Ring[T]) Next() *T {
	switch {
	case len(r.buf) < r.limit:
		var zero T
		r.buf = append(r.buf, zero)
		return &r.buf[len(r.buf)-1]
	case r.limit == 0:
		return new(T)
	}
	p := &r.buf[r.start]
	if r.start++; r.start == len(r.buf) {
		r.start = 0
	}
	return p
}

// All returns an iterator over the positions and elements, oldest first.
func (r *Ring[T]) All() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		i := 0
		for _, v := range r.buf[r.start:] {
			if !yield(i, v) {
				return
			}
			i++
		}
		for _, v := range r.buf[:r.start] {
			if !yield(i, v) {
				return
			}
			i++
		}
	}
}

// AppendTo appends the elements, oldest first, to dst and returns the
// extended slice.
func (r *Ring[T]) AppendTo(dst []T) []T {
	dst = append(dst, r.buf[r.start:]...)
	return append(dst, r.buf[:r.start]...)
}

// Unordered returns the elements held in storage order, which is oldest
// first until the ring is full and a rotation of it after: for counts and
// searches that do not depend on order. The slice is the ring's own storage,
// valid until the next Push, Next, Clear or CopyFrom; writing to it changes
// the elements.
func (r *Ring[T]) Unordered() []T { return r.buf }

// Clear empties the ring and keeps its storage. The elements are zeroed, so
// that the ring keeps nothing they point to alive.
func (r *Ring[T]) Clear() {
	if len(r.buf) > 8 {
		clear(r.buf)
	} else {
		// A few elements (a rule that starts a new run on every call):
		// cheaper in place than clear's call to the runtime.
		var zero T
		for i := range len(r.buf) {
			r.buf[i] = zero
		}
	}
	r.buf, r.start = r.buf[:0], 0
}

// Grow makes room for n more elements (no more than the capacity allows), so
// that the next n pushes do not allocate.
func (r *Ring[T]) Grow(n int) {
	if room := r.limit - len(r.buf); n > room {
		n = room
	}
	if n > 0 && cap(r.buf)-len(r.buf) < n {
		buf := make([]T, len(r.buf), len(r.buf)+n)
		copy(buf, r.buf)
		r.buf = buf
	}
}

// CopyFrom makes r hold the newest of src's elements that fit, oldest
// first, in its own storage: with equal capacities, an exact copy. It does
// not allocate when r has room for them.
func (r *Ring[T]) CopyFrom(src *Ring[T]) {
	if r == src {
		return
	}
	if src.limit == r.limit && cap(r.buf) >= len(src.buf) {
		if len(r.buf) > len(src.buf) {
			clear(r.buf[len(src.buf):])
		}
		r.buf = r.buf[:len(src.buf)]
		copy(r.buf, src.buf)
		r.start = src.start
		return
	}
	r.Clear()
	for i := max(src.Len()-r.limit, 0); i < src.Len(); i++ {
		r.Push(src.At(i))
	}
}
