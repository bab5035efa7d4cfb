package core

import (
	"encoding/binary"
	"unicode"
	"unicode/utf8"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/escape"
)

// PreviewLen is the most characters a preview of arguments or text holds.
const PreviewLen = 80

// Facts are what the guard computed, once, of a step (or, in preflight, of
// calls that have not run yet). Detectors judge facts, never raw values.
//
// Facts and everything reachable from them are valid only during the call
// they are given to: the guard reuses them. Copy what you keep.
type Facts struct {
	// Phase is PhaseCheck for a finished step and PhasePreflight for calls
	// that have not run.
	Phase Phase
	// Index is the 0-based index of the step in the run. In preflight it
	// is the index the next step will have.
	Index int
	// Calls are the step's tool calls, in order, ignored ones included
	// (see Call.Ignored).
	Calls []Call
	// Refused are the calls of the step that the guard refused and that
	// did not run (Step.Refused), with their keys and no outcome. Empty in
	// preflight.
	Refused []Call
	// TextHash is the hash of the normalised text (lower-cased, runs of
	// white space made one space, trimmed).
	TextHash canonical.Sum
	// HasText reports whether the normalised text is not empty.
	HasText bool
	// FinishReason is the normalised finish reason (see
	// [NormalizeFinishReason]): "stop", "tool-calls", "length",
	// "content-filter", "error", or another reason trimmed, lower-cased and
	// with '_' made '-'. Empty when none was given.
	FinishReason string
	// RawFinishReason is the finish reason as given.
	RawFinishReason string
	// NewInput reports whether the step carried input that is not a tool
	// result (Step.Input).
	NewInput bool
	// InputHash is the hash of the step's input (Step.Input) as given; the
	// zero Sum when it has none.
	InputHash canonical.Sum
	// Usage is the step's usage, with unusable numbers set to zero and the
	// total filled in.
	Usage Usage
	// Steps is the number of steps recorded, this one included. In
	// preflight it is the number recorded so far.
	Steps int
	// Totals are the run's usage totals, this step included.
	Totals Totals

	step *Step
	text []byte // normalised text
}

// A Call is the facts of one tool call.
type Call struct {
	// Tool is the tool's name.
	Tool string
	// Args is the hash of the canonical arguments.
	Args canonical.Sum
	// Key is the call's signature: a hash of the tool's name and Args.
	// Two calls are "the same call" when their keys are equal.
	Key canonical.Sum
	// Outcome is a hash of the call and its result or error. Without
	// either, it equals Key.
	Outcome canonical.Sum
	// Result is the hash of the result alone (its canonical JSON, as in
	// Outcome, without the tool and arguments), for a call that has a
	// result and no error; zero otherwise. Calls with equal Result returned
	// the same, whatever their tools and arguments: the rule of package
	// detector/sameresult reads it. It costs no hash of its own: Outcome
	// is made from it.
	Result canonical.Sum
	// HasResult reports whether a result or an error was supplied.
	HasResult bool
	// Failed reports whether the call failed: it has an error, or its
	// result matches a FailWhen pattern of the guard's options or starts a
	// line with a harness's rejection (see Config.DisableRejections).
	Failed bool
	// Failure is the signature of a failed call, zero for one that did not
	// fail: a hash of the tool's name and the normalised text of its error
	// and its result, so that a call that fails the same way with other
	// arguments has the same Failure. The text is lower-cased; the strings
	// of the call's arguments that it echoes (an old_str that "did not
	// appear verbatim", a path that does not exist) are taken out, and so
	// are numbered listings (two lines or more in a row that start with
	// line numbers one apart, followed by '|', ':' or a tab: the file as a
	// rejected edit would have left it); numbers (line and column
	// positions), ids (UUIDs, hex, providers' request and
	// call ids, base62 and base64 runs) and temporary names become '#';
	// white space is collapsed; at most 2048 bytes of each part count.
	Failure canonical.Sum
	// Retry is, for a failed call, a hash of its Failure and of its
	// canonical arguments with the white space inside their strings taken
	// out; zero for a call that did not fail. Two failed calls with equal
	// Retry failed the same way with the same arguments, up to white space:
	// a retry, or an edit only re-indented.
	Retry canonical.Sum
	// Ignored reports whether the tool is one the guard ignores
	// ([Config.Ignore]): such a call is no pattern, no progress and no
	// use of a cap.
	Ignored bool

	raw     *ToolCall
	preview string
	hasPrev bool
	op      string
	hasOp   bool
	size    int // ResultSize + 1, 0 when not computed yet
}

