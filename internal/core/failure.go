package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/loopguard/loopguard/canonical"
)

// failWhen marks results as failures by their text. It is built once, in
// New, from Config.FailWhen and ToolConfig.FailWhen.
type failWhen struct {
	all   []*regexp.Regexp
	tools map[string][]*regexp.Regexp // per tool, including all
}

// compileFailWhen compiles the FailWhen patterns; it returns nil when there
// are none, and an *OptionError for each pattern that does not compile.
func compileFailWhen(o *Config) (*failWhen, []error) {
	var errs []error
	compile := func(field string, patterns []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for i, p := range patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				errs = append(errs, &OptionError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err})
				continue
			}
			out = append(out, re)
		}
		return out
	}
	fw := &failWhen{all: compile("FailWhen", o.FailWhen)}
	for _, name := range sortedKeys(o.Tools) {
		if t := o.Tools[name]; len(t.FailWhen) > 0 {
			if fw.tools == nil {
				fw.tools = make(map[string][]*regexp.Regexp)
			}
			fw.tools[name] = append(slices.Clip(fw.all), compile(fmt.Sprintf("Tools[%q].FailWhen", name), t.FailWhen)...)
		}
	}
	if len(fw.all) == 0 && fw.tools == nil {
		return nil, errs
	}
	return fw, errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fails reports whether a result of tool reads as a failure.
func (fw *failWhen) fails(tool string, result any) bool {
	res := fw.all
	if t, ok := fw.tools[tool]; ok {
		res = t
	}
	if len(res) == 0 || result == nil {
		return false
	}
	text := resultText(result)
	for _, re := range res {
		if re.MatchString(text) {
			return true
		}
	}
	return false
}

// rejectionPhrases are the messages with which coding harnesses reject an
// edit in an ordinary result, as they write them: the result is a failure
// although the harness marks no error (see Config.DisableRejections). Each
// starts a line of the result. Anchor is the index in the text of its first
// byte of rejectionAnchors, which the search looks for.
var rejectionPhrases = [...]struct {
	text   string
	anchor int
}{
	// SWE-agent's linting editor (windowed_edit_linting) and OpenHands'
	// edit_file_by_replace, whose line is in brackets.
	{"Your proposed edit has introduced new syntax error", 0},
	// Anthropic's text editor (str_replace_editor) as SWE-agent and
	// OpenHands (openhands-aci, after "ERROR:") run it: "..., old_str
	// `...` did not appear verbatim in ...", "... Multiple occurrences of
	// old_str ...".
	{"No replacement was performed", 0},
	// OpenHands' edit_file_by_replace, in brackets.
	{"No exact match found in", 0},
	// aider: "## SearchReplaceNoExactMatch: This SEARCH block failed to
	// exactly match lines in ...".
	{"SearchReplaceNoExactMatch", 13},
	// CrewAI, in place of the result of a call made again with the same
	// input (its i18n "task_repeated_usage"): the call did not run.
	{"I tried reusing the same input, I must stop using this action input", 0},
}

// rejectionScanMax is how many bytes of a result are read for a rejection:
// the harnesses write theirs first, or after a line or two of their own.
const rejectionScanMax = 1024

// RejectionPhrases returns the harnesses' rejection messages that mark a
// result as a failure unless Config.DisableRejections is set: a new slice,
// each time.
func RejectionPhrases() []string {
	out := make([]string, len(rejectionPhrases))
	for i, p := range rejectionPhrases {
		out[i] = p.text
	}
	return out
}

// rejects reports whether a result is a harness's rejection: a line of its
// first rejectionScanMax bytes starts with one of rejectionPhrases, after at
// most 4 of '[', '#' and ' ' ("[Your proposed edit ...", "## SearchReplace...").
// A result is read as text when it is a string or a []byte, and as JSON text
// when it is a json.RawMessage, where a line also starts at the start of a
// string and after a \n escape; a result of any other type is not read (it
// would have to be encoded first, for every call). It never allocates.
func rejects(result any) bool {
	switch r := result.(type) {
	case string:
		return rejectionIn(r, false, strings.IndexByte)
	case json.RawMessage:
		return rejectionIn([]byte(r), true, bytes.IndexByte)
	case []byte:
		return rejectionIn(r, false, bytes.IndexByte)
	}
	return false
}

