// Package toollimit is the per-tool call cap of loopguard: it counts the
// calls of each capped tool across the run and stops the run on the first
// call beyond the tool's cap.
//
// With a cap of 3 the first three calls go on and the fourth stops the run; a
// cap of 0 forbids the tool. Every call counts, whatever its arguments or
// result. Calls of tools the guard ignores ([guard.Options.Ignore]) are never
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

	"github.com/loopguard/loopguard/feedback"
	"github.com/loopguard/loopguard/guard"
)

// Name is the detector's name, the key of its state in snapshots.
const Name = "toollimit"

// Code is the code of the rule's stops.
const Code = "TOOL_CALL_CAP"

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
const WarningCode = feedback.CodeToolCallCapWarning

// Evidence is the evidence of a stop.
type Evidence struct {
	// Tool is the tool's name, as guard.Clean shows it
	// (escaped, and cut to 256 bytes).
	Tool string `json:"tool"`
	// Calls is the number of calls of the tool in the run, counting the
	// call that went over the cap.
	Calls int `json:"calls"`
	// Limit is the tool's cap.
	Limit int `json:"limit"`
}

// Count is the summary of one capped tool.
type Count struct {
	// Calls is the number of calls of the tool so far.
	Calls int `json:"calls"`
	// Limit is the tool's cap.
	Limit int `json:"limit"`
}

// tool is one capped tool and its count.
type tool struct {
	name  string
	limit int
	calls int
}

// Detector is the per-tool call cap. Create it with New.
type Detector struct {
	guard.Owned // one guard at a time

	tools []tool         // sorted by name
	index map[string]int // name -> position in tools
	warn  bool

	hit    bool     // the last step went over a cap
	ev     Evidence // and this is the first call that did,
	hitAt  int      // of the tool at this position
	full   []int    // the tools (positions) the last step brought to their cap
	counts []int    // scratch for preflight
}

var (
	_ guard.Detector   = (*Detector)(nil)
	_ guard.Summarizer = (*Detector)(nil)
	_ guard.Bounded    = (*Detector)(nil)
)

