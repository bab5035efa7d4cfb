// Package toollimit is the per-tool call cap of loopguard: it counts the
// calls of each capped tool across the run and stops the run on the first
// call beyond the tool's cap.
//
// With a cap of 3 the first three calls go on and the fourth stops the run; a
// cap of 0 forbids the tool. Every call counts, whatever its arguments or
// result. Calls of tools the guard ignores (its Config.Ignore) are never
// counted. Once a tool is over its cap, every later step that calls it stops
// again; steps that do not call it go on.
//
// In preflight, the proposed calls are counted in order on top of the calls
// recorded so far, and the first call beyond a cap is refused.
//
// With Options.Warn, a step whose calls bring a tool to exactly its cap
// (of at least 1) carries a TOOL_CALL_CAP_WARNING for that tool (Tool: the
// tool; Value: its calls; Limit: the count that stops, the cap plus one),
// with feedback telling the model that one more call of it stops the run.
package toollimit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name, the key of its state in snapshots.
const Name = "toollimit"

// Code is the code of the rule's stops.
const Code = "TOOL_CALL_CAP"

// ReasonToolLimit is the reason of the rule's stops.
const ReasonToolLimit rule.Reason = "tool-limit"

// MaxToolNameLen is the longest tool name a cap may be set for, in bytes:
// the state names the capped tools, and names in snapshots are at most this
// long.
const MaxToolNameLen = 256

// Options tune the rule. The zero value sets no caps.
type Options struct {
	// MaxCalls is the most calls of each tool in one run, by tool name
	// (case-sensitive). A cap must be 0 or more; 0 forbids the tool.
	// Tools that are not listed have no cap. A name must be valid UTF-8
	// and at most MaxToolNameLen bytes long.
	MaxCalls map[string]int `json:"maxCalls"`
	// Warn adds a TOOL_CALL_CAP_WARNING to a step whose calls bring a
	// tool to exactly its cap.
	Warn bool `json:"warn,omitempty"`
}

// WarningCode is the code of the rule's warnings.
const WarningCode = "TOOL_CALL_CAP_WARNING"

// Evidence is the evidence of a stop.
type Evidence struct {
	// Tool is the tool's name, as rule.Clean shows it
	// (escaped, and cut to 256 bytes).
	Tool string `json:"tool"`
	// Calls is the number of calls of the tool in the run, counting the
	// call that went over the cap.
	Calls int `json:"calls"`
	// Limit is the tool's cap.
	Limit int `json:"limit"`
}

// Hint says what such a stop usually means, for guard.Explain (a
// [rule.Hinter]).
func (Evidence) Hint() string {
	return "a tool was called more often than its cap allows"
}

// Count is the summary of one capped tool.
type Count struct {
	// Calls is the number of calls of the tool so far.
	Calls int `json:"calls"`
	// Limit is the tool's cap.
	Limit int `json:"limit"`
}

// tool is one capped tool.
type tool struct {
	name  string
	limit int
}

// Rule is the per-tool call cap: validated options, never changed after New,
// so that one Rule serves any number of guards at once. Create it with New.
type Rule struct {
	tools []tool         // sorted by name
	index map[string]int // name -> position in tools
	warn  bool
}

// state is one run's: the calls of each capped tool and the last step's hits.
type state struct {
	r      *Rule
	calls  []int    // aligned with r.tools
	hit    bool     // the last step went over a cap
	ev     Evidence // and this is the first call that did,
	hitAt  int      // of the tool at this position
	full   []int    // the tools (positions) the last step brought to their cap
	counts []int    // scratch for preflight
}

var (
	_ rule.Rule       = (*Rule)(nil)
	_ rule.Saver      = (*state)(nil)
	_ rule.Summarizer = (*state)(nil)
	_ rule.Bounded    = (*state)(nil)
)

