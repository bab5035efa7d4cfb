package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/canonical"
)

// SnapshotVersion is the version of the snapshot format that Snapshot writes.
const SnapshotVersion = 1

// MaxSnapshotBytes is the largest snapshot Restore reads, and MaxSnapshotDepth
// the deepest nesting of JSON arrays and objects in it.
const (
	MaxSnapshotBytes = 64 << 20
	MaxSnapshotDepth = 32
)

// Fingerprint returns the fingerprint of a rule's options: the hash of
// their canonical JSON.
func Fingerprint(r Rule) canonical.Sum { return canonical.Hash(r.Options()) }

// fingerprint is the fingerprint of the guard's own options that change
// behaviour (the ignored tools).
func (o Config) fingerprint() canonical.Sum {
	ignore := slices.Clone(o.Ignore)
	slices.Sort(ignore)
	ignore = slices.Compact(ignore)
	fp := o.keyFingerprint()
	fp["ignore"] = ignore
	return canonical.Hash(fp)
}

// Snapshot saves the run: a versioned JSON document with the counters, the
// totals, the run's first stop (its reason, code, rule and step), and for
// every rule its name, the fingerprint of its options and its state. Options
// are not saved, only fingerprinted: pass the same ones to [Restore]. Raw
// steps (the history) and the last verdict are not saved. The error is as
// for Check, or a rule's state that cannot be saved.
func (g *Guard) Snapshot(ctx context.Context, o SnapshotOptions) ([]byte, error) {
	if g.b != nil {
		var (
			data []byte
			err  error
		)
		if verr := g.b.View(ctx, func(m *Guard) { data, err = m.snapshot(o) }); verr != nil {
			return nil, verr
		}
		return data, err
	}
	return g.snapshot(o)
}

