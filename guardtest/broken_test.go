package guardtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
)

// The broken detectors below each wrap the repeat detector, which passes the
// kit, and break one property of the contract.

func newRepeat(threshold int) *repeat.Detector {
	d, err := repeat.New(repeat.Options{Threshold: threshold})
	if err != nil {
		panic(err)
	}
	return d
}

// unowned hides the repeat detector's guard.Owned marker behind the
// interface: guard.New cannot tell that it is shared.
type unowned struct{ guard.Detector }

// wrapped forwards everything to the repeat detector.
type wrapped struct{ *repeat.Detector }

// preflightCounts counts the questions it is asked, in its state.
type preflightCounts struct {
	*repeat.Detector
	asked int
}

type countedState struct {
	Inner json.RawMessage `json:"inner"`
	Asked int             `json:"asked"`
}

func (d *preflightCounts) Preflight(f *guard.Facts) guard.Verdict {
	d.asked++
	return d.Detector.Preflight(f)
}

func (d *preflightCounts) Snapshot(o guard.SnapshotOptions) ([]byte, error) {
	inner, err := d.Detector.Snapshot(o)
	if err != nil {
		return nil, err
	}
	return json.Marshal(countedState{inner, d.asked})
}

func (d *preflightCounts) Restore(state []byte) error {
	if string(state) == "null" {
		d.asked = 0
		return d.Detector.Restore(state)
	}
	var s countedState
	if err := json.Unmarshal(state, &s); err != nil {
		return err
	}
	d.asked = s.Asked
	return d.Detector.Restore(s.Inner)
}

func (d *preflightCounts) Reset() { d.asked = 0; d.Detector.Reset() }

// preflightObserves records the calls it is asked about as if they had run,
// a state change that Snapshot shows.
type preflightObserves struct{ *repeat.Detector }

func (d preflightObserves) Preflight(f *guard.Facts) guard.Verdict {
	d.Detector.Observe(f)
	return d.Detector.Verdict()
}

// observeTidies rewrites integer arguments in maps as float64: the facts do
// not change (the canonical form compares numbers as numbers), but the
// caller's step does.
type observeTidies struct{ *repeat.Detector }

func (d observeTidies) Observe(f *guard.Facts) {
	if s := f.Step(); s != nil {
		for _, c := range s.ToolCalls {
			if m, ok := c.Args.(map[string]any); ok {
				for k, v := range m {
					if i, ok := v.(int); ok {
						m[k] = float64(i)
					}
				}
			}
		}
	}
	d.Detector.Observe(f)
}

// observeRenames upper-cases the tool names of the step other detectors
// read, in the guard's own copy of the step.
type observeRenames struct{ *repeat.Detector }

func (d observeRenames) Observe(f *guard.Facts) {
	d.Detector.Observe(f)
	for i := range f.Calls {
		f.Calls[i].Tool = strings.ToUpper(f.Calls[i].Tool)
	}
}

// restoreForgets accepts any state but keeps none (except null).
type restoreForgets struct{ *repeat.Detector }

func (d restoreForgets) Restore(state []byte) error {
	if string(state) == "null" {
		return d.Detector.Restore(state)
	}
	d.Detector.Reset()
	return nil
}

// snapshotReuses returns the same buffer from every Snapshot.
type snapshotReuses struct {
	*repeat.Detector
	buf []byte
}

func (d *snapshotReuses) Snapshot(o guard.SnapshotOptions) ([]byte, error) {
	inner, err := d.Detector.Snapshot(o)
	d.buf = append(d.buf[:0], inner...)
	return d.buf, err
}

// snapshotAliases returns the bytes of its state itself.
type snapshotAliases struct {
	*repeat.Detector
	state []byte
}

func (d *snapshotAliases) refresh() {
	d.state, _ = d.Detector.Snapshot(guard.SnapshotOptions{})
}

