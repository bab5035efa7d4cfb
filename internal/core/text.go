package core

import "github.com/loopguard/loopguard/internal/escape"

// MaxNameLen is the most bytes of a model-chosen string, such as a tool name
// or a finish reason, that details, evidence, [Explain] and log values show
// (see [Clean]).
const MaxNameLen = 256

// maxDetailLen is the most bytes of a detail that [Explain] and LogValue
// show.
const maxDetailLen = 4096

// Clean returns a model-chosen string (a tool name, a finish reason) as
// details, evidence and logs show it: every character that a terminal could
// act on (control characters, DEL, the C1 controls, format characters such as
// bidirectional overrides, invalid UTF-8) written as a Go escape (\x1b,
// \u202e), and the result cut to at most MaxNameLen bytes, on a character
// boundary. Printable text that short is returned as it is. The built-in
// detectors write every name and reason in their details and evidence
// through it, and the loopguard command escapes everything it prints with
// the same policy.
func Clean(s string) string {
	if len(s) <= MaxNameLen && printableASCII(s) {
		return s
	}
	return string(escape.Append(nil, s, false, MaxNameLen))
}

// Quote returns s as [Clean] does, between double quotes, with double quotes
// and backslashes escaped as in a Go string: for a name inside a detail
// (tool "search" called ...). At most MaxNameLen bytes are quoted.
func Quote(s string) string {
	b := append(make([]byte, 0, min(len(s), MaxNameLen)+2), '"')
	b = escape.Append(b, s, true, MaxNameLen)
	return string(append(b, '"'))
}

// cleanDetail returns a detail (of any detector) with every character a
// terminal could act on escaped, cut to maxDetailLen bytes.
func cleanDetail(s string) string {
	if len(s) <= maxDetailLen && printableASCII(s) {
		return s
	}
	return string(escape.Append(nil, s, false, maxDetailLen))
}

// printableASCII reports whether s is only printable ASCII characters.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