// rejectionAnchors are the bytes a rejection is looked for by: each of
// rejectionPhrases holds one of them, upper case, which is rare in results, so
// that a result without a rejection costs one quick search
// (strings.IndexByte) for each.
const rejectionAnchors = "NYI"

// rejectionIn reports whether t, the text of a result, is a rejection (see
// rejects); index is strings.IndexByte or bytes.IndexByte, as T is.
func rejectionIn[T ~string | ~[]byte](t T, isJSON bool, index func(T, byte) int) bool {
	t = t[:min(len(t), rejectionScanMax)]
	for k := 0; k < len(rejectionAnchors); k++ {
		for i := 0; i < len(t); {
			j := index(t[i:], rejectionAnchors[k])
			if j < 0 {
				break
			}
			if rejectionAround(t, i+j, isJSON) {
				return true
			}
			i += j + 1
		}
	}
	return false
}

// rejectionAround reports whether one of rejectionPhrases holds t[h], an
// anchor, at its anchor, and starts a line (see rejects).
func rejectionAround[T ~string | ~[]byte](t T, h int, isJSON bool) bool {
	for _, p := range rejectionPhrases {
		i := h - p.anchor
		if p.text[p.anchor] != t[h] || i < 0 || i+len(p.text) > len(t) {
			continue
		}
		if hasPrefixAt(t, i, p.text) && lineStartAt(t, i, isJSON) {
			return true
		}
	}
	return false
}

// lineStartAt reports whether t[i] starts a line after at most 4 of '[',
// '#' and ' ': at the start of t, after a newline, or in JSON text at the
// start of a string or after a \n escape.
func lineStartAt[T ~string | ~[]byte](t T, i int, isJSON bool) bool {
	k := i
	for k > 0 && i-k < 4 && (t[k-1] == '[' || t[k-1] == '#' || t[k-1] == ' ') {
		k--
	}
	switch {
	case k == 0 || t[k-1] == '\n':
		return true
	case !isJSON:
		return false
	case t[k-1] == '"':
		return !escapedAt(t, k-1)
	case k >= 2 && t[k-1] == 'n' && t[k-2] == '\\':
		return !escapedAt(t, k-2)
	}
	return false
}

// hasPrefixAt reports whether t[i:] starts with p.
func hasPrefixAt[T ~string | ~[]byte](t T, i int, p string) bool {
	for j := 0; j < len(p); j++ {
		if t[i+j] != p[j] {
			return false
		}
	}
	return true
}

// escapedAt reports whether the byte at t[i] of JSON text is escaped: an
// odd number of backslashes before it.
func escapedAt[T ~string | ~[]byte](t T, i int) bool {
	n := 0
	for i-n > 0 && t[i-n-1] == '\\' {
		n++
	}
	return n%2 == 1
}

// Bounds of a failure's signature: how much of the error and of the result
// is read, and which of the arguments' strings are taken out of them.
const (
	failureTextMax = 2048 // bytes of normalised text kept, of each part
	failureReadMax = 8192 // bytes of each part read
	echoMin        = 4    // the shortest argument string taken out
	echoLineMin    = 12   // the shortest line of an argument taken out
	echoMax        = 32   // the most argument strings taken out
	echoArgsMax    = 64 << 10
)

// failureSum returns the signature of a failed call: a hash of its tool's
// name and the normalised text of its error and result (see
// [Call.Failure]).
func failureSum(scratch []byte, tc *ToolCall) ([]byte, canonical.Sum) {
	echoes := argStrings(tc.Args)
	b := scratch[:0]
	b = append(b, kindFailure)
	b = appendUvarintString(b, tc.Name)
	if tc.Err != nil {
		b = appendFailureText(b, errorText(tc.Err), echoes)
	}
	b = append(b, 0)
	if tc.Result != nil {
		b = appendFailureText(b, resultText(tc.Result), echoes)
	}
	return b, canonical.HashBytes(b)
}