// snapshot is Snapshot in memory.
func (g *Guard) snapshot(o SnapshotOptions) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fingerprints.dets == nil {
		// Options do not change: hash them once, not at every snapshot
		// (a tenth of a Check-and-Snapshot's time, saving at every step).
		g.fingerprints.guard = g.opts.fingerprint()
		g.fingerprints.dets = make([]canonical.Sum, len(g.rules))
		for i, r := range g.rules {
			g.fingerprints.dets[i] = Fingerprint(r)
		}
	}
	// The envelope ({"version", "steps", "toolCalls", "failedToolCalls",
	// "totals", "guard", "detectors": [{"name", "fingerprint", "state"}]};
	// snapshotJSON in the tests) is written by hand around the detectors'
	// states: encoding/json would check each state and then compact it
	// again, and a run kept in a store is snapshotted at every step.
	// appendCompact checks and copies a state in one pass, as json.Compact
	// would, eight bytes at a time through strings. (Unlike json.Marshal,
	// it does not escape <, > and & in a state that has them raw; the
	// built-in detectors' states never do.)
	totals, err := json.Marshal(g.totals)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(max(g.fingerprints.size, 256+128*len(g.rules)))
	b.WriteString(`{"version":`)
	b.WriteString(strconv.Itoa(SnapshotVersion))
	b.WriteString(`,"steps":`)
	b.WriteString(strconv.Itoa(g.steps))
	b.WriteString(`,"toolCalls":`)
	b.WriteString(strconv.Itoa(g.toolCalls))
	b.WriteString(`,"failedToolCalls":`)
	b.WriteString(strconv.Itoa(g.failedCalls))
	b.WriteString(`,"totals":`)
	b.Write(totals)
	b.WriteString(`,"guard":"`)
	b.WriteString(g.fingerprints.guard.String())
	b.WriteByte('"')
	if g.first != nil {
		// Only names and a number: no text of the run.
		fs, err := json.Marshal(firstStop{Step: g.firstStep, Reason: g.first.Reason, Code: g.first.Code, Rule: g.first.Detector})
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"firstStop":`)
		b.Write(fs)
	}
	b.WriteString(`,"detectors":[`)
	for i, st := range g.states {
		var state []byte
		if sv, ok := st.(Saver); ok {
			var err error
			if state, err = sv.Snapshot(o); err != nil {
				return nil, &DetectorError{Name: g.names[i], Err: err}
			}
		}
		if len(state) == 0 {
			state = []byte("null")
		}
		if i > 0 {
			b.WriteByte(',')
		}
		// Names are ValidName: letters, digits and _-./, nothing to escape.
		b.WriteString(`{"name":"`)
		b.WriteString(g.names[i])
		b.WriteString(`","fingerprint":"`)
		b.WriteString(g.fingerprints.dets[i].String())
		b.WriteString(`","state":`)
		out, ok := appendCompact(b.AvailableBuffer(), state)
		if !ok {
			return nil, &DetectorError{Name: g.names[i], Err: errors.New("Snapshot returned invalid JSON")}
		}
		b.Write(out)
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	g.fingerprints.size = b.Len() + b.Len()/8 // the next one is about as large
	return b.Bytes(), nil
}

// MarshalJSON returns the guard's snapshot without previews (Snapshot with
// SnapshotOptions{}), so that json.Marshal(g) saves the run rather than an
// empty object. A guard over a store is read with a background context.
func (g *Guard) MarshalJSON() ([]byte, error) {
	return g.Snapshot(context.Background(), SnapshotOptions{})
}

// firstStop is a run's first stop as a snapshot holds it.
type firstStop struct {
	Step   int    `json:"step"`
	Reason Reason `json:"reason"`
	Code   string `json:"code"`
	Rule   string `json:"detector"`
}

// verdict is the stop as a restored run knows it.
func (fs firstStop) verdict() *Verdict {
	return &Verdict{Stop: true, Reason: fs.Reason, Code: fs.Code, Detector: fs.Rule,
		Detail: "the run stopped at step " + strconv.Itoa(fs.Step)}
}

// A FingerprintError reports that a snapshot was taken under other options,
// or with other detectors. errors.Is(err, ErrOptionsChanged) holds.
type FingerprintError struct {
	// Changed names the detectors whose options differ ("guard" for the
	// guard's own options).
	Changed []string
	// Missing names the detectors in the snapshot that were not given.
	Missing []string
	// Extra names the detectors given that are not in the snapshot.
	Extra []string
}

// Error names the detectors that differ, are missing or are extra.
func (e *FingerprintError) Error() string {
	var parts []string
	if len(e.Changed) > 0 {
		parts = append(parts, "options changed for "+strings.Join(e.Changed, ", "))
	}
	if len(e.Missing) > 0 {
		parts = append(parts, "not given: "+strings.Join(e.Missing, ", "))
	}
	if len(e.Extra) > 0 {
		parts = append(parts, "not in the snapshot: "+strings.Join(e.Extra, ", "))
	}
	return "guard: restore: " + strings.Join(parts, "; ")
}

// Is reports whether target is ErrOptionsChanged.
func (e *FingerprintError) Is(target error) bool { return target == ErrOptionsChanged }

// Restore rebuilds a guard, in memory, from a snapshot and the configuration
// it was taken with, so that it gives the verdicts the saved guard would
// have given on the rest of the run. A rule whose fingerprint differs, or
// that is missing on either side, is an error (a *FingerprintError), except
// that [Config.AllowLimitChanges] lets [Limiter] rules differ and
// [Config.AllowNewRules] lets rules the snapshot has no state for start
// fresh.
//
// Restore validates everything and never panics: a malformed, truncated,
// hostile, too large or too deeply nested snapshot, an unknown version, an
// impossible number, counters that contradict one another, a key written
// twice or in another case (anywhere in the document), or a rule's state
// its options or the run's counters do not allow is an error (errors.Is(err,
// ErrInvalidState)), never a later failure of Check: a restored guard runs on,
// and its own snapshot restores again. Unknown keys of the envelope are
// ignored. The restored guard keeps counting steps where the saved one
// stopped, and keeps its first stop; its history is empty and it has no last
// verdict.
func Restore(data []byte, cfg Config) (*Guard, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := g.restore(data); err != nil {
		return nil, err
	}
	return g, nil
}

// restore reads a snapshot into a new guard, in one pass over its bytes
// (readSnapshot), then each detector's state with the detector's Restore.
func (g *Guard) restore(data []byte) error {
	o := g.opts
	if len(data) > MaxSnapshotBytes {
		return stateErr("snapshot is larger than %d bytes", MaxSnapshotBytes)
	}
	var room [16]record
	s, err := readSnapshot(data, room[:0])
	if err != nil {
		return err
	}
	if string(s.version) != "1" {
		return stateErr("unknown version %s (this build reads version %d)", orMissing(s.version), SnapshotVersion)
	}
	for k := range numEnvelopeKeys {
		switch {
		case s.present&(1<<k) == 0:
			return stateErr("no %q", envelopeKeys[k])
		case s.null&(1<<k) != 0:
			return stateErr("%q is null", envelopeKeys[k])
		}
	}
	var totals Totals
	if err := totals.UnmarshalJSON(s.totals); err != nil {
		return stateErr("totals: %v", err)
	}
	counters := Counters{Steps: s.counts[keySteps], ToolCalls: s.counts[keyToolCalls],
		FailedToolCalls: s.counts[keyFailedToolCalls], Totals: totals}
	if err := counters.check(); err != nil {
		return err
	}

	fe := &FingerprintError{}
	if s.guard != o.fingerprint() {
		fe.Changed = append(fe.Changed, "guard")
	}
	for i, r := range s.records {
		for k := range len(recordKeys) {
			switch {
			case r.present&(1<<k) == 0:
				return fmt.Errorf("detector #%d: %w", i, stateErr("no %q", recordKeys[k]))
			case r.null&(1<<k) != 0 && k != keyState: // a fresh state is null
				return fmt.Errorf("detector #%d: %w", i, stateErr("%q is null", recordKeys[k]))
			}
		}
	}
	if err := uniqueNames(s.records); err != nil {
		return err
	}
	// Each detector's record, by name; a record that no detector takes is
	// missing.
	taken := make([]bool, len(s.records))
	states := make([][]byte, len(g.rules))
	fresh := make([]bool, len(g.rules))
	size := 0
	for i, d := range g.rules {
		name := g.names[i]
		j := slices.IndexFunc(s.records, func(r record) bool { return string(r.name) == name })
		if j < 0 {
			if o.AllowNewRules {
				fresh[i] = true // keeps the state New made
			} else {
				fe.Extra = append(fe.Extra, name)
			}
			continue
		}
		taken[j] = true
		if !fingerprintMatches(d, s.records[j].fingerprint) {
			if l, ok := d.(Limiter); !(o.AllowLimitChanges && ok && l.OnlyLimits()) {
				fe.Changed = append(fe.Changed, name)
			}
		}
		states[i] = s.records[j].state
		size += len(states[i])
	}
	for j, r := range s.records {
		if !taken[j] {
			fe.Missing = append(fe.Missing, string(r.name))
		}
	}
	slices.Sort(fe.Missing)
	if len(fe.Changed)+len(fe.Missing)+len(fe.Extra) > 0 {
		return fe
	}
	// The states are handed over in memory of their own, as json.RawMessage
	// values were: a detector may keep what it is given.
	own := make([]byte, 0, size)
	for i, st := range g.states {
		if fresh[i] {
			continue
		}
		start := len(own)
		own = append(own, states[i]...)
		if err := restoreState(st, own[start:len(own):len(own)], counters); err != nil {
			return &DetectorError{Name: g.names[i], Err: errors.Join(ErrInvalidState, err)}
		}
	}
	if s.firstStop != nil {
		var fs firstStop
		if err := UnmarshalState(s.firstStop, &fs); err != nil {
			return stateErr("firstStop: %v", err)
		}
		if fs.Step < 0 || fs.Step >= counters.Steps || fs.Reason == "" || fs.Code == "" ||
			len(fs.Reason) > MaxNameLen || len(fs.Code) > MaxNameLen || len(fs.Rule) > MaxNameLen {
			return stateErr("firstStop: not a stop of this run")
		}
		g.first, g.firstStep = fs.verdict(), fs.Step
	}
	g.steps, g.toolCalls, g.failedCalls, g.totals = counters.Steps, counters.ToolCalls, counters.FailedToolCalls, totals
	return nil
}

// uniqueNames reports a detector's name that two records hold.
func uniqueNames(rs []record) error {
	if len(rs) <= listedKeys {
		for i, r := range rs {
			for _, q := range rs[:i] {
				if bytes.Equal(q.name, r.name) {
					return stateErr("detector %q appears twice", r.name)
				}
			}
		}
		return nil
	}
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		if seen[string(r.name)] {
			return stateErr("detector %q appears twice", r.name)
		}
		seen[string(r.name)] = true
	}
	return nil
}

// restoreState calls the state's Restore and, for a [Bounded] state,
// CheckBounds, turning a panic into an error. A state that is not a [Saver]
// accepts only null.
func restoreState(d State, state []byte, c Counters) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Restore panicked: %v", r)
		}
	}()
	sv, ok := d.(Saver)
	if !ok {
		if string(bytes.TrimSpace(state)) != "null" {
			return errors.New("the rule keeps no state, and the snapshot holds one")
		}
		return nil
	}
	if err := sv.Restore(state); err != nil {
		return err
	}
	if b, ok := d.(Bounded); ok {
		return b.CheckBounds(c)
	}
	return nil
}

