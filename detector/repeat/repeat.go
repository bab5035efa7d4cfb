// Package repeat stops a run when the agent calls the same tool with the same
// arguments several times in a row.
//
// The detector reads the run's tool calls as one sequence, across steps and in
// order. Calls of ignored tools (see guard.Options.Ignore) are removed from it
// first, so they neither extend nor break a run, and steps without calls
// change nothing. Two calls are the same call when their tool names and
// canonical arguments are equal (guard.Call.Key). The detector stops when the
// run of same calls at the end of the sequence reaches the threshold: with
// the default threshold of 3, the third call in a row stops, the second does
// not. A run that goes on past the threshold stops again on every later step
// that extends it, with a growing count.
//
// Within a step, calls are judged one by one: the first call whose run
// reaches its threshold is the one reported, even when a later call of the
// same step ends the run.
//
// Some tools are legitimately called again with the same arguments, such as a
// job-status tool that is polled until the job ends. For those, and for every
// tool when Options.RequireIdenticalResults is set, calls are compared by
// their outcome (arguments plus result or error, guard.Call.Outcome), so a
// run continues only while the results stay the same. Calls without a result
// compare equal.
//
// In preflight, only the default rule is judged: the call that would be the
// Nth same call in a row is refused. Rules that compare results cannot be
// judged before the call has run, so with RequireIdenticalResults nothing is
// refused, and a call of a polling tool breaks the simulated run.
//
// With Options.Warn, a step that leaves the run one call short of its
// threshold carries a REPEAT_WARNING (Tool: the tool; Value: the run's
// length; Limit: the threshold), with feedback that tells the model that
// one more identical call will stop the run. A run of one call never warns,
// so a threshold of 2 gives no warnings.
package repeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/guard"
)

// Name is the detector's name: the key of its state in snapshots.
const Name = "repeat"

// Code is the code of the detector's stops.
const Code = "REPEATED_TOOL_CALL"

// DefaultThreshold is the threshold used when Options.Threshold is zero.
const DefaultThreshold = 3

// MaxStepIndexes is the most step indexes the evidence lists: those of the
// newest steps of the run.
const MaxStepIndexes = 64

// Options tune the detector. The zero value is the reference's default: three
// same calls in a row stop, results are not compared, failed calls count.
type Options struct {
	// Threshold is how many same calls in a row stop the run: 0 means 3,
	// any other value must be at least 2.
	Threshold int `json:"threshold"`
	// RequireIdenticalResults compares calls by their outcome (arguments
	// plus result or error) instead of their arguments alone.
	RequireIdenticalResults bool `json:"requireIdenticalResults"`
	// IgnoreErrors removes failed calls from the sequence before counting:
	// they neither extend nor break a run.
	IgnoreErrors bool `json:"ignoreErrors"`
	// Tools holds per-tool policies, by tool name. Tools not listed follow
	// the options above.
	Tools map[string]ToolPolicy `json:"tools,omitempty"`
	// Warn adds a REPEAT_WARNING to a step that leaves the run one call
	// short of its threshold.
	Warn bool `json:"warn,omitempty"`
}

// WarningCode is the code of the detector's warnings.
const WarningCode = feedback.CodeRepeatWarning

// A ToolPolicy tunes the detector for one tool.
type ToolPolicy struct {
	// RepeatThreshold replaces Options.Threshold for runs of this tool: 0
	// means Options.Threshold, any other value must be at least 2.
	RepeatThreshold int `json:"repeatThreshold"`
	// Polling marks a tool that may be called with the same arguments
	// while its results change: its calls are compared by outcome.
	Polling bool `json:"polling"`
	// MaxIdenticalResults is, for a polling tool, how many identical
	// outcomes in a row stop the run: 0 means the tool's RepeatThreshold
	// (and, if that is zero too, Options.Threshold); any other value must
	// be at least 2. It must be zero when Polling is false.
	MaxIdenticalResults int `json:"maxIdenticalResults"`
}