// ResultSize returns the size in bytes of the call's result as text, as the
// model is answered with it and as FailWhen patterns read it: a string as it
// is, JSON text that holds a string decoded, other JSON text as it is, and
// any other value as its JSON. It is 0 for a call without a result, and for
// a failed call (one with an error). The result is read on the first call,
// and only then: a rule that needs sizes asks for them only when it must.
func (c *Call) ResultSize() int {
	if c.size == 0 {
		c.size = 1
		if c.raw != nil && c.raw.Err == nil && c.raw.Result != nil {
			c.size += len(resultText(c.raw.Result))
		}
	}
	return c.size - 1
}

// Op returns the operation a multi-purpose tool was asked for: the value of
// its top-level "command" or "action" argument when that is a short word
// (1 to 32 ASCII letters, digits, '_' or '-'), and "" otherwise. Editors
// (view, create, str_replace), browsers (click, scroll) and computer-use
// tools put their operation there; a shell tool's "command" is a command
// line, never a word, so it has none. The arguments are read on the first
// call, and only then.
func (c *Call) Op() string {
	if !c.hasOp {
		c.hasOp = true
		if c.raw != nil {
			c.op = opOf(c.raw.Args)
		}
	}
	return c.op
}

// Preview returns at most PreviewLen characters of the canonical arguments,
// for evidence and details (never for feedback).
func (c *Call) Preview() string {
	if !c.hasPrev {
		c.hasPrev = true
		if c.raw != nil {
			c.preview = previewOf(canonical.Append(nil, c.raw.Args))
		}
	}
	return c.preview
}

// ToolCall returns the call as it was given. Custom detectors may read it;
// they must not modify it.
func (c *Call) ToolCall() *ToolCall { return c.raw }

// Step returns the step as it was given, or nil in preflight. Custom detectors
// may read it; they must not modify it.
func (f *Facts) Step() *Step { return f.step }

// Text returns the normalised text.
func (f *Facts) Text() string { return string(f.text) }

// TextPreview returns at most PreviewLen characters of the normalised text.
func (f *Facts) TextPreview() string { return previewOf(f.text) }

// TextLen is the length in bytes of the normalised text (lower-cased, runs
// of white space made one space, trimmed): 0 without text, and in preflight.
func (f *Facts) TextLen() int { return len(f.text) }

// previewOf cuts b to PreviewLen characters, ending in "..." when cut, makes
// invalid UTF-8 valid and writes characters that a terminal could act on
// (control and format characters) as Go escapes, each escape counting for
// its characters.
func previewOf(b []byte) string {
	out := make([]byte, 0, min(len(b), 4*PreviewLen))
	var cut []byte // out when it last held at most PreviewLen-3 characters
	var buf [utf8.UTFMax + 10]byte
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		i += size
		piece := escape.AppendRune(buf[:0], r, false)
		k := utf8.RuneCount(piece)
		if n+k > PreviewLen {
			return string(append(cut, "..."...))
		}
		out = append(out, piece...)
		n += k
		if n <= PreviewLen-3 {
			cut = out
		}
	}
	return string(out)
}

// normaliseText appends the normalised form of s to dst: lower-cased, runs of
// white space made one space, trimmed.
func normaliseText(dst []byte, s string) []byte {
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			// ASCII, most text: no decoding, and unicode.IsSpace's ASCII
			// spaces tested directly.
			i++
			switch c {
			case ' ', '\t', '\n', '\v', '\f', '\r':
				space = true
				continue
			}
			if space && len(dst) > 0 {
				dst = append(dst, ' ')
			}
			space = false
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:]) // utf8.RuneError, 1 for a bad byte, as range does
		i += n
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && len(dst) > 0 {
			dst = append(dst, ' ')
		}
		space = false
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// The finish reasons the guard compares, whatever the provider's spelling
// (see [NormalizeFinishReason]).
const (
	FinishStop          = "stop"           // the model finished its turn normally
	FinishToolCalls     = "tool-calls"     // the model asks for tool calls
	FinishLength        = "length"         // the output was cut at a token limit
	FinishContentFilter = "content-filter" // the output was withheld or refused
	FinishError         = "error"          // the provider failed to finish the turn
	FinishOther         = "other"          // the provider's own "other"
)