// retrySum returns the Retry sum of a failed call (see [Call.Retry]): a
// hash of its failure signature and of its canonical arguments (after the
// key options) without the white space inside their strings.
func (g *Guard) retrySum(scratch []byte, tc *ToolCall, failure canonical.Sum) (b []byte, sum canonical.Sum) {
	b = append(scratch[:0], kindRetry)
	b = append(b, failure[:]...)
	start := len(b)
	args := tc.Args
	if g.keys != nil {
		defer func() {
			if recover() != nil {
				b, sum = scratch[:0], canonical.Hash(failing{})
			}
		}()
		args = g.keys.args(tc.Name, args)
	}
	b = canonical.Append(b, args)
	return b, canonical.HashBytes(stripSpace(b, start))
}

// stripSpace removes from b[start:], canonical JSON, the white space inside
// its strings: spaces and the escapes \n, \r and \t (canonical JSON has
// no white space outside strings). It works in place.
func stripSpace(b []byte, start int) []byte {
	w := start
	for i := start; i < len(b); i++ {
		c := b[i]
		switch {
		case c == ' ':
			continue
		case c == '\\' && i+1 < len(b):
			if n := b[i+1]; n == 'n' || n == 'r' || n == 't' {
				i++
				continue
			}
			b[w], b[w+1] = c, b[i+1]
			w += 2
			i++
			continue
		}
		b[w] = c
		w++
	}
	return b[:w]
}

func appendUvarintString(b []byte, s string) []byte {
	var n [10]byte
	i := 0
	for x := uint64(len(s)); ; i++ {
		if x < 0x80 {
			n[i] = byte(x)
			i++
			break
		}
		n[i] = byte(x) | 0x80
		x >>= 7
	}
	b = append(b, n[:i]...)
	return append(b, s...)
}

// argStrings returns the strings of a call's arguments that a failure's text
// may echo: every string value of at least echoMin bytes and every line of
// one of at least echoLineMin bytes, longest first, at most echoMax.
func argStrings(args any) []string {
	var raw []byte
	switch a := args.(type) {
	case nil:
		return nil
	case json.RawMessage:
		raw = a
	case string:
		raw, _ = json.Marshal(a)
	default:
		var err error
		if raw, err = marshalSafe(a); err != nil {
			return nil
		}
	}
	if len(raw) > echoArgsMax {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 || len(out) >= 4*echoMax {
			return
		}
		switch x := v.(type) {
		case string:
			if len(x) >= echoMin {
				out = append(out, x)
			}
			if strings.Contains(x, "\n") {
				for _, line := range strings.Split(x, "\n") {
					if line = strings.TrimSpace(line); len(line) >= echoLineMin && line != x {
						out = append(out, line)
					}
				}
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k], depth+1)
			}
		}
	}
	walk(v, 0)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	out = slices.Compact(out)
	if len(out) > echoMax {
		out = out[:echoMax]
	}
	return out
}

// appendFailureText appends the normalised form of a failure's text to dst:
// the arguments' strings it echoes taken out (a run of them, separated only
// by white space, counts as one), then the lines of its numbered listings
// (see dropListingLines), lower-cased, numbers, ids (see
// appendToken) and temporary names made '#', runs of white space made one
// space. At most failureReadMax bytes of s are read and failureTextMax
// written.
func appendFailureText(dst []byte, s string, echoes []string) []byte {
	if len(s) > failureReadMax {
		s = s[:failureReadMax]
	}
	for _, e := range echoes {
		if strings.Contains(s, e) {
			s = strings.ReplaceAll(s, e, "\x00")
		}
	}
	s = dropListingLines(s)
	start := len(dst)
	space := false
	for i := 0; i < len(s) && len(dst)-start < failureTextMax; {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			space = true
			i++
			continue
		case isAlnum(c):
			j := tokenEnd(s, i)
			if space && len(dst) > start {
				dst = append(dst, ' ')
			}
			space = false
			dst = appendToken(dst, s[i:j])
			i = j
			continue
		}
		if c == 0 && len(dst) > start && dst[len(dst)-1] == 0 {
			// Runs of echoed strings (the lines of one argument) read
			// as one, however many lines the argument had.
			space = false
			i++
			continue
		}
		if space && len(dst) > start {
			dst = append(dst, ' ')
		}
		space = false
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		dst = append(dst, s[i:i+size]...)
		i += size
	}
	if len(dst)-start > failureTextMax {
		dst = dst[:start+failureTextMax]
	}
	return dst
}

// listingRunMin is the fewest numbered lines in a row that make a listing.
const listingRunMin = 2

