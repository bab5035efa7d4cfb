package core

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

// A Config is what a guard is built from: its rules and the options that
// tune how a step is read. The zero value is ready to use: no rule, no tool
// ignored, no raw step kept, and the rules' own feedback.
//
// A Config is shared configuration, as a tls.Config is: once it is given to
// [New], [Restore] or a store's runs, it must not be changed, and then any
// number of guards, at the same time, may be built from it. Each guard makes
// its own per-run state from the rules; nothing of one run reaches another.
type Config struct {
	// Rules are the guard's rules: the standard set (detector.Defaults),
	// rules of your own, or both. Their order does not matter: the guard
	// asks them by priority, then by name.
	Rules []Rule

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
	// ToolConfig.Key of its own. It must be deterministic, and safe to
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
	// ToolConfig.FailWhen adds patterns per tool.
	FailWhen []string

	// DisableRejections switches off the harnesses' rejection messages
	// ([RejectionPhrases]), which otherwise mark a result as a failure
	// as a FailWhen pattern would: an editor that rejects an edit in an
	// ordinary observation ("Your proposed edit has introduced new syntax
	// error(s)", "No replacement was performed, old_str ... did not
	// appear verbatim", aider's "SearchReplaceNoExactMatch"). A result
	// fails when a line of its first 1,024 bytes starts with one of them,
	// after at most 4 of '[', '#' and ' '; it is read when it is text (a
	// string or a []byte) or JSON text (a json.RawMessage, where the
	// start of a string starts a line too), never encoded. Set it for
	// tools whose results quote such messages as data (a search through
	// these harnesses' own sources). It is in the fingerprint only when
	// set, so snapshots taken with the default restore as before.
	DisableRejections bool

	// Observer, when set, is told of every verdict of Check and every
	// decision of Preflight, so that stops and warnings reach logs and
	// metrics without wrapper code. It is called after the guard's lock is
	// released, on the goroutine that called Check or Preflight, with
	// its context. A panic in it is recovered and dropped. One that blocks
	// holds up only that call, never other callers of the guard; hand
	// slow work to a goroutine of your own.
	Observer func(ctx context.Context, e Event)

	// AllowLimitChanges lets [Restore] accept rules that implement
	// [Limiter] (step and budget limits) under options that
	// differ from those the snapshot was taken with. Other detectors must
	// still match.
	AllowLimitChanges bool

	// AllowNewRules lets [Restore] accept a snapshot that holds no state
	// for some of the rules given: each such rule starts fresh, as though
	// the run began when it was restored (it has seen none of the steps
	// before). It is for a rule that a newer release added to
	// detector.Defaults, or one added to the options of a run in flight;
	// without it, such a rule makes Restore fail with a *FingerprintError
	// (Extra). A state in the snapshot for a rule that is not given, and a
	// rule whose options changed, are errors either way.
	AllowNewRules bool
}

// A Guard watches one run. Create it with [New]; restore a
// saved one with [Restore]. Its methods are safe for concurrent use.
type Guard struct {
	mu     sync.Mutex
	opts   Config
	ignore map[string]bool
	keys   *keyer    // nil: arguments are hashed as they are
	fails  *failWhen // nil: only errors are failures
	rules  []Rule    // sorted by priority, then name
	names  []string  // the rules' names
	states []State   // the rules' states for this run, in the order of rules
	// first is the run's first fault stop (IsFault) since it began, was
	// reset, or opened a new segment (a step with user input); nil while
	// it has not stopped for a fault.
	first     *Verdict
	firstStep int

	// b, when not nil, holds the run's state in place of this guard: the
	// guard is then a front whose fields above only describe the run.
	b Backend

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

	// The fingerprints of the guard's options and of each rule's
	// (in the order of rules), made by the first Snapshot; and the size to
	// reserve for the next snapshot.
	fingerprints struct {
		guard canonical.Sum
		dets  []canonical.Sum
		size  int
	}
}

