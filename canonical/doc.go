// Package canonical decides when two tool calls have the same arguments.
//
// Loop detection compares values, not bytes: {"a":1,"b":2} and
// { "b": 2.0, "a": 1 } are one call, [1,2] and [2,1] are two. This package
// gives every JSON value and every Go value one canonical form and a
// 128-bit Sum of it. The guard computes the Sum once per call, every
// detector relies on it, and users may use it in their own rules.
//
// # Canonical form
//
// JSON text gets its RFC 8785 (JCS) form (Transform): no whitespace, object
// members sorted by the UTF-16 code units of their names, the last of
// duplicate names kept, strings with minimal escaping, numbers as IEEE-754
// doubles printed as ECMAScript prints them (1e+30, 0.002, -0 is 0).
//
// A Go value has the canonical form of its encoding/json encoding (Append,
// Hash), so a struct and the map with the same fields hash alike, a []byte
// is its base64 string and a json.RawMessage is JSON text. All numbers,
// integers included, are compared as float64, as RFC 8785 compares them:
// integers beyond 2^53 are rounded to the nearest double, so
// uint64(1<<53+1) and 1<<53 hash alike. This keeps Hash(v) equal to
// HashJSON(json.Marshal(v)) for every value json.Marshal accepts that has
// no string that is not UTF-8.
//
// # Beyond JSON
//
// Hash, HashJSON and Append never fail and never panic. Values JSON cannot
// express get canonical forms of their own, distinct from every JSON value,
// which Append prints as bracketed markers:
//
//   - NaN, Infinity, -Infinity: the three float values; all NaNs are one.
//   - [Circular:n]: a pointer, map or slice that refers back to an ancestor
//     n container levels up (0: through pointers only).
//   - [TooDeep]: an array or object nested deeper than MaxDepth (64).
//   - [Truncated]: the rest of every open container once MaxValues
//     (200,000) values have been read, in canonical order.
//   - [Failed:n]: a value that could not be read (a MarshalJSON or
//     MarshalText that returned an error or panicked, a map key whose
//     MarshalText failed). Each one is unique: it equals nothing, not even
//     the same value read again. They are numbered by a process-wide atomic
//     counter and a random number per process, the package's only global
//     state.
//   - [InvalidJSON:hex]: JSON text that is not valid (see Transform), such
//     as an empty or invalid json.RawMessage, or the output of a MarshalJSON
//     that is not JSON.
//   - [InvalidUTF8:hex]: a string that is not UTF-8. encoding/json would
//     replace the bad bytes by U+FFFD; this package keeps such strings apart
//     from each other and from every valid string.
//   - [Unsupported:type]: a func, chan, unsafe.Pointer or complex number,
//     or a map whose keys JSON cannot name.
//
// # Sums
//
// A Sum is the 128-bit MurmurHash3 (x64_128, seed 0) of a binary form of
// the canonical value. Sums are stable across processes, machines and
// versions, so they may be stored; String prints them as 32 lowercase hex
// digits. HashBytes and HashString give the raw hash of bytes, for
// combining sums.
package canonical