// dropListingLines returns s without the lines of its numbered listings: runs
// of at least listingRunMin lines that each start (after spaces or tabs)
// with a line number, one more than the line before, and the same mark
// after it: '|' (OpenHands' editor, "12|code"), ':' not followed by a digit
// (SWE-agent's windows, "12:code") or a tab (cat -n, "    12\tcode"). Harnesses
// that reject an edit show the file as it would have been, and each attempt
// shows another version of it: the listing is the part that changes, the
// message around it the part that stays. A single numbered line stays, and
// so do lines whose numbers do not follow each other, such as
// "12:3  error  ..." lines of a linter, timestamps ("12:03:44", a digit
// after the ':') or grep -n's matches. s is returned as it is when it has
// no listing, without allocating.
func dropListingLines(s string) string {
	if strings.IndexByte(s, '\n') < 0 {
		return s
	}
	var b []byte // s without the listings, once one is found
	kept := 0    // s[kept:] is still to be written to b
	dropped := false
	runStart, runLen := 0, 0
	var prevNum int
	var prevMark byte
	for i := 0; i <= len(s); {
		end := strings.IndexByte(s[i:], '\n')
		next := len(s) + 1
		if end < 0 {
			end = len(s)
		} else {
			end += i
			next = end + 1
		}
		num, mark, ok := listingLineNumber(s[i:end])
		if ok && runLen > 0 && mark == prevMark && num == prevNum+1 {
			runLen++
		} else {
			if runLen >= listingRunMin {
				b = append(b, s[kept:runStart]...)
				kept, dropped = i, true
			}
			runStart, runLen = i, 0
			if ok {
				runLen = 1
			}
		}
		prevNum, prevMark = num, mark
		i = next
	}
	if runLen >= listingRunMin {
		b = append(b, s[kept:runStart]...)
		kept, dropped = len(s), true
	}
	if !dropped {
		return s
	}
	return string(append(b, s[kept:]...))
}

// listingLineNumber reads the line number at the start of a line of a
// listing (see dropListingLines): the number and the mark after it.
func listingLineNumber(line string) (num int, mark byte, ok bool) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	start := i
	for i < len(line) && '0' <= line[i] && line[i] <= '9' && i-start < 9 {
		num = num*10 + int(line[i]-'0')
		i++
	}
	if i == start || i == len(line) {
		return 0, 0, false
	}
	switch line[i] {
	case '|', '\t':
		return num, line[i], true
	case ':':
		if i+1 < len(line) && '0' <= line[i+1] && line[i+1] <= '9' {
			return 0, 0, false
		}
		return num, ':', true
	}
	return 0, 0, false
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// tokenEnd returns the end of the token that starts at s[i], a letter or a
// digit: a run of letters, digits and '_', where '-', '+' and '=' join two
// such runs (and '=' may end it, as base64 padding). Joined runs are read
// together so that an id written with dashes (a UUID) or in base64 is one
// token; the parts of any other token are written as they were.
func tokenEnd(s string, i int) int {
	j := i
	for j < len(s) {
		c := s[j]
		switch {
		case isAlnum(c) || c == '_':
			j++
		case (c == '-' || c == '+') && j+1 < len(s) && isAlnum(s[j+1]):
			j++
		case c == '=':
			if j+1 < len(s) && isAlnum(s[j+1]) {
				j++ // key=value
				continue
			}
			// Padding: one or two '=' at the end of a base64 run.
			k := j
			for k < len(s) && k-j < 2 && s[k] == '=' {
				k++
			}
			if isBase64ID(s[i:k]) {
				return k
			}
			return j
		default:
			return j
		}
	}
	return j
}

