// Package strictjson is the one strict JSON reader that loopguard's
// documents share: options (package detector), step lines, transcripts and
// OTLP (package trace). It reads an object into its members, in document
// order, with or without refusing a key given twice (encoding/json would
// silently keep the last); it walks a token stream object by object; it
// names the JSON kind of a value, makes the path of a member for an error
// ("detectors.loop", `tools["a.b"]`, "calls[2]") and finds the known name a
// misspelt key was meant to be.
//
// It decodes no value itself: values come back as json.RawMessage, for the
// caller to read with the rules of its own document.
//
// The one-pass scanners of the hot paths (package guard's snapshot reader
// and UnmarshalState) read bytes, not tokens, for speed; they share with it
// the search for a key given twice ([Keys]), the stack they keep on the
// goroutine's stack ([Stack]) and the white-space rule ([SkipSpace]).
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/internal/spell"
)

// ErrNotObject is the error of a document that is not a JSON object.
var ErrNotObject = errors.New("not a JSON object")

// A Member is one key of a JSON object and its value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Members returns the members of the JSON object raw in document order; a
// key given twice is there twice. raw must start with the object (else
// ErrNotObject); what follows its closing brace is not read.
func Members(raw []byte) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	return members(dec, false)
}

// Object returns the members of raw, which must be one JSON object and
// nothing more, in document order. A key given twice is the error
// `key "k" appears twice`; text after the object is an error too.
func Object(raw []byte) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, ErrNotObject
	}
	ms, err := members(dec, true)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}

// members reads the members of the object whose '{' dec has read, up to
// its closing brace (not read).
func members(dec *json.Decoder, unique bool) ([]Member, error) {
	var ms []Member
	var seen map[string]bool
	if unique {
		seen = make(map[string]bool)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if unique {
			if seen[key] {
				return nil, fmt.Errorf("key %q appears twice", key)
			}
			seen[key] = true
		}
		ms = append(ms, Member{key, val})
	}
	return ms, nil
}

// EachMember reads an object (or null, which has no members) from dec and
// calls fn with each key; fn must read the key's value from dec. notObject
// is the error for any other value.
func EachMember(dec *json.Decoder, notObject error, fn func(key string) error) error {
	if null, err := enter(dec, '{', notObject); err != nil || null {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// EachElement reads an array (or null, which has no elements) from dec and
// calls fn for each element, which fn must read from dec. notArray is the
// error for any other value.
func EachElement(dec *json.Decoder, notArray error, fn func() error) error {
	if null, err := enter(dec, '[', notArray); err != nil || null {
		return err
	}
	for dec.More() {
		if err := fn(); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// enter reads the next token of dec, which must open a value with delim or
// be null; wrong is the error of any other value.
func enter(dec *json.Decoder, delim json.Delim, wrong error) (null bool, err error) {
	tok, err := dec.Token()
	switch {
	case err != nil:
		return false, err
	case tok == nil:
		return true, nil
	case tok != delim:
		return false, wrong
	}
	return false, nil
}

// Skip reads one value from dec.
func Skip(dec *json.Decoder) error {
	var skip json.RawMessage
	return dec.Decode(&skip)
}

// Kind names the JSON kind of raw for an error message: "an object", "an
// array", "a string", "a boolean", "null", "a number", or "nothing" for
// white space. It looks at the first byte only.
func Kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// IsLiteral reports whether raw, less white space, is the JSON literal lit
// (true, false, null).
func IsLiteral(raw []byte, lit string) bool {
	return string(bytes.TrimSpace(raw)) == lit
}

// Join makes the path of key inside the object at path ("" for the
// document). A key that is not a plain identifier (letters, digits, '_' and
// '-') is quoted, so that a tool named "a.b" cannot be mistaken for a nested
// key: `tools["a.b"]`.
func Join(path, key string) string {
	if !plainKey(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index makes the path of element i of the array at path: "calls[2]".
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Suggest returns the known name that key was probably meant to be, for a
// "did you mean": one that differs only in case (the first such), or else
// the nearest of those at most two edits away that are long enough (5 bytes
// or more) for that to be telling. It returns "" when there is none.
func Suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if len(k) < 5 {
			continue
		}
		if d := spell.Distance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
