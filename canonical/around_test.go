package canonical

import (
	"fmt"
	"strings"
	"testing"
)

// TestReorderAround: objects of a few members, one of them big enough
// (aroundMin) that reorderFew moves it alone, in every input order and
// with the big member at every place of the sorted order, with and
// without an earlier duplicate name (dropped, the last wins), come out
// sorted from Transform, and Hash of the map equals HashJSON of the
// sorted text.
func TestReorderAround(t *testing.T) {
	names := []string{"a", "bb", "c", "type"}
	perms := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}, {3, 0, 1, 2}, {1, 2, 3, 0}}
	for _, bigSize := range []int{aroundMin - 4, aroundMin, 3 * aroundMin} {
		for big := range names {
			values := make([]string, len(names))
			for i, n := range names {
				values[i] = fmt.Sprintf(`"%s-%d"`, n, i)
			}
			// A JSON string of bigSize bytes; its member is a little bigger.
			values[big] = `"` + strings.Repeat("x", bigSize-2) + `"`
			var want strings.Builder
			want.WriteByte('{')
			for i, n := range names {
				if i > 0 {
					want.WriteByte(',')
				}
				fmt.Fprintf(&want, `"%s":%s`, n, values[i])
			}
			want.WriteByte('}')
			for _, perm := range perms {
				for _, dup := range []bool{false, true} {
					var src strings.Builder
					src.WriteByte('{')
					if dup {
						// An earlier member of the name of perm[0], as big
						// as the big one: dropped.
						fmt.Fprintf(&src, `"%s":"%s",`, names[perm[0]], strings.Repeat("y", bigSize))
					}
					m := map[string]any{}
					for i, k := range perm {
						if i > 0 {
							src.WriteByte(',')
						}
						fmt.Fprintf(&src, `"%s":%s`, names[k], values[k])
						m[names[k]] = strings.Trim(values[k], `"`)
					}
					src.WriteByte('}')
					name := fmt.Sprintf("size%d/big%d/%v/dup=%v", bigSize, big, perm, dup)
					got, err := Transform([]byte(src.String()))
					if err != nil || string(got) != want.String() {
						t.Errorf("%s: Transform = %.80q..., %v; want %.80q...", name, got, err, want.String())
					}
					if HashJSON([]byte(src.String())) != HashJSON([]byte(want.String())) {
						t.Errorf("%s: HashJSON differs from that of the sorted text", name)
					}
					if Hash(m) != HashJSON([]byte(want.String())) {
						t.Errorf("%s: Hash of the map differs from HashJSON of the sorted text", name)
					}
				}
			}
		}
	}
}
