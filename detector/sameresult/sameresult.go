// Package sameresult stops a run in which the agent keeps changing the
// arguments of a call a little and keeps getting the same long result back:
// four searches that only add words to the query ("Roald Dahl", "Roald Dahl
// popular anecdote", ...) each return the same page summary; a page fetched
// again with a #section anchor returns the same page. The consecutive rule of
// package repeat misses such loops, because the arguments differ; the stall
// rule misses them too, because each new argument makes a new outcome.
//
// The rule looks at consecutive calls, across steps and in order. Calls of
// ignored tools (see rule.Options.Ignore) are left out, and steps without
// calls change nothing. A streak is calls of one tool that returned the same
// result (rule.Call.Result, the hash of the result alone), each with
// arguments other than those of the call before it in the streak. A call of
// another tool, a failed call (rule.Call.Failed), a call without a result
// and a call with another result end the streak and start the next one.
// Within the streak:
//
//   - a call with the same arguments as the one before it (the same
//     rule.Call.Key) neither counts nor ends the streak: that is package
//     repeat's case, and an exact retry between two rewordings is no
//     change of direction;
//   - several calls of one step count once (some harnesses put one combined
//     result on each of a step's calls);
//   - a result shorter than Options.MinBytes (rule.Call.ResultSize) never
//     counts: empty search results, "[]", acknowledgements ("Move made",
//     "Todos have been modified") come back the same from different
//     arguments in healthy sweeps all the time.
//
// The run stops when a streak reaches Options.Threshold calls (4 by
// default), and again on every later step that adds to it. The result is
// known only once the call has run, so the rule judges nothing in preflight.
//
// With Options.Warn, the step that brings the streak to Threshold-1 (when
// that is at least 2) carries a SAME_RESULT_WARNING.
//
// The work per call is one comparison of sums when the result differs from
// the one before; the size of a result is read only when it repeats, and
// once per streak. The state is a few sums and a count, whatever the length
// of the run.
package sameresult

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "sameresult"

// Code is the code of the rule's stops, and WarningCode that of its
// warnings.
const (
	Code        = "SAME_RESULT"
	WarningCode = "SAME_RESULT_WARNING"
)

// ReasonSameResult is the reason of the rule's stops.
const ReasonSameResult rule.Reason = "same-result"

// Priority is the rule's priority: after the repeat rules (the consecutive
// rule, the failure rule and the window rule, from rule.PriorityRepeat to
// rule.PriorityRepeat+50), which report identical calls and failures first,
// and before oscillation.
const Priority = rule.PriorityRepeat + 75

// Defaults of the options, and the largest of each.
//
// They come from the 190 labelled real runs testdata/traces had when they
// were chosen (they stop none of the 116 healthy runs of the 217 there now). MINT runs
// that loop search four times with a query that only grows, and get the same
// 1000-character summary four times. A healthy CTF run fetches three URLs and
// gets the same 900-byte page three times before it finds the flag: a
// threshold of 3 stops it, 4 does not. Healthy sweeps get the same short
// result from many different arguments: 4 queries with the same 287-byte
// empty JSON answer (ToolBench), 13 "[]" (tau2-bench), empty outputs of sed
// and cat (mini-SWE-agent), the same 163-byte acknowledgement of a to-do
// tool 10 times (Claude Code). 512 bytes leaves all of them out.
const (
	DefaultThreshold = 4
	DefaultMinBytes  = 512
	// MaxThreshold bounds the count, which snapshots hold.
	MaxThreshold = 1 << 20
	// MaxMinBytes is the largest MinBytes: 1 GiB.
	MaxMinBytes = 1 << 30
)

// Options tune the rule. The zero value is the default: the fourth call in a
// row of one tool that returns the same result of at least 512 bytes, with
// other arguments each time, stops the run.
type Options struct {
	// Threshold is how many calls in the streak stop the run: 0 means
	// DefaultThreshold, any other value must be from 2 to MaxThreshold.
	Threshold int `json:"threshold"`
	// MinBytes is the shortest result, in bytes of its text (see
	// rule.Call.ResultSize), that counts: 0 means DefaultMinBytes, any
	// other value must be from 1 to MaxMinBytes.
	MinBytes int `json:"minBytes"`
	// Warn adds a SAME_RESULT_WARNING to the step that brings the streak
	// to Threshold-1 (when that is at least 2).
	Warn bool `json:"warn,omitempty"`
}

