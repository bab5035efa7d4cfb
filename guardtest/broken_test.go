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
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/rule"
)

// The broken rules below each wrap the repeat rule, which passes the kit,
// and break one property of the contract, in the rule or in its states.

// newRepeat returns the repeat rule with a threshold. guardtest.Check gives
// its factories no test, so an error panics (and Check reports it).
func newRepeat(threshold int) *repeat.Rule {
	r, err := repeat.New(repeat.Options{Threshold: threshold})
	if err != nil {
		panic(err)
	}
	return r
}

// saver is the repeat rule's state: a State and a Saver.
type saver interface {
	rule.State
	rule.Saver
}

// broken is the repeat rule whose states wrap makes from the rule's own.
type broken struct {
	rule.Rule
	wrap func(inner saver) rule.State
}

func (b broken) NewState() rule.State { return b.wrap(b.Rule.NewState().(saver)) }

// breaks returns a factory of the repeat rule with threshold 3 whose states
// wrap makes.
func breaks(wrap func(inner saver) rule.State) func(t *testing.T) rule.Rule {
	return func(*testing.T) rule.Rule { return broken{newRepeat(3), wrap} }
}

// wrapped forwards everything to the repeat rule.
type wrapped struct{ *repeat.Rule }

// preflightCounts counts the questions it is asked, in its state.
type preflightCounts struct {
	saver
	asked int
}

type countedState struct {
	Inner json.RawMessage `json:"inner"`
	Asked int             `json:"asked"`
}

func (d *preflightCounts) Preflight(f *rule.Facts) rule.Verdict {
	d.asked++
	return d.saver.Preflight(f)
}

func (d *preflightCounts) Snapshot(o rule.SnapshotOptions) ([]byte, error) {
	inner, err := d.saver.Snapshot(o)
	if err != nil {
		return nil, err
	}
	return json.Marshal(countedState{inner, d.asked})
}

func (d *preflightCounts) Restore(state []byte) error {
	if string(state) == "null" {
		d.asked = 0
		return d.saver.Restore(state)
	}
	var s countedState
	if err := json.Unmarshal(state, &s); err != nil {
		return err
	}
	d.asked = s.Asked
	return d.saver.Restore(s.Inner)
}

// preflightObserves records the calls it is asked about as if they had run,
// a state change that Snapshot shows.
type preflightObserves struct{ saver }

func (d preflightObserves) Preflight(f *rule.Facts) rule.Verdict {
	d.saver.Observe(f)
	return d.saver.Verdict()
}

// observeTidies rewrites integer arguments in maps as float64: the facts do
// not change (the canonical form compares numbers as numbers), but the
// caller's step does.
type observeTidies struct{ saver }

func (d observeTidies) Observe(f *rule.Facts) {
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
	d.saver.Observe(f)
}

// observeRenames upper-cases the tool names of the step other rules read,
// in the guard's own copy of the step.
type observeRenames struct{ saver }

func (d observeRenames) Observe(f *rule.Facts) {
	d.saver.Observe(f)
	for i := range f.Calls {
		f.Calls[i].Tool = strings.ToUpper(f.Calls[i].Tool)
	}
}

// restoreForgets accepts any state but keeps none.
type restoreForgets struct{ saver }

func (d restoreForgets) Restore([]byte) error { return d.saver.Restore([]byte("null")) }

// restoreNullKeeps keeps its state when it is restored from null.
type restoreNullKeeps struct{ saver }

func (d restoreNullKeeps) Restore(state []byte) error {
	if string(state) == "null" {
		return nil
	}
	return d.saver.Restore(state)
}

// notSaved keeps the repeat rule's state between steps, but is not a
// Saver: its snapshots are null.
type notSaved struct{ rule.State }

// snapshotReuses returns the same buffer from every Snapshot.
type snapshotReuses struct {
	saver
	buf []byte
}

func (d *snapshotReuses) Snapshot(o rule.SnapshotOptions) ([]byte, error) {
	inner, err := d.saver.Snapshot(o)
	d.buf = append(d.buf[:0], inner...)
	return d.buf, err
}

// snapshotAliases returns the bytes of its state itself.
type snapshotAliases struct {
	saver
	state []byte
}

func (d *snapshotAliases) refresh() {
	d.state, _ = d.saver.Snapshot(rule.SnapshotOptions{})
}

func (d *snapshotAliases) Observe(f *rule.Facts) { d.saver.Observe(f); d.refresh() }
func (d *snapshotAliases) Restore(state []byte) error {
	err := d.saver.Restore(state)
	d.refresh()
	return err
}