func (d *snapshotAliases) Observe(f *guard.Facts) { d.Detector.Observe(f); d.refresh() }
func (d *snapshotAliases) Reset()                 { d.Detector.Reset(); d.refresh() }
func (d *snapshotAliases) Restore(state []byte) error {
	err := d.Detector.Restore(state)
	d.refresh()
	return err
}

func (d *snapshotAliases) Snapshot(o guard.SnapshotOptions) ([]byte, error) {
	if !o.Previews {
		return d.Detector.Snapshot(o)
	}
	if d.state == nil {
		d.refresh()
	}
	return d.state, nil
}

// snapshotUnordered writes a map in the order Go iterates it.
type snapshotUnordered struct {
	*repeat.Detector
	seen map[string]int
}

func (d *snapshotUnordered) Observe(f *guard.Facts) {
	d.Detector.Observe(f)
	for _, c := range f.Calls {
		d.seen[c.Tool]++
	}
}

func (d *snapshotUnordered) Snapshot(o guard.SnapshotOptions) ([]byte, error) {
	inner, err := d.Detector.Snapshot(o)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"inner":%s,"seen":{`, inner)
	first := true
	for k, v := range d.seen {
		if !first {
			b.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(k)
		fmt.Fprintf(&b, `%s:%d`, k, v)
	}
	b.WriteString("}}")
	return b.Bytes(), err
}

func (d *snapshotUnordered) Restore(state []byte) error {
	if string(state) == "null" {
		d.seen = map[string]int{}
		return d.Detector.Restore(state)
	}
	var s struct {
		Inner json.RawMessage `json:"inner"`
		Seen  map[string]int  `json:"seen"`
	}
	if err := json.Unmarshal(state, &s); err != nil {
		return err
	}
	d.seen = s.Seen
	if d.seen == nil {
		d.seen = map[string]int{}
	}
	return d.Detector.Restore(s.Inner)
}

func (d *snapshotUnordered) Reset() { d.seen = map[string]int{}; d.Detector.Reset() }

// resetKeeps forgets nothing on Reset.
type resetKeeps struct{ *repeat.Detector }

func (resetKeeps) Reset() {}

// panicsOnParallel panics on a step with more than 1000 calls.
type panicsOnParallel struct{ *repeat.Detector }

func (d panicsOnParallel) Observe(f *guard.Facts) {
	if len(f.Calls) > 1000 {
		var counts []int
		_ = counts[len(f.Calls)] // index out of range
	}
	d.Detector.Observe(f)
}

// sharedState counts steps in a package-level variable, shared by all its
// instances, and stops on the tenth.
var sharedSteps atomic.Int64

type sharedState struct{ *repeat.Detector }

func (d sharedState) Observe(f *guard.Facts) { sharedSteps.Add(1); d.Detector.Observe(f) }
func (d sharedState) Verdict() guard.Verdict {
	if sharedSteps.Load()%10 == 0 {
		return guard.Verdict{Stop: true, Code: "TENTH"}
	}
	return d.Detector.Verdict()
}

// sameOptions says its options are always the same.
type sameOptions struct{ *repeat.Detector }

func (sameOptions) Options() any { return "repeat" }

// optionsCount puts the number of steps it has seen into its options.
type optionsCount struct {
	*repeat.Detector
	n int
}

func (d *optionsCount) Observe(f *guard.Facts) { d.n++; d.Detector.Observe(f) }
func (d *optionsCount) Options() any {
	return map[string]any{"inner": d.Detector.Options(), "n": d.n}
}

// badName has a name with a space.
type badName struct{ *repeat.Detector }

func (badName) Name() string { return "my rule" }

// countedName names each instance differently.
var instances atomic.Int64

type countedName struct {
	*repeat.Detector
	name string
}

func (d countedName) Name() string { return d.name }

// properties returns the properties that err reports, with their messages.
func failed(err error) map[string]string {
	out := map[string]string{}
	if err == nil {
		return out
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		msg := strings.TrimPrefix(e.Error(), "guardtest: ")
		prop, rest, _ := strings.Cut(msg, ": ")
		out[prop] += rest
	}
	return out
}

func TestBrokenDetectors(t *testing.T) {
	other := func() guard.Detector { return wrapped{newRepeat(4)} }
	for _, tc := range []struct {
		name     string
		det      func() guard.Detector
		other    func() guard.Detector
		property string
		message  string // what the problem says; alternatives split by |
		// only: no other property may fail.
		only bool
	}{
		{"preflight counts", func() guard.Detector { return &preflightCounts{Detector: newRepeat(3)} }, nil,
			"PreflightKeepsState", "Preflight changed the snapshot before step", true},
		// SnapshotRestore asks Preflight too, so it sees the changed state.
		{"preflight observes", func() guard.Detector { return preflightObserves{newRepeat(3)} }, nil,
			"PreflightKeepsState", "Preflight changed the snapshot before step", false},
		{"observe tidies", func() guard.Detector { return observeTidies{newRepeat(3)} }, nil,
			"ObserveKeepsStep", "Observe or Verdict modified the step given to Check, at ToolCalls[", true},
		{"observe renames", func() guard.Detector { return observeRenames{newRepeat(3)} }, nil,
			"ObserveKeepsStep", "Observe or Verdict modified the facts that later detectors read, at Calls[", true},
		{"restore forgets", func() guard.Detector { return restoreForgets{newRepeat(3)} }, nil,
			"SnapshotRestore", "then Restore into a fresh detector, then Snapshot gives another state", true},
		{"snapshot reuses its buffer", func() guard.Detector { return &snapshotReuses{Detector: newRepeat(3)} }, nil,
			"SnapshotBytes", "changed when the run had gone on and Snapshot was called again", true},
		{"snapshot aliases the state", func() guard.Detector { return &snapshotAliases{Detector: newRepeat(3)} }, nil,
			"SnapshotBytes", "were overwritten, it returns another state", true},
		{"snapshot unordered", func() guard.Detector {
			return &snapshotUnordered{Detector: newRepeat(3), seen: map[string]int{}}
		}, nil, "SnapshotBytes", "is not deterministic|two detectors given the same steps have different snapshots", false},
		{"reset keeps", func() guard.Detector { return resetKeeps{newRepeat(3)} }, nil,
			"ResetIsFresh", "Reset after", true},
		{"panics on parallel calls", func() guard.Detector { return panicsOnParallel{newRepeat(3)} }, nil,
			"OddSteps", "Check of 5000 identical parallel calls panicked: runtime error: index out of range", true},
		{"shared state", func() guard.Detector { return sharedState{newRepeat(3)} }, nil,
			"OddSteps", "running in parallel disturb one another", false},
		{"options ignored", func() guard.Detector { return sameOptions{newRepeat(3)} },
			func() guard.Detector { return sameOptions{newRepeat(4)} },
			"FingerprintDiffers", `a detector with other options has the same fingerprint`, true},
		{"options count steps", func() guard.Detector { return &optionsCount{Detector: newRepeat(3)} }, other,
			"Fingerprint", "the fingerprint changed after 1 step", false},
		{"bad name", func() guard.Detector { return badName{newRepeat(3)} }, nil,
			"Name", `Name() = "my rule" is not a valid detector name`, false},
		{"shared silently", func() guard.Detector { return unowned{newRepeat(3)} }, nil,
			"NotShared", "the detector is shared silently", true},
		// The finish rule keeps only the verdict of the step it observed
		// last: only a step that comes between two calls shows it.
		{"shared between observe and verdict", func() guard.Detector {
			d, err := finish.New(finish.Options{OtherPolicy: finish.Stop})
			if err != nil {
				panic(err)
			}
			return unowned{d}
		}, nil, "NotShared", "the detector is shared silently", true},
		{"a name per instance", func() guard.Detector {
			return countedName{newRepeat(3), fmt.Sprintf("rule%d", instances.Add(1))}
		}, nil, "Name", "two fresh detectors are named", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []guardtest.Option{guardtest.WithSeed(1), guardtest.WithChecks(10)}
			if tc.other != nil {
				opts = append(opts, guardtest.WithOtherOptions(tc.other))
			}
			err := guardtest.Check(tc.det, opts...)
			got := failed(err)
			msg, ok := got[tc.property]
			if !ok {
				t.Fatalf("%s was not caught; Check returned %v", tc.property, err)
			}
			if !containsAny(msg, strings.Split(tc.message, "|")) {
				t.Errorf("the %s problem does not say %q:\n%s", tc.property, tc.message, msg)
			}
			if !strings.Contains(msg, "guardtest.WithSeed(1)") {
				t.Errorf("the %s problem does not say how to repeat it:\n%s", tc.property, msg)
			}
			if tc.only {
				delete(got, tc.property)
				if len(got) > 0 {
					t.Errorf("other properties failed too: %v\n%v", slices.Sorted(maps.Keys(got)), err)
				}
			}
			t.Logf("%v", err)
		})
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestCorrectDetector: Check returns nil for a correct detector, with or
// without WithOtherOptions.
func TestCorrectDetector(t *testing.T) {
	det := func() guard.Detector { return newRepeat(3) }
	if err := guardtest.Check(det, guardtest.WithChecks(20)); err != nil {
		t.Errorf("Check of the repeat detector: %v", err)
	}
	other := func() guard.Detector { return newRepeat(5) }
	if err := guardtest.Check(det, guardtest.WithChecks(20), guardtest.WithOtherOptions(other)); err != nil {
		t.Errorf("Check of the repeat detector, with other options: %v", err)
	}
}

// TestNilDetector: a factory that returns nil is reported, not a panic.
func TestNilDetector(t *testing.T) {
	err := guardtest.Check(func() guard.Detector { return nil }, guardtest.WithChecks(2))
	got := failed(err)
	for _, p := range guardtest.Properties() {
		if p == "FingerprintDiffers" {
			continue // skipped without other options
		}
		if !strings.Contains(got[p], "newDetector returned nil") {
			t.Errorf("%s: got %q, want a nil detector reported", p, got[p])
		}
	}
}

// TestSeedRepeats: the same seed finds the same failure on the same run.
func TestSeedRepeats(t *testing.T) {
	det := func() guard.Detector { return restoreForgets{newRepeat(3)} }
	a := guardtest.Check(det, guardtest.WithSeed(42), guardtest.WithChecks(30))
	b := guardtest.Check(det, guardtest.WithSeed(42), guardtest.WithChecks(30))
	if a == nil || b == nil {
		t.Fatalf("Check = %v and %v, want failures", a, b)
	}
	if a.Error() != b.Error() {
		t.Errorf("the same seed gave two reports:\n%v\n----\n%v", a, b)
	}
}

// TestWithSteps: the user's generator makes the steps, drawing from the
// seeded source, so that a seed repeats them.
func TestWithSteps(t *testing.T) {
	var texts []string
	check := func(seed uint64) error {
		texts = nil
		return guardtest.Check(func() guard.Detector { return &preflightCounts{Detector: newRepeat(3)} },
			guardtest.WithSeed(seed), guardtest.WithChecks(5), guardtest.WithMaxSteps(3),
			guardtest.WithSteps(func(r *rand.Rand) guard.Step {
				text := fmt.Sprintf("text %d", r.IntN(1000))
				texts = append(texts, text)
				return guard.Step{Text: text}
			}))
	}
	err := check(7)
	if len(texts) == 0 {
		t.Fatal("the generator was never called")
	}
	first := slices.Clone(texts)
	if msg := failed(err)["PreflightKeepsState"]; !strings.Contains(msg, `"text":"text `) {
		t.Errorf("the failure does not show the generated steps: %v", err)
	}
	check(7)
	if !slices.Equal(first, texts) {
		t.Errorf("the same seed gave other steps: %v, then %v", first, texts)
	}
	check(8)
	if slices.Equal(first, texts) {
		t.Errorf("seeds 7 and 8 gave the same steps: %v", texts)
	}
}