// appendToken appends a token (see tokenEnd), lower-cased, with its
// variable parts made '#':
//   - an id as a whole: a run of dash-separated hex groups with at least 12
//     hex digits, one of them a decimal digit (a UUID of any version, a W3C
//     trace id, an X-Ray id), or a base64 run (at least 16 characters, with
//     '+' or '=' padding, upper- and lower-case letters and 2 digits);
//   - each part between '_', '-', '+' and '=' that is an id (see isIDPart),
//     or a temporary name (tmp...);
//   - every run of digits elsewhere becomes one '#'.
//
// Ordinary words are left alone, hex-looking ones included ("dead", "face",
// "add"): a part without a decimal digit is never an id.
func appendToken(dst []byte, t string) []byte {
	digit, sep := false, false
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case '0' <= c && c <= '9':
			digit = true
		case c == '_' || c == '-' || c == '+' || c == '=':
			sep = true
		}
	}
	if !sep {
		// One part, the common case: a word, a number, an id.
		switch {
		case len(t) > 3 && strings.EqualFold(t[:3], "tmp"):
			return append(dst, "tmp#"...)
		case digit && isIDPart(t):
			return append(dst, '#')
		}
		return appendDigits(dst, t)
	}
	if !digit && !hasTmpWord(t) {
		// Without a digit no part is an id: a word with '_' or '-'.
		return appendDigits(dst, t)
	}
	if isBase64ID(t) {
		return append(dst, '#')
	}
	prefix := false
	for len(t) > 0 {
		// A chunk runs to the next '+' or '='.
		n := len(t)
		for k := 0; k < len(t); k++ {
			if t[k] == '+' || t[k] == '=' {
				n = k
				break
			}
		}
		chunk := t[:n]
		if isHexGroups(chunk) {
			dst = append(dst, '#')
		} else {
			dst, prefix = appendChunk(dst, chunk, prefix)
		}
		if n == len(t) {
			break
		}
		dst = append(dst, t[n])
		t = t[n+1:]
	}
	return dst
}

// appendChunk appends a run of letters, digits, '_' and '-' part by part;
// prefix reports whether the part before it was a provider's prefix, and
// the result whether its last part is one.
func appendChunk(dst []byte, c string, prefix bool) ([]byte, bool) {
	word := true // at the start of a dash-separated word
	for len(c) > 0 {
		n := len(c)
		for k := 0; k < len(c); k++ {
			if c[k] == '_' || c[k] == '-' {
				n = k
				break
			}
		}
		if word {
			// A temporary name swallows the rest of its word, '_' parts
			// included.
			w := c
			if k := strings.IndexByte(c, '-'); k >= 0 {
				w = c[:k]
			}
			if len(w) > 3 && strings.EqualFold(w[:3], "tmp") {
				dst = append(dst, "tmp#"...)
				if len(w) == len(c) {
					return dst, false
				}
				dst = append(dst, '-')
				c, prefix = c[len(w)+1:], false
				continue
			}
		}
		p := c[:n]
		switch {
		case isIDPart(p) || prefix && len(p) >= 8 && isAlnumDigits(p):
			dst = append(dst, '#')
			prefix = false
		default:
			prefix = idPrefix(p)
			dst = appendDigits(dst, p)
		}
		if n == len(c) {
			break
		}
		dst = append(dst, c[n])
		word = c[n] == '-'
		c = c[n+1:]
	}
	return dst, prefix
}

// appendDigits appends a part lower-cased, each run of its digits made one
// '#'.
func appendDigits(dst []byte, p string) []byte {
	digits := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if '0' <= c && c <= '9' {
			if !digits {
				dst = append(dst, '#')
			}
			digits = true
			continue
		}
		digits = false
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// idPrefixes are the prefixes that providers put before their ids
// (OpenAI's req_, call_, chatcmpl-, run_, ...; Anthropic's req_, msg_,
// toolu_, ...): a part of at least 8 letters and digits, one a digit, after
// one of them is an id, whatever its letters.
var idPrefixes = [...]string{"asst", "batch", "call", "chatcmpl", "file", "msg", "msgbatch", "req", "resp", "run",
	"srvtoolu", "step", "thread", "toolu"}

// idPrefix reports whether p is one of idPrefixes, in any case.
func idPrefix(p string) bool {
	if len(p) < 3 || len(p) > 8 {
		return false
	}
	switch p[0] | 0x20 {
	case 'a', 'b', 'c', 'f', 'm', 'r', 's', 't':
	default:
		return false
	}
	for _, x := range idPrefixes {
		if strings.EqualFold(p, x) {
			return true
		}
	}
	return false
}

// isIDPart reports whether a part of a token (letters and digits only) is
// an id:
//   - hex with a decimal digit: 0x..., at least 6 hex digits, or 4 or 5 of
//     them with at least 2 letters ("8f3a"; a code such as "E501" is no id);
//   - at least 12 letters and digits with 2 digits or more (the base62 ids
//     of OpenAI and Anthropic, S3 request ids such as "7BMJM8PWV1J1FNEH").
func isIDPart(p string) bool {
	if isHexID(p) {
		return true
	}
	letters, digits, hex := 0, 0, true
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letters++
			hex = hex && isHex(c)
		default:
			return false
		}
	}
	switch {
	case digits == 0 || letters == 0:
		return false
	case hex && len(p) >= 4 && letters >= 2:
		return true
	}
	return len(p) >= 12 && digits >= 2
}

