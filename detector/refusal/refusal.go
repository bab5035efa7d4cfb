// Package refusal stops a run whose model keeps asking for a call that the
// guard refused. A refused call does not run, so the rules that count calls
// never see it again; without this rule a model that insists only meets the
// step limit (48 refusals in a row were measured on a real run).
//
// The refused calls of a step are given in guard.Step.Refused: guard.Turn
// fills it, guard.Guard.StartCall records each refusal, and a hand-written
// loop that preflights its calls puts the refused ones there. The detector
// counts refusals per call (tool name plus canonical arguments,
// guard.Call.Key) over the run, and stops when one call has been refused
// Options.Threshold times. It remembers the newest MaxCalls refused calls.
//
// It judges nothing in preflight: the refusal it counts comes from another
// rule. With Options.Warn, a step whose refusal brings a count to one short
// of the threshold (from 2) carries a REPEATED_REFUSAL_WARNING.
package refusal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/guard"
)

// Name is the detector's name: the key of its state in snapshots.
const Name = "refusal"

// Code is the code of the detector's stops, and WarningCode that of its
// warnings.
const (
	Code        = feedback.CodeRepeatedRefusal
	WarningCode = feedback.CodeRepeatedRefusalWarning
)

// ReasonRepeatedRefusal is the reason of the detector's stops.
const ReasonRepeatedRefusal guard.Reason = "repeated-refusal"

// Priority is the detector's priority: after the tool limit, before the
// rules about calls that ran.
const Priority = guard.PriorityToolLimit + 50

// DefaultThreshold is the number of refusals of one call that stop the run.
// A model that is told a call was not run and why, and asks for it again,
// once and then twice, is not going to change course.
const DefaultThreshold = 3

// MaxCalls is how many refused calls the detector remembers: the newest.
const MaxCalls = 64

// maxCount caps a count, so that it never overflows.
const maxCount = 1 << 30

