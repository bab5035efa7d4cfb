package wire

import (
	"bufio"
	"bytes"
	"io"
)

// Events splits a stream of server-sent events into whole events: each one
// is its lines with the blank line that ends it, exactly as they came
// (LF or CRLF line ends). Comments and keep-alive lines belong to the
// event they precede.
type Events struct {
	r   *bufio.Reader
	buf []byte
	max int
}

// NewEvents reads events from r; an event longer than max bytes is an
// error (bufio.ErrTooLong).
func NewEvents(r io.Reader, max int) *Events {
	return &Events{r: bufio.NewReaderSize(r, 32<<10), max: max}
}

// Next returns the next whole event. At the end of the stream it returns
// what is left (an event the upstream did not end, possibly empty) with
// io.EOF, or with the read's error. The slice is valid until the next call.
func (e *Events) Next() ([]byte, error) {
	e.buf = e.buf[:0]
	for {
		line, err := e.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			e.buf = append(e.buf, line...)
			if len(e.buf) > e.max {
				return nil, bufio.ErrTooLong
			}
			continue
		}
		e.buf = append(e.buf, line...)
		if len(e.buf) > e.max {
			return nil, bufio.ErrTooLong
		}
		if err != nil {
			return e.buf, err
		}
		if blank(line) {
			return e.buf, nil
		}
	}
}

func blank(line []byte) bool {
	return len(line) == 1 || (len(line) == 2 && line[0] == '\r')
}

// Data returns the data of one event: its "data:" lines' values joined by
// newlines (nil when it has none), and its "event:" name.
func Data(event []byte) (data []byte, name string) {
	var out []byte
	n := 0
	for len(event) > 0 {
		var line []byte
		if i := bytes.IndexByte(event, '\n'); i >= 0 {
			line, event = event[:i], event[i+1:]
		} else {
			line, event = event, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if n == 0 {
				out = value
			} else {
				if n == 1 {
					out = append([]byte(nil), out...)
				}
				out = append(append(out, '\n'), value...)
			}
			n++
		case "event":
			name = string(value)
		}
	}
	return out, name
}

// Event writes one event with an optional name and one data line.
func Event(name string, data []byte) []byte {
	var b []byte
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
