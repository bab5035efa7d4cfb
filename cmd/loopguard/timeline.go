package main

import (
	"context"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/ring"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

// This file records a run step by step for audit --html: what each step
// held, as the rules saw it (a probe detector, after the others, reads each
// step's facts), and each rule's counter after it (Guard.Summary). Neither
// changes a verdict.

// A timeline is a run step by step, as far as the page draws it: a run of
// up to maxDrawnSteps steps is kept whole. Of a longer one, only the steps
// the page draws are kept while it is read: the first headSteps, at least
// beforeStop steps up to and including the stop and afterStop after it, and
// the last ones (without a stop: the first headSteps and the last ones), up
// to maxDrawnSteps in all; the steps between them are counted, not kept. So
// a timeline holds at most maxDrawnSteps steps, however long the run.
type timeline struct {
	head   []stepMark          // the first steps
	gap    int                 // the steps dropped between head and before (or recent)
	recent ring.Ring[stepMark] // before the stop: the latest steps; after it: the last ones
	before []stepMark          // the steps up to and including the stop
	after  []stepMark          // the steps kept right after the stop
	gap2   int                 // the steps dropped between after and recent
	total  int                 // the steps read
	last   int                 // the index of the last step read
	stop   bool                // the run's fault stop was read
	meters []meter             // the counters of the guard's rules, in the guard's order
}

// The steps a timeline keeps of a long run.
const (
	maxDrawnSteps = 500 // at most, per run
	headSteps     = 25  // the first steps
	beforeStop    = 400 // at least, up to and including the stop
	afterStop     = 50  // at least, right after the stop
	// maxCallsKept is the most calls of a step kept for its tooltip; the
	// rest are counted.
	maxCallsKept = 20
)

// kept is the number of steps the timeline holds.
func (t *timeline) kept() int {
	return len(t.head) + len(t.before) + len(t.after) + t.recent.Len()
}

// keep adds a step read, judged or not; a fault stop is the stop the
// windows are drawn around.
func (t *timeline) keep(m stepMark) {
	t.total++
	t.last = m.index
	switch {
	case !t.stop && len(t.head) < headSteps:
		t.head = append(t.head, m)
	case !t.stop:
		if t.recent.Cap() == 0 {
			t.recent = ring.NewGrowing[stepMark](maxDrawnSteps - headSteps)
		}
		if _, dropped := t.recent.Push(m); dropped {
			t.gap++
		}
	case t.recent.Len() > 0 || t.kept() == maxDrawnSteps && len(t.before) <= beforeStop:
		if t.recent.Len() == 0 {
			// Full, and the stop has its window: the steps after the
			// first afterStop become the last ones, which go on.
			t.recent = ring.New[stepMark](len(t.after) - afterStop)
			for _, m := range t.after[afterStop:] {
				t.recent.Push(m)
			}
			t.after = t.after[:afterStop:afterStop]
		}
		if _, dropped := t.recent.Push(m); dropped {
			t.gap2++
		}
	default:
		if t.kept() == maxDrawnSteps {
			// Full: the window before the stop gives up its oldest step.
			t.before = t.before[1:]
			t.gap++
		}
		t.after = append(t.after, m)
	}
	if !t.stop && m.stop != nil && guard.IsFault(*m.stop) {
		t.stop = true
		if t.recent.Len() > 0 {
			t.before = t.recent.AppendTo(nil)
		}
		t.recent = ring.Ring[stepMark]{}
	}
}

// A column of the timeline is a step, or a gap of steps not drawn.
type column struct {
	step *stepMark // nil for a gap
	gap  int       // the steps not drawn
}

// columns returns the timeline's columns, in order.
func (t *timeline) columns() []column {
	var cols []column
	add := func(steps []stepMark) {
		for i := range steps {
			cols = append(cols, column{step: &steps[i]})
		}
	}
	gap := func(n int) {
		if n > 0 {
			cols = append(cols, column{gap: n})
		}
	}
	add(t.head)
	gap(t.gap)
	add(t.before)
	add(t.after)
	gap(t.gap2)
	add(t.recent.AppendTo(nil))
	return cols
}

// drawn returns the steps the timeline keeps, in order.
func (t *timeline) drawn() []stepMark {
	var out []stepMark
	for _, c := range t.columns() {
		if c.step != nil {
			out = append(out, *c.step)
		}
	}
	return out
}

// A stepMark is what one step held and what the rules said of it.
type stepMark struct {
	index  int // as the guard counts steps (it starts again after a reset)
	line   int
	judged bool // false for the steps read after the run's stop
	calls  []callMark
	// refused are the calls the guard had refused (Step.Refused).
	refused  []callMark
	more     int    // the calls and refused calls not kept (past maxCallsKept)
	text     string // a preview; "" when the step has no text
	input    string // a preview of the step's new input; "" for none
	finish   string // the finish reason as given
	normal   bool   // the finish reason is "stop"
	warnings []guard.Warning
	stop     *guard.Verdict // a stop verdict, fault or normal finish
	values   []float64      // the meters' values after the step
}

// A callMark is one call of a step.
type callMark struct {
	tool    string
	args    string // a preview of the canonical arguments
	failed  bool   // as the rules saw it (an error, a failWhen pattern, a harness rejection)
	ignored bool   // a tool the guard ignores
}

// Previews are cut to these many runes: the page holds up to maxDrawnSteps
// steps of a run.
const (
	argsPreviewLen = 60
	textPreviewLen = 80
)

// add records an entry. rec is nil for the entries read after the run's
// stop, which are not judged; control lines (preflight, snapshot, reset)
// are not drawn.
func (t *timeline) add(e trace.Entry, rec *record, s *session) {
	if t == nil || e.Kind != trace.StepEntry {
		return
	}
	m := stepMark{line: e.Line, finish: e.Step.FinishReason}
	if t.total > 0 {
		m.index = t.last + 1
	}
	if rec == nil || s == nil || s.probe == nil || !s.probe.seen {
		// Not judged: the step as it was given.
		for _, c := range e.Step.ToolCalls {
			if len(m.calls) == maxCallsKept {
				m.more++
				continue
			}
			m.calls = append(m.calls, callMark{tool: c.Name, args: previewArgs(c.Args), failed: c.Err != nil})
		}
		for _, c := range e.Step.Refused {
			if len(m.calls)+len(m.refused) == maxCallsKept {
				m.more++
				continue
			}
			m.refused = append(m.refused, callMark{tool: c.Name, args: previewArgs(c.Args)})
		}
		m.text = cut(strings.TrimSpace(e.Step.Text), textPreviewLen)
		m.input = cut(strings.TrimSpace(e.Step.Input), textPreviewLen)
		m.normal = rule.NormalizeFinishReason(m.finish) == guard.FinishStop
		t.keep(m)
		return
	}
	p := s.probe
	p.seen = false
	m.judged = true
	m.index = *rec.Step
	m.calls, m.refused, m.more = p.calls, p.refused, p.more
	p.calls, p.refused = nil, nil
	m.text, m.input = p.text, p.input
	m.normal = p.finish == guard.FinishStop
	if v := rec.Verdict; v != nil {
		m.warnings = v.Warnings
		if v.Stop {
			stop := *v
			m.stop = &stop
		}
	}
	if t.meters == nil {
		t.meters = meters(s.g.Rules())
	}
	// A guard in memory never fails to give its summary.
	if sum, err := s.g.Summary(context.Background()); err == nil {
		m.values = make([]float64, len(t.meters))
		for i := range t.meters {
			m.values[i] = t.meters[i].value(&sum)
		}
	}
	t.keep(m)
}

// previewArgs is a short preview of arguments, in canonical JSON.
func previewArgs(args any) string {
	if args == nil {
		return ""
	}
	return cut(string(canonical.Append(nil, args)), argsPreviewLen)
}

// cut shortens s to n runes, ending it with "…" when it was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// A probe is a rule, and its own state, that judges nothing: after the
// others, it records the facts of each step as the rules saw them, for the
// timeline to read. It serves one session's guard at a time (not a rule to
// share), and keeps nothing between steps that a snapshot must hold, so it
// goes from a guard to the guard restored from its snapshot; a new state
// (of a guard reset or restored) starts empty.
type probe struct {
	seen    bool // a step was observed and not yet read
	calls   []callMark
	refused []callMark
	more    int // the calls not kept
	text    string
	input   string
	finish  string // normalised
}

var (
	_ rule.Rule  = (*probe)(nil)
	_ rule.State = (*probe)(nil)
)

// probeName is the probe's name, which no rule of the standard set has.
const probeName = "loopguard.audit.probe"

func (p *probe) Name() string                       { return probeName }
func (p *probe) Priority() int                      { return math.MaxInt }
func (p *probe) Options() any                       { return nil }
func (p *probe) NewState() rule.State               { *p = probe{}; return p }
func (p *probe) Verdict() rule.Verdict              { return rule.Verdict{} }
func (p *probe) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

func (p *probe) Observe(f *rule.Facts) {
	p.seen = true
	p.calls, p.refused, p.more = nil, nil, 0
	for i := range f.Calls {
		if len(p.calls) == maxCallsKept {
			p.more += len(f.Calls) - i
			break
		}
		c := &f.Calls[i]
		p.calls = append(p.calls, callMark{tool: c.Tool, args: cut(c.Preview(), argsPreviewLen), failed: c.Failed, ignored: c.Ignored})
	}
	for i := range f.Refused {
		if len(p.calls)+len(p.refused) == maxCallsKept {
			p.more += len(f.Refused) - i
			break
		}
		c := &f.Refused[i]
		p.refused = append(p.refused, callMark{tool: c.Tool, args: cut(c.Preview(), argsPreviewLen)})
	}
	p.text = ""
	if f.HasText {
		p.text = cut(strings.TrimSpace(f.Text()), textPreviewLen)
	}
	p.input = ""
	if f.NewInput {
		if st := f.Step(); st != nil {
			p.input = cut(strings.TrimSpace(st.Input), textPreviewLen)
		}
		if p.input == "" {
			p.input = "(input)"
		}
	}
	p.finish = f.FinishReason
}

// A meter is a rule's counter, drawn under the timeline: its value after
// each step, against the value that stops the run.
type meter struct {
	name  string  // the rule's name
	label string  // what the counter counts
	limit float64 // the value that stops the run
	ratio bool    // the value is a ratio of a limit (shown in percent)
	read  func(summary any, c rule.Counters) float64
}

// meters returns the counters of the rules that have one (rule.Metered), in
// the guard's order.
func meters(rules []rule.Rule) []meter {
	var ms []meter
	for _, r := range rules {
		m, ok := r.(rule.Metered)
		if !ok {
			continue
		}
		if mt, ok := m.Meter(); ok && mt.Read != nil {
			ms = append(ms, meter{name: r.Name(), label: mt.Label, limit: mt.Limit, ratio: mt.Ratio, read: mt.Read})
		}
	}
	return ms
}

// value is m's value in the guard's summary s.
func (m *meter) value(s *guard.Summary) float64 {
	return m.read(s.Detectors[m.name], rule.Counters{Steps: s.Steps, ToolCalls: s.ToolCalls,
		FailedToolCalls: s.FailedToolCalls, Totals: s.Totals})
}