func (d *snapshotAliases) Snapshot(o rule.SnapshotOptions) ([]byte, error) {
	if !o.Previews {
		return d.saver.Snapshot(o)
	}
	if d.state == nil {
		d.refresh()
	}
	return d.state, nil
}

// snapshotUnordered writes a map in the order Go iterates it.
type snapshotUnordered struct {
	saver
	seen map[string]int
}

func (d *snapshotUnordered) Observe(f *rule.Facts) {
	d.saver.Observe(f)
	for _, c := range f.Calls {
		d.seen[c.Tool]++
	}
}

func (d *snapshotUnordered) Snapshot(o rule.SnapshotOptions) ([]byte, error) {
	inner, err := d.saver.Snapshot(o)
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
		return d.saver.Restore(state)
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
	return d.saver.Restore(s.Inner)
}

// panicsOnParallel panics on a step with more than 1000 calls.
type panicsOnParallel struct{ saver }

func (d panicsOnParallel) Observe(f *rule.Facts) {
	if len(f.Calls) > 1000 {
		var counts []int
		_ = counts[len(f.Calls)] // index out of range
	}
	d.saver.Observe(f)
}

// sharedState counts steps in a package-level variable, shared by all its
// states, and stops on the tenth.
var sharedSteps atomic.Int64

type sharedState struct{ saver }

func (d sharedState) Observe(f *rule.Facts) { sharedSteps.Add(1); d.saver.Observe(f) }
func (d sharedState) Verdict() rule.Verdict {
	if sharedSteps.Load()%10 == 0 {
		return rule.Verdict{Stop: true, Code: "TENTH"}
	}
	return d.saver.Verdict()
}

// oneState hands out the same state to every guard: the first it made.
type oneState struct {
	rule.Rule
	st *rule.State
}

func (r oneState) NewState() rule.State {
	if *r.st == nil {
		*r.st = r.Rule.NewState()
	}
	return *r.st
}

// sameOptions says its options are always the same.
type sameOptions struct{ *repeat.Rule }

func (sameOptions) Options() any { return "repeat" }

// optionsCount puts the number of steps its states have seen into its
// options.
type optionsCount struct {
	*repeat.Rule
	n *atomic.Int64
}

type countingState struct {
	saver
	n *atomic.Int64
}

func (d countingState) Observe(f *rule.Facts) { d.n.Add(1); d.saver.Observe(f) }

func (d optionsCount) NewState() rule.State {
	return countingState{d.Rule.NewState().(saver), d.n}
}

func (d optionsCount) Options() any {
	return map[string]any{"inner": d.Rule.Options(), "n": d.n.Load()}
}

// badName has a name with a space.
type badName struct{ *repeat.Rule }

func (badName) Name() string { return "my rule" }

// countedName names each rule differently.
var instances atomic.Int64