// Options tune the detector. The zero value is the default: the third
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
	// ArgsPreview is a short preview of its arguments.
	ArgsPreview string `json:"argsPreview"`
	// Count is the number of times the call was refused.
	Count int `json:"count"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
}

// refused is one remembered call and its count.
type refused struct {
	key   canonical.Sum
	count int
}

// A Detector counts refusals per call. Create it with New.
type Detector struct {
	guard.Owned // one guard at a time

	opts  Options
	calls []refused // oldest refusal first, at most MaxCalls

	verdict guard.Verdict
}

var (
	_ guard.Detector   = (*Detector)(nil)
	_ guard.Summarizer = (*Detector)(nil)
	_ guard.Bounded    = (*Detector)(nil)
)

// New returns a detector with these options, or an error (a
// *guard.OptionError) for an invalid option.
func New(o Options) (*Detector, error) {
	if o.Threshold != 0 && o.Threshold < 2 {
		return nil, &guard.OptionError{Detector: Name, Field: "Threshold",
			Err: fmt.Errorf("must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)}
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	return &Detector{opts: o}, nil
}

// Name returns "refusal".
func (d *Detector) Name() string { return Name }

// Priority returns Priority.
func (d *Detector) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Detector) Options() any { return d.opts }

// add counts one refusal of key and returns the call's count; the call
// becomes the newest.
func (d *Detector) add(key canonical.Sum) int {
	i := slices.IndexFunc(d.calls, func(r refused) bool { return r.key == key })
	r := refused{key: key}
	if i >= 0 {
		r = d.calls[i]
		d.calls = slices.Delete(d.calls, i, i+1)
	} else if len(d.calls) == MaxCalls {
		d.calls = slices.Delete(d.calls, 0, 1)
	}
	r.count = min(r.count+1, maxCount)
	d.calls = append(d.calls, r)
	return r.count
}

// Observe counts the step's refused calls.
func (d *Detector) Observe(f *guard.Facts) {
	d.verdict = guard.Verdict{}
	var warn *guard.Call
	warnCount := 0
	for i := range f.Refused {
		c := &f.Refused[i]
		count := d.add(c.Key)
		switch {
		case d.verdict.Stop:
		case count >= d.opts.Threshold:
			ev := Evidence{Tool: guard.Clean(c.Tool), ArgsPreview: c.Preview(), Count: count, Threshold: d.opts.Threshold}
			d.verdict = guard.Verdict{
				Stop:   true,
				Reason: ReasonRepeatedRefusal,
				Code:   Code,
				Detail: fmt.Sprintf("the call %s(%s) was refused %d times and the model keeps asking for it (threshold %d)",
					guard.Clean(c.Tool), ev.ArgsPreview, ev.Count, ev.Threshold),
				Evidence: ev,
			}
			d.verdict.Feedback = feedback.For(d.verdict, guard.PhaseCheck)
		case d.opts.Warn && count == d.opts.Threshold-1 && count >= 2 && warn == nil:
			warn, warnCount = c, count
		}
	}
	if warn != nil && !d.verdict.Stop {
		w := guard.Warning{
			Code: WarningCode, Tool: guard.Clean(warn.Tool), Value: float64(warnCount), Limit: float64(d.opts.Threshold),
			Ratio: float64(warnCount) / float64(d.opts.Threshold),
			Detail: fmt.Sprintf("the call %s(%s) was refused %d times; one more request for it stops the run (threshold %d)",
				guard.Clean(warn.Tool), warn.Preview(), warnCount, d.opts.Threshold),
		}
		w.Feedback = feedback.ForWarning(w)
		d.verdict.Warnings = []guard.Warning{w}
	}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (d *Detector) Verdict() guard.Verdict { return d.verdict }

// Preflight judges nothing: the refusals it counts come from other rules.
func (d *Detector) Preflight(*guard.Facts) guard.Verdict { return guard.Verdict{} }

// Reset forgets the run.
func (d *Detector) Reset() {
	d.calls = nil
	d.verdict = guard.Verdict{}
}

// state is the JSON form of the detector's state: the remembered calls,
// oldest refusal first.
type state struct {
	Keys   []canonical.Sum `json:"keys"`
	Counts []int           `json:"counts"`
}

// Snapshot returns the remembered calls and their counts as JSON, or null
// when there are none. The state holds no preview.
func (d *Detector) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	if len(d.calls) == 0 {
		return []byte("null"), nil
	}
	s := state{Keys: make([]canonical.Sum, len(d.calls)), Counts: make([]int, len(d.calls))}
	for i, r := range d.calls {
		s.Keys[i], s.Counts[i] = r.key, r.count
	}
	return json.Marshal(s)
}

// Restore replaces the state by one that Snapshot returned: at most
// MaxCalls distinct keys, each with a count from 1 to 2^30.
func (d *Detector) Restore(data []byte) error {
	var s *state
	if err := guard.UnmarshalState(data, &s); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if s == nil {
		d.Reset()
		return nil
	}
	switch {
	case len(s.Keys) == 0:
		return fmt.Errorf("%s: a state without calls (a fresh state is null)", Name)
	case len(s.Keys) > MaxCalls:
		return fmt.Errorf("%s: %d calls, at most %d are kept", Name, len(s.Keys), MaxCalls)
	case len(s.Counts) != len(s.Keys):
		return fmt.Errorf("%s: %d counts for %d calls", Name, len(s.Counts), len(s.Keys))
	}
	calls := make([]refused, len(s.Keys))
	seen := make(map[canonical.Sum]bool, len(s.Keys))
	for i, key := range s.Keys {
		if seen[key] {
			return errors.New(Name + ": a call appears twice")
		}
		seen[key] = true
		if c := s.Counts[i]; c < 1 || c > maxCount {
			return fmt.Errorf("%s: count %d out of range", Name, c)
		}
		calls[i] = refused{key: key, count: s.Counts[i]}
	}
	d.Reset()
	d.calls = calls
	return nil
}

// CheckBounds checks the restored counts against the guard's counters:
// refusals come with steps, so a run without a step has none. (A step may
// hold any number of refused calls, so the counts have no other bound.)
func (d *Detector) CheckBounds(c guard.Counters) error {
	if len(d.calls) > 0 && c.Steps == 0 {
		return fmt.Errorf("%s: refusals without a step", Name)
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
func (d *Detector) Summary() any {
	s := Summary{Calls: len(d.calls)}
	for _, r := range d.calls {
		s.MaxCount = max(s.MaxCount, r.count)
	}
	return s
}
