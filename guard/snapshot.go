package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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

// snapshotJSON is the envelope of a snapshot.
type snapshotJSON struct {
	Version         int              `json:"version"`
	Steps           int              `json:"steps"`
	ToolCalls       int              `json:"toolCalls"`
	FailedToolCalls int              `json:"failedToolCalls"`
	Totals          Totals           `json:"totals"`
	Guard           canonical.Sum    `json:"guard"`
	Detectors       []detectorRecord `json:"detectors"`
}

type detectorRecord struct {
	Name        string          `json:"name"`
	Fingerprint canonical.Sum   `json:"fingerprint"`
	State       json.RawMessage `json:"state"`
}

// Fingerprint returns the fingerprint of a detector's options: the hash of
// their canonical JSON.
func Fingerprint(d Detector) canonical.Sum { return canonical.Hash(d.Options()) }

// fingerprint is the fingerprint of the guard's own options that change
// behaviour (the ignored tools).
func (o Options) fingerprint() canonical.Sum {
	ignore := slices.Clone(o.Ignore)
	slices.Sort(ignore)
	ignore = slices.Compact(ignore)
	fp := o.keyFingerprint()
	fp["ignore"] = ignore
	return canonical.Hash(fp)
}

// Snapshot saves the run: a versioned JSON document with the counters, the
// totals, and for every detector its name, the fingerprint of its options and
// its state. Options are not saved, only fingerprinted: pass the same ones to
// [Restore]. Raw steps (the history) and the last verdict are not saved.
func (g *Guard) Snapshot(o SnapshotOptions) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fingerprints.dets == nil {
		// Options do not change: hash them once, not at every snapshot
		// (a tenth of a Check-and-Snapshot's time, saving at every step).
		g.fingerprints.guard = g.opts.fingerprint()
		g.fingerprints.dets = make([]canonical.Sum, len(g.dets))
		for i, d := range g.dets {
			g.fingerprints.dets[i] = Fingerprint(d)
		}
	}
	// The envelope is snapshotJSON, written by hand around the detectors'
	// states: encoding/json would check each state and then compact it
	// again, and a run kept in a store is snapshotted at every step.
	// json.Compact checks and copies a state in one pass. (Unlike
	// json.Marshal, it does not escape <, > and & in a state that has them
	// raw; the built-in detectors' states never do.)
	totals, err := json.Marshal(g.totals)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(max(g.fingerprints.size, 256+128*len(g.dets)))
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
	b.WriteString(`","detectors":[`)
	for i, d := range g.dets {
		state, err := d.Snapshot(o)
		if err != nil {
			return nil, &DetectorError{Name: d.Name(), Err: err}
		}
		if len(state) == 0 {
			state = []byte("null")
		}
		if i > 0 {
			b.WriteByte(',')
		}
		// Names are ValidName: letters, digits and _-./, nothing to escape.
		b.WriteString(`{"name":"`)
		b.WriteString(d.Name())
		b.WriteString(`","fingerprint":"`)
		b.WriteString(g.fingerprints.dets[i].String())
		b.WriteString(`","state":`)
		if err := json.Compact(&b, state); err != nil {
			return nil, &DetectorError{Name: d.Name(), Err: errors.New("Snapshot returned invalid JSON")}
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	g.fingerprints.size = b.Len() + b.Len()/8 // the next one is about as large
	return b.Bytes(), nil
}

// MarshalJSON returns g.Snapshot(SnapshotOptions{}), so that json.Marshal(g)
// saves the run: without previews, and with tool names that do not look like
// identifiers hashed.
func (g *Guard) MarshalJSON() ([]byte, error) { return g.Snapshot(SnapshotOptions{}) }

// Restore rebuilds a guard from a snapshot with default options. It is
// Options{}.Restore(data, detectors...).
func Restore(data []byte, detectors ...Detector) (*Guard, error) {
	return Options{}.Restore(data, detectors...)
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

// Restore rebuilds a guard from a snapshot, with these options and these
// detectors, so that it gives the verdicts the saved guard would have given
// on the rest of the run. The detectors must be fresh and built with the
// options the snapshot was taken with: a detector whose fingerprint differs,
// or that is missing on either side, is an error (a *FingerprintError),
// except that [Options.AllowLimitChanges] lets [Limiter] detectors differ.
//
// Restore validates everything and never panics: a malformed, truncated,
// hostile, too large or too deeply nested snapshot, an unknown version, an
// impossible number, counters that contradict one another, a key written
// twice or in another case (anywhere in the document), or a detector state
// its options or the run's counters do not allow is an error (errors.Is(err,
// ErrInvalidState)), never a later failure of Check: a restored guard runs on,
// and its own snapshot restores again. Unknown keys of the envelope are
// ignored. The restored guard keeps counting steps where the saved one
// stopped; its history is empty and it has no last verdict. On an error, the
// detectors are free for another guard.
func (o Options) Restore(data []byte, detectors ...Detector) (*Guard, error) {
	g, err := o.New(detectors...)
	if err != nil {
		return nil, err
	}
	if err := g.restore(data); err != nil {
		g.releaseAll() // the detectors may be given to another guard
		return nil, err
	}
	return g, nil
}

// restore reads a snapshot into a new guard.
func (g *Guard) restore(data []byte) error {
	o := g.opts
	if len(data) > MaxSnapshotBytes {
		return stateErr("snapshot is larger than %d bytes", MaxSnapshotBytes)
	}
	if depth := jsonDepth(data); depth > MaxSnapshotDepth {
		return stateErr("snapshot is nested deeper than %d levels", MaxSnapshotDepth)
	}
	var s snapshotJSON
	if err := strictObject(data); err != nil {
		return err
	}
	var version struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return stateErr("%v", err)
	}
	if string(version.Version) != "1" {
		return stateErr("unknown version %s (this build reads version %d)", orMissing(version.Version), SnapshotVersion)
	}
	// Keys in another case, or twice, anywhere in the document: encoding/json
	// would read the last of them, in any case.
	if err := checkKeys(data, reflect.TypeFor[snapshotJSON](), true); err != nil {
		return stateErr("%v", strings.TrimPrefix(err.Error(), "guard: state: "))
	}
	if err := requireKeys(data, "steps", "toolCalls", "failedToolCalls", "totals", "guard", "detectors"); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return stateErr("%v", err)
	}
	counters := Counters{Steps: s.Steps, ToolCalls: s.ToolCalls, FailedToolCalls: s.FailedToolCalls, Totals: s.Totals}
	if err := counters.check(); err != nil {
		return err
	}
	if s.Detectors == nil {
		return stateErr("no detectors list")
	}

	fe := &FingerprintError{}
	if s.Guard != o.fingerprint() {
		fe.Changed = append(fe.Changed, "guard")
	}
	var raws struct {
		Detectors []json.RawMessage `json:"detectors"`
	}
	if err := json.Unmarshal(data, &raws); err != nil {
		return stateErr("%v", err)
	}
	for i, r := range raws.Detectors {
		if err := requireKeys(r, "name", "fingerprint"); err != nil {
			return fmt.Errorf("detector #%d: %w", i, err)
		}
		if err := requirePresent(r, "state"); err != nil {
			return fmt.Errorf("detector #%d: %w", i, err)
		}
	}
	records := make(map[string]detectorRecord, len(s.Detectors))
	for _, r := range s.Detectors {
		if _, dup := records[r.Name]; dup {
			return stateErr("detector %q appears twice", r.Name)
		}
		records[r.Name] = r
	}
	for _, d := range g.dets {
		r, ok := records[d.Name()]
		if !ok {
			fe.Extra = append(fe.Extra, d.Name())
			continue
		}
		if r.Fingerprint != Fingerprint(d) {
			if l, ok := d.(Limiter); !(o.AllowLimitChanges && ok && l.OnlyLimits()) {
				fe.Changed = append(fe.Changed, d.Name())
			}
		}
		delete(records, d.Name())
	}
	for name := range records {
		fe.Missing = append(fe.Missing, name)
	}
	slices.Sort(fe.Missing)
	if len(fe.Changed)+len(fe.Missing)+len(fe.Extra) > 0 {
		return fe
	}
	for _, d := range g.dets {
		if err := restoreDetector(d, recordState(s.Detectors, d.Name()), counters); err != nil {
			return &DetectorError{Name: d.Name(), Err: errors.Join(ErrInvalidState, err)}
		}
	}
	g.steps, g.toolCalls, g.failedCalls, g.totals = s.Steps, s.ToolCalls, s.FailedToolCalls, s.Totals
	return nil
}

