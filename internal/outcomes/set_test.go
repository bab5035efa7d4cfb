package outcomes

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/canonical"
)

// TestOutcomeSet compares the set with a plain slice, on few distinct values
// (so that sums come back) and on sums crafted to share their home slot.
func TestOutcomeSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 30).Draw(t, "limit")
		var s Set
		s.Init(limit)
		pool := spread
		if rapid.Bool().Draw(t, "colliding") {
			s.seed, pool = 0, colliding
		}
		var model []canonical.Sum // oldest first
		value := rapid.SampledFrom(pool)
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				x := value.Draw(t, "x")
				isNew := !slices.Contains(model, x)
				if got := s.Add(x); got != isNew {
					t.Fatalf("add(%s) = %v, want %v", x, got, isNew)
				}
				if isNew {
					model = append(model, x)
					if len(model) > limit {
						model = model[1:]
					}
				}
			},
			"contains": func(t *rapid.T) {
				x := value.Draw(t, "x")
				if got, want := s.Contains(x), slices.Contains(model, x); got != want {
					t.Fatalf("contains(%s) = %v, want %v", x, got, want)
				}
			},
			"reset": func(t *rapid.T) {
				if rapid.IntRange(0, 9).Draw(t, "p") == 0 {
					s.Reset()
					model = nil
				}
			},
			"": func(t *rapid.T) {
				var want []byte
				for _, x := range model {
					want = append(want, x[:]...)
				}
				if got := s.AppendOldestFirst(nil); !slices.Equal(got, want) {
					t.Fatalf("contents %v, want %v", got, want)
				}
				for _, x := range model {
					if !s.Contains(x) {
						t.Fatalf("%s was lost", x)
					}
				}
				n := 0
				for _, x := range s.table {
					if !x.IsZero() {
						n++
					}
				}
				if s.hasZero {
					n++
				}
				if n != len(model) || s.Len() != len(model) {
					t.Fatalf("table holds %d sums, fifo %d, want %d", n, s.Len(), len(model))
				}
			},
		})
	})
}

// spread are 60 sums and the zero Sum.
var spread = func() []canonical.Sum {
	out := make([]canonical.Sum, 61)
	for i := range out {
		out[i][15] = byte(i)
	}
	return out
}()

// colliding are 40 sums whose home slots, with seed 0, are 62, 63, 0 and 1 in
// every table of up to 64 slots, so that probes wrap around and deletions
// must shift entries back across the end of the table.
var colliding = func() []canonical.Sum {
	var s Set
	var out []canonical.Sum
	for i := 1; len(out) < 40; i++ {
		var x canonical.Sum
		x[0], x[1] = byte(i), byte(i>>8)
		if h := s.slot(x, 63); h >= 62 || h <= 1 {
			out = append(out, x)
		}
	}
	return out
}()

// TestEncodeDecode checks that Decode gives back what Encode wrote, oldest
// first, and rejects text that no set of this limit could have written,
// leaving the set as it was.
func TestEncodeDecode(t *testing.T) {
	var s Set
	s.Init(3)
	for _, x := range spread[1:5] { // the first is evicted
		s.Add(x)
	}
	text := s.Encode()
	var back Set
	back.Init(3)
	if err := back.Decode(text); err != nil {
		t.Fatal(err)
	}
	if got, want := back.AppendOldestFirst(nil), s.AppendOldestFirst(nil); !slices.Equal(got, want) {
		t.Fatalf("decoded %v, want %v", got, want)
	}
	if back.Encode() != text {
		t.Fatalf("encoded again %q, want %q", back.Encode(), text)
	}
	one := s.Encode()[:22] // a single sum takes 22 characters
	for _, bad := range []string{
		text + one,     // four sums in a set of three
		one + one,      // a sum twice
		one[:20],       // a partial sum
		one + "==",     // padding
		one[:21] + "B", // bits past the sum's 16 bytes
		"***",          // not base64
	} {
		if err := back.Decode(bad); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
		if back.Encode() != text {
			t.Fatalf("a failed Decode(%q) changed the set", bad)
		}
	}
	var empty Set
	empty.Init(3)
	if err := empty.Decode(""); err != nil || empty.Len() != 0 {
		t.Errorf("Decode(\"\") = %v, %d sums", err, empty.Len())
	}
}

// Decode makes room for the sums it reads at once: a full set of 1,024
// decodes in three allocations (the decoded bytes, the order and the table),
// not in one per doubling of each (21 before).
func TestDecodeAllocatesOnce(t *testing.T) {
	var full Set
	full.Init(1024)
	for i := range 1024 {
		full.Add(canonical.HashString(string(rune('a'+i%26)) + string(rune(i))))
	}
	if full.Len() != 1024 {
		t.Fatalf("Len = %d", full.Len())
	}
	text := full.Encode()
	var s Set
	s.Init(1024)
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Decode(text); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("Decode of 1,024 sums: %v allocations, want at most 3", allocs)
	}
	if s.Len() != 1024 {
		t.Errorf("decoded %d sums, want 1024", s.Len())
	}
}
