// Package text stops a run whose model says the same thing again and again
// while nothing new comes back, even when other steps come between: the same
// closing message in a step of its own after every action, "YOU ARE BEING
// TRANSFERRED TO A HUMAN AGENT" in a step of its own after each of six
// transfers, the same reply to a user whose messages change.
//
// The no-progress rule (package noprogress) stops only on steps in a row that
// bring no new tool outcome; this rule looks at the text within a window of
// steps. It keeps the normalised text (rule.Facts.TextHash: lower-cased,
// white space collapsed, trimmed) of the last Options.Window steps, and stops
// when a step's text is the same as that of Options.Threshold of them, itself
// included.
//
// Only steps that bring nothing new count. A step whose successful calls
// bring a tool outcome (rule.Call.Outcome) that no other step in the window
// had is progress: the same sentence there is narration ("Run the tests.",
// "Let me search for more information." before each new search), not a loop.
// An outcome holds the call's arguments: the same reply in the step of each
// transfer whose summary argument changes is progress too, and is not
// stopped, as a sweep of searches with new keywords that each find nothing,
// after the same preamble, is not (judging by the result alone would stop
// both; the labelled runs do not tell them apart).
// A failed call brings nothing new, unless it failed another way than the
// calls the window remembers did while the window holds a failure: the
// error moved (a script run again after each install that now misses
// another module, "Now let me run the reproduction script again:" before
// each run). Failures are told apart by rule.Call.Failure, the error with its
// numbers and ids taken out. An ignored call is no call. Such a
// step holds a place in the window and never counts; so does a step of text
// alone right after a step whose successful call returned a result (rule.Call.Result)
// that no other step in the window had: it comments on what came back
// (KnowAgent's "ActionPath: Start->Goto(stoveburner 3)" on a step of its own
// after each command, a reply to the user after a lookup), while the same
// message after each call that returns what it returned before ("Transfer
// successful", whatever the summary argument) still counts. So does a step
// without text, a step whose text is only a speaker label ("[flights_refunder]",
// "<coder>": a name between brackets, no words of the model's, which some
// integrations put on each step of a team), a step in which the guard refused a call (that pattern is
// package refusal's: the model gets to act on the refusal's feedback first),
// and a step whose input repeats the previous step's input word for word
// (the same answer to a user who says the same thing again is no loop of
// the agent's; in detector.Defaults the no-progress rule, for which a new
// input is no progress, still stops a run of identical steps that call no
// tool, whatever the input). A text that goes on stops again.
//
// To know what a step brought, the rule remembers, for each step in the
// window, the outcomes of up to MaxStepOutcomes successful calls and their
// results, and up to MaxStepOutcomes failures of its failed calls: a result
// or failure it did not remember counts as new when it comes again.
//
// In labelled real runs, a healthy agent writes the same text on at most two
// steps within ten that bring nothing new, while looping agents repeat
// theirs three times or more; healthy coding agents narrate the same short
// sentence three times in ten steps when each of those steps brings a new
// result.
//
// A long text stops sooner: Options.Long steps (2 by default) with the same
// text of at least Options.LongBytes bytes (200, normalised) stop the run,
// when they are not only two steps in a row. Written again word for word
// with another step between, three sentences or more are a model that came
// back to where it was: the same 1,882-byte analysis after each refused
// cell, the same 254-byte apology after the same failing booking. Two steps
// in a row with the same long text are often an echo (one agent of a team
// quoting another, a harness asking for the same phase twice), so they
// count as any text does.
//
// The rule needs finished steps, so it judges nothing in preflight. With
// Options.Warn, a step whose text brings a count to one short of the
// threshold that applies to it (from 2) carries a REPEATED_TEXT_WARNING.
package text

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/internal/winopt"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "text"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "REPEATED_TEXT"
	WarningCode = "REPEATED_TEXT_WARNING"
)

// ReasonRepeatedText is the reason of the rule's stops.
const ReasonRepeatedText rule.Reason = "repeated-text"

// Priority is the rule's priority: after the no-progress rule, which
// reports steps in a row with the same text and no new outcome first.
const Priority = rule.PriorityNoProgress + 25

