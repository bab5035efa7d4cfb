package main

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector/budget"
	failrule "github.com/loopguard/loopguard/detector/failure"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/refusal"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/stall"
	"github.com/loopguard/loopguard/detector/text"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/detector/window"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// This file records a run step by step for audit --html: what each step
// held, as the rules saw it (a probe detector, after the others, reads each
// step's facts), and each rule's counter after it (Guard.Summary). Neither
// changes a verdict.

// A timeline is a run step by step.
type timeline struct {
	steps  []stepMark
	meters []meter // the counters of the guard's rules, in the guard's order
}

// A stepMark is what one step held and what the rules said of it.
type stepMark struct {
	index  int // as the guard counts steps (it starts again after a reset)
	line   int
	judged bool // false for the steps read after the run's stop
	calls  []callMark
	// refused are the calls the guard had refused (Step.Refused).
	refused  []callMark
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
	failed  bool   // as the rules saw it (an error, or a failWhen pattern)
	ignored bool   // a tool the guard ignores
}

// Previews are cut to these many runes: the page holds every step of every
// run.
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
	if len(t.steps) > 0 {
		m.index = t.steps[len(t.steps)-1].index + 1
	}
	if rec == nil || s == nil || s.probe == nil || !s.probe.seen {
		// Not judged: the step as it was given.
		for _, c := range e.Step.ToolCalls {
			m.calls = append(m.calls, callMark{tool: c.Name, args: previewArgs(c.Args), failed: c.Err != nil})
		}
		for _, c := range e.Step.Refused {
			m.refused = append(m.refused, callMark{tool: c.Name, args: previewArgs(c.Args)})
		}
		m.text = cut(strings.TrimSpace(e.Step.Text), textPreviewLen)
		m.input = cut(strings.TrimSpace(e.Step.Input), textPreviewLen)
		m.normal = guard.NormalizeFinishReason(m.finish) == guard.FinishStop
		t.steps = append(t.steps, m)
		return
	}
	p := s.probe
	p.seen = false
	m.judged = true
	m.index = *rec.Step
	m.calls, m.refused = p.calls, p.refused
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
		t.meters = meters(s.g.Detectors())
	}
	sum := s.g.Summary()
	m.values = make([]float64, len(t.meters))
	for i, mt := range t.meters {
		m.values[i] = mt.read(&sum)
	}
	t.steps = append(t.steps, m)
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

// A probe is a detector that judges nothing: after the others, it records
// the facts of each step as the rules saw them, for the timeline to read.
// It keeps no state between steps, so it may go from a guard to the guard
// restored from its snapshot.
type probe struct {
	seen    bool // a step was observed and not yet read
	calls   []callMark
	refused []callMark
	text    string
	input   string
	finish  string // normalised
}

var _ guard.Detector = (*probe)(nil)

// probeName is the probe's name, which no rule of the standard set has.
const probeName = "loopguard.audit.probe"

