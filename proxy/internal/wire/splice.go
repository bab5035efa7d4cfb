package wire

import (
	"encoding/json"
	"slices"
)

// The helpers below edit a JSON text in place of decoding and encoding it
// again: the values the scanner found are sub-slices of the text, and an
// edit replaces one of them, so that every other byte stays as it came.

// rewriteObject writes the object obj again, compact, each member's value
// replaced by what fn returns for it (nil drops the member). Keys are
// kept as they came.
func rewriteObject(obj []byte, fn func(key, value []byte) ([]byte, error)) ([]byte, error) {
	out := []byte{'{'}
	var ferr error
	err := Fields(obj, func(k, v []byte) bool {
		nv, err := fn(k, v)
		if err != nil {
			ferr = err
			return false
		}
		if nv != nil {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(append(out, '"'), k...), `":`...), nv...)
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// appendObjectMember adds "key":value at the end of the object obj, as
// rewriteObject writes it.
func appendObjectMember(obj []byte, key string, value []byte) []byte {
	out := obj[:len(obj)-1]
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(append(append(append(out, '"'), key...), `":`...), value...)
	return append(out, '}')
}

// A jsonEdit replaces old, a sub-slice of a JSON text, with new.
type jsonEdit struct{ old, new []byte }

// offset returns where sub, a sub-slice of data made by the scanner,
// starts in data.
func offsetIn(data, sub []byte) int { return cap(data) - cap(sub) }

// apply returns data with the edits made; they do not overlap.
func applyEdits(data []byte, edits []jsonEdit) []byte {
	slices.SortFunc(edits, func(a, b jsonEdit) int { return offsetIn(data, a.old) - offsetIn(data, b.old) })
	out := make([]byte, 0, len(data)+64)
	at := 0
	for _, e := range edits {
		o := offsetIn(data, e.old)
		out = append(out, data[at:o]...)
		out = append(out, e.new...)
		at = o + len(e.old)
	}
	return append(out, data[at:]...)
}

// quote returns s as a JSON string.
func jsonQuote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