// restoreDetector calls d.Restore and, for a [Bounded] detector,
// CheckBounds, turning a panic into an error.
func restoreDetector(d Detector, state []byte, c Counters) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Restore panicked: %v", r)
		}
	}()
	if err := d.Restore(state); err != nil {
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

func recordState(rs []detectorRecord, name string) []byte {
	for _, r := range rs {
		if r.Name == name {
			if len(r.State) == 0 {
				return []byte("null")
			}
			return r.State
		}
	}
	return []byte("null")
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

// requireKeys checks that the JSON object data has each key, spelt exactly
// (encoding/json would match any case), with a value that is not null
// (encoding/json would leave the zero value).
func requireKeys(data []byte, keys ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return stateErr("%v", err)
	}
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return stateErr("no %q", k)
		}
		if string(bytes.TrimSpace(v)) == "null" {
			return stateErr("%q is null", k)
		}
	}
	return nil
}

// requirePresent checks that the JSON object data has each key, spelt
// exactly; null is allowed (a detector's fresh state is null).
func requirePresent(data []byte, keys ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return stateErr("%v", err)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return stateErr("no %q", k)
		}
	}
	return nil
}

// strictObject checks that data is one JSON object.
func strictObject(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return stateErr("not a JSON object")
	}
	return nil
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