// Evidence is the evidence of a stop.
type Evidence struct {
	// Tool is the name of the tool, as rule.Clean shows it (escaped, and
	// cut to 256 bytes).
	Tool string `json:"tool"`
	// Count is the number of calls in the streak, the reported call's
	// included.
	Count int `json:"count"`
	// Threshold is Options.Threshold.
	Threshold int `json:"threshold"`
	// MinBytes is Options.MinBytes.
	MinBytes int `json:"minBytes"`
	// ResultBytes is the size of the repeated result, in bytes of its
	// text.
	ResultBytes int `json:"resultBytes"`
	// ArgsPreview is a short preview of the reported call's arguments.
	ArgsPreview string `json:"argsPreview"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "the agent rewords its call, but the tool keeps returning the same"
}

// A Rule finds streaks of calls with the same result: validated options,
// never changed after New, so that one Rule serves any number of guards at
// once. Create it with New.
type Rule struct {
	opts Options
}

// Sizes of a streak's result, as far as the state knows it.
const (
	sizeUnknown = iota // not read yet
	sizeShort          // shorter than MinBytes: the streak never counts
	sizeLong           // at least MinBytes
)

// state is one run's: the streak of the newest calls.
type state struct {
	r *Rule

	// The streak: its tool (by name, or after a Restore by toolSum alone),
	// its result, the key of its newest call and the number of counted
	// calls. count is 0 when there is no streak (no call yet, or the last
	// call failed or had no result); 1 when the streak is one call.
	tool    string
	toolSum canonical.Sum // hash of tool; set by Restore, or by Snapshot when tool is known
	named   bool          // tool is known (not only toolSum)
	result  canonical.Sum
	key     canonical.Sum
	count   int
	size    int // sizeUnknown, sizeShort or sizeLong (never saved: a Restore reads it again)
	verdict rule.Verdict
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
	_ rule.Bounded    = (*state)(nil)
)

// New returns a rule with these options, or an error (a
// *rule.OptionError) for every invalid option.
func New(o Options) (*Rule, error) {
	var errs []error
	if o.Threshold != 0 && (o.Threshold < 2 || o.Threshold > MaxThreshold) {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "Threshold",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 2 to %d, not %d", DefaultThreshold, MaxThreshold, o.Threshold)})
	}
	if o.MinBytes < 0 || o.MinBytes > MaxMinBytes {
		errs = append(errs, &rule.OptionError{Detector: Name, Field: "MinBytes",
			Err: fmt.Errorf("must be 0 (the default, %d) or from 1 to %d, not %d", DefaultMinBytes, MaxMinBytes, o.MinBytes)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.MinBytes == 0 {
		o.MinBytes = DefaultMinBytes
	}
	return &Rule{opts: o}, nil
}

// NewState returns the state of a fresh run: no streak.
func (d *Rule) NewState() rule.State { return &state{r: d} }

// Name returns "sameresult".
func (d *Rule) Name() string { return Name }

// Priority returns Priority.
func (d *Rule) Priority() int { return Priority }

// Options returns the options with the defaults filled in.
func (d *Rule) Options() any { return d.opts }

// toolKey returns the hash of a tool's name, never the zero Sum.
func toolKey(name string) canonical.Sum {
	h := canonical.HashString(name)
	if h == (canonical.Sum{}) {
		h[0] = 1
	}
	return h
}

// sameTool reports whether c is a call of the streak's tool. After a
// Restore the state knows the tool by its hash alone, until the first call
// of it.
func (s *state) sameTool(c *rule.Call) bool {
	if s.named {
		return c.Tool == s.tool
	}
	if toolKey(c.Tool) != s.toolSum {
		return false
	}
	s.tool, s.named = c.Tool, true
	return true
}

// start makes c, a call that ended the streak, the first call of the next
// one (or of none, when it failed or has no result).
func (s *state) start(c *rule.Call) {
	s.count, s.size = 0, sizeUnknown
	s.tool, s.named, s.toolSum = "", false, canonical.Sum{}
	if c.Failed || c.Result == (canonical.Sum{}) {
		return
	}
	s.tool, s.named, s.result, s.key, s.count = c.Tool, true, c.Result, c.Key, 1
}

// long reports whether the streak's result, which c returned again, is at
// least MinBytes long, reading its size only the first time.
func (s *state) long(c *rule.Call) bool {
	if s.size == sizeUnknown {
		s.size = sizeShort
		if c.ResultSize() >= s.r.opts.MinBytes {
			s.size = sizeLong
		}
	}
	return s.size == sizeLong
}

// Observe adds the step's calls to the streak, one by one.
func (s *state) Observe(f *rule.Facts) {
	s.verdict = rule.Verdict{}
	counted := false // a call of this step counted, or started the streak
	var last *rule.Call
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		switch {
		case s.count == 0 || c.Result != s.result || c.Failed || !s.sameTool(c):
			// The common path: another result ends the streak.
			s.start(c)
			counted = s.count > 0
			continue
		case c.Key == s.key:
			continue // the same call again: package repeat's case
		}
		s.key = c.Key
		if counted || !s.long(c) {
			continue // one count per step; a short result never counts
		}
		counted = true
		if s.count < MaxThreshold {
			s.count++
		}
		last = c
	}
	if last == nil {
		return
	}
	t := s.r.opts.Threshold
	switch {
	case s.count >= t:
		ev := Evidence{Tool: rule.Clean(last.Tool), Count: s.count, Threshold: t, MinBytes: s.r.opts.MinBytes,
			ResultBytes: last.ResultSize(), ArgsPreview: last.Preview()}
		v := rule.Verdict{
			Stop:   true,
			Reason: ReasonSameResult,
			Code:   Code,
			Detail: fmt.Sprintf("tool %s returned the same result of %d bytes %d times in a row for other arguments, the last %s (threshold %d)",
				rule.Quote(last.Tool), ev.ResultBytes, ev.Count, ev.ArgsPreview, t),
			Evidence: ev,
		}
		v.Feedback = ev.feedback()
		s.verdict = v
	case s.r.opts.Warn && s.count == t-1 && s.count >= 2:
		w := rule.Warning{
			Code: WarningCode, Tool: rule.Clean(last.Tool), Value: float64(s.count), Limit: float64(t),
			Ratio: float64(s.count) / float64(t),
			Detail: fmt.Sprintf("tool %s returned the same result %d times in a row for other arguments; %d stop the run",
				rule.Quote(last.Tool), s.count, t),
		}
		w.Feedback = warningFeedback(w)
		s.verdict.Warnings = []rule.Warning{w}
	}
}

// Verdict returns the stop (or warning) found by the last Observe, if any.
func (s *state) Verdict() rule.Verdict { return s.verdict }

// Preflight judges nothing: a result is known only once the call has run.
func (s *state) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// reset forgets the run, for a Restore of null.
func (s *state) reset() {
	*s = state{r: s.r}
}

// saved is the JSON form of a run's state.
type saved struct {
	// Tool is the hash of the streak's tool name (never the name).
	Tool canonical.Sum `json:"tool"`
	// Result is the hash of the streak's result.
	Result canonical.Sum `json:"result"`
	// Key is the key of the streak's newest call.
	Key canonical.Sum `json:"key"`
	// Count is the number of counted calls in the streak, from 1.
	Count int `json:"count"`
}

// Snapshot returns the streak as JSON, or null when there is none. The state
// holds the tool's name only as a hash, and no preview, so redaction
// changes nothing.
func (s *state) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if s.count == 0 {
		return []byte("null"), nil
	}
	tool := s.toolSum
	if s.named {
		tool = toolKey(s.tool)
	}
	return json.Marshal(saved{Tool: tool, Result: s.result, Key: s.key, Count: s.count})
}

// Restore replaces the state by one that Snapshot returned: a count from 1
// to MaxThreshold and sums that are not zero.
func (s *state) Restore(data []byte) error {
	var in *saved
	if err := rule.UnmarshalState(data, &in); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if in == nil {
		s.reset()
		return nil
	}
	switch zero := (canonical.Sum{}); {
	case in.Count < 1 || in.Count > MaxThreshold:
		return fmt.Errorf("%s: count %d out of range (a fresh state is null)", Name, in.Count)
	case in.Tool == zero || in.Result == zero || in.Key == zero:
		return fmt.Errorf("%s: a streak without its tool, result or key", Name)
	}
	s.reset()
	s.toolSum, s.result, s.key, s.count = in.Tool, in.Result, in.Key, in.Count
	return nil
}

// Summary describes the rule's state.
type Summary struct {
	// Count is the number of calls in the current streak (0 when there is
	// none).
	Count int `json:"count"`
}

// Summary returns the rule's state (a Summary).
func (s *state) Summary() any { return Summary{Count: s.count} }

// CheckBounds checks the restored state against the guard's counters: the
// streak counts at most one call per step, of the calls recorded.
func (s *state) CheckBounds(c rule.Counters) error {
	if s.count > c.ToolCalls {
		return fmt.Errorf("%s: %d calls in the streak, but %d calls recorded", Name, s.count, c.ToolCalls)
	}
	if s.count > c.Steps {
		return fmt.Errorf("%s: %d calls in the streak, but %d steps recorded", Name, s.count, c.Steps)
	}
	return nil
}