// Defaults of the options, and the largest window.
//
// DefaultLong and DefaultLongBytes come from the 242 labelled runs of
// testdata/traces: no healthy run writes a text of more than 108 bytes
// again, with a step between, on steps that bring nothing new (a WebShop
// thought before each invalid click, 108 bytes; every other is 37 bytes or
// less), while looping runs repeat texts of 254 to 1,882 bytes so, and short
// ones end before a third time. With 100 bytes, that healthy run stops.
const (
	DefaultThreshold = 3
	DefaultWindow    = 10
	MaxWindow        = 256
	DefaultLong      = 2
	DefaultLongBytes = 200
)

// MaxStepOutcomes is how many outcomes of successful calls the rule
// remembers per step: a later call with one of them brings nothing new. The
// outcomes that the window had not seen are remembered first, then those it
// had; an outcome not remembered (a fifth new outcome in one step) counts
// as new when it comes again.
const MaxStepOutcomes = 4

// maxLabel is the longest name (in bytes) of a speaker label.
const maxLabel = 32

// Options tune the rule. The zero value is the default: the third same
// text within the last 10 steps stops the run.
type Options struct {
	// Threshold is how many steps with the same text within the window
	// stop the run: 0 means DefaultThreshold; any other value must be from
	// 2 to Window.
	Threshold int `json:"threshold"`
	// Window is how many of the newest steps are looked at: 0 means
	// DefaultWindow, any other value must be from 2 to MaxWindow.
	Window int `json:"window"`
	// Long is how many of those steps stop the run when the text has at
	// least LongBytes bytes (normalised) and the steps are not only two in
	// a row: 0 means DefaultLong (or Threshold, when that is smaller); any
	// other value must be from 2 to Threshold. At Threshold it adds
	// nothing: that is the rule before it told long texts apart, and
	// Options then reads 0 here and in LongBytes, so that those options
	// fingerprint (and their snapshots restore) as before.
	Long int `json:"long,omitempty"`
	// LongBytes is the length from which a text is long: 0 means
	// DefaultLongBytes; any other value must be at least 1.
	LongBytes int `json:"longBytes,omitempty"`
	// Warn adds a REPEATED_TEXT_WARNING to a step whose text brings a count
	// to one short of the threshold that applies to it (when that is at
	// least 2).
	Warn bool `json:"warn,omitempty"`
}

// long reports whether long texts stop sooner than others.
func (o *Options) long() bool { return o.Long < o.Threshold }

