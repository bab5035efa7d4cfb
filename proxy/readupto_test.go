package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadUpTo(t *testing.T) {
	const max = 100
	for _, tc := range []struct {
		name  string
		body  string
		size  int64
		whole bool
	}{
		{"announced", strings.Repeat("a", 60), 60, true},
		{"not announced", strings.Repeat("a", 60), -1, true},
		{"announced short", strings.Repeat("a", 60), 10, true},
		{"announced long", strings.Repeat("a", 60), 90, true},
		{"announced beyond max", strings.Repeat("a", 60), 1 << 40, true},
		{"empty", "", 0, true},
		{"max bytes", strings.Repeat("a", max), max, true},
		{"max+1 bytes", strings.Repeat("a", max+1), max + 1, false},
		{"max+1 bytes, not announced", strings.Repeat("a", max+1), -1, false},
		{"more than max", strings.Repeat("a", 3*max), 3 * max, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, whole, err := readUpTo(strings.NewReader(tc.body), max, tc.size)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.body
			if !tc.whole {
				want = tc.body[:max+1]
			}
			if diff := cmp.Diff(want, string(body)); diff != "" || whole != tc.whole {
				t.Errorf("whole %v, want %v; body (-want +got):\n%s", whole, tc.whole, diff)
			}
		})
	}
}

// A body that announced its length is read into one buffer: io.ReadAll
// grows a chain of buffers and copies them into a last one (18
// allocations for 48 KB).
func TestReadUpToAnnouncedIsOneBuffer(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 48<<10)
	r := bytes.NewReader(data)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(data)
		readUpTo(r, 16<<20, int64(len(data)))
	})
	if allocs > 3 {
		t.Errorf("%v allocations to read %d announced bytes, want at most 3 (the buffer, its Buffer, the LimitReader)", allocs, len(data))
	}
}
