package ring

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// contents returns the ring's elements, oldest first, read through At.
func contents[T any](r *Ring[T]) []T {
	out := []T{}
	for i := range r.Len() {
		out = append(out, r.At(i))
	}
	return out
}

// seq returns the numbers from..to-1.
func seq(from, to int) []int {
	out := []int{}
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestPushBoundaries pushes 0..n-1 into rings of capacity 3 for n around
// the capacity and checks what is held, what each push evicted, and that
// every way of reading agrees.
func TestPushBoundaries(t *testing.T) {
	const c = 3
	tests := []struct {
		pushes  int
		want    []int // held, oldest first
		evicted []int // the values evicted, in order
	}{
		{0, []int{}, []int{}},
		{c - 1, []int{0, 1}, []int{}},
		{c, []int{0, 1, 2}, []int{}},
		{c + 1, []int{1, 2, 3}, []int{0}},
		{2 * c, []int{3, 4, 5}, []int{0, 1, 2}},
		{2*c + 1, []int{4, 5, 6}, []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		for name, r := range map[string]Ring[int]{"New": New[int](c), "NewGrowing": NewGrowing[int](c)} {
			evicted := []int{}
			for i := range tt.pushes {
				if old, ok := r.Push(i); ok {
					evicted = append(evicted, old)
				} else if old != 0 {
					t.Errorf("%s, %d pushes: push %d returned %d without evicting", name, tt.pushes, i, old)
				}
			}
			if diff := cmp.Diff(tt.want, contents(&r)); diff != "" {
				t.Errorf("%s, %d pushes: At (-want +got):\n%s", name, tt.pushes, diff)
			}
			if diff := cmp.Diff(tt.evicted, evicted); diff != "" {
				t.Errorf("%s, %d pushes: evicted (-want +got):\n%s", name, tt.pushes, diff)
			}
			if diff := cmp.Diff(tt.want, r.AppendTo([]int{})); diff != "" {
				t.Errorf("%s, %d pushes: AppendTo (-want +got):\n%s", name, tt.pushes, diff)
			}
			all := []int{}
			for i, v := range r.All() {
				if i != len(all) {
					t.Errorf("%s, %d pushes: All gave position %d at %d", name, tt.pushes, i, len(all))
				}
				all = append(all, v)
			}
			if diff := cmp.Diff(tt.want, all); diff != "" {
				t.Errorf("%s, %d pushes: All (-want +got):\n%s", name, tt.pushes, diff)
			}
			unordered := slices.Sorted(slices.Values(r.Unordered()))
			if diff := cmp.Diff(tt.want, append([]int{}, unordered...)); diff != "" {
				t.Errorf("%s, %d pushes: Unordered, sorted (-want +got):\n%s", name, tt.pushes, diff)
			}
			if got, want := r.Len(), len(tt.want); got != want {
				t.Errorf("%s, %d pushes: Len() = %d, want %d", name, tt.pushes, got, want)
			}
			if got, want := r.Full(), tt.pushes >= c; got != want {
				t.Errorf("%s, %d pushes: Full() = %v, want %v", name, tt.pushes, got, want)
			}
			if r.Cap() != c {
				t.Errorf("%s: Cap() = %d, want %d", name, r.Cap(), c)
			}
		}
	}
}

// TestUnorderedBeforeFull checks the promise the counting rules rely on:
// until the ring is full, storage order is oldest first.
func TestUnorderedBeforeFull(t *testing.T) {
	r := New[int](4)
	for i := range 4 {
		if diff := cmp.Diff(seq(0, i), append([]int{}, r.Unordered()...)); diff != "" {
			t.Fatalf("after %d pushes (-want +got):\n%s", i, diff)
		}
		r.Push(i)
	}
	r.Push(4)
	if diff := cmp.Diff([]int{4, 1, 2, 3}, r.Unordered()); diff != "" {
		t.Errorf("full, one evicted (-want +got):\n%s", diff)
	}
}

func TestZeroCapacity(t *testing.T) {
	for name, r := range map[string]Ring[string]{"zero value": {}, "New(0)": New[string](0), "New(-1)": New[string](-1), "NewGrowing(-1)": NewGrowing[string](-1)} {
		old, ok := r.Push("x")
		if !ok || old != "x" {
			t.Errorf("%s: Push(x) = %q, %v; want x, true (it holds nothing)", name, old, ok)
		}
		if r.Len() != 0 || r.Cap() != 0 || !r.Full() {
			t.Errorf("%s: Len %d, Cap %d, Full %v; want 0, 0, true", name, r.Len(), r.Cap(), r.Full())
		}
	}
}

func TestPtr(t *testing.T) {
	r := New[int](3)
	for i := range 5 {
		r.Push(i)
	}
	*r.Ptr(0) = 20 // the oldest, 2
	*r.Ptr(2) = 40 // the newest, 4
	if diff := cmp.Diff([]int{20, 3, 40}, contents(&r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAtOutOfRange(t *testing.T) {
	r := New[int](3)
	for i := range 4 { // full, start at 1: index 3 would wrap to a held slot
		r.Push(i)
	}
	for _, i := range []int{-1, 3, 4} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("At(%d) of 3 did not panic", i)
				}
			}()
			r.At(i)
		}()
	}
}

func TestAllStops(t *testing.T) {
	r := New[int](4)
	for i := range 6 { // 2, 3 | 4, 5: the break falls in each half
		r.Push(i)
	}
	for stop := range 4 {
		var got []int
		for i, v := range r.All() {
			got = append(got, v)
			if i == stop {
				break
			}
		}
		if diff := cmp.Diff(seq(2, 3+stop), got); diff != "" {
			t.Errorf("break at %d (-want +got):\n%s", stop, diff)
		}
	}
}

// TestClear checks that Clear empties the ring, zeroes the slots (in place
// for a few elements, with clear for more) and keeps the storage.
func TestClear(t *testing.T) {
	for _, c := range []int{3, 8, 9, 20} {
		r := New[*int](c)
		x := 1
		for range c + 1 {
			r.Push(&x)
		}
		store := r.Unordered()[:c]
		r.Clear()
		if r.Len() != 0 || r.Cap() != c {
			t.Fatalf("capacity %d, after Clear: Len %d, Cap %d", c, r.Len(), r.Cap())
		}
		for i, p := range store {
			if p != nil {
				t.Errorf("capacity %d: slot %d still points to the element after Clear", c, i)
			}
		}
		if got := testing.AllocsPerRun(10, func() {
			r.Clear()
			for range c + 2 {
				r.Push(&x)
			}
		}); got != 0 {
			t.Errorf("capacity %d: pushing after Clear allocated %v times; want 0 (the storage is kept)", c, got)
		}
		r.Clear()
		r.Push(nil)
		r.Push(&x)
		if got := contents(&r); len(got) != 2 || got[0] != nil || got[1] != &x {
			t.Errorf("capacity %d, after Clear and two pushes: %v", c, got)
		}
	}
}

func TestNoAllocation(t *testing.T) {
	r := New[[4]uint64](8)
	got := testing.AllocsPerRun(100, func() {
		for i := range 20 {
			r.Push([4]uint64{uint64(i)})
		}
		_ = r.At(r.Len() - 1)
	})
	if got != 0 {
		t.Errorf("New ring: %v allocations a run; want 0", got)
	}
}

func TestGrow(t *testing.T) {
	r := NewGrowing[int](5)
	r.Push(1)
	r.Grow(10) // more than the capacity allows: room for 4
	if got := cap(r.Unordered()); got != 5 {
		t.Errorf("Grow(10) of a ring of 5 holding 1: storage for %d, want 5", got)
	}
	if got := testing.AllocsPerRun(1, func() {
		r.Clear()
		for i := range 7 {
			r.Push(i)
		}
	}); got != 0 {
		t.Errorf("pushes after Grow allocated %v times", got)
	}
	if diff := cmp.Diff(seq(2, 7), contents(&r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	r.Grow(-1) // nothing
	r.Grow(0)
	if r.Len() != 5 {
		t.Errorf("Grow changed the elements: %d held", r.Len())
	}
}

func TestCopyFrom(t *testing.T) {
	fill := func(r *Ring[int], from, to int) {
		for i := from; i < to; i++ {
			r.Push(i)
		}
	}
	tests := []struct {
		name           string
		srcCap, dstCap int
		pushes         int // into the source, from 0
		dstBefore      int // elements the destination held
		want           []int
	}{
		{"equal, empty", 3, 3, 0, 2, []int{}},
		{"equal, partial, shorter than before", 3, 3, 2, 3, []int{0, 1}},
		{"equal, wrapped", 3, 3, 5, 1, []int{2, 3, 4}},
		{"smaller destination", 4, 2, 6, 0, []int{4, 5}},
		{"larger destination", 2, 4, 5, 4, []int{3, 4}},
	}
	for _, tt := range tests {
		src, dst := New[int](tt.srcCap), New[int](tt.dstCap)
		fill(&src, 0, tt.pushes)
		fill(&dst, 100, 100+tt.dstBefore)
		dst.CopyFrom(&src)
		if diff := cmp.Diff(tt.want, contents(&dst)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		// The copy is independent: pushing into either leaves the other.
		before := contents(&src)
		dst.Push(-1)
		if diff := cmp.Diff(before, contents(&src)); diff != "" {
			t.Errorf("%s: pushing into the copy changed the source (-want +got):\n%s", tt.name, diff)
		}
		if got := slices.Index(dst.Unordered(), 100); got >= 0 && tt.srcCap == tt.dstCap {
			t.Errorf("%s: an element the destination held before survived at %d", tt.name, got)
		}
	}
	r := New[int](3)
	fill(&r, 0, 4)
	r.CopyFrom(&r)
	if diff := cmp.Diff([]int{1, 2, 3}, contents(&r)); diff != "" {
		t.Errorf("copy onto itself (-want +got):\n%s", diff)
	}
	src, dst := New[int](8), New[int](8)
	fill(&src, 0, 11)
	if got := testing.AllocsPerRun(10, func() { dst.CopyFrom(&src) }); got != 0 {
		t.Errorf("CopyFrom between equal rings allocated %v times", got)
	}
}

// TestModel compares a ring with a plain slice that keeps its newest
// capacity elements.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(0, 9).Draw(t, "capacity")
		r := New[int](capacity)
		if rapid.Bool().Draw(t, "growing") {
			r = NewGrowing[int](capacity)
		}
		var model []int
		next := 0
		t.Repeat(map[string]func(*rapid.T){
			"push": func(t *rapid.T) {
				next++
				old, evicted := r.Push(next)
				model = append(model, next)
				wantEvicted := len(model) > capacity
				if evicted != wantEvicted || evicted && old != model[0] {
					t.Fatalf("Push(%d) = %d, %v; want %d, %v", next, old, evicted, model[0], wantEvicted)
				}
				if wantEvicted {
					model = model[1:]
				}
			},
			"clear": func(t *rapid.T) {
				if rapid.IntRange(0, 9).Draw(t, "p") == 0 {
					r.Clear()
					model = nil
				}
			},
			"copy": func(t *rapid.T) {
				c := New[int](rapid.IntRange(0, 9).Draw(t, "copy capacity"))
				c.CopyFrom(&r)
				want := model[max(len(model)-c.Cap(), 0):]
				if got := contents(&c); !slices.Equal(got, want) {
					t.Fatalf("copy into %d: %v, want %v", c.Cap(), got, want)
				}
				if c.Cap() == capacity {
					r = c // go on with the copy
				}
			},
			"ptr": func(t *rapid.T) {
				if len(model) == 0 {
					t.Skip("empty")
				}
				i := rapid.IntRange(0, len(model)-1).Draw(t, "i")
				next++
				*r.Ptr(i) = next
				model[i] = next
			},
			"": func(t *rapid.T) {
				if got := contents(&r); !slices.Equal(got, model) {
					t.Fatalf("At: %v, want %v", got, model)
				}
				if got := r.AppendTo(nil); !slices.Equal(got, model) {
					t.Fatalf("AppendTo: %v, want %v", got, model)
				}
				if got, want := slices.Sorted(slices.Values(r.Unordered())), slices.Sorted(slices.Values(model)); !slices.Equal(got, want) {
					t.Fatalf("Unordered: %v, want %v in any order", r.Unordered(), model)
				}
				if !r.Full() && !slices.Equal(r.Unordered(), model) {
					t.Fatalf("Unordered before full: %v, want %v", r.Unordered(), model)
				}
				if r.Len() != len(model) || r.Full() != (len(model) == capacity) {
					t.Fatalf("Len %d, Full %v; model holds %d of %d", r.Len(), r.Full(), len(model), capacity)
				}
			},
		})
	})
}

// BenchmarkPush pushes into a full ring of 16 entries of the size of a
// rule's window entry and reads the newest back.
func BenchmarkPush(b *testing.B) {
	type entry struct {
		key, same [2]uint64
		step      int
	}
	r := New[entry](16)
	b.ReportAllocs()
	sum := 0
	for i := 0; b.Loop(); i++ {
		r.Push(entry{step: i})
		sum += r.At(r.Len() - 1).step
	}
	_ = sum
}

// BenchmarkScan reads a full ring of 64 ints oldest first, by At and by All.
func BenchmarkScan(b *testing.B) {
	r := New[int](64)
	for i := range 100 {
		r.Push(i)
	}
	b.Run("At", func(b *testing.B) {
		sum := 0
		for b.Loop() {
			for i := range r.Len() {
				sum += r.At(i)
			}
		}
		_ = sum
	})
	b.Run("All", func(b *testing.B) {
		sum := 0
		for b.Loop() {
			for _, v := range r.All() {
				sum += v
			}
		}
		_ = sum
	})
}

// TestNextMatchesPush fills rings of capacity 3 with Next and with Push, for
// counts around the capacity: both hold the same, and Next's element holds
// the zero value until the ring is full, then what the dropped one held.
func TestNextMatchesPush(t *testing.T) {
	for n := range 8 {
		for name, mk := range map[string]func() Ring[[2]int]{"New": func() Ring[[2]int] { return New[[2]int](3) },
			"NewGrowing": func() Ring[[2]int] { return NewGrowing[[2]int](3) }} {
			pushed, next := mk(), mk()
			for i := range n {
				var want [2]int // the element it takes the place of
				if next.Full() {
					want = next.At(0)
				}
				pushed.Push([2]int{i, 0})
				p := next.Next()
				if *p != want {
					t.Fatalf("%s, %d: Next gave %v, want %v", name, i, *p, want)
				}
				*p = [2]int{i, 0}
			}
			if diff := cmp.Diff(contents(&pushed), contents(&next)); diff != "" {
				t.Errorf("%s, %d elements (-Push +Next):\n%s", name, n, diff)
			}
		}
	}
}

func TestNextZeroCapacity(t *testing.T) {
	r := New[int](0)
	p := r.Next()
	*p = 7
	if r.Len() != 0 || *r.Next() != 0 {
		t.Errorf("capacity 0: Len %d, want 0 and a fresh zero element each time", r.Len())
	}
}

func TestNextNoAllocation(t *testing.T) {
	r := New[[4]uint64](8)
	got := testing.AllocsPerRun(100, func() {
		for i := range 20 {
			r.Next()[0] = uint64(i)
		}
	})
	if got != 0 {
		t.Errorf("%v allocations a run; want 0", got)
	}
}
