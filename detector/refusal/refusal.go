// Package refusal stops a run whose model keeps asking for a call that the
// guard refused. A refused call does not run, so the rules that count calls
// never see it again; without this rule a model that insists only meets the
// step limit (48 refusals in a row were measured on a real run).
//
// The refused calls of a step are given in guard.Step.Refused: guard.Turn
// fills it, guard.Guard.StartCall records each refusal, and a hand-written
// loop that preflights its calls puts the refused ones there. The detector
// counts refusals per call (tool name plus canonical arguments,
// rule.Call.Key) over the run, and stops when one call has been refused
// Options.Threshold times. It remembers the newest MaxCalls refused calls.
//
// It also counts, per tool, the steps in which a call of the tool was
// refused since the tool last ran (a step in which a call of it ran starts
// the count again), and stops when that count reaches Options.Threshold: a
// tool cap (package toollimit) refuses every call of a tool whatever its
// arguments, and a model that asks for the capped tool with new arguments
// each time has each call refused once. Two refused calls of one tool in
// one step count once here, so that the model gets to act on the feedback
// of the refusal first. Such a stop names the tool and its count, with no
// ArgsPreview (Evidence.Scope is "tool"). It remembers the newest MaxCalls
// refused tools.
//
// It judges nothing in preflight: the refusal it counts comes from another
// rule. With Options.Warn, a step whose refusal brings a count to one short
// of the threshold (from 2) carries a REPEATED_REFUSAL_WARNING.
package refusal

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "refusal"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "REPEATED_REFUSAL"
	WarningCode = "REPEATED_REFUSAL_WARNING"
)

// ReasonRepeatedRefusal is the reason of the rule's stops.
const ReasonRepeatedRefusal rule.Reason = "repeated-refusal"

// Priority is the rule's priority: after the tool limit, before the
// rules about calls that ran.
const Priority = rule.PriorityToolLimit + 50

// DefaultThreshold is the number of refusals of one call that stop the run.
// A model that is told a call was not run and why, and asks for it again,
// once and then twice, is not going to change course.
const DefaultThreshold = 3

// MaxCalls is how many refused calls a run remembers: the newest.
const MaxCalls = 64

// maxCount caps a count, so that it never overflows.
const maxCount = 1 << 30

// Options tune the rule. The zero value is the default: the third
// refusal of the same call stops the run.
type Options struct {
	// Threshold is how many refusals of one call stop the run: 0 means
	// DefaultThreshold, any other value must be at least 2.
	Threshold int `json:"threshold"`
	// Warn adds a REPEATED_REFUSAL_WARNING to a step whose refusal brings
	// a count to Threshold-1 (when that is at least 2).
	Warn bool `json:"warn,omitempty"`
}

// Evidence is the evidence of a stop.
type Evidence struct {
	// Tool is the name of the refused call's tool.
	Tool string `json:"tool"`
	// ArgsPreview is a short preview of its arguments; empty when Scope
	// is "tool".
	ArgsPreview string `json:"argsPreview"`
	// Count is the number of times the call was refused; when Scope is
	// "tool", the number of steps in which a call of the tool was refused
	// since the tool last ran.
	Count int `json:"count"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
	// Scope is "tool" when the refusals of the tool with any arguments
	// stopped the run, and empty when those of one call did.
	Scope string `json:"scope,omitempty"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent keeps asking for a call it was refused; tell it what to do instead"
}

// ScopeTool is Evidence.Scope of a stop on the refusals of a tool.
const ScopeTool = "tool"

// refused is one remembered call (or tool: the hash of its name) and its
// count.
type refused struct {
	key   canonical.Sum
	count int
}

// A Rule counts refusals per call: its options, never changed after New, so
// that one Rule serves any number of guards at once. Create it with New.
type Rule struct {
	opts Options
}

// state is one run's: the refused calls and tools it remembers.
type state struct {
	opts  Options   // the rule's
	calls []refused // oldest refusal first, at most MaxCalls
	tools []refused // per tool name hash, since it last ran; oldest first, at most MaxCalls

	verdict rule.Verdict
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
	_ rule.Bounded    = (*state)(nil)
)