// Evidence is the evidence of a stop (and of a refusal in preflight).
type Evidence struct {
	// Tool is the name of the repeated tool, as guard.Clean shows it
	// (escaped, and cut to 256 bytes).
	Tool string `json:"tool"`
	// ArgsPreview is a short preview of the repeated arguments.
	ArgsPreview string `json:"argsPreview"`
	// Count is the length of the run at the reported call.
	Count int `json:"count"`
	// Threshold is the threshold that applied.
	Threshold int `json:"threshold"`
	// StepIndexes are the 0-based indexes of the steps that hold the run's
	// calls, ascending, at most the newest MaxStepIndexes of them.
	StepIndexes []int `json:"stepIndexes"`
	// IdenticalResults reports whether outcomes, not only arguments, were
	// compared.
	IdenticalResults bool `json:"identicalResults"`
}

// rule is how the calls of one tool are judged.
type rule struct {
	threshold int
	outcomes  bool // compare Call.Outcome instead of Call.Key
}

// A Detector finds runs of same calls. Create it with New.
type Detector struct {
	guard.Owned // one guard at a time

	opts  Options // normalised
	def   rule    // the rule of tools without a policy
	rules map[string]rule

	// The run at the end of the sequence: its signature (a key or an
	// outcome), its length and the steps it spans.
	sig   canonical.Sum
	count int
	steps indexRing

	verdict guard.Verdict
}

var (
	_ guard.Detector   = (*Detector)(nil)
	_ guard.Summarizer = (*Detector)(nil)
	_ guard.Bounded    = (*Detector)(nil)
)

// New returns a detector with these options, or an error (a
// *guard.OptionError) for every invalid option.
func New(o Options) (*Detector, error) {
	var errs []error
	bad := func(field string, format string, args ...any) {
		errs = append(errs, &guard.OptionError{Detector: Name, Field: field, Err: fmt.Errorf(format, args...)})
	}
	if o.Threshold != 0 && o.Threshold < 2 {
		bad("Threshold", "must be 0 (the default, %d) or at least 2, not %d", DefaultThreshold, o.Threshold)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Tools)) {
		p := o.Tools[name]
		field := fmt.Sprintf("Tools[%q].", name)
		if p.RepeatThreshold != 0 && p.RepeatThreshold < 2 {
			bad(field+"RepeatThreshold", "must be 0 (the global threshold) or at least 2, not %d", p.RepeatThreshold)
		}
		if p.MaxIdenticalResults != 0 && p.MaxIdenticalResults < 2 {
			bad(field+"MaxIdenticalResults", "must be 0 (the tool's threshold) or at least 2, not %d", p.MaxIdenticalResults)
		}
		if p.MaxIdenticalResults != 0 && !p.Polling {
			bad(field+"MaxIdenticalResults", "applies only to a polling tool (set Polling)")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	d := &Detector{def: rule{threshold: o.Threshold, outcomes: o.RequireIdenticalResults}}
	tools := make(map[string]ToolPolicy, len(o.Tools))
	for name, p := range o.Tools {
		if p.RepeatThreshold == 0 {
			p.RepeatThreshold = o.Threshold
		}
		if p.Polling && p.MaxIdenticalResults == 0 {
			p.MaxIdenticalResults = p.RepeatThreshold
		}
		if !p.Polling && p.RepeatThreshold == o.Threshold {
			continue // the same as having no policy
		}
		tools[name] = p
		r := rule{threshold: p.RepeatThreshold, outcomes: o.RequireIdenticalResults || p.Polling}
		if p.Polling {
			r.threshold = p.MaxIdenticalResults
		}
		if d.rules == nil {
			d.rules = make(map[string]rule)
		}
		d.rules[name] = r
	}
	o.Tools = nil
	if len(tools) > 0 {
		o.Tools = tools
	}
	d.opts = o
	return d, nil
}

// Name returns "repeat".
func (d *Detector) Name() string { return Name }

// Priority returns guard.PriorityRepeat.
func (d *Detector) Priority() int { return guard.PriorityRepeat }

// Options returns the options with every default filled in: zero thresholds
// replaced by the ones that apply, and tool policies that change nothing
// left out. Equal behaviour gives equal options.
func (d *Detector) Options() any {
	o := d.opts
	o.Tools = maps.Clone(o.Tools)
	return o
}

// ruleFor returns the rule for calls of a tool.
func (d *Detector) ruleFor(tool string) rule {
	if d.rules != nil {
		if r, ok := d.rules[tool]; ok {
			return r
		}
	}
	return d.def
}

// Observe adds the step's calls to the sequence and judges them one by one.
func (d *Detector) Observe(f *guard.Facts) {
	d.verdict = guard.Verdict{}
	var last *guard.Call // the step's last call in the sequence
	var lastRule rule
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored || d.opts.IgnoreErrors && c.Failed {
			continue
		}
		r := d.ruleFor(c.Tool)
		last, lastRule = c, r
		sig := c.Key
		if r.outcomes {
			sig = c.Outcome
		}
		if d.count > 0 && sig == d.sig {
			if d.count < maxCount {
				d.count++
			}
		} else {
			d.sig, d.count = sig, 1
			d.steps.reset()
		}
		d.steps.add(f.Index)
		if !d.verdict.Stop && d.count >= r.threshold {
			d.verdict = d.stop(c, d.count, r, d.steps.appendTo(nil), guard.PhaseCheck)
		}
	}
	if d.opts.Warn && last != nil && !d.verdict.Stop && d.count >= 2 && d.count == lastRule.threshold-1 {
		d.verdict.Warnings = []guard.Warning{d.warning(last, lastRule)}
	}
}