// finishAliases maps provider spellings, lower-cased with '_' made '-', to
// the guard's names. OpenAI (Chat Completions, Responses), Anthropic, Gemini,
// Amazon Bedrock (Converse), Mistral, Cohere and Hugging Face TGI; reasons
// that already have the guard's name are absent.
var finishAliases = map[string]string{
	// A normal end of the turn.
	"end-turn":      FinishStop, // Anthropic, Bedrock
	"stop-sequence": FinishStop, // Anthropic, Bedrock, Cohere, TGI
	"complete":      FinishStop, // Cohere
	"eos-token":     FinishStop, // TGI
	"eos":           FinishStop, // llama.cpp and others
	// The model asks for tools.
	"tool-use":       FinishToolCalls, // Anthropic, Bedrock
	"tool-call":      FinishToolCalls, // Cohere
	"function-call":  FinishToolCalls, // OpenAI, deprecated
	"function-calls": FinishToolCalls,
	// Cut off.
	"max-tokens":                    FinishLength, // Anthropic, Bedrock, Gemini, Cohere
	"max-output-tokens":             FinishLength, // OpenAI Responses (incomplete)
	"model-length":                  FinishLength, // Mistral
	"model-context-window-exceeded": FinishLength, // Anthropic
	"error-limit":                   FinishLength, // Cohere
	"max-length":                    FinishLength,
	// Withheld.
	"content-filtered":         FinishContentFilter, // Bedrock
	"guardrail-intervened":     FinishContentFilter, // Bedrock
	"safety":                   FinishContentFilter, // Gemini
	"recitation":               FinishContentFilter, // Gemini
	"blocklist":                FinishContentFilter, // Gemini
	"prohibited-content":       FinishContentFilter, // Gemini
	"spii":                     FinishContentFilter, // Gemini
	"image-safety":             FinishContentFilter, // Gemini
	"image-prohibited-content": FinishContentFilter, // Gemini
	"image-recitation":         FinishContentFilter, // Gemini
	"refusal":                  FinishContentFilter, // Anthropic
	"error-toxic":              FinishContentFilter, // Cohere
	// The provider failed.
	"malformed-function-call": FinishError, // Gemini
	"unexpected-tool-call":    FinishError, // Gemini
	"too-many-tool-calls":     FinishError, // Gemini
	// No reason: the turn is not over, or none was given.
	"pause-turn":                "", // Anthropic: the server paused a long turn
	"finish-reason-unspecified": "", // Gemini
}

// NormalizeFinishReason returns a finish reason as the guard compares it. The
// reason is trimmed, lower-cased and its '_' made '-'; then the spellings of
// the major providers become the guard's names: [FinishStop] ("end_turn",
// "stop_sequence", Gemini's "STOP", Cohere's "COMPLETE"), [FinishToolCalls]
// ("tool_calls", "tool_use", "function_call"), [FinishLength] ("max_tokens",
// "MAX_TOKENS", "model_length", "model_context_window_exceeded"),
// [FinishContentFilter] ("content_filter", "SAFETY", "RECITATION",
// "PROHIBITED_CONTENT", "refusal", "guardrail_intervened", ...) and
// [FinishError] ("MALFORMED_FUNCTION_CALL", ...). Anthropic's "pause_turn"
// and Gemini's "FINISH_REASON_UNSPECIFIED" become "" (no reason). Any other
// reason is kept, normalised ("Tool_Calls " becomes "tool-calls", "Foo_Bar"
// "foo-bar").
func NormalizeFinishReason(s string) string {
	start, end := 0, len(s)
	for start < end && isASCIISpace(s[start]) {
		start++
	}
	for end > start && isASCIISpace(s[end-1]) {
		end--
	}
	s = s[start:end]
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '_' || 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		switch s {
		case FinishToolCalls, FinishStop, FinishLength, FinishContentFilter, FinishError, FinishOther, "":
			return s // the common names, without a map lookup
		}
		if alias, ok := finishAliases[s]; ok {
			return alias
		}
		return s
	}
	// Short ASCII reasons, the common case, are looked up without
	// allocating.
	var buf [40]byte
	if len(s) <= len(buf) {
		ascii := true
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c >= utf8.RuneSelf:
				ascii = false
			case c == '_':
				c = '-'
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		if ascii {
			if alias, ok := finishAliases[string(buf[:len(s)])]; ok {
				return alias
			}
			switch string(buf[:len(s)]) {
			case FinishStop, FinishToolCalls, FinishLength, FinishContentFilter, FinishError, FinishOther:
				return canonicalFinish(string(buf[:len(s)]))
			}
			return string(buf[:len(s)])
		}
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r == '_':
			r = '-'
		case r == utf8.RuneError:
		default:
			r = unicode.ToLower(r)
		}
		b = utf8.AppendRune(b, r)
	}
	if alias, ok := finishAliases[string(b)]; ok {
		return alias
	}
	return string(b)
}

