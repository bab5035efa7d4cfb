package strictjson

import "bytes"

// ListedKeys is how many keys of one object Keys looks up in a list; beyond,
// it looks them up in a map.
const ListedKeys = 16

// Keys finds a key given twice in the objects that a one-pass reader has
// open (encoding/json would keep the last). It has room for its first keys
// in itself, so that a reader on the goroutine's stack allocates nothing
// while its objects are small: keys are kept as the reader's slices, not
// copied. The zero value is ready to use.
type Keys struct {
	buf  [32][]byte
	more [][]byte // the keys beyond buf
	n    int
}

// A Scope is the part of Keys of one open object; [Keys.Open] makes it.
type Scope struct {
	first int             // its first key in Keys
	seen  map[string]bool // its keys, once it has more than ListedKeys
}

// Open starts the keys of an object whose '{' the reader has read, inside
// the objects open so far.
func (k *Keys) Open() Scope { return Scope{first: k.n} }

// Close forgets the keys of o, which is the innermost object open.
func (k *Keys) Close(o Scope) { k.n = o.first }

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
	case k.n-o.first == ListedKeys:
		o.seen = make(map[string]bool, 2*ListedKeys)
		for i := o.first; i < k.n; i++ {
			o.seen[string(k.at(i))] = true
		}
		o.seen[string(key)] = true
		k.n = o.first
		return false
	}
	k.push(key)
	return false
}

func (k *Keys) push(key []byte) {
	switch i := k.n - len(k.buf); {
	case i < 0:
		k.buf[k.n] = key
	case i < len(k.more):
		k.more[i] = key
	default:
		k.more = append(k.more, key)
	}
	k.n++
}

func (k *Keys) at(i int) []byte {
	if i < len(k.buf) {
		return k.buf[i]
	}
	return k.more[i-len(k.buf)]
}

// has reports whether key is among the keys from first on.
func (k *Keys) has(first int, key []byte) bool {
	for i := first; i < k.n; i++ {
		if bytes.Equal(k.at(i), key) {
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
