package canonical

import (
	"encoding/json"
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

// TestHashBigStringMember: a map[string]any whose string values reach
// aroundMin (one is left out and written into its place once the others
// are sorted; a second goes the usual way) hashes as the same map through
// reflection (map[string]string) and, when its strings are UTF-8, as its
// JSON text.
func TestHashBigStringMember(t *testing.T) {
	names := []string{"a", "bb", "text", "type", "\U0001F600", "\uFFFD"}
	for _, size := range []int{aroundMin - 1, aroundMin, 2 * aroundMin} {
		for _, invalid := range []bool{false, true} {
			for big := range names {
				for _, second := range []int{-1, (big + 3) % len(names)} {
					ms, ma := map[string]string{}, map[string]any{}
					for i, n := range names {
						v := n + "-value"
						if i == big || i == second {
							v = strings.Repeat(string(rune('w'+i)), size)
							if invalid && i == big {
								v = v[:size-1] + "\xff"
							}
						}
						ms[n], ma[n] = v, v
					}
					name := fmt.Sprintf("size%d/invalid=%v/big%d/second%d", size, invalid, big, second)
					if Hash(ma) != Hash(ms) {
						t.Errorf("%s: Hash of the map[string]any differs from that of the map[string]string", name)
					}
					if invalid {
						continue
					}
					text, err := json.Marshal(ms)
					if err != nil {
						t.Fatal(err)
					}
					if Hash(ma) != HashJSON(text) {
						t.Errorf("%s: Hash of the map differs from HashJSON of its text", name)
					}
				}
			}
		}
	}
}