// canonicalFinish returns the constant equal to s, so that the common names
// never allocate.
func canonicalFinish(s string) string {
	switch s {
	case FinishStop:
		return FinishStop
	case FinishToolCalls:
		return FinishToolCalls
	case FinishLength:
		return FinishLength
	case FinishContentFilter:
		return FinishContentFilter
	case FinishError:
		return FinishError
	}
	return FinishOther
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// Kinds of the combined hashes, so that a key never equals an outcome.
const (
	kindKey    = 'k'
	kindResult = 'r'
	kindError  = 'e'
	// kindFailure is read by failureSum, kindRetry by retrySum.
	kindFailure = 'f'
	kindRetry   = 'w'
)

// combine hashes a kind, a tool name and sums into one sum, using scratch.
func combine(scratch []byte, kind byte, name string, sums ...canonical.Sum) ([]byte, canonical.Sum) {
	scratch = append(scratch[:0], kind)
	scratch = binary.AppendUvarint(scratch, uint64(len(name)))
	scratch = append(scratch, name...)
	for _, s := range sums {
		scratch = append(scratch, s[:]...)
	}
	return scratch, canonical.HashBytes(scratch)
}

// A callSum is the part of a call's facts that depends on its tool and
// arguments alone: the hash of the arguments (after the key options) and the
// call's key. It is the same in preflight and in check, so the callers that
// know two judgements are of one call (a Turn, StartCall and Finish) compute
// it once and hand it on. The zero value means "not computed yet".
type callSum struct {
	args, key canonical.Sum
	ok        bool
}

// sumAt returns sums[i], or the zero callSum when sums is shorter.
func sumAt(sums []callSum, i int) callSum {
	if i < len(sums) {
		return sums[i]
	}
	return callSum{}
}

// callFacts computes the facts of one call, using scratch; known, when
// computed, is the call's sum from an earlier judgement of the same call. With
// withOutcome false (in preflight) the result and error are not read. It
// reads only what never changes after New (the ignored tools, the key
// options), so it needs no lock.
func (g *Guard) callFacts(scratch []byte, tc *ToolCall, withOutcome bool, known callSum) ([]byte, Call) {
	c := Call{Tool: tc.Name, raw: tc, Ignored: g.ignore[tc.Name]}
	if known.ok {
		c.Args, c.Key = known.args, known.key
	} else {
		c.Args = g.hashArgs(tc.Name, tc.Args)
		scratch, c.Key = combine(scratch, kindKey, tc.Name, c.Args)
	}
	c.Outcome = c.Key
	if !withOutcome {
		return scratch, c
	}
	switch {
	case tc.Err != nil:
		c.Failed, c.HasResult = true, true
		scratch, c.Outcome = combine(scratch, kindError, tc.Name, c.Args, canonical.HashString(errorText(tc.Err)))
	case tc.Result != nil:
		c.HasResult = true
		c.Result = canonical.Hash(tc.Result)
		scratch, c.Outcome = combine(scratch, kindResult, tc.Name, c.Args, c.Result)
		c.Failed = !g.opts.DisableRejections && rejects(tc.Result) || g.fails != nil && g.fails.fails(tc.Name, tc.Result)
	}
	if c.Failed {
		scratch, c.Failure = failureSum(scratch, tc)
		scratch, c.Retry = g.retrySum(scratch, tc, c.Failure)
	}
	return scratch, c
}

// sumOf returns the sum of a call of tool whose arguments, as they are to be
// hashed, have the hash args.
func sumOf(tool string, args canonical.Sum) callSum {
	var buf [64]byte
	_, key := combine(buf[:0], kindKey, tool, args)
	return callSum{args: args, key: key, ok: true}
}

// sum returns the call's sum, as callFacts computed it.
func (c *Call) sum() callSum { return callSum{args: c.Args, key: c.Key, ok: true} }