// isHexGroups reports whether c is dash-separated groups of hex digits, at
// least 2 of them, with at least 12 hex digits and a decimal digit in all:
// a UUID (8-4-4-4-12), a W3C trace parent (00-<32>-<16>-01), an X-Ray id.
func isHexGroups(c string) bool {
	groups, n, digit := 1, 0, false
	for i := 0; i < len(c); i++ {
		switch x := c[i]; {
		case x == '-':
			if i == 0 || c[i-1] == '-' {
				return false
			}
			groups++
		case isHex(x):
			n++
			digit = digit || x <= '9'
		default:
			return false
		}
	}
	return groups >= 2 && n >= 12 && digit
}

// isBase64ID reports whether t (with any '=' padding) is a base64 id: at
// least 16 characters of letters, digits, '+', '-' and '_', with a '+' or
// padding, upper- and lower-case letters and at least 2 digits (an S3
// host id).
func isBase64ID(t string) bool {
	pad := false
	for len(t) > 0 && t[len(t)-1] == '=' {
		t, pad = t[:len(t)-1], true
	}
	if len(t) < 16 {
		return false
	}
	upper, lower, digits, plus := false, false, 0, false
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case c == '+':
			plus = true
		case c == '-' || c == '_':
		default:
			return false
		}
	}
	return (plus || pad) && upper && lower && digits >= 2
}

// isAlnumDigits reports whether p is letters and digits, one a digit at
// least.
func isAlnumDigits(p string) bool {
	digit := false
	for i := 0; i < len(p); i++ {
		if !isAlnum(p[i]) {
			return false
		}
		digit = digit || p[i] <= '9'
	}
	return digit
}

// hasTmpWord reports whether a dash-separated word of t starts with "tmp"
// (in any case) and is longer: a temporary name.
func hasTmpWord(t string) bool {
	for {
		w, rest, more := strings.Cut(t, "-")
		if len(w) > 3 && strings.EqualFold(w[:3], "tmp") {
			return true
		}
		if !more {
			return false
		}
		t = rest
	}
}

func isHexID(t string) bool {
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t = t[2:]
		for i := 0; i < len(t); i++ {
			if !isHex(t[i]) {
				return false
			}
		}
		return true
	}
	if len(t) < 6 {
		return false
	}
	digit := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !isHex(c) {
			return false
		}
		if '0' <= c && c <= '9' {
			digit = true
		}
	}
	return digit
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// opOf returns the operation named by the top-level "command" or "action"
// field of a call's arguments, if it is a short word (see [Call.Op]).
func opOf(args any) (op string) {
	defer func() {
		if recover() != nil {
			op = ""
		}
	}()
	var fields struct {
		Command json.RawMessage `json:"command"`
		Action  json.RawMessage `json:"action"`
	}
	switch a := args.(type) {
	case nil:
		return ""
	case json.RawMessage:
		if json.Unmarshal(a, &fields) != nil {
			return ""
		}
	case map[string]any:
		return word(a["command"], a["action"])
	case map[string]string:
		return word(a["command"], a["action"])
	default:
		raw, err := json.Marshal(a)
		if err != nil || json.Unmarshal(raw, &fields) != nil {
			return ""
		}
	}
	var cmd, act string
	_ = json.Unmarshal(fields.Command, &cmd)
	_ = json.Unmarshal(fields.Action, &act)
	return word(cmd, act)
}

// word returns the first of vs that is a string of 1 to 32 ASCII letters,
// digits, '_' or '-', or "".
func word(vs ...any) string {
	for _, v := range vs {
		s, ok := v.(string)
		if !ok || len(s) == 0 || len(s) > 32 {
			continue
		}
		okWord := true
		for i := 0; i < len(s); i++ {
			if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
				okWord = false
				break
			}
		}
		if okWord {
			return s
		}
	}
	return ""
}
