package core

import "github.com/loopguard/loopguard/canonical"

// SnapshotOptions tune [Guard.Snapshot] and [Detector.Snapshot]. The zero
// value, which json.Marshal(g) uses, is the safe one: snapshots go into
// databases and caches, so by default a snapshot holds no character of any
// argument, result or text.
type SnapshotOptions struct {
	// Previews keeps the short previews of arguments and text that
	// details and evidence quote, and every tool name as given, so that a
	// restored guard's details and evidence read exactly as the saved
	// one's would. Without it, previews read [Redacted] and a tool name
	// that does not look like an ordinary identifier is written as a hash
	// of itself (see [SnapshotOptions.Name]). Stop decisions never depend
	// on either.
	Previews bool
}

// Redacted is what a preview reads in a snapshot taken without
// SnapshotOptions.Previews.
const Redacted = "[redacted]"

// MaxPlainNameLen is the longest tool name that [PlainName] accepts.
const MaxPlainNameLen = 64

// PlainName reports whether a tool name looks like an ordinary identifier:
// 1 to MaxPlainNameLen ASCII letters, digits and '_', '.', ':', '/', '-'.
// The model chooses tool names, so anything else could carry text that must
// not be repeated: such names stay out of model feedback (package feedback)
// and of snapshots taken without previews.
func PlainName(name string) bool {
	if len(name) == 0 || len(name) > MaxPlainNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '_' || c == '.' || c == ':' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// Name returns a tool name as a snapshot taken with these options writes it:
// as it is when it is a [PlainName] or when the options keep previews, and
// otherwise hashed ([HashName]), which keeps the name's identity but none of
// its characters. A name that has the form of a hash is always written
// hashed, so that a name read back is a hash exactly when [IsHashedName]
// says so. Detectors that keep tool names in their state write them with it.
func (o SnapshotOptions) Name(name string) string {
	if PlainName(name) || o.Previews && !IsHashedName(name) {
		return name
	}
	return HashName(name)
}

const hashedPrefix = "#"

// HashName returns a tool name as a snapshot without previews writes one
// that is not a [PlainName]: "#" and the 32 hexadecimal digits of the hash
// of the name.
func HashName(name string) string { return hashedPrefix + canonical.HashString(name).String() }

// IsHashedName reports whether s, a tool name read from a snapshot, has the
// form that [HashName] gives: "#" and 32 lower-case hexadecimal digits.
func IsHashedName(s string) bool {
	if len(s) != len(hashedPrefix)+32 || s[:len(hashedPrefix)] != hashedPrefix {
		return false
	}
	for i := len(hashedPrefix); i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
