package guard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/ring"
)

// Options tune a Guard. The zero value is ready to use: no tool is ignored,
// no raw step is kept, and the detectors' own feedback is used.
type Options struct {
	// Ignore lists tools that every rule leaves alone: their calls are no
	// part of a repeat or a cycle, are not outcomes (so a step that only
	// calls them makes no progress) and do not count against a cap. Budget
	// and step limits still apply to the steps that make them.
	Ignore []string

	// History is how many of the newest raw steps the guard keeps for
	// [Guard.History]. Zero keeps none.
	History int

	// Feedback, when set, may replace the model-facing text of a fault
	// (a stop for which IsFault holds, or a refusal in preflight): return
	// the text to use, or "" to keep the detector's. It is called with the
	// guard's lock held, so it must not call the guard.
	Feedback func(v Verdict, phase Phase) string

	// DropArgs lists top-level argument fields that every tool's calls
	// leave out before their arguments are hashed, such as "request_id",
	// "timestamp" or a nonce: two calls that differ only in them are the
	// same call. Tools adds fields per tool.
	DropArgs []string

	// Key, when set, replaces a call's arguments by what it returns before
	// they are hashed (after DropArgs), for every tool without a
	// ToolOptions.Key of its own. It must be deterministic, and safe to
	// call from several goroutines at once: calls are hashed before the
	// guard's lock is taken. Functions are not part of the fingerprint:
	// restore a snapshot with the same ones.
	Key func(tool string, args any) any

	// Tools holds options per tool name: argument fields to drop, key
	// functions and failure patterns.
	Tools map[string]ToolOptions

	// FailWhen lists regular expressions (RE2 syntax) that mark a call's
	// result as a failure when one matches its text, for harnesses and
	// tools that report failures inside their results: "^ERROR:", a
	// non-zero exit code ("<returncode>[1-9]"), an MCP isError text. The
	// text of a string result is the string; of any other result, its JSON.
	// A call with an error (ToolCall.Err) fails whatever its result.
	// ToolOptions.FailWhen adds patterns per tool.
	FailWhen []string

	// Observer, when set, is told of every verdict of Check and every
	// decision of Preflight, so that stops and warnings reach logs and
	// metrics without wrapper code. It is called after the guard's lock is
	// released, on the goroutine that called Check or Preflight, with the
	// context of CheckContext or PreflightContext (context.Background()
	// otherwise). A panic in it is recovered and dropped. One that blocks
	// holds up only that call, never other callers of the guard; hand
	// slow work to a goroutine of your own.
	Observer func(ctx context.Context, e Event)

	// AllowLimitChanges lets [Options.Restore] accept detectors that
	// implement [Limiter] (step and budget limits) under options that
	// differ from those the snapshot was taken with. Other detectors must
	// still match.
	AllowLimitChanges bool
}

// A Guard watches one run. Create it with [New] or [Options.New]; restore a
// saved one with [Restore]. Its methods are safe for concurrent use.
type Guard struct {
	mu     sync.Mutex
	opts   Options
	ignore map[string]bool
	keys   *keyer    // nil: arguments are hashed as they are
	fails  *failWhen // nil: only errors are failures
	dets   []Detector

	steps, toolCalls, failedCalls int
	totals                        Totals
	last                          Verdict
	hasLast                       bool
	history                       ring.Ring[Step] // at most opts.History steps, grown as they come

	// The calls StartCall allowed that have not finished, in start order;
	// runMu is taken before mu, never after.
	runMu   sync.Mutex
	running []*Running

	// A buffer of Check and Preflight, kept for the next call; a call made
	// while another holds it makes its own. Not a sync.Pool: a used Pool
	// stays registered with the runtime until two collections have passed,
	// and with it the whole guard, so that a program making a guard per run
	// kept every guard of the last collection cycle alive (and with a high
	// GOGC the heap grew with the number of runs).
	spare atomic.Pointer[factsBuf]

	// The fingerprints of the guard's options and of each detector's
	// (in the order of dets), made by the first Snapshot; and the size to
	// reserve for the next snapshot.
	fingerprints struct {
		guard canonical.Sum
		dets  []canonical.Sum
		size  int
	}
}

// New returns a Guard that runs the given detectors with default options.
// It is Options{}.New(detectors...).
func New(detectors ...Detector) (*Guard, error) {
	return Options{}.New(detectors...)
}

