package wire

import (
	"bytes"
	"errors"
)

// The scanner below finds where JSON values end without decoding them, so
// that the proxy can cut a request's history into items at a fraction of
// the cost of json.Valid over the body: most of a body is string content,
// which it crosses with bytes.IndexByte. It checks structure only as far as
// it needs to find the ends (brackets, strings, commas and colons); what it
// does not check, the upstream still does, since the body is forwarded as it
// came.

// ErrSyntax is returned for a body whose structure the scanner cannot follow.
var ErrSyntax = errors.New("wire: malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string whose opening quote is
// at data[i], or -1.
func skipString(data []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return -1
		}
		j += i
		// An odd number of backslashes before the quote escapes it.
		k := j - 1
		for k >= i && data[k] == '\\' {
			k--
		}
		if (j-1-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}

// skipValue returns the index just past the value that starts at data[i]
// (after white space), or -1.
func skipValue(data []byte, i int) int {
	i = skipSpace(data, i)
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch c := data[i]; c {
			case '"':
				i = skipString(data, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case '}', ']', ',', ':':
		return -1
	default: // a number, true, false or null
		j := i
		for j < len(data) {
			c := data[j]
			if c == ',' || c == '}' || c == ']' || isSpace(c) {
				break
			}
			j++
		}
		return j
	}
}

// Fields calls fn for each member of the JSON object data, in order, with
// its raw key (without quotes, escapes left as they are) and its raw value,
// until fn returns false. It is an ErrSyntax error if data is not an
// object whose structure the scanner can follow.
func Fields(data []byte, fn func(key, value []byte) bool) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ErrSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return trailing(data, i+1)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return ErrSyntax
		}
		end := skipString(data, i)
		if end < 0 {
			return ErrSyntax
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return ErrSyntax
		}
		start := skipSpace(data, i+1)
		end = skipValue(data, start)
		if end < 0 {
			return ErrSyntax
		}
		if !fn(key, data[start:end]) {
			return nil
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return ErrSyntax
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return trailing(data, i+1)
		default:
			return ErrSyntax
		}
	}
}

// Elements calls fn for each element of the JSON array data, in order,
// with its raw value, until fn returns false. It is an ErrSyntax error if
// data is not an array whose structure the scanner can follow.
func Elements(data []byte, fn func(elem []byte) bool) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return ErrSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return trailing(data, i+1)
	}
	for {
		start := i
		end := skipValue(data, start)
		if end < 0 {
			return ErrSyntax
		}
		if !fn(data[start:end]) {
			return nil
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return ErrSyntax
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return trailing(data, i+1)
		default:
			return ErrSyntax
		}
	}
}

func trailing(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return ErrSyntax
	}
	return nil
}

// Items cuts the JSON array data into its elements (sub-slices of data).
func Items(data []byte) ([][]byte, error) {
	items := make([][]byte, 0, 16)
	err := Elements(data, func(e []byte) bool {
		items = append(items, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// Key reports whether the raw key k (as Fields gives it) is name.
func Key(k []byte, name string) bool { return string(k) == name }