// New returns a rule with these options, or an error (a
// *rule.OptionError) for an invalid option.
func New(o Options) (*Rule, error) {
	if o.Threshold != 0 && o.Threshold < 2 {
		return nil, &rule.OptionError{Detector: Name, Field: "Threshold",
			Err: fmt.Errorf("must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)}
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	return &Rule{opts: o}, nil
}

// Name returns "refusal".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// NewState returns the state of a fresh run: no refusal counted.
func (d *Rule) NewState() rule.State { return &state{opts: d.opts} }

// add counts one refusal of key in rs and returns its count; the key
// becomes the newest.
func add(rs *[]refused, key canonical.Sum) int {
	i := slices.IndexFunc(*rs, func(r refused) bool { return r.key == key })
	r := refused{key: key}
	if i >= 0 {
		r = (*rs)[i]
		*rs = slices.Delete(*rs, i, i+1)
	} else if len(*rs) == MaxCalls {
		*rs = slices.Delete(*rs, 0, 1)
	}
	r.count = min(r.count+1, maxCount)
	*rs = append(*rs, r)
	return r.count
}

// Observe counts the step's refused calls.
func (d *state) Observe(f *rule.Facts) {
	d.verdict = rule.Verdict{}
	if len(d.tools) > 0 {
		// A tool that ran starts its count again.
		for i := range f.Calls {
			tool := canonical.HashString(f.Calls[i].Tool)
			d.tools = slices.DeleteFunc(d.tools, func(r refused) bool { return r.key == tool })
		}
	}
	var warn *rule.Call
	warnCount := 0
	for i := range f.Refused {
		c := &f.Refused[i]
		count := add(&d.calls, c.Key)
		switch {
		case d.verdict.Stop:
		case count >= d.opts.Threshold:
			ev := Evidence{Tool: rule.Clean(c.Tool), ArgsPreview: c.Preview(), Count: count, Threshold: d.opts.Threshold}
			d.verdict = rule.Verdict{
				Stop:   true,
				Reason: ReasonRepeatedRefusal,
				Code:   Code,
				Detail: fmt.Sprintf("the call %s(%s) was refused %d times and the model keeps asking for it (threshold %d)",
					rule.Clean(c.Tool), ev.ArgsPreview, ev.Count, ev.Threshold),
				Evidence: ev,
			}
			d.verdict.Feedback = ev.feedback()
		case d.opts.Warn && count == d.opts.Threshold-1 && count >= 2 && warn == nil:
			warn, warnCount = c, count
		}
	}
	var warnTool *rule.Call
	for i := range f.Refused {
		c := &f.Refused[i]
		if slices.ContainsFunc(f.Refused[:i], func(p rule.Call) bool { return p.Tool == c.Tool }) {
			continue // once per step
		}
		count := add(&d.tools, canonical.HashString(c.Tool))
		switch {
		case d.verdict.Stop:
		case count >= d.opts.Threshold:
			ev := Evidence{Tool: rule.Clean(c.Tool), Count: count, Threshold: d.opts.Threshold, Scope: ScopeTool}
			d.verdict = rule.Verdict{
				Stop:   true,
				Reason: ReasonRepeatedRefusal,
				Code:   Code,
				Detail: fmt.Sprintf("calls of %s were refused in %d steps since it last ran and the model keeps asking for it (threshold %d)",
					ev.Tool, ev.Count, ev.Threshold),
				Evidence: ev,
			}
			d.verdict.Feedback = ev.feedback()
		case d.opts.Warn && count == d.opts.Threshold-1 && count >= 2 && warn == nil && warnTool == nil:
			warnTool, warnCount = c, count
		}
	}
	switch {
	case d.verdict.Stop:
	case warn != nil:
		d.warn(warn.Tool, warnCount, fmt.Sprintf("the call %s(%s) was refused %d times; one more request for it stops the run (threshold %d)",
			rule.Clean(warn.Tool), warn.Preview(), warnCount, d.opts.Threshold))
	case warnTool != nil:
		d.warn(warnTool.Tool, warnCount, fmt.Sprintf("calls of %s were refused in %d steps since it last ran; one more request for it stops the run (threshold %d)",
			rule.Clean(warnTool.Tool), warnCount, d.opts.Threshold))
	}
}

// warn sets the verdict's warning: count refusals of tool.
func (d *state) warn(tool string, count int, detail string) {
	w := rule.Warning{
		Code: WarningCode, Tool: rule.Clean(tool), Value: float64(count), Limit: float64(d.opts.Threshold),
		Ratio: float64(count) / float64(d.opts.Threshold), Detail: detail,
	}
	w.Feedback = warningFeedback(w)
	d.verdict.Warnings = []rule.Warning{w}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (d *state) Verdict() rule.Verdict { return d.verdict }

// Preflight judges nothing: the refusals it counts come from other rules.
func (d *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// reset forgets the run.
func (d *state) reset() {
	d.calls, d.tools = nil, nil
	d.verdict = rule.Verdict{}
}

// saved is the JSON form of a run's state: the remembered calls, oldest
// refusal first, and the tools refused since they last ran.
type saved struct {
	Keys   []canonical.Sum `json:"keys"`
	Counts []int           `json:"counts"`
	// Tools are the hashes of the tools' names (canonical.HashString),
	// oldest refusal first, and ToolCounts their counts of steps. Absent
	// when none, as in the states of earlier versions.
	Tools      []canonical.Sum `json:"tools,omitempty"`
	ToolCounts []int           `json:"toolCounts,omitempty"`
}

// Snapshot returns the remembered calls and their counts as JSON, or null
// when there are none. The state holds no preview.
func (d *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if len(d.calls) == 0 {
		return []byte("null"), nil
	}
	s := saved{Keys: make([]canonical.Sum, len(d.calls)), Counts: make([]int, len(d.calls))}
	for i, r := range d.calls {
		s.Keys[i], s.Counts[i] = r.key, r.count
	}
	if len(d.tools) > 0 {
		s.Tools, s.ToolCounts = make([]canonical.Sum, len(d.tools)), make([]int, len(d.tools))
		for i, r := range d.tools {
			s.Tools[i], s.ToolCounts[i] = r.key, r.count
		}
	}
	return json.Marshal(s)
}

// Restore replaces the state by one that Snapshot returned: at most
// MaxCalls distinct keys, each with a count from 1 to 2^30, and as many
// distinct tools.
func (d *state) Restore(data []byte) error {
	var s *saved
	if err := rule.UnmarshalState(data, &s); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if s == nil {
		d.reset()
		return nil
	}
	if len(s.Keys) == 0 {
		return fmt.Errorf("%s: a state without calls (a fresh state is null)", Name)
	}
	calls, err := restored("call", s.Keys, s.Counts)
	if err != nil {
		return err
	}
	var tools []refused
	if s.Tools != nil || s.ToolCounts != nil {
		if len(s.Tools) == 0 {
			return fmt.Errorf("%s: an empty list of tools (it is absent then)", Name)
		}
		if tools, err = restored("tool", s.Tools, s.ToolCounts); err != nil {
			return err
		}
	}
	d.reset()
	d.calls, d.tools = calls, tools
	return nil
}

// restored checks and returns the what (call or tool) counts of a state.
func restored(what string, keys []canonical.Sum, counts []int) ([]refused, error) {
	switch {
	case len(keys) > MaxCalls:
		return nil, fmt.Errorf("%s: %d %ss, at most %d are kept", Name, len(keys), what, MaxCalls)
	case len(counts) != len(keys):
		return nil, fmt.Errorf("%s: %d counts for %d %ss", Name, len(counts), len(keys), what)
	}
	rs := make([]refused, len(keys))
	seen := make(map[canonical.Sum]bool, len(keys))
	for i, key := range keys {
		if seen[key] {
			return nil, fmt.Errorf("%s: a %s appears twice", Name, what)
		}
		seen[key] = true
		if c := counts[i]; c < 1 || c > maxCount {
			return nil, fmt.Errorf("%s: count %d out of range", Name, c)
		}
		rs[i] = refused{key: key, count: counts[i]}
	}
	return rs, nil
}

// CheckBounds checks the restored counts against the guard's counters:
// refusals come with steps, so a run without a step has none, and a tool
// counts at most one refusal per step. (A step may hold any number of
// refused calls, so the counts of calls have no other bound.)
func (d *state) CheckBounds(c rule.Counters) error {
	if len(d.calls) > 0 && c.Steps == 0 {
		return fmt.Errorf("%s: refusals without a step", Name)
	}
	for _, r := range d.tools {
		if r.count > c.Steps {
			return fmt.Errorf("%s: a tool refused in %d steps, but %d steps recorded", Name, r.count, c.Steps)
		}
	}
	return nil
}

// Summary describes the refusals.
type Summary struct {
	// Calls is the number of distinct refused calls remembered.
	Calls int `json:"calls"`
	// MaxCount is the most refusals of one call.
	MaxCount int `json:"maxCount"`
}

// Summary returns the refused calls and the most refusals of one (a
// Summary).
func (d *state) Summary() any {
	s := Summary{Calls: len(d.calls)}
	for _, r := range d.calls {
		s.MaxCount = max(s.MaxCount, r.count)
	}
	return s
}