// New returns the rule with these options, or an error (a
// *guard.OptionError) naming every invalid cap.
func New(o Options) (*Detector, error) {
	d := &Detector{index: make(map[string]int, len(o.MaxCalls)), warn: o.Warn}
	var errs []error
	for name, limit := range o.MaxCalls {
		switch {
		case limit < 0:
			errs = append(errs, &guard.OptionError{Detector: Name, Field: fieldName(name),
				Err: fmt.Errorf("cap %d is negative", limit)})
		case len(name) > MaxToolNameLen:
			errs = append(errs, &guard.OptionError{Detector: Name, Field: fieldName(name[:32] + "..."),
				Err: fmt.Errorf("tool name is longer than %d bytes", MaxToolNameLen)})
		case !utf8.ValidString(name):
			errs = append(errs, &guard.OptionError{Detector: Name, Field: fieldName(name),
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

func fieldName(tool string) string { return "MaxCalls[" + strconv.Quote(tool) + "]" }

// Name returns Name.
func (d *Detector) Name() string { return Name }

// Priority returns guard.PriorityToolLimit.
func (d *Detector) Priority() int { return guard.PriorityToolLimit }

// Options returns the caps, as an Options with a map that is never nil.
func (d *Detector) Options() any {
	m := make(map[string]int, len(d.tools))
	for _, t := range d.tools {
		m[t.name] = t.limit
	}
	return Options{MaxCalls: m, Warn: d.warn}
}

// Observe counts the step's calls of capped tools and notes the first call
// beyond a cap.
func (d *Detector) Observe(f *guard.Facts) {
	d.hit, d.full = false, d.full[:0]
	if len(d.tools) == 0 {
		return
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		j, ok := d.index[c.Tool]
		if !ok {
			continue
		}
		t := &d.tools[j]
		if t.calls < math.MaxInt {
			t.calls++
		}
		if t.calls > t.limit && !d.hit {
			d.hit = true
			d.ev, d.hitAt = Evidence{Tool: guard.Clean(t.name), Calls: t.calls, Limit: t.limit}, j
		}
		if d.warn && t.calls == t.limit {
			d.full = append(d.full, j)
		}
	}
}

// Verdict returns a stop when the last step called a tool beyond its cap.
// With Options.Warn, a step that goes on warns of every tool it brought to
// its cap.
func (d *Detector) Verdict() guard.Verdict {
	if d.hit {
		return d.stop(d.ev, d.tools[d.hitAt].name, guard.PhaseCheck)
	}
	if len(d.full) == 0 {
		return guard.Verdict{}
	}
	ws := make([]guard.Warning, len(d.full))
	for i, j := range d.full {
		t := &d.tools[j]
		limit := float64(t.limit) + 1
		ws[i] = guard.Warning{
			Code: WarningCode, Tool: guard.Clean(t.name), Value: float64(t.calls), Limit: limit, Ratio: float64(t.calls) / limit,
			Detail: fmt.Sprintf("%s is at its cap of %d; one more call stops the run", guard.Quote(t.name), t.limit),
		}
		ws[i].Feedback = feedback.ForWarning(ws[i])
	}
	return guard.Verdict{Warnings: ws}
}

// stop builds the stop verdict of ev; name is the tool's name, as given.
func (d *Detector) stop(ev Evidence, name string, p guard.Phase) guard.Verdict {
	v := guard.Verdict{Stop: true, Reason: guard.ReasonToolLimit, Code: Code, Evidence: ev}
	if p == guard.PhasePreflight {
		v.Detail = fmt.Sprintf("call %d of %s would go over its cap of %d", ev.Calls, guard.Quote(name), ev.Limit)
	} else {
		v.Detail = fmt.Sprintf("call %d of %s went over its cap of %d", ev.Calls, guard.Quote(name), ev.Limit)
	}
	v.Feedback = feedback.For(v, p)
	return v
}

// Preflight counts the proposed calls in order on top of the calls recorded
// so far, and refuses the first one beyond a cap. It changes no count.
func (d *Detector) Preflight(f *guard.Facts) guard.Verdict {
	if len(d.tools) == 0 {
		return guard.Verdict{}
	}
	d.counts = d.counts[:0]
	for _, t := range d.tools {
		d.counts = append(d.counts, t.calls)
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		j, ok := d.index[c.Tool]
		if !ok {
			continue
		}
		if d.counts[j] < math.MaxInt {
			d.counts[j]++
		}
		if t := &d.tools[j]; d.counts[j] > t.limit {
			return d.stop(Evidence{Tool: guard.Clean(t.name), Calls: d.counts[j], Limit: t.limit}, t.name, guard.PhasePreflight)
		}
	}
	return guard.Verdict{}
}

// Summary returns, for each capped tool, its calls so far and its cap (nil
// when no cap is set).
func (d *Detector) Summary() any {
	if len(d.tools) == 0 {
		return nil
	}
	m := make(map[string]Count, len(d.tools))
	for _, t := range d.tools {
		m[t.name] = Count{Calls: t.calls, Limit: t.limit}
	}
	return m
}

// Snapshot returns the counts of the capped tools that have been called, as a
// JSON object by tool name (JSON null when none has). Unless o.Previews is
// set, names that are not identifiers are written hashed (o.Name).
func (d *Detector) Snapshot(o guard.SnapshotOptions) ([]byte, error) {
	var b []byte
	for _, t := range d.tools {
		if t.calls == 0 {
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
		b = strconv.AppendInt(b, int64(t.calls), 10)
	}
	if b == nil {
		return []byte("null"), nil
	}
	return append(b, '}'), nil
}

// Restore replaces the counts by those of a snapshot. Every name must be a
// capped tool (or its hash), appear once, and have a whole count of 1 or
// more.
func (d *Detector) Restore(state []byte) error {
	counts := make([]int, len(d.tools))
	state = bytes.TrimSpace(state)
	if len(state) != 0 && string(state) != "null" {
		if err := d.readCounts(state, counts); err != nil {
			return fmt.Errorf("%s: %w", Name, err)
		}
	}
	for i := range d.tools {
		d.tools[i].calls = counts[i]
	}
	d.hit, d.ev, d.full = false, Evidence{}, d.full[:0]
	return nil
}

// hashedIndex returns the position of the capped tool whose hashed name
// (guard.HashName) is hashed.
func (d *Detector) hashedIndex(hashed string) (int, bool) {
	for j, t := range d.tools {
		if guard.HashName(t.name) == hashed {
			return j, true
		}
	}
	return 0, false
}

// CheckBounds checks the restored counts against the guard's counters: the
// calls they count are among the calls recorded.
func (d *Detector) CheckBounds(c guard.Counters) error {
	if c.ToolCalls == math.MaxInt {
		return nil // saturated: the calls were at least that many
	}
	sum := 0
	for _, t := range d.tools {
		if t.calls > c.ToolCalls-sum {
			return fmt.Errorf("%s: the counts add up to more than the %d calls recorded", Name, c.ToolCalls)
		}
		sum += t.calls
	}
	return nil
}

// readCounts reads a JSON object of counts into counts, aligned with d.tools.
func (d *Detector) readCounts(state []byte, counts []int) error {
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
		if guard.IsHashedName(name) {
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

// Reset forgets every count.
func (d *Detector) Reset() {
	for i := range d.tools {
		d.tools[i].calls = 0
	}
	d.hit, d.ev, d.full = false, Evidence{}, d.full[:0]
}