// warning builds the warning for a run of d.count calls like c, one short of
// r's threshold.
func (d *Detector) warning(c *guard.Call, r rule) guard.Warning {
	same := "the same arguments"
	if r.outcomes {
		same = "the same arguments and the same outcome"
	}
	w := guard.Warning{
		Code: WarningCode, Tool: guard.Clean(c.Tool), Value: float64(d.count), Limit: float64(r.threshold),
		Ratio: float64(d.count) / float64(r.threshold),
		Detail: fmt.Sprintf("tool %s called %d times in a row with %s %s; one more stops the run (threshold %d)",
			guard.Quote(c.Tool), d.count, same, c.Preview(), r.threshold),
	}
	w.Feedback = feedback.ForWarning(w)
	return w
}

// maxCount caps a run's length, so that it never overflows.
const maxCount = 1 << 62

// Verdict returns the stop found by the last Observe, if any.
func (d *Detector) Verdict() guard.Verdict { return d.verdict }

// stop builds a stop verdict for call c with this count, rule and steps.
func (d *Detector) stop(c *guard.Call, count int, r rule, steps []int, phase guard.Phase) guard.Verdict {
	ev := Evidence{
		Tool: guard.Clean(c.Tool), ArgsPreview: c.Preview(), Count: count, Threshold: r.threshold,
		StepIndexes: steps, IdenticalResults: r.outcomes,
	}
	same := "the same arguments"
	if r.outcomes {
		same = "the same arguments and the same outcome"
	}
	v := guard.Verdict{
		Stop:   true,
		Reason: guard.ReasonRepeatedToolCall,
		Code:   Code,
		Detail: fmt.Sprintf("tool %s called %d times in a row with %s %s (threshold %d)",
			guard.Quote(c.Tool), count, same, ev.ArgsPreview, r.threshold),
		Evidence: ev,
	}
	v.Feedback = feedback.For(v, phase)
	return v
}

// Preflight refuses the first of the calls that would be the Nth same call in
// a row under the default rule. It never refuses on rules that compare
// results. It changes nothing.
func (d *Detector) Preflight(f *guard.Facts) guard.Verdict {
	if d.opts.RequireIdenticalResults {
		return guard.Verdict{}
	}
	sig, count, fresh := d.sig, d.count, false
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		r := d.ruleFor(c.Tool)
		if r.outcomes {
			// A polling tool's outcome is unknown before it runs: the
			// call cannot be judged, and it breaks the run.
			count = 0
			continue
		}
		if count > 0 && c.Key == sig {
			if count < maxCount {
				count++
			}
		} else {
			sig, count, fresh = c.Key, 1, true
		}
		if count >= r.threshold {
			var steps []int
			if !fresh {
				steps = d.steps.appendTo(make([]int, 0, d.steps.n+1))
			}
			steps = appendIndex(steps, f.Index)
			return d.stop(c, count, r, steps, guard.PhasePreflight)
		}
	}
	return guard.Verdict{}
}

