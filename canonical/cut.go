package canonical

import (
	"bytes"
	"encoding/binary"
	"math"
)

// This file cuts the canonical encoding of JSON text at the value limit.
// Members must be sorted before the values in them can be counted in
// canonical order, so JSON text (whose values are bounded by its length) is
// encoded whole, then walked in canonical order and cut after MaxValues
// values: one pass over the text and one over its encoding.

// jsonTextCut is jsonText with the value limit applied in canonical order:
// the members of an object are counted as they are sorted, and every open
// container of the text gets the [Truncated] marker once the limit is
// reached, as the careful pass does for Go values.
func (e *encoder) jsonTextCut(src []byte) bool {
	start, count, limit, careful := len(e.buf), e.count, e.maxValues, e.careful
	e.maxValues, e.careful = math.MaxInt, false
	// Of the root's members, no more than one past those the limit lets be
	// read need be sorted and kept: each counts a value.
	e.rootDepth, e.rootMembers = e.depth, max(1, limit-count+1)
	ok := e.jsonText(src)
	e.maxValues, e.careful, e.rootMembers = limit, careful, 0
	if !ok {
		e.count = count
		return false
	}
	// Without a cut, the count is exact but for the values of members
	// dropped as duplicates; the careful pass needs it exact.
	if careful || e.count > limit {
		c := cutter{b: e.buf, count: count, limit: limit, at: -1}
		c.value(start)
		e.count = c.count
		if c.at >= 0 {
			e.buf = append(e.buf[:c.at], c.tail...)
		}
	}
	return true
}

// cutter walks a canonical encoding (without [Truncated] markers), counting
// its values as the encoder does, and finds where the value limit cuts it.
type cutter struct {
	b            []byte
	count, limit int
	at           int    // where the encoding is cut, or -1
	tail         []byte // what follows the cut: markers and container ends
}

// value walks the value at b[i] and returns the index after it.
func (c *cutter) value(i int) int {
	if c.at >= 0 {
		return skipEncoded(c.b, i)
	}
	c.count++
	tag := c.b[i]
	if tag != tagArray && tag != tagObject {
		return skipEncoded(c.b, i)
	}
	end := byte(tagArrayEnd)
	if tag == tagObject {
		end = tagObjectEnd
	}
	for i++; c.b[i] != end; {
		if c.at < 0 && c.count >= c.limit {
			c.at = i
		}
		if c.at >= 0 {
			// No more values may be read: the rest of this container is
			// cut, as next does.
			c.tail = append(c.tail, tagTruncated)
			for c.b[i] != end {
				i = skipEncoded(c.b, i)
			}
			break
		}
		if tag == tagObject {
			i = skipEncoded(c.b, i) // the name
		}
		i = c.value(i)
	}
	if c.at >= 0 {
		c.tail = append(c.tail, end)
	}
	return i + 1
}

// skipEncoded returns the index after the encoded value, name or marker at
// b[i].
func skipEncoded(b []byte, i int) int {
	switch b[i] {
	case tagNumber, tagCircular:
		return i + 9
	case tagFailed:
		return i + 17
	case tagString:
		return i + 2 + bytes.IndexByte(b[i+1:], stringEnd)
	case tagInvalidJSON, tagInvalidUTF8, tagUnsupported:
		return i + 9 + int(binary.LittleEndian.Uint64(b[i+1:]))
	case tagArray, tagObject:
		end := byte(tagArrayEnd)
		if b[i] == tagObject {
			end = tagObjectEnd
		}
		for i++; b[i] != end; {
			i = skipEncoded(b, i)
		}
		return i + 1
	default: // null, true, false, [TooDeep], [Truncated]
		return i + 1
	}
}