// New returns a Guard, in memory, that runs cfg's rules for one run. The
// rules are ordered by priority, then by name, whatever their order in cfg.
// Every problem (a nil rule, an invalid or duplicate name, a bad option) is
// reported, joined in one error.
func New(cfg Config) (*Guard, error) {
	var errs []error
	o := cfg
	if o.History < 0 {
		errs = append(errs, &OptionError{Field: "History", Err: errors.New("must not be negative")})
	}
	ignore := make(map[string]bool, len(o.Ignore))
	for _, name := range o.Ignore {
		ignore[name] = true
	}
	fails, ferrs := compileFailWhen(&o)
	errs = append(errs, ferrs...)
	seen := make(map[string]int, len(o.Rules))
	rules := make([]Rule, 0, len(o.Rules))
	for i, r := range o.Rules {
		if r == nil {
			errs = append(errs, &DetectorError{Index: i, Err: ErrNilDetector})
			continue
		}
		name := r.Name()
		if !ValidName(name) {
			errs = append(errs, &DetectorError{Name: name, Index: i, Err: ErrInvalidName})
			continue
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, &DetectorError{Name: name, Index: i, Err: fmt.Errorf("%w (also at #%d)", ErrDuplicateName, j)})
			continue
		}
		seen[name] = i
		rules = append(rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(rules, func(a, b Rule) int {
		return cmp.Or(cmp.Compare(a.Priority(), b.Priority()), cmp.Compare(a.Name(), b.Name()))
	})
	o.Rules = rules
	o.Ignore = slices.Clone(o.Ignore)
	o.DropArgs = slices.Clone(o.DropArgs)
	o.FailWhen = slices.Clone(o.FailWhen)
	o.Tools = maps.Clone(o.Tools)
	g := &Guard{opts: o, ignore: ignore, keys: newKeyer(&o), fails: fails, rules: rules,
		names: make([]string, len(rules)), history: ring.NewGrowing[Step](o.History)}
	for i, r := range rules {
		g.names[i] = r.Name()
	}
	if err := g.freshStates(); err != nil {
		return nil, err
	}
	return g, nil
}

// freshStates gives the guard a fresh state of every rule.
func (g *Guard) freshStates() error {
	states := make([]State, len(g.rules))
	for i, r := range g.rules {
		st, err := newState(r)
		if err != nil {
			return &DetectorError{Name: g.names[i], Index: i, Err: err}
		}
		states[i] = st
	}
	g.states = states
	return nil
}

// newState asks r for a state, turning a panic or a nil state into an error.
func newState(r Rule) (st State, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, err = nil, fmt.Errorf("NewState panicked: %v", p)
		}
	}()
	st = r.NewState()
	if st == nil {
		return nil, errors.New("NewState returned nil")
	}
	return st, nil
}

// Rules returns the guard's rules in the order they are asked.
func (g *Guard) Rules() []Rule {
	return slices.Clone(g.rules)
}

