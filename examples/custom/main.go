// Command custom shows a rule of your own beside the built-in ones.
//
// FailStreak stops a run when the last N tool calls all failed, whatever the
// tools and arguments: an agent retrying a broken service with ever new
// arguments slips past the repeated-call rule, but not past this one. It
// implements rule.Rule, and its state rule.State and rule.Saver, as the
// built-in rules do, so it is ordered, fingerprinted and saved in snapshots
// like them.
//
// Everything about the rule is in this file, as everything about a built-in
// rule is in its package: its Spec registers it on the standard registry
// under its own option, "maxFailedCalls", so one JSON document configures it
// and the built-ins (and a misspelt key is still an error); its stops carry
// their model-facing Feedback; its state is saved in snapshots under its
// name; and as a rule.Metered it draws its streak under the timeline of
// `loopguard audit --html`. It uses only the packages rule, guard and
// detector: nothing of the core was changed for it.
//
//	go run ./examples/custom
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// Name is the rule's name: the key of its state in snapshots.
const Name = "failstreak"

// Code is the code of its stops.
const Code = "FAIL_STREAK"

// maxToolName is the longest tool name kept in the state.
const maxToolName = 256

// FailStreak stops a run after Threshold failed tool calls in a row. It is
// the rule's description (its threshold), shared by any number of guards;
// each run's streak is in the state NewState makes.
type FailStreak struct {
	threshold int
}

var (
	_ rule.Rule       = (*FailStreak)(nil)
	_ rule.Metered    = (*FailStreak)(nil)
	_ rule.Saver      = (*streakState)(nil)
	_ rule.Summarizer = (*streakState)(nil)
)

// Evidence is the evidence of a stop.
type Evidence struct {
	Tool      string `json:"tool"`
	Failures  int    `json:"failures"`
	Threshold int    `json:"threshold"`
}

// NewFailStreak returns the rule, or an error for a threshold below 1.
func NewFailStreak(threshold int) (*FailStreak, error) {
	if threshold < 1 {
		return nil, &rule.OptionError{Detector: Name, Field: "Threshold", Err: errors.New("must be at least 1")}
	}
	return &FailStreak{threshold: threshold}, nil
}

// Name returns "failstreak".
func (r *FailStreak) Name() string { return Name }

// Priority puts it after the built-in rules.
func (r *FailStreak) Priority() int { return rule.PriorityCustom }

// Options returns the threshold, for the fingerprint.
func (r *FailStreak) Options() any {
	return struct {
		Threshold int `json:"threshold"`
	}{r.threshold}
}

// NewState returns the state of a fresh run.
func (r *FailStreak) NewState() rule.State { return &streakState{threshold: r.threshold} }

// Meter is the streak, against the threshold that stops the run.
func (r *FailStreak) Meter() (rule.Meter, bool) {
	return rule.Meter{Label: "fail streak", Limit: float64(r.threshold), Read: func(summary any, _ rule.Counters) float64 {
		s, _ := summary.(Summary)
		return float64(s.Streak)
	}}, true
}

// OptionKey is the rule's key in an options document: the threshold, or
// false for none.
const OptionKey = "maxFailedCalls"

// Spec tells a [detector.Registry] how to build the rule from an options
// document: from OptionKey. The rule is off unless the key is present.
func Spec() rule.Spec {
	return rule.Spec{Name: Name, Keys: []string{OptionKey}, Build: func(in rule.Input) (rule.Rule, error) {
		if in.Off() { // "maxFailedCalls": false switches it off, as for the built-ins
			return nil, nil
		}
		var n int
		if err := json.Unmarshal(in.Values[OptionKey], &n); err != nil {
			return nil, &rule.OptionError{Detector: Name, Field: OptionKey, Err: err}
		}
		r, err := NewFailStreak(n)
		if err != nil {
			return nil, &rule.OptionError{Detector: Name, Field: OptionKey, Err: errors.Unwrap(err)}
		}
		return r, nil
	}}
}

// streakState is one run's streak of failed calls.
type streakState struct {
	threshold int
	streak    int    // failed calls in a row, at most threshold
	tool      string // the tool of the newest failed call
	stop      bool   // whether the last step stops the run
}

// Observe counts failed calls; a call that succeeds ends the streak. Calls of
// ignored tools do not count either way.
func (d *streakState) Observe(f *rule.Facts) {
	d.stop = false
	counted := false
	for i := range f.Calls {
		c := &f.Calls[i]
		if c.Ignored {
			continue
		}
		counted = true
		if !c.Failed {
			d.streak, d.tool = 0, ""
			continue
		}
		d.streak = min(d.streak+1, d.threshold)
		d.tool = c.Tool[:min(len(c.Tool), maxToolName)]
	}
	d.stop = counted && d.streak >= d.threshold
}