// New returns the rule with these options, or an error (a
// *rule.OptionError) naming every invalid cap.
func New(o Options) (*Rule, error) {
	d := &Rule{index: make(map[string]int, len(o.MaxCalls)), warn: o.Warn}
	var errs []error
	for name, limit := range o.MaxCalls {
		switch {
		case limit < 0:
			errs = append(errs, &rule.OptionError{Detector: Name, Field: fieldName(name),
				Err: fmt.Errorf("cap %d is negative", limit)})
		case len(name) > MaxToolNameLen:
			errs = append(errs, &rule.OptionError{Detector: Name, Field: fieldName(name[:32] + "..."),
				Err: fmt.Errorf("tool name is longer than %d bytes", MaxToolNameLen)})
		case !utf8.ValidString(name):
			errs = append(errs, &rule.OptionError{Detector: Name, Field: fieldName(name),
				Err: errors.New("tool name is not valid UTF-8")})
		default:
			d.tools = append(d.tools, tool{name: name, limit: limit})
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(d.tools, func(a, b tool) int { return cmp.Compare(a.name, b.name) })
	for i, t := range d.tools {
		d.index[t.name] = i
	}
	return d, nil
}

// NewState returns the state of a fresh run: no call counted yet.
func (d *Rule) NewState() rule.State {
	return &state{r: d, calls: make([]int, len(d.tools))}
}

func fieldName(tool string) string { return "MaxCalls[" + strconv.Quote(tool) + "]" }

// Name returns Name.
func (d *Rule) Name() string { return Name }

// Priority returns rule.PriorityToolLimit.
func (d *Rule) Priority() int { return rule.PriorityToolLimit }

// Options returns the caps, as an Options with a map that is never nil.
func (d *Rule) Options() any {
	m := make(map[string]int, len(d.tools))
	for _, t := range d.tools {
		m[t.name] = t.limit
	}
	return Options{MaxCalls: m, Warn: d.warn}
}

// Observe counts the step's calls of capped tools and notes the first call
// beyond a cap.
func (s *state) Observe(f *rule.Facts) {
	s.hit, s.full = false, s.full[:0]
	if len(s.r.tools) == 0 {
		return
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		j, ok := s.r.index[c.Tool]
		if !ok {
			continue
		}
		t, calls := &s.r.tools[j], &s.calls[j]
		if *calls < math.MaxInt {
			*calls++
		}
		if *calls > t.limit && !s.hit {
			s.hit = true
			s.ev, s.hitAt = Evidence{Tool: rule.Clean(t.name), Calls: *calls, Limit: t.limit}, j
		}
		if s.r.warn && *calls == t.limit {
			s.full = append(s.full, j)
		}
	}
}

// Verdict returns a stop when the last step called a tool beyond its cap.
// With Options.Warn, a step that goes on warns of every tool it brought to
// its cap.
func (s *state) Verdict() rule.Verdict {
	if s.hit {
		return s.stop(s.ev, s.r.tools[s.hitAt].name, rule.PhaseCheck)
	}
	if len(s.full) == 0 {
		return rule.Verdict{}
	}
	ws := make([]rule.Warning, len(s.full))
	for i, j := range s.full {
		t := &s.r.tools[j]
		limit := float64(t.limit) + 1
		ws[i] = rule.Warning{
			Code: WarningCode, Tool: rule.Clean(t.name), Value: float64(s.calls[j]), Limit: limit, Ratio: float64(s.calls[j]) / limit,
			Detail: fmt.Sprintf("%s is at its cap of %d; one more call stops the run", rule.Quote(t.name), t.limit),
		}
		ws[i].Feedback = warningFeedback(ws[i])
	}
	return rule.Verdict{Warnings: ws}
}

// stop builds the stop verdict of ev; name is the tool's name, as given.
func (s *state) stop(ev Evidence, name string, p rule.Phase) rule.Verdict {
	v := rule.Verdict{Stop: true, Reason: ReasonToolLimit, Code: Code, Evidence: ev}
	if p == rule.PhasePreflight {
		v.Detail = fmt.Sprintf("call %d of %s would go over its cap of %d", ev.Calls, rule.Quote(name), ev.Limit)
	} else {
		v.Detail = fmt.Sprintf("call %d of %s went over its cap of %d", ev.Calls, rule.Quote(name), ev.Limit)
	}
	v.Feedback = ev.feedback(p)
	return v
}

// Preflight counts the proposed calls in order on top of the calls recorded
// so far, and refuses the first one beyond a cap. It changes no count.
func (s *state) Preflight(f *rule.Facts) rule.Verdict {
	if len(s.r.tools) == 0 {
		return rule.Verdict{}
	}
	s.counts = append(s.counts[:0], s.calls...)
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		j, ok := s.r.index[c.Tool]
		if !ok {
			continue
		}
		if s.counts[j] < math.MaxInt {
			s.counts[j]++
		}
		if t := &s.r.tools[j]; s.counts[j] > t.limit {
			return s.stop(Evidence{Tool: rule.Clean(t.name), Calls: s.counts[j], Limit: t.limit}, t.name, rule.PhasePreflight)
		}
	}
	return rule.Verdict{}
}

// Summary returns, for each capped tool, its calls so far and its cap (nil
// when no cap is set).
func (s *state) Summary() any {
	if len(s.r.tools) == 0 {
		return nil
	}
	m := make(map[string]Count, len(s.r.tools))
	for j, t := range s.r.tools {
		m[t.name] = Count{Calls: s.calls[j], Limit: t.limit}
	}
	return m
}

// Snapshot returns the counts of the capped tools that have been called, as a
// JSON object by tool name (JSON null when none has). Unless o.Previews is
// set, names that are not identifiers are written hashed (o.Name).
func (s *state) Snapshot(o rule.SnapshotOptions) ([]byte, error) {
	var b []byte
	for j, t := range s.r.tools {
		if s.calls[j] == 0 {
			continue
		}
		if b == nil {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		name, err := json.Marshal(o.Name(t.name))
		if err != nil {
			return nil, err
		}
		b = append(b, name...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(s.calls[j]), 10)
	}
	if b == nil {
		return []byte("null"), nil
	}
	return append(b, '}'), nil
}

// Restore replaces the counts by those of a snapshot. Every name must be a
// capped tool (or its hash), appear once, and have a whole count of 1 or
// more.
func (s *state) Restore(data []byte) error {
	counts := make([]int, len(s.r.tools))
	data = bytes.TrimSpace(data)
	if len(data) != 0 && string(data) != "null" {
		if err := s.r.readCounts(data, counts); err != nil {
			return fmt.Errorf("%s: %w", Name, err)
		}
	}
	copy(s.calls, counts)
	s.hit, s.ev, s.full = false, Evidence{}, s.full[:0]
	return nil
}

// hashedIndex returns the position of the capped tool whose hashed name
// (rule.HashName) is hashed.
func (d *Rule) hashedIndex(hashed string) (int, bool) {
	for j, t := range d.tools {
		if rule.HashName(t.name) == hashed {
			return j, true
		}
	}
	return 0, false
}

// CheckBounds checks the restored counts against the guard's counters: the
// calls they count are among the calls recorded.
func (s *state) CheckBounds(c rule.Counters) error {
	if c.ToolCalls == math.MaxInt {
		return nil // saturated: the calls were at least that many
	}
	sum := 0
	for _, calls := range s.calls {
		if calls > c.ToolCalls-sum {
			return fmt.Errorf("%s: the counts add up to more than the %d calls recorded", Name, c.ToolCalls)
		}
		sum += calls
	}
	return nil
}

// readCounts reads a JSON object of counts into counts, aligned with d.tools.
func (d *Rule) readCounts(state []byte, counts []int) error {
	dec := json.NewDecoder(bytes.NewReader(state))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("state is not a JSON object")
	}
	seen := make([]bool, len(d.tools))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("state: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return errors.New("state: a key is not a string")
		}
		j, ok := d.index[name]
		if rule.IsHashedName(name) {
			j, ok = d.hashedIndex(name)
		}
		if !ok {
			return fmt.Errorf("state counts %q, which has no cap", cut(name))
		}
		if seen[j] {
			return fmt.Errorf("state counts %q twice", cut(name))
		}
		seen[j] = true
		tok, err = dec.Token()
		if err != nil {
			return fmt.Errorf("state: %v", err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return fmt.Errorf("count of %q is not a number", cut(name))
		}
		n, err := strconv.ParseInt(string(num), 10, 0)
		if err != nil || n < 1 {
			return fmt.Errorf("count of %q is %s, want a whole number of 1 or more", cut(name), cut(string(num)))
		}
		counts[j] = int(n)
	}
	if !slices.Contains(seen, true) {
		return errors.New("state counts no tool (a fresh state is null)")
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("state: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("state has data after the object")
	}
	return nil
}

func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