func (p *probe) Name() string                                   { return probeName }
func (p *probe) Priority() int                                  { return math.MaxInt }
func (p *probe) Options() any                                   { return nil }
func (p *probe) Verdict() guard.Verdict                         { return guard.Verdict{} }
func (p *probe) Preflight(*guard.Facts) guard.Verdict           { return guard.Verdict{} }
func (p *probe) Snapshot(guard.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (p *probe) Restore([]byte) error                           { return nil }
func (p *probe) Reset()                                         { *p = probe{} }

func (p *probe) Observe(f *guard.Facts) {
	p.seen = true
	p.calls, p.refused = nil, nil
	for i := range f.Calls {
		c := &f.Calls[i]
		p.calls = append(p.calls, callMark{tool: c.Tool, args: cut(c.Preview(), argsPreviewLen), failed: c.Failed, ignored: c.Ignored})
	}
	for i := range f.Refused {
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
	name  string  // the detector's name
	label string  // what the counter counts
	limit float64 // the value that stops the run
	ratio bool    // the value is a ratio of a limit (shown in percent)
	read  func(*guard.Summary) float64
}

// meters returns the counters of the detectors that have one, in the
// guard's order. Custom detectors have none.
func meters(dets []guard.Detector) []meter {
	var ms []meter
	for _, d := range dets {
		name := d.Name()
		summary := func(s *guard.Summary) any { return s.Detectors[name] }
		switch o := d.Options().(type) {
		case budget.Options:
			limits := map[string]float64{"totalTokens": o.MaxTotalTokens.Value, "inputTokens": o.MaxInputTokens.Value,
				"outputTokens": o.MaxOutputTokens.Value, "costUsd": o.MaxCostUSD.Value, "durationMs": o.MaxDurationMs.Value}
			ms = append(ms, meter{name: name, label: "budget use", limit: 1, ratio: true, read: func(s *guard.Summary) float64 {
				use := 0.0
				if o.MaxSteps > 0 {
					use = float64(s.Steps) / float64(o.MaxSteps)
				}
				values := map[string]float64{"totalTokens": float64(s.Totals.TotalTokens), "inputTokens": float64(s.Totals.InputTokens),
					"outputTokens": float64(s.Totals.OutputTokens), "costUsd": s.Totals.CostUSD, "durationMs": float64(s.Totals.Duration.Milliseconds())}
				for metric, limit := range limits {
					if limit > 0 {
						use = max(use, values[metric]/limit)
					}
				}
				return use
			}})
		case toollimit.Options:
			if len(o.MaxCalls) == 0 {
				continue
			}
			// A tool is stopped at the call after its cap.
			ms = append(ms, meter{name: name, label: "tool cap", limit: 1, ratio: true, read: func(s *guard.Summary) float64 {
				counts, _ := summary(s).(map[string]toollimit.Count)
				use := 0.0
				for _, c := range counts {
					use = max(use, float64(c.Calls)/float64(c.Limit+1))
				}
				return use
			}})
		case refusal.Options:
			ms = append(ms, meter{name: name, label: "refusals", limit: float64(o.Threshold), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(refusal.Summary)
				return float64(v.MaxCount)
			}})
		case repeat.Options:
			ms = append(ms, meter{name: name, label: "repeat run", limit: float64(o.Threshold), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(repeat.Summary)
				return float64(v.Count)
			}})
		case failrule.Options:
			// Three counts stop: of one failure, of one failure of one
			// call, of one failure from two calls.
			ms = append(ms, meter{name: name, label: "same failure", limit: 1, ratio: true, read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(failrule.Summary)
				return max(float64(v.MaxCount)/float64(o.Threshold), float64(v.MaxSameCall)/float64(o.SameCall),
					float64(v.MaxTwoCalls)/float64(o.SameCall+1))
			}})
		case window.Options:
			// The window may hold Threshold same calls: one more stops.
			ms = append(ms, meter{name: name, label: "window count", limit: float64(o.Threshold + 1), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(window.Summary)
				return float64(v.MaxCount)
			}})
		case oscillation.Options:
			ms = append(ms, meter{name: name, label: "cycle rounds", limit: float64(o.Repeats), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(oscillation.Summary)
				if v.Period == 0 {
					return 0
				}
				return float64(v.Calls) / float64(v.Period)
			}})
		case noprogress.Options:
			ms = append(ms, meter{name: name, label: "no progress", limit: float64(o.Threshold), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(noprogress.Summary)
				return float64(v.StalledSteps)
			}})
		case text.Options:
			ms = append(ms, meter{name: name, label: "same text", limit: float64(o.Threshold), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(text.Summary)
				return float64(v.MaxCount)
			}})
		case stall.Options:
			ms = append(ms, meter{name: name, label: "stall", limit: float64(o.Threshold), read: func(s *guard.Summary) float64 {
				v, _ := summary(s).(stall.Summary)
				return float64(v.StalledSteps)
			}})
		}
	}
	return ms
}