// appendIndex appends i to ascending distinct indexes, keeping at most the
// newest MaxStepIndexes.
func appendIndex(steps []int, i int) []int {
	if n := len(steps); n > 0 && steps[n-1] == i {
		return steps
	}
	steps = append(steps, i)
	if len(steps) > MaxStepIndexes {
		steps = steps[len(steps)-MaxStepIndexes:]
	}
	return steps
}

// Reset forgets the run.
func (d *Detector) Reset() {
	d.sig, d.count = canonical.Sum{}, 0
	d.steps.reset()
	d.verdict = guard.Verdict{}
}

// state is the JSON form of the detector's state.
type state struct {
	// Sig is the signature of the run: a call's key or, when outcomes are
	// compared, its outcome.
	Sig   canonical.Sum `json:"sig"`
	Count int           `json:"count"`
	Steps []int         `json:"steps"`
}

// Snapshot returns the current run as JSON, or null when there is none. The
// state holds no preview, so redaction changes nothing.
func (d *Detector) Snapshot(guard.SnapshotOptions) ([]byte, error) {
	if d.count == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(state{Sig: d.sig, Count: d.count, Steps: d.steps.appendTo(nil)})
}

// Restore replaces the state by one that Snapshot returned.
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
	case s.Count < 1 || s.Count > maxCount:
		return fmt.Errorf("%s: run length %d out of range", Name, s.Count)
	case len(s.Steps) == 0:
		return fmt.Errorf("%s: a run without step indexes", Name)
	case len(s.Steps) > MaxStepIndexes:
		return fmt.Errorf("%s: %d step indexes (at most %d)", Name, len(s.Steps), MaxStepIndexes)
	case len(s.Steps) > s.Count:
		return fmt.Errorf("%s: %d step indexes for a run of %d calls", Name, len(s.Steps), s.Count)
	}
	for i, x := range s.Steps {
		if x < 0 || i > 0 && x <= s.Steps[i-1] {
			return fmt.Errorf("%s: step indexes are not ascending non-negative numbers", Name)
		}
	}
	d.Reset()
	d.sig, d.count = s.Sig, s.Count
	for _, x := range s.Steps {
		d.steps.add(x)
	}
	return nil
}

// CheckBounds checks the restored run against the guard's counters: its
// calls are among those recorded, and so are its steps.
func (d *Detector) CheckBounds(c guard.Counters) error {
	if d.count > c.ToolCalls {
		return fmt.Errorf("%s: a run of %d calls, but %d calls recorded", Name, d.count, c.ToolCalls)
	}
	if steps := d.steps.appendTo(nil); len(steps) > 0 && steps[len(steps)-1] >= c.Steps {
		return fmt.Errorf("%s: step index %d, but %d steps recorded", Name, steps[len(steps)-1], c.Steps)
	}
	return nil
}

// Summary describes the current run: its length and the steps it spans.
type Summary struct {
	// Count is the length of the run of same calls at the end of the
	// sequence (0 before the first call).
	Count int `json:"count"`
	// StepIndexes are the indexes of the steps holding the run's calls.
	StepIndexes []int `json:"stepIndexes"`
}

// Summary returns the current run (a Summary).
func (d *Detector) Summary() any {
	return Summary{Count: d.count, StepIndexes: d.steps.appendTo([]int{})}
}

// indexRing keeps the newest MaxStepIndexes distinct step indexes of a run,
// in the order they were added.
type indexRing struct {
	buf      [MaxStepIndexes]int
	start, n int
}

func (r *indexRing) reset() { r.start, r.n = 0, 0 }

// add appends i unless it is already the newest index.
func (r *indexRing) add(i int) {
	if r.n > 0 && r.buf[(r.start+r.n-1)%MaxStepIndexes] == i {
		return
	}
	if r.n < MaxStepIndexes {
		r.buf[(r.start+r.n)%MaxStepIndexes] = i
		r.n++
		return
	}
	r.buf[r.start] = i
	r.start = (r.start + 1) % MaxStepIndexes
}

// appendTo appends the indexes, oldest first, to dst.
func (r *indexRing) appendTo(dst []int) []int {
	for k := 0; k < r.n; k++ {
		dst = append(dst, r.buf[(r.start+k)%MaxStepIndexes])
	}
	return dst
}
