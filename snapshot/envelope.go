package snapshot

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// format names the layout of what Runs writes to a Store.
const format = "loopguard-run/1"

// maxWriters is how many writers' marks a snapshot keeps: the most recent.
const maxWriters = 64

// ErrTampered is returned when a stored snapshot fails its HMAC check
// ([Options.Key]): it was altered in the store, written under another key or
// for another run, or is unsigned while a key is set (or signed while none
// is). The run is not restored from it.
var ErrTampered = errors.New("snapshot: stored snapshot failed its integrity check")

// envelope is what Runs stores for a run: the guard's snapshot and, per
// writer, the last of its steps that the snapshot holds, so that a writer
// that lost the answer to a save learns whether it happened.
type envelope struct {
	Format  string            `json:"format"`
	Commits uint64            `json:"commits"`
	Writers map[string]writer `json:"writers"`
	Guard   json.RawMessage   `json:"guard"`
}

// writer is one writer's mark: its last step in the snapshot (a sequence
// number of its own, per run) and the commit that wrote it.
type writer struct {
	Seq    uint64 `json:"seq"`
	Commit uint64 `json:"commit"`
}

// macPrefix starts a signed snapshot: "lgmac1:" + 64 hex digits + ":".
const macPrefix = "lgmac1:"

const macLen = len(macPrefix) + 2*sha256.Size + 1

// encode writes the envelope, signed with key when it is not empty.
func encode(e *envelope, runKey string, key []byte) ([]byte, error) {
	if len(e.Writers) > maxWriters {
		marks := make([]uint64, 0, len(e.Writers))
		for _, w := range e.Writers {
			marks = append(marks, w.Commit)
		}
		slices.Sort(marks)
		cut := marks[len(marks)-maxWriters]
		for id, w := range e.Writers {
			if w.Commit < cut {
				delete(e.Writers, id)
			}
		}
	}
	// The guard's snapshot is JSON already: it is written as it is, not
	// compacted again by encoding/json (a fifth of a save's time).
	writers, err := json.Marshal(e.Writers)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, 64+len(writers)+len(e.Guard))
	body = append(body, `{"format":`...)
	body = strconv.AppendQuote(body, e.Format)
	body = append(body, `,"commits":`...)
	body = strconv.AppendUint(body, e.Commits, 10)
	body = append(body, `,"writers":`...)
	body = append(body, writers...)
	body = append(body, `,"guard":`...)
	body = append(body, e.Guard...)
	body = append(body, '}')
	if len(key) == 0 {
		return body, nil
	}
	out := make([]byte, 0, macLen+len(body))
	out = append(out, macPrefix...)
	out = hex.AppendEncode(out, sign(key, runKey, body))
	out = append(out, ':')
	return append(out, body...), nil
}

// decode checks and reads what Load returned.
func decode(data []byte, runKey string, key []byte) (*envelope, error) {
	body := data
	signed := bytes.HasPrefix(data, []byte(macPrefix))
	switch {
	case signed && len(key) == 0:
		return nil, fmt.Errorf("%w: it is signed and Options.Key is not set", ErrTampered)
	case !signed && len(key) > 0:
		return nil, fmt.Errorf("%w: it is not signed", ErrTampered)
	case signed:
		if len(data) < macLen || data[macLen-1] != ':' {
			return nil, fmt.Errorf("%w: malformed signature", ErrTampered)
		}
		mac, err := hex.DecodeString(string(data[len(macPrefix) : macLen-1]))
		body = data[macLen:]
		if err != nil || !hmac.Equal(mac, sign(key, runKey, body)) {
			return nil, fmt.Errorf("%w: wrong signature", ErrTampered)
		}
	}
	var e envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("snapshot: stored run %q: %w", runKey, err)
	}
	if e.Format != format {
		return nil, fmt.Errorf("snapshot: stored run %q: unknown format %.40q", runKey, e.Format)
	}
	if len(e.Guard) == 0 {
		return nil, fmt.Errorf("snapshot: stored run %q: no guard", runKey)
	}
	if e.Writers == nil {
		e.Writers = make(map[string]writer)
	}
	return &e, nil
}

// sign is the HMAC-SHA256 of the run key and the body: a snapshot copied to
// another run's key fails the check.
func sign(key []byte, runKey string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(runKey))))
	h.Write([]byte(runKey))
	h.Write(body)
	return h.Sum(nil)
}