type countedName struct {
	*repeat.Rule
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

func TestBrokenRules(t *testing.T) {
	other := func(*testing.T) rule.Rule { return wrapped{newRepeat(4)} }
	for _, tc := range []struct {
		name     string
		rule     func(t *testing.T) rule.Rule
		other    func(t *testing.T) rule.Rule
		property string
		message  string // what the problem says; alternatives split by |
		// only: no other property may fail.
		only bool
	}{
		{"preflight counts", breaks(func(s saver) rule.State { return &preflightCounts{saver: s} }), nil,
			"PreflightKeepsState", "Preflight changed the snapshot before step", true},
		// SnapshotRestore asks Preflight too, so it sees the changed state.
		{"preflight observes", breaks(func(s saver) rule.State { return preflightObserves{s} }), nil,
			"PreflightKeepsState", "Preflight changed the snapshot before step", false},
		{"observe tidies", breaks(func(s saver) rule.State { return observeTidies{s} }), nil,
			"ObserveKeepsStep", "Observe or Verdict modified the step given to Check, at ToolCalls[", true},
		{"observe renames", breaks(func(s saver) rule.State { return observeRenames{s} }), nil,
			"ObserveKeepsStep", "Observe or Verdict modified the facts that later rules read, at Calls[", true},
		{"restore forgets", breaks(func(s saver) rule.State { return restoreForgets{s} }), nil,
			"SnapshotRestore", "then Restore into a new state, then Snapshot gives another state", true},
		{"restore of null keeps", breaks(func(s saver) rule.State { return restoreNullKeeps{s} }), nil,
			"RestoreNullIsFresh", "gives another snapshot than a fresh state's", true},
		{"keeps state but is not a Saver", breaks(func(s saver) rule.State { return notSaved{s} }), nil,
			"SnapshotRestore", "the state is not a rule.Saver, so it is saved as null", true},
		{"snapshot reuses its buffer", breaks(func(s saver) rule.State { return &snapshotReuses{saver: s} }), nil,
			"SnapshotBytes", "changed when the run had gone on and Snapshot was called again", true},
		{"snapshot aliases the state", breaks(func(s saver) rule.State { return &snapshotAliases{saver: s} }), nil,
			"SnapshotBytes", "were overwritten, it returns another state", true},
		{"snapshot unordered", breaks(func(s saver) rule.State {
			return &snapshotUnordered{saver: s, seen: map[string]int{}}
		}), nil, "SnapshotBytes", "is not deterministic|two states given the same steps have different snapshots", false},
		{"panics on parallel calls", breaks(func(s saver) rule.State { return panicsOnParallel{s} }), nil,
			"OddSteps", "Check of 5000 identical parallel calls panicked: runtime error: index out of range", true},
		{"shared state", breaks(func(s saver) rule.State { return sharedState{s} }), nil,
			"OddSteps", "running in parallel disturb one another", false},
		{"options ignored", func(*testing.T) rule.Rule { return sameOptions{newRepeat(3)} },
			func(*testing.T) rule.Rule { return sameOptions{newRepeat(4)} },
			"FingerprintDiffers", `a rule with other options has the same fingerprint`, true},
		{"options count steps", func(*testing.T) rule.Rule { return optionsCount{newRepeat(3), new(atomic.Int64)} }, other,
			"Fingerprint", "the fingerprint changed after 1 step", false},
		{"bad name", func(*testing.T) rule.Rule { return badName{newRepeat(3)} }, nil,
			"Name", `Name() = "my rule" is not a valid rule name`, false},
		{"one state for every guard", func(*testing.T) rule.Rule { return oneState{newRepeat(3), new(rule.State)} }, nil,
			"IndependentStates", "the states of one rule are not independent", false},
		// The finish rule keeps only the verdict of the step it observed
		// last: only a step that comes between two calls shows it.
		{"one state between observe and verdict", func(*testing.T) rule.Rule {
			r, err := finish.New(finish.Options{OtherPolicy: finish.Stop})
			if err != nil {
				panic(err)
			}
			return oneState{r, new(rule.State)}
		}, nil, "IndependentStates", "the states of one rule are not independent", false},
		{"a name per rule", func(*testing.T) rule.Rule {
			return countedName{newRepeat(3), fmt.Sprintf("rule%d", instances.Add(1))}
		}, nil, "Name", "two rules from the factory are named", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []guardtest.Option{guardtest.WithSeed(1), guardtest.WithChecks(10)}
			if tc.other != nil {
				opts = append(opts, guardtest.WithOtherOptions(tc.other))
			}
			err := guardtest.Check(tc.rule, opts...)
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

// TestCorrectRule: Check returns nil for a correct rule, with or without
// WithOtherOptions.
func TestCorrectRule(t *testing.T) {
	r := func(*testing.T) rule.Rule { return newRepeat(3) }
	if err := guardtest.Check(r, guardtest.WithChecks(20)); err != nil {
		t.Errorf("Check of the repeat rule: %v", err)
	}
	other := func(*testing.T) rule.Rule { return newRepeat(5) }
	if err := guardtest.Check(r, guardtest.WithChecks(20), guardtest.WithOtherOptions(other)); err != nil {
		t.Errorf("Check of the repeat rule, with other options: %v", err)
	}
}

// TestNilRule: a factory that returns nil is reported, not a panic.
func TestNilRule(t *testing.T) {
	err := guardtest.Check(func(*testing.T) rule.Rule { return nil }, guardtest.WithChecks(2))
	got := failed(err)
	for _, p := range guardtest.Properties() {
		if p == "FingerprintDiffers" {
			continue // skipped without other options
		}
		if !strings.Contains(got[p], "the rule's factory returned nil") {
			t.Errorf("%s: got %q, want a nil rule reported", p, got[p])
		}
	}
}

// TestSeedRepeats: the same seed finds the same failure on the same run.
func TestSeedRepeats(t *testing.T) {
	r := breaks(func(s saver) rule.State { return restoreForgets{s} })
	a := guardtest.Check(r, guardtest.WithSeed(42), guardtest.WithChecks(30))
	b := guardtest.Check(r, guardtest.WithSeed(42), guardtest.WithChecks(30))
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
		return guardtest.Check(breaks(func(s saver) rule.State { return &preflightCounts{saver: s} }),
			guardtest.WithSeed(seed), guardtest.WithChecks(5), guardtest.WithMaxSteps(3),
			guardtest.WithSteps(func(r *rand.Rand) rule.Step {
				text := fmt.Sprintf("text %d", r.IntN(1000))
				texts = append(texts, text)
				return rule.Step{Text: text}
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