// Verdict stops the run on a step whose calls complete a streak.
func (d *streakState) Verdict() rule.Verdict {
	if !d.stop {
		return rule.Verdict{}
	}
	return rule.Verdict{
		Stop:     true,
		Reason:   rule.ReasonCustom,
		Code:     Code,
		Detail:   fmt.Sprintf("the last %d tool calls failed (threshold %d); the newest was %q", d.streak, d.threshold, d.tool),
		Evidence: Evidence{Tool: d.tool, Failures: d.streak, Threshold: d.threshold},
		// Feedback is for the model: fixed words and numbers only.
		Feedback: "Your last " + strconv.Itoa(d.streak) + " tool calls all failed. Stop retrying: tell the user what is failing, or try a different approach.",
	}
}

// Preflight refuses nothing: whether a call fails is only known once it
// has run.
func (d *streakState) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

// Summary is the state's summary, in [guard.Summary].Detectors.
type Summary struct {
	// Streak is the number of failed calls in a row, at most the threshold.
	Streak int `json:"streak"`
	// Tool is the tool of the newest failed call.
	Tool string `json:"tool"`
}

// Summary returns the streak.
func (d *streakState) Summary() any { return Summary{Streak: d.streak, Tool: d.tool} }

type saved struct {
	Streak int    `json:"streak"`
	Tool   string `json:"tool"`
}

// Snapshot returns the streak as JSON, or null for a fresh state.
func (d *streakState) Snapshot(rule.SnapshotOptions) ([]byte, error) {
	if d.streak == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(saved{d.streak, d.tool})
}

// Restore reads what Snapshot wrote, and rejects anything else.
func (d *streakState) Restore(data []byte) error {
	if string(data) == "null" {
		d.streak, d.tool, d.stop = 0, "", false
		return nil
	}
	var s saved
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: %s: %v", rule.ErrInvalidState, Name, err)
	}
	if s.Streak < 1 || s.Streak > d.threshold || len(s.Tool) > maxToolName {
		return fmt.Errorf("%w: %s: streak %d, tool of %d bytes", rule.ErrInvalidState, Name, s.Streak, len(s.Tool))
	}
	d.streak, d.tool, d.stop = s.Streak, s.Tool, false
	return nil
}

// registry is the standard registry with FailStreak's Spec added: one line.
func registry() (*detector.Registry, error) {
	r := detector.Standard()
	return r, r.Register(Spec())
}

const options = `{"maxFailedCalls": 3, "repeatedToolCall": {"threshold": 4}}`

// call makes a call of the simulated agent, with its outcome.
func call(tool, args, failure string) guard.ToolCall {
	c := guard.ToolCall{Name: tool, Args: json.RawMessage(args), Result: "ok"}
	if failure != "" {
		c.Result, c.Err = nil, errors.New(failure)
	}
	return c
}

func run(out io.Writer) error {
	ctx := context.Background()
	r, err := registry()
	if err != nil {
		return err
	}
	cfg, err := r.Build([]byte(options), detector.BuildOptions{})
	if err != nil {
		return err
	}
	g, err := guard.New(cfg)
	if err != nil {
		return err
	}
	var names []string
	for _, d := range g.Rules() {
		names = append(names, d.Name())
	}
	fmt.Fprintf(out, "detectors, in the order they are asked: %s\n", strings.Join(names, ", "))

	// An agent retrying a payment service that is down, each time with a
	// new idempotency key: never the same call twice.
	steps := []guard.ToolCall{
		call("get_invoice", `{"id": "inv_7"}`, ""),
		call("charge_card", `{"invoice": "inv_7", "key": "a1"}`, "503 Service Unavailable"),
		call("charge_card", `{"invoice": "inv_7", "key": "a2"}`, "503 Service Unavailable"),
		call("charge_card", `{"invoice": "inv_7", "key": "a3"}`, "503 Service Unavailable"),
		call("charge_card", `{"invoice": "inv_7", "key": "a4"}`, "503 Service Unavailable"),
	}
	for i, c := range steps {
		v, err := g.Check(ctx, guard.Step{ToolCalls: []guard.ToolCall{c}})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "step %d: %s %s: %s\n", i, c.Name, c.Args, guard.Explain(v))
		if v.Stop {
			fmt.Fprintf(out, "feedback: %s\n", v.Feedback)
			break
		}
	}

	// A misspelt option is caught, even though the registry has never heard
	// of it before.
	_, err = r.Build([]byte(`{"maxFailedCall": 3}`), detector.BuildOptions{})
	fmt.Fprintf(out, "misspelt: %v\n", err)
	return nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "custom:", err)
		os.Exit(1)
	}
}
