package core

import (
	"bytes"
	"encoding/json"
	"time"
)

// A Spec tells an options document how to build one rule: the keys it reads
// and how to build the rule from them. Each rule's package holds its own
// Spec (the built-in rules' are detector/<rule>.Spec), so that everything
// about a rule lives in its package; package detector's standard set only
// lists them, and a rule of your own is registered beside them the same way.
type Spec struct {
	// Name is the rule's name (see [ValidName]): Build's rules must have it.
	Name string
	// Keys are the top-level keys of the document that the rule reads,
	// such as "maxSteps" and "budget". Names are exact and case-sensitive.
	Keys []string
	// ToolFields are the fields of tools.<name> that the rule reads, such
	// as "repeatThreshold" and "polling".
	ToolFields []string
	// Default builds the rule even when none of its keys or tool fields is
	// present (the built-in rules are on by default). Without it, the rule
	// is only built when the document mentions one of them.
	Default bool
	// Build returns the rule for these options, or nil and a nil error
	// when the options switch it off. A key set to false is passed to it
	// as false; to follow the built-ins' convention, where false switches
	// a rule off, return nil, nil when [Input.Off] says so. Build is called
	// once per document and must not modify in. Errors should be
	// *OptionError values whose Field is the path in the document
	// (repeatedToolCall.threshold); other errors are wrapped in one.
	Build func(in Input) (Rule, error)
}

// Input is what a [Spec] builds its rule from: the parts of the options
// document that it registered, as raw JSON.
type Input struct {
	// Values holds the spec's top-level keys that are present in the
	// document. A key set to false is present, with the value false.
	Values map[string]json.RawMessage
	// Tools maps a tool's name to the spec's tool-policy fields that are
	// present under tools.<name>. Tools without any of them are left out.
	Tools map[string]map[string]json.RawMessage
	// Now is the clock for rules that read the time; nil means time.Now.
	Now func() time.Time
}

// Off reports whether the document switches the rule off, by the
// convention of the built-in rules: it sets at least one of the spec's keys,
// every one of them to false, and none of its tool fields.
func (in Input) Off() bool {
	if len(in.Values) == 0 || len(in.Tools) > 0 {
		return false
	}
	for _, v := range in.Values {
		if !bytes.Equal(bytes.TrimSpace(v), []byte("false")) {
			return false
		}
	}
	return true
}

// A Metered rule draws a counter under the timeline of `loopguard audit
// --html`: its value after each step, against the value that stops the
// run.
type Metered interface {
	// Meter returns the rule's counter, or ok false for none (a rule whose
	// options leave it nothing to count).
	Meter() (m Meter, ok bool)
}

// A Meter is a rule's counter, as the audit's timeline draws it.
type Meter struct {
	// Label says what the counter counts ("repeat run").
	Label string
	// Limit is the value that stops the run.
	Limit float64
	// Ratio shows the value as a percentage of a limit (Limit is then 1).
	Ratio bool
	// Read returns the value after a step, from the state's summary (its
	// [Summarizer] value, nil when it has none) and the run's counters.
	Read func(summary any, c Counters) float64
}

// A Hinter is evidence that gives [Explain] a short hint for people: what
// the stop usually means and what to do about it. The built-in rules'
// evidence types are Hinters.
type Hinter interface {
	Hint() string
}