// Check records a finished step and returns the verdict: the first stop in
// priority order, or a verdict that goes on. Every rule observes every step,
// whether or not an earlier one stops. Warnings of all rules are gathered.
// Check never panics on odd step data. A rule that panics is not recovered
// from: its panic goes on to the caller with the guard's lock released, and
// the guard then holds part of the step (discard it, or restore it from a
// snapshot taken before the step; a guard from a store drops its copy and
// reads the run again).
//
// The error is not nil only when a guard over a store could not answer at
// all because ctx ended; a store's own failures are answered by its policy
// (see package snapshot). A guard in memory always returns a nil error.
func (g *Guard) Check(ctx context.Context, s Step) (Verdict, error) {
	var (
		v    Verdict
		step int
	)
	if g.b != nil {
		var err error
		// Copies of the step's slices, so that they do not escape: the step
		// of a guard in memory stays on its caller's stack.
		st := s
		st.ToolCalls, st.Refused = slices.Clone(s.ToolCalls), slices.Clone(s.Refused)
		if v, step, err = g.b.Record(ctx, st); err != nil {
			return Verdict{}, err
		}
	} else {
		v, step = g.check(s)
	}
	if g.opts.Observer != nil {
		g.notify(ctx, Event{Phase: PhaseCheck, Step: step, Verdict: v})
	}
	return v, nil
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

	for _, st := range g.states {
		st.Observe(f)
	}
	var v Verdict
	var warnings []Warning
	for i, st := range g.states {
		dv := st.Verdict()
		warnings = appendWarnings(warnings, dv.Warnings, g.names[i])
		if dv.Stop && !v.Stop {
			v = g.finish(dv, g.names[i], PhaseCheck)
		}
	}
	v.Warnings = warnings
	if f.NewInput {
		g.first = nil // the person spoke again: a new segment
	}
	if g.first == nil && IsFault(v) {
		first := v
		first.Warnings = nil
		g.first, g.firstStep = &first, f.Index
	}
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
// judged. The first refusal in priority order wins; warnings of all rules
// are gathered. Preflight with no calls judges only the step and budget
// limits. Preflight answers as the reference reads each step: it does not
// refuse a call because an earlier step stopped the run (see [Guard.Begin]).
// The error is as for Check.
func (g *Guard) Preflight(ctx context.Context, calls ...ToolCall) (Decision, error) {
	var (
		d    Decision
		step int
	)
	if g.b != nil {
		var err error
		// A copy, so that calls does not escape: the variadic slice of a
		// guard in memory stays on its caller's stack.
		if d, step, err = g.b.Preflight(ctx, slices.Clone(calls)); err != nil {
			return Decision{}, err
		}
	} else {
		d, step = g.preflight(calls, true)
	}
	if g.opts.Observer != nil {
		e := Event{Phase: PhasePreflight, Step: step, Verdict: d.Verdict()}
		if i := d.CallIndex; !d.Allow && i < len(calls) && len(calls) > 0 {
			e.CallID, e.Tool = calls[i].ID, calls[i].Name
		} else if len(calls) == 1 {
			e.CallID, e.Tool = calls[0].ID, calls[0].Name
		}
		g.notify(ctx, e)
	}
	return d, nil
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
	if b.sticky && g.first != nil {
		b.stopped = true
		return stoppedDecision(g.first, g.firstStep), f.Index
	}

	d := Decision{Allow: true}
	var warnings []Warning
	var refuser State
	for i, det := range g.states {
		dv := det.Preflight(f)
		warnings = appendWarnings(warnings, dv.Warnings, g.names[i])
		if dv.Stop && d.Allow {
			v := g.finish(dv, g.names[i], PhasePreflight)
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
	f     Facts
	cur   Step
	pre   []ToolCall
	sums  []callSum
	calls []ToolCall // room for the calls of a step that the guard builds (Turn.End, Finish)
	// sticky asks preflightFacts to refuse every call of a run that has
	// stopped (the doors of adapters and servers: turns and StartCall), and
	// stopped reports that it did.
	sticky, stopped bool
	scratch         []byte
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
	b.sticky, b.stopped = false, false
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
// [Config.History] of them, none after a restore or a reset.
func (g *Guard) History() []Step {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.history.AppendTo(make([]Step, 0, g.history.Len()))
}

// Reset forgets the run and keeps the configuration: step indexes start
// again at 0, the rules' states are fresh, and the run's first stop is
// forgotten. The error is as for Check, or a rule whose NewState fails (a
// *DetectorError): then the run is left as it was.
func (g *Guard) Reset(ctx context.Context) error {
	if g.b != nil {
		return g.b.Reset(ctx)
	}
	return g.reset()
}

// reset is Reset in memory.
func (g *Guard) reset() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.freshStates(); err != nil {
		return err // freshStates changed nothing
	}
	g.steps, g.toolCalls, g.failedCalls = 0, 0, 0
	g.totals = Totals{}
	g.last, g.hasLast = Verdict{}, false
	g.first = nil
	g.history = ring.NewGrowing[Step](g.opts.History) // drops the steps' memory
	return nil
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
	// FirstStop is the run's first stop for a fault ([IsFault]: a loop, a
	// budget, a limit; not a normal finish), kept until [Guard.Reset] or a
	// step with new user input (a new segment), through snapshots and
	// stores; nil while the run has not stopped for a fault. Turns and
	// StartCall refuse every call of such a run. A stop that was saved
	// keeps its reason, code and rule, and its Detail names its step; its
	// evidence and feedback are not saved.
	FirstStop *Verdict `json:"firstStop,omitempty"`
	// Detectors holds the summaries of the rules' states that implement
	// [Summarizer], by rule name.
	Detectors map[string]any `json:"detectors,omitempty"`
}

// Summary returns counts, totals, the last verdict, the first stop and the
// rules' summaries. The error is as for Check.
func (g *Guard) Summary(ctx context.Context) (Summary, error) {
	if g.b != nil {
		var s Summary
		err := g.b.View(ctx, func(m *Guard) { s = m.summary() })
		if err != nil {
			return Summary{}, err
		}
		return s, nil
	}
	return g.summary(), nil
}

// summary is Summary in memory.
func (g *Guard) summary() Summary {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := Summary{Steps: g.steps, ToolCalls: g.toolCalls, FailedToolCalls: g.failedCalls, Totals: g.totals}
	if g.hasLast {
		v := g.last
		v.Warnings = slices.Clone(v.Warnings)
		s.LastVerdict = &v
	}
	if g.first != nil {
		v := *g.first
		s.FirstStop = &v
	}
	for i, st := range g.states {
		if sm, ok := st.(Summarizer); ok {
			if s.Detectors == nil {
				s.Detectors = make(map[string]any)
			}
			s.Detectors[g.names[i]] = sm.Summary()
		}
	}
	return s
}
