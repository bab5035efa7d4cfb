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
	stop := false
	err := walkFields(data, func(key []byte, start int) int {
		end := skipValue(data, start)
		if end >= 0 && !fn(key, data[start:end]) {
			stop = true
			return -2
		}
		return end
	})
	if stop {
		return nil
	}
	return err
}

// walkFields is the walk of an object under Fields, for a caller that
// crosses some values itself: value gets the index where a member's value
// starts and returns the index just past it, -1 for a value it cannot
// follow (an ErrSyntax error), or -2 to stop the walk (a nil error).
func walkFields(data []byte, value func(key []byte, start int) int) error {
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
		switch end = value(key, skipSpace(data, i+1)); end {
		case -1:
			return ErrSyntax
		case -2:
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

// fieldsCutting is Fields for a request body (fn sees every member), but
// it cuts the array value of the member named key into its elements
// (*items, the last such member's) as it crosses it, so that the history,
// most of the body, is scanned once and not twice (Fields, then Items).
func fieldsCutting(data []byte, key string, items *[][]byte, fn func(key, value []byte)) error {
	return walkFields(data, func(k []byte, start int) int {
		end := -1
		if start < len(data) && data[start] == '[' && string(k) == key {
			var cut [][]byte
			if cut, end = arrayItems(data, start, make([][]byte, 0, 16)); end >= 0 {
				*items = cut
			}
		} else {
			end = skipValue(data, start)
		}
		if end >= 0 {
			fn(k, data[start:end])
		}
		return end
	})
}

// Elements calls fn for each element of the JSON array data, in order,
// with its raw value, until fn returns false. It is an ErrSyntax error if
// data is not an array whose structure the scanner can follow (the whole
// array is crossed first).
func Elements(data []byte, fn func(elem []byte) bool) error {
	items, err := Items(data)
	if err != nil {
		return err
	}
	for _, e := range items {
		if !fn(e) {
			break
		}
	}
	return nil
}

func trailing(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return ErrSyntax
	}
	return nil
}

// Items cuts the JSON array data into its elements (sub-slices of data).
func Items(data []byte) ([][]byte, error) {
	i := skipSpace(data, 0)
	items, end := arrayItems(data, i, make([][]byte, 0, 16))
	if end < 0 {
		return nil, ErrSyntax
	}
	if err := trailing(data, end); err != nil {
		return nil, err
	}
	return items, nil
}

// arrayItems appends to items the elements of the array that starts at
// data[i], as Items cuts them, and returns them with the index just past
// the array, or -1.
func arrayItems(data []byte, i int, items [][]byte) ([][]byte, int) {
	if i >= len(data) || data[i] != '[' {
		return nil, -1
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return items, i + 1
	}
	for {
		end := skipValue(data, i)
		if end < 0 {
			return nil, -1
		}
		items = append(items, data[i:end])
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, -1
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return items, i + 1
		default:
			return nil, -1
		}
	}
}

// Key reports whether the raw key k (as Fields gives it) is name.
func Key(k []byte, name string) bool { return string(k) == name }