// New returns a Guard that runs the given detectors with these options. The
// detectors are ordered by priority, then by name, whatever their order here.
// Every problem (a nil detector, an invalid or duplicate name, a bad option,
// a detector that another guard holds) is reported, joined in one error.
//
// The detectors become the guard's state: give each guard detectors of its
// own (call detector.Defaults, or a detector.Config's New, for each one). A
// detector that embeds [Owned], as the built-in ones do, is refused with
// [ErrDetectorInUse] while another guard holds it.
func (o Options) New(detectors ...Detector) (*Guard, error) {
	var errs []error
	if o.History < 0 {
		errs = append(errs, &OptionError{Field: "History", Err: errors.New("must not be negative")})
	}
	ignore := make(map[string]bool, len(o.Ignore))
	for _, name := range o.Ignore {
		ignore[name] = true
	}
	fails, ferrs := compileFailWhen(&o)
	errs = append(errs, ferrs...)
	seen := make(map[string]int, len(detectors))
	dets := make([]Detector, 0, len(detectors))
	for i, d := range detectors {
		if d == nil {
			errs = append(errs, &DetectorError{Index: i, Err: ErrNilDetector})
			continue
		}
		name := d.Name()
		if !ValidName(name) {
			errs = append(errs, &DetectorError{Name: name, Index: i, Err: ErrInvalidName})
			continue
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, &DetectorError{Name: name, Index: i, Err: fmt.Errorf("%w (also at #%d)", ErrDuplicateName, j)})
			continue
		}
		seen[name] = i
		dets = append(dets, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(dets, func(a, b Detector) int {
		return cmp.Or(cmp.Compare(a.Priority(), b.Priority()), cmp.Compare(a.Name(), b.Name()))
	})
	o.Ignore = slices.Clone(o.Ignore)
	o.DropArgs = slices.Clone(o.DropArgs)
	o.FailWhen = slices.Clone(o.FailWhen)
	o.Tools = maps.Clone(o.Tools)
	g := &Guard{opts: o, ignore: ignore, keys: newKeyer(&o), fails: fails, dets: dets, history: ring.NewGrowing[Step](o.History)}
	if err := g.claimAll(dets, func(name string) int { return seen[name] }); err != nil {
		return nil, err
	}
	return g, nil
}

// Detectors returns the guard's detectors in the order they are asked.
func (g *Guard) Detectors() []Detector {
	return slices.Clone(g.dets)
}

// Check records a finished step and returns the verdict: the first stop in
// priority order, or a verdict that goes on. Every detector observes every
// step, whether or not an earlier one stops. Warnings of all detectors are
// gathered. Check never panics on odd step data; a custom detector that
// panics is not recovered from. Its panic goes on to the caller with the
// guard's lock released, but the guard then holds part of the step: the step
// is counted (Summary, the totals) and the detectors before the panicking
// one have observed it, the others have not. Check again and the step counts
// twice for some rules and once for others: discard such a guard, or
// [Restore] it from a snapshot taken before the step. (snapshot.Runs drops
// its cached guard and restores the run from the store.) Rolling the step
// back would take a snapshot of every detector on every step.
func (g *Guard) Check(s Step) Verdict {
	return g.CheckContext(context.Background(), s)
}

// check is Check without the observer; it also returns the step's index.
func (g *Guard) check(s Step) (Verdict, int) {
	b := g.getFacts()
	defer g.putFacts(b) // keep no reference to the caller's data
	b.cur = s
	return g.checkFacts(b)
}

// checkFacts records the step b.cur. b.sums, when given, holds the sums of
// the step's calls, then of its refused calls, as an earlier judgement of the
// same calls computed them (see callSum); missing or zero entries are
// computed.
//
// The facts of the step (the hashes of its arguments, outcomes and text) are
// computed before the guard's lock is taken: they depend on the step alone,
// so a large step holds up no other caller. Only what depends on the order
// of steps (the index, the counts, the totals) and the detectors run under
// the lock.
func (g *Guard) checkFacts(b *factsBuf) (Verdict, int) {
	s := &b.cur
	f := &b.f
	*f = Facts{Phase: PhaseCheck, Calls: f.Calls[:0], Refused: f.Refused[:0], text: f.text[:0], step: s}
	failed := 0
	for i := range s.ToolCalls {
		var c Call
		b.scratch, c = g.callFacts(b.scratch, &s.ToolCalls[i], true, sumAt(b.sums, i))
		f.Calls = append(f.Calls, c)
		if c.Failed {
			failed++
		}
	}
	for i := range s.Refused {
		var c Call
		b.scratch, c = g.callFacts(b.scratch, &s.Refused[i], false, sumAt(b.sums, len(s.ToolCalls)+i))
		f.Refused = append(f.Refused, c)
	}
	f.text = normaliseText(f.text[:0], s.Text)
	f.HasText = len(f.text) > 0
	f.TextHash = canonical.HashBytes(f.text)
	f.RawFinishReason = s.FinishReason
	f.FinishReason = NormalizeFinishReason(s.FinishReason)
	f.NewInput = s.Input != ""
	if f.NewInput {
		f.InputHash = canonical.HashString(s.Input)
	}
	f.Usage = s.Usage.sanitize()

	g.mu.Lock()
	defer g.mu.Unlock()
	f.Index = stepIndex(g.steps)
	g.failedCalls = satAddInt(g.failedCalls, failed)
	g.toolCalls = satAddInt(g.toolCalls, len(f.Calls))
	g.totals.add(f.Usage)
	g.steps = satAddInt(g.steps, 1)
	f.Steps = g.steps
	f.Totals = g.totals

	for _, d := range g.dets {
		d.Observe(f)
	}
	var v Verdict
	var warnings []Warning
	for _, d := range g.dets {
		dv := d.Verdict()
		warnings = appendWarnings(warnings, dv.Warnings, d.Name())
		if dv.Stop && !v.Stop {
			v = g.finish(dv, d.Name(), PhaseCheck)
		}
	}
	v.Warnings = warnings
	if g.opts.History > 0 {
		g.remember(*s)
	}
	g.last, g.hasLast = v, true
	return v, f.Index
}

// Preflight asks whether running calls now, as the next step's calls, would
// immediately trip a rule. It records nothing and changes nothing, so it can
// be asked as often as needed. Parallel calls are judged as one step, in
// order. Rules that need a result, text, finish reason or usage are not
// judged. The first refusal in priority order wins; warnings of all detectors
// are gathered. Preflight with no calls judges only the step and budget
// limits.
func (g *Guard) Preflight(calls ...ToolCall) Decision {
	return g.PreflightContext(context.Background(), calls...)
}

// preflight is Preflight without the observer; it also returns the index of
// the step the calls would belong to. With locate, a refusal says which call
// was refused (Decision.CallIndex); without, the caller says it.
func (g *Guard) preflight(calls []ToolCall, locate bool) (Decision, int) {
	b := g.getFacts()
	defer g.putFacts(b)
	b.pre = append(b.pre[:0], calls...)
	return g.preflightFacts(b, locate)
}

// preflightFacts judges the calls b.pre. b.sums, when given, holds their
// sums as an earlier judgement computed them; the entries that are not
// computed yet are filled in, for the next judgement of the same calls. As
// in checkFacts, the calls' facts are computed before the lock is taken.
func (g *Guard) preflightFacts(b *factsBuf, locate bool) (Decision, int) {
	f := &b.f
	*f = Facts{Phase: PhasePreflight, Calls: f.Calls[:0], Refused: f.Refused[:0], text: f.text[:0]}
	for i := range b.pre {
		var c Call
		b.scratch, c = g.callFacts(b.scratch, &b.pre[i], false, sumAt(b.sums, i))
		if i < len(b.sums) {
			b.sums[i] = c.sum()
		}
		f.Calls = append(f.Calls, c)
	}
	f.TextHash = emptyTextHash

	g.mu.Lock()
	defer g.mu.Unlock()
	f.Index = stepIndex(g.steps)
	f.Steps = g.steps
	f.Totals = g.totals

	d := Decision{Allow: true}
	var warnings []Warning
	var refuser Detector
	for _, det := range g.dets {
		dv := det.Preflight(f)
		warnings = appendWarnings(warnings, dv.Warnings, det.Name())
		if dv.Stop && d.Allow {
			v := g.finish(dv, det.Name(), PhasePreflight)
			d = Decision{Reason: v.Reason, Code: v.Code, Detail: v.Detail, Evidence: v.Evidence,
				Feedback: v.Feedback, Detector: v.Detector}
			refuser = det
		}
	}
	if refuser != nil && locate {
		d.CallIndex = refusedAt(refuser, f)
		if d.CallIndex < len(b.pre) {
			d.CallID = b.pre[d.CallIndex].ID
		}
	}
	d.Warnings = warnings
	return d, f.Index
}

// emptyTextHash is the TextHash of a step without text.
var emptyTextHash = canonical.HashBytes(nil)

// factsBuf is what one Check or Preflight works in: the facts, a copy of the
// step or of the calls (which the facts point into), the calls' sums when an
// earlier judgement computed them, and scratch space. It is reused, through
// the guard's pool, by calls that do not overlap.
type factsBuf struct {
	f       Facts
	cur     Step
	pre     []ToolCall
	sums    []callSum
	calls   []ToolCall // room for the calls of a step that the guard builds (Turn.End, Finish)
	scratch []byte
}

// stepCalls returns room for the calls of a step that the guard builds and
// records: b.calls, unless the guard keeps a history, which needs calls of
// its own.
func (g *Guard) stepCalls(b *factsBuf) []ToolCall {
	if g.opts.History > 0 {
		return nil
	}
	return b.calls[:0]
}

func (g *Guard) getFacts() *factsBuf {
	if b := g.spare.Swap(nil); b != nil {
		return b
	}
	return new(factsBuf)
}

// putFacts drops every reference to the caller's step and calls, and puts
// the buffer back for reuse.
func (g *Guard) putFacts(b *factsBuf) {
	clear(b.f.Calls)
	clear(b.f.Refused)
	b.f = Facts{Calls: b.f.Calls[:0], Refused: b.f.Refused[:0], text: b.f.text[:0]}
	b.cur = Step{}
	clear(b.pre)
	b.pre = b.pre[:0]
	clear(b.calls)
	b.calls = b.calls[:0]
	b.sums = b.sums[:0]
	if cap(b.f.text) > maxKeptText {
		b.f.text = nil // a huge text is not kept for the next step
	}
	g.spare.Store(b)
}

// maxKeptText is the most bytes of normalised text a buffer keeps for reuse.
const maxKeptText = 64 << 10

// stepIndex is the index of the step after steps recorded ones. The counts
// saturate at math.MaxInt, so that they never wrap: from there on, every step
// is the last, and its index stays below the count.
func stepIndex(steps int) int { return min(steps, math.MaxInt-1) }

// satAddInt adds two counts of 0 or more, saturating at math.MaxInt.
func satAddInt(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// finish completes a stop verdict: the detector's name, the default reason
// and code of a custom stop, and the feedback option.
func (g *Guard) finish(v Verdict, name string, p Phase) Verdict {
	v.Detector = name
	v.Warnings = nil
	if v.Reason == "" {
		v.Reason = ReasonCustom
	}
	if v.Code == "" {
		v.Code = CodeCustom
	}
	if g.opts.Feedback != nil && IsFault(v) {
		if text := g.opts.Feedback(v, p); text != "" {
			v.Feedback = text
		}
	}
	return v
}

func appendWarnings(dst, ws []Warning, name string) []Warning {
	for _, w := range ws {
		if w.Detector == "" {
			w.Detector = name
		}
		dst = append(dst, w)
	}
	return dst
}

// remember adds a step to the history ring.
func (g *Guard) remember(s Step) {
	g.history.Push(s)
}

// History returns copies of the newest raw steps, oldest first: at most
// [Options.History] of them, none after a restore or a reset.
func (g *Guard) History() []Step {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.history.AppendTo(make([]Step, 0, g.history.Len()))
}

// Reset forgets the run and keeps the options and detectors: step indexes
// start again at 0.
func (g *Guard) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.steps, g.toolCalls, g.failedCalls = 0, 0, 0
	g.totals = Totals{}
	g.last, g.hasLast = Verdict{}, false
	g.history = ring.NewGrowing[Step](g.opts.History) // drops the steps' memory
	for _, d := range g.dets {
		d.Reset()
	}
}

// Summary is a guard's account of its run. It holds nothing time-dependent.
type Summary struct {
	// Steps is the number of steps recorded.
	Steps int `json:"steps"`
	// ToolCalls is the number of tool calls recorded, ignored ones included.
	ToolCalls int `json:"toolCalls"`
	// FailedToolCalls is the number of those that failed.
	FailedToolCalls int `json:"failedToolCalls"`
	// Totals are the usage totals.
	Totals Totals `json:"totals"`
	// LastVerdict is the verdict of the last Check, or nil before the first
	// (and after a restore).
	LastVerdict *Verdict `json:"lastVerdict"`
	// Detectors holds the summaries of the detectors that implement
	// [Summarizer], by name.
	Detectors map[string]any `json:"detectors,omitempty"`
}

// Summary returns counts, totals, the last verdict and the detectors'
// summaries.
func (g *Guard) Summary() Summary {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := Summary{Steps: g.steps, ToolCalls: g.toolCalls, FailedToolCalls: g.failedCalls, Totals: g.totals}
	if g.hasLast {
		v := g.last
		v.Warnings = slices.Clone(v.Warnings)
		s.LastVerdict = &v
	}
	for _, d := range g.dets {
		if sm, ok := d.(Summarizer); ok {
			if s.Detectors == nil {
				s.Detectors = make(map[string]any)
			}
			s.Detectors[d.Name()] = sm.Summary()
		}
	}
	return s
}