// Evidence is the evidence of a stop.
type Evidence struct {
	// Count is the number of steps in the window with the text, this one
	// included.
	Count int `json:"count"`
	// Threshold is the threshold that stopped the run: Options.Threshold,
	// or Options.Long for a long text.
	Threshold int `json:"threshold"`
	// Window is Options.Window.
	Window int `json:"window"`
	// StepIndexes are the 0-based indexes of those steps, oldest first.
	StepIndexes []int `json:"stepIndexes"`
	// TextPreview is a short preview of the normalised text.
	TextPreview string `json:"textPreview"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent writes the same text on steps that bring nothing new"
}

// entry is one step in the window: the hash of its text (zero when it does
// not count), its index, the outcomes and results of its successful calls
// and the failures of its failed ones.
type entry struct {
	text canonical.Sum
	long bool // the text is long (Options.LongBytes or more, with Long below Threshold)
	step int
	nOut int
	outs [MaxStepOutcomes]canonical.Sum
	res  [MaxStepOutcomes]canonical.Sum // the results of those calls (rule.Call.Result), zero when unknown
	// The failures (rule.Call.Failure) of the step's failed calls, up to
	// MaxStepOutcomes distinct ones.
	nFail int
	fails [MaxStepOutcomes]canonical.Sum
}

// returned reports whether a call of the step whose outcome it remembers
// returned result r (not zero).
func (e *entry) returned(r canonical.Sum) bool {
	return slices.Contains(e.res[:e.nOut], r)
}

// failed reports whether a call of the step failed with failure x.
func (e *entry) failed(x canonical.Sum) bool {
	return slices.Contains(e.fails[:e.nFail], x)
}

// has reports whether the step brought outcome o.
func (e *entry) has(o canonical.Sum) bool {
	for i := range e.nOut {
		if e.outs[i] == o {
			return true
		}
	}
	return false
}

// A Rule finds a text said too often among the newest steps: validated
// options, never changed after New, so that one Rule serves any number of
// guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the window of its newest steps.
type state struct {
	r         *Rule
	ring      ring.Ring[entry] // the window, oldest first
	lastInput canonical.Sum    // the previous step's input hash

	verdict rule.Verdict
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
	_ rule.Successor  = (*Rule)(nil)
	_ rule.Bounded    = (*state)(nil)
)

// New returns a rule with these options, or an error (a
// *rule.OptionError) for every invalid option.
func New(o Options) (*Rule, error) {
	b := winopt.Bounds{Rule: Name, DefaultThreshold: DefaultThreshold, DefaultWindow: DefaultWindow, MaxWindow: MaxWindow}
	errs := b.Check(&o.Threshold, &o.Window)
	bad := func(field, format string, args ...any) {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: field, Err: fmt.Errorf(format, args...)})
	}
	if o.LongBytes < 0 {
		bad("LongBytes", "must be 0 (the default, %d) or at least 1, not %d", DefaultLongBytes, o.LongBytes)
	}
	switch {
	case o.Long != 0 && o.Long < 2:
		bad("Long", "must be 0 (the default, %d) or at least 2, not %d", DefaultLong, o.Long)
	case len(errs) == 0 && o.Long > o.Threshold:
		bad("Long", "%d exceeds the threshold of %d", o.Long, o.Threshold)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.Long == 0 {
		o.Long = min(DefaultLong, o.Threshold)
	}
	if o.LongBytes == 0 {
		o.LongBytes = DefaultLongBytes
	}
	return &Rule{opts: o}, nil
}

// NewState returns the state of a fresh run: an empty window.
func (d *Rule) NewState() rule.State {
	return &state{r: d, ring: ring.New[entry](d.opts.Window)}
}

// Name returns "text".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any {
	o := d.opts
	if !o.long() {
		o.Long, o.LongBytes = 0, 0
	}
	return o
}

// PriorOptions returns the options of the rule before it told long texts
// apart (Long and LongBytes at 0), or nil when they are its Options: a run
// saved by an earlier release restores under the new default
// (rule.Successor); its state is the same.
func (d *Rule) PriorOptions() any {
	if !d.opts.long() {
		return nil
	}
	o := d.opts
	o.Long, o.LongBytes = 0, 0
	return o
}

// seen reports whether a step in the window, other than the newest (the
// step being observed, which took the place of the oldest when the window
// was full), brought outcome o.
func (s *state) seen(o canonical.Sum) bool {
	for i := range s.ring.Len() - 1 {
		if e := s.ring.Ptr(i); e.has(o) {
			return true
		}
	}
	return false
}

// seenFailure reports whether a step in the window, other than the newest
// (the step being observed), had a call that failed with failure x; with
// other, whether one had a call that failed another way.
func (s *state) seenFailure(x canonical.Sum, other bool) bool {
	for i := range s.ring.Len() - 1 {
		e := s.ring.Ptr(i)
		for _, y := range e.fails[:e.nFail] {
			if (y == x) != other {
				return true
			}
		}
	}
	return false
}

// isLabel reports whether s, trimmed, is only a speaker label: "[name]" or
// "<name>", where the name is 1 to maxLabel ASCII letters, digits, '_', '-'
// or '.'. A text between brackets with a space or other punctuation is a
// sentence ("[You are being transferred to a human agent.]"), and so is a
// word and a colon ("Thought:", "Answer:").
func isLabel(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) < 3 || len(s) > maxLabel+2 {
		return false
	}
	if first, last := s[0], s[len(s)-1]; !(first == '[' && last == ']' || first == '<' && last == '>') {
		return false
	}
	for _, c := range []byte(s[1 : len(s)-1]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func (s *state) count(text canonical.Sum) int {
	n := 0
	w := s.ring.Unordered() // order does not matter for a count
	for i := range w {
		if w[i].text == text {
			n++
		}
	}
	return n
}

// Observe pushes the step's text onto the window and judges it.
func (s *state) Observe(f *rule.Facts) {
	s.verdict = rule.Verdict{}
	sameInput := f.NewInput && f.InputHash == s.lastInput
	s.lastInput = f.InputHash
	// Whether a step of text alone comments on a new result is read
	// against the window before the step takes its place in it (a step
	// with a call is none); then the step is filled in place (an entry is
	// large: no copies).
	comment := (len(f.Calls) == 0 || f.Calls[0].Ignored) && s.comment(f)
	e := s.ring.Next()
	// The place may hold the step it drops: every field that is read is
	// set (the sums past nOut and nFail are never read).
	e.text, e.long, e.step, e.nOut, e.nFail = canonical.Sum{}, false, f.Index, 0, 0
	// The outcomes that the window has not seen are kept first, then the
	// seen ones while there is room: a step of more than MaxStepOutcomes
	// calls that brings one new outcome keeps it, so that the outcome
	// is not new again when it comes back.
	progress, seenAny, seenFail := false, false, false
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		if c.Failed {
			switch {
			case e.failed(c.Failure):
			case s.seenFailure(c.Failure, false):
				seenFail = true
			default:
				// A failure the window has not seen is news when the
				// window holds another: the error moved.
				progress = progress || e.nFail > 0 || s.seenFailure(c.Failure, true)
				if e.nFail < MaxStepOutcomes {
					e.fails[e.nFail] = c.Failure
					e.nFail++
				}
			}
			continue
		}
		if s.seen(c.Outcome) {
			seenAny = true
			continue
		}
		progress = true
		if e.nOut < MaxStepOutcomes && !e.has(c.Outcome) {
			e.outs[e.nOut], e.res[e.nOut] = c.Outcome, c.Result
			e.nOut++
		}
	}
	// With room left, every unseen outcome is kept already: a call whose
	// outcome the step does not hold yet is a seen one (no second seen).
	// Seen failures are kept so too, so that a failure is not news again
	// once the step that first had it leaves the window.
	for i := 0; seenAny && i < len(f.Calls) && e.nOut < MaxStepOutcomes; i++ {
		if c := &f.Calls[i]; !c.Ignored && !c.Failed && !e.has(c.Outcome) {
			e.outs[e.nOut], e.res[e.nOut] = c.Outcome, c.Result
			e.nOut++
		}
	}
	for i := 0; seenFail && i < len(f.Calls) && e.nFail < MaxStepOutcomes; i++ {
		if c := &f.Calls[i]; !c.Ignored && c.Failed && !e.failed(c.Failure) {
			e.fails[e.nFail] = c.Failure
			e.nFail++
		}
	}
	if !f.HasText || sameInput || progress || len(f.Refused) > 0 || f.Step() != nil && isLabel(f.Step().Text) || comment {
		return
	}
	e.text = f.TextHash
	e.long = s.r.opts.long() && f.TextLen() >= s.r.opts.LongBytes
	count := s.count(f.TextHash)
	thr := s.r.opts.Threshold
	if e.long && (count != 2 || s.apart(f.TextHash, f.Index)) {
		thr = s.r.opts.Long
	}
	switch {
	case count >= thr:
		ev := Evidence{Count: count, Threshold: thr, Window: s.r.opts.Window, TextPreview: f.TextPreview()}
		for i := range s.ring.Len() {
			if e := s.ring.Ptr(i); e.text == f.TextHash {
				ev.StepIndexes = append(ev.StepIndexes, e.step)
			}
		}
		v := rule.Verdict{
			Stop:   true,
			Reason: ReasonRepeatedText,
			Code:   Code,
			Detail: fmt.Sprintf("the same text %q in %d of the last %d steps (threshold %d%s)",
				ev.TextPreview, ev.Count, ev.Window, ev.Threshold, s.longNote(thr)),
			Evidence: ev,
		}
		v.Feedback = ev.feedback()
		s.verdict = v
	case s.r.opts.Warn && count == thr-1 && count >= 2:
		w := rule.Warning{
			Code: WarningCode, Metric: "sameTextSteps", Value: float64(count), Limit: float64(thr),
			Ratio: float64(count) / float64(thr),
			Detail: fmt.Sprintf("the same text %q in %d of the last %d steps; once more stops the run (threshold %d)",
				f.TextPreview(), count, s.r.opts.Window, thr),
		}
		w.Feedback = warningFeedback(w)
		s.verdict.Warnings = []rule.Warning{w}
	}
}

// comment reports whether the step, which is of text alone (no call, or
// only ignored ones), comes right after a step that brought a new result:
// the newest step in the window had a successful call whose result no
// other step of the window had remembered.
func (s *state) comment(f *rule.Facts) bool {
	for i := range f.Calls {
		if !f.Calls[i].Ignored {
			return false
		}
	}
	n := s.ring.Len()
	if n == 0 {
		return false
	}
	prev := s.ring.Ptr(n - 1)
	for j := range prev.nOut {
		r := prev.res[j]
		if r == (canonical.Sum{}) {
			continue
		}
		seen := false
		for i := 0; i < n-1 && !seen; i++ {
			seen = s.ring.Ptr(i).returned(r)
		}
		if !seen {
			return true
		}
	}
	return false
}

// longNote is what a detail adds when the threshold thr is that of long
// texts.
func (s *state) longNote(thr int) string {
	if o := &s.r.opts; thr != o.Threshold {
		return fmt.Sprintf(" for a text of %d bytes or more", o.LongBytes)
	}
	return ""
}

// apart reports whether a step of the window before step-1 has the text:
// step and one other with its text are then not two steps in a row.
func (s *state) apart(text canonical.Sum, step int) bool {
	w := s.ring.Unordered()
	for i := range w {
		if w[i].text == text && w[i].step < step-1 {
			return true
		}
	}
	return false
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (s *state) Verdict() rule.Verdict { return s.verdict }

// Preflight judges nothing: the rule needs finished steps.
func (s *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// reset forgets the run, for a Restore of null.
func (s *state) reset() {
	s.ring.Clear()
	s.lastInput = canonical.Sum{}
	s.verdict = rule.Verdict{}
}

// saved is the JSON form of the rule's state: the steps in the window,
// oldest first.
type saved struct {
	// Texts are the steps' text hashes; null for a step that does not
	// count.
	Texts []*canonical.Sum `json:"texts"`
	// Steps are the steps' indexes, in the same order.
	Steps []int `json:"steps"`
	// Outcomes are, in the same order, the remembered outcomes of each
	// step's successful calls: at most MaxStepOutcomes distinct sums,
	// concatenated and encoded in base64 without padding ("" for none).
	// Absent when no step has any, as in the states of earlier versions.
	Outcomes []string `json:"outcomes,omitempty"`
	// Results are, in the same order, the results of those calls
	// (rule.Call.Result), one sum per outcome and a zero sum for a call
	// without one, encoded as Outcomes are. Absent when no remembered call
	// has a result, as in the states of earlier versions (which then
	// restore as calls without results: a step after them is no comment).
	Results []string `json:"results,omitempty"`
	// Failures are, in the same order, the failures (rule.Call.Failure)
	// of each step's failed calls: at most MaxStepOutcomes distinct sums,
	// encoded as Outcomes are. Absent when no step has any, as in the
	// states of earlier versions (which then restore as steps without
	// failures: a failure after them is news only beside a later one).
	Failures []string `json:"failures,omitempty"`
	// LastInput is the hash of the last step's input, if it had one.
	LastInput *canonical.Sum `json:"lastInput,omitempty"`
	// Long are the positions in Texts, ascending, of the steps whose text
	// is long (Options.LongBytes or more). Absent when none is, as in the
	// states of earlier versions.
	Long []int `json:"long,omitempty"`
}

// Snapshot returns the window as JSON, or null when it is empty. It holds
// hashes, never text.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	n := s.ring.Len()
	if n == 0 {
		return []byte("null"), nil
	}
	out := saved{Texts: make([]*canonical.Sum, n), Steps: make([]int, n)}
	if s.lastInput != (canonical.Sum{}) {
		in := s.lastInput
		out.LastInput = &in
	}
	var buf [MaxStepOutcomes * len(canonical.Sum{})]byte // each step's sums, encoded one list at a time
	for i, e := range s.ring.All() {
		if e.text != (canonical.Sum{}) {
			sum := e.text
			out.Texts[i] = &sum
		}
		out.Steps[i] = e.step
		if e.long {
			out.Long = append(out.Long, i)
		}
		if e.nOut > 0 {
			if out.Outcomes == nil {
				out.Outcomes = make([]string, n)
			}
			out.Outcomes[i] = encodeSums(&buf, e.outs[:e.nOut])
			if e.hasResults() {
				if out.Results == nil {
					out.Results = make([]string, n)
				}
				out.Results[i] = encodeSums(&buf, e.res[:e.nOut])
			}
		}
		if e.nFail > 0 {
			if out.Failures == nil {
				out.Failures = make([]string, n)
			}
			out.Failures[i] = encodeSums(&buf, e.fails[:e.nFail])
		}
	}
	return json.Marshal(out)
}

// encodeSums returns sums (at most MaxStepOutcomes) concatenated in buf and
// encoded in base64 without padding.
func encodeSums(buf *[MaxStepOutcomes * len(canonical.Sum{})]byte, sums []canonical.Sum) string {
	b := buf[:0]
	for _, x := range sums {
		b = append(b, x[:]...)
	}
	return base64.RawStdEncoding.EncodeToString(b)
}

// Restore replaces the state by one that Snapshot returned: at most Window
// steps, as many indexes as texts, not negative and never decreasing (they
// repeat only once the step count has saturated).
func (s *state) Restore(data []byte) error {
	var in *saved
	if err := rule.UnmarshalState(data, &in); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if in == nil {
		s.reset()
		return nil
	}
	switch {
	case len(in.Texts) == 0:
		return fmt.Errorf("%s: a state without steps (a fresh state is null)", Name)
	case len(in.Texts) > s.r.opts.Window:
		return fmt.Errorf("%s: %d steps in a window of %d", Name, len(in.Texts), s.r.opts.Window)
	case len(in.Steps) != len(in.Texts):
		return fmt.Errorf("%s: %d step indexes for %d texts", Name, len(in.Steps), len(in.Texts))
	case in.Outcomes != nil && len(in.Outcomes) != len(in.Texts):
		return fmt.Errorf("%s: %d outcome lists for %d texts", Name, len(in.Outcomes), len(in.Texts))
	case in.Results != nil && len(in.Results) != len(in.Texts):
		return fmt.Errorf("%s: %d result lists for %d texts", Name, len(in.Results), len(in.Texts))
	case in.Failures != nil && len(in.Failures) != len(in.Texts):
		return fmt.Errorf("%s: %d failure lists for %d texts", Name, len(in.Failures), len(in.Texts))
	}
	entries := make([]entry, len(in.Texts))
	for i, step := range in.Steps {
		if step < 0 || i > 0 && step < in.Steps[i-1] {
			return fmt.Errorf("%s: step indexes must not be negative nor decrease (%v)", Name, in.Steps)
		}
		if t := in.Texts[i]; t != nil && *t == (canonical.Sum{}) {
			return fmt.Errorf("%s: a zero text hash", Name)
		}
		entries[i] = entry{step: step}
		if t := in.Texts[i]; t != nil {
			entries[i].text = *t
		}
		if in.Outcomes != nil {
			n, err := decodeSums(in.Outcomes[i], &entries[i].outs)
			if err != nil {
				return fmt.Errorf("%s: step %d: outcomes: %w", Name, step, err)
			}
			entries[i].nOut = n
		}
		if in.Failures != nil {
			n, err := decodeSums(in.Failures[i], &entries[i].fails)
			if err != nil {
				return fmt.Errorf("%s: step %d: failures: %w", Name, step, err)
			}
			entries[i].nFail = n
		}
		if in.Results != nil {
			if err := entries[i].decodeResults(in.Results[i]); err != nil {
				return fmt.Errorf("%s: step %d: %w", Name, step, err)
			}
		}
	}
	if in.Outcomes != nil && !slices.ContainsFunc(entries, func(e entry) bool { return e.nOut > 0 }) {
		return fmt.Errorf("%s: outcome lists that are all empty (they are absent then)", Name)
	}
	if in.Results != nil && !slices.ContainsFunc(entries, func(e entry) bool { return e.hasResults() }) {
		return fmt.Errorf("%s: result lists without a result (they are absent then)", Name)
	}
	if in.Failures != nil && !slices.ContainsFunc(entries, func(e entry) bool { return e.nFail > 0 }) {
		return fmt.Errorf("%s: failure lists that are all empty (they are absent then)", Name)
	}
	if in.LastInput != nil && *in.LastInput == (canonical.Sum{}) {
		return fmt.Errorf("%s: a zero input hash", Name)
	}
	if in.Long != nil && !s.r.opts.long() {
		return fmt.Errorf("%s: long texts, but the options tell none apart", Name)
	}
	for j, i := range in.Long {
		switch {
		case i < 0 || i >= len(entries) || j > 0 && i <= in.Long[j-1]:
			return fmt.Errorf("%s: long text positions must be ascending positions of the window (%v)", Name, in.Long)
		case entries[i].text == (canonical.Sum{}):
			return fmt.Errorf("%s: a long text at position %d, which counts no text", Name, i)
		}
		entries[i].long = true
	}
	if in.Long != nil && len(in.Long) == 0 {
		return fmt.Errorf("%s: an empty list of long texts (it is absent then)", Name)
	}
	s.reset()
	if in.LastInput != nil {
		s.lastInput = *in.LastInput
	}
	for _, e := range entries {
		s.ring.Push(e)
	}
	return nil
}

// decodeSums sets the first sums of dst from their form in a state: at
// most MaxStepOutcomes distinct sums, none zero. It returns how many.
func decodeSums(s string, dst *[MaxStepOutcomes]canonical.Sum) (int, error) {
	b, err := base64.RawStdEncoding.Strict().DecodeString(s)
	const size = len(canonical.Sum{})
	switch {
	case err != nil:
		return 0, err
	case len(b)%size != 0:
		return 0, fmt.Errorf("%d bytes, not whole sums", len(b))
	case len(b) > MaxStepOutcomes*size:
		return 0, fmt.Errorf("%d sums, at most %d are kept", len(b)/size, MaxStepOutcomes)
	}
	n := 0
	for ; len(b) > 0; b = b[size:] {
		x := canonical.Sum(b[:size])
		if x == (canonical.Sum{}) || slices.Contains(dst[:n], x) {
			return 0, errors.New("a zero or repeated sum")
		}
		dst[n] = x
		n++
	}
	return n, nil
}

// hasResults reports whether a call whose outcome the step remembers has a
// result.
func (e *entry) hasResults() bool {
	return slices.ContainsFunc(e.res[:e.nOut], func(r canonical.Sum) bool { return r != (canonical.Sum{}) })
}

// decodeResults sets the results of the step's remembered calls from their
// form in a state: one sum (zero for none) per outcome, or none at all.
func (e *entry) decodeResults(s string) error {
	b, err := base64.RawStdEncoding.Strict().DecodeString(s)
	switch {
	case err != nil:
		return fmt.Errorf("results: %w", err)
	case len(b) == 0:
		return nil
	case len(b) != e.nOut*len(canonical.Sum{}):
		return fmt.Errorf("results of %d bytes for %d outcomes", len(b), e.nOut)
	}
	for i := range e.nOut {
		e.res[i] = canonical.Sum(b[i*len(canonical.Sum{}):])
	}
	if !e.hasResults() {
		return errors.New("a list of results without a result (it is empty then)")
	}
	return nil
}

// CheckBounds checks the restored window against the guard's counters: no
// more steps in it than were recorded, and no step index beyond them.
func (s *state) CheckBounds(c rule.Counters) error {
	if n := s.ring.Len(); n > c.Steps {
		return fmt.Errorf("%s: %d steps in the window, but %d steps recorded", Name, n, c.Steps)
	}
	outs, fails := 0, 0
	w := s.ring.Unordered()
	for i := range w {
		if s := w[i].step; s >= c.Steps {
			return fmt.Errorf("%s: step index %d, but %d steps recorded", Name, s, c.Steps)
		}
		outs += w[i].nOut
		fails += w[i].nFail
	}
	if outs+fails > c.ToolCalls || fails > c.FailedToolCalls {
		return fmt.Errorf("%s: %d outcomes and %d failures in the window, but %d calls and %d failures recorded",
			Name, outs, fails, c.ToolCalls, c.FailedToolCalls)
	}
	return nil
}

// Summary describes the window.
type Summary struct {
	// Steps is the number of steps in the window.
	Steps int `json:"steps"`
	// MaxCount is the most steps that share one text in it.
	MaxCount int `json:"maxCount"`
	// MaxLong is the most steps that share one long text in it, when they
	// are not only two in a row (Options.Long applies then).
	MaxLong int `json:"maxLong,omitempty"`
}

// Summary returns the window's size and the count of its most repeated text
// (a Summary).
func (s *state) Summary() any {
	sum := Summary{Steps: s.ring.Len()}
	w := s.ring.Unordered()
	for i := range w {
		if t := w[i].text; t != (canonical.Sum{}) {
			n := s.count(t)
			sum.MaxCount = max(sum.MaxCount, n)
			if w[i].long && (n != 2 || s.apart(t, w[i].step)) {
				sum.MaxLong = max(sum.MaxLong, n)
			}
		}
	}
	return sum
}