// Counters are the counts of a run, as a snapshot holds them. Each count
// saturates at math.MaxInt rather than wrapping.
type Counters struct {
	// Steps is the number of steps recorded: every step index is below it.
	Steps int
	// ToolCalls is the number of tool calls recorded, ignored ones
	// included, and FailedToolCalls the number of those that failed.
	ToolCalls, FailedToolCalls int
	// Totals are the usage totals.
	Totals Totals
}

// check reports counters that no run can reach.
func (c Counters) check() error {
	switch {
	case c.Steps < 0 || c.ToolCalls < 0 || c.FailedToolCalls < 0 || c.FailedToolCalls > c.ToolCalls:
		return stateErr("impossible counters (steps %d, toolCalls %d, failedToolCalls %d)", c.Steps, c.ToolCalls, c.FailedToolCalls)
	case c.Steps == 0 && (c.ToolCalls > 0 || c.Totals != Totals{}):
		return stateErr("tool calls or usage without a step")
	}
	return nil
}

// A Bounded detector checks, when a guard is restored, that the state it was
// given fits the run's counters: that no step index it holds reaches the
// number of steps, that it counts no more calls than were recorded, and so
// on. Restore calls CheckBounds after the detector's Restore, with the
// counters of the snapshot; an error fails the restore. The built-in
// detectors implement it. A detector without it is trusted to have checked
// its state alone.
type Bounded interface {
	CheckBounds(c Counters) error
}

func stateErr(format string, args ...any) error {
	return fmt.Errorf("guard: restore: %w: %s", ErrInvalidState, fmt.Sprintf(format, args...))
}

func orMissing(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(missing)"
	}
	if len(raw) > 20 {
		return string(raw[:20]) + "..."
	}
	return string(raw)
}

// jsonDepth returns the deepest nesting of arrays and objects in data,
// without decoding it. Brackets inside strings are skipped.
func jsonDepth(data []byte) int {
	depth, max, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				max = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}
