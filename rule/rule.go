// Package rule is what a rule's author writes against, as database/sql/driver
// is for a database driver's: agents' loops use package guard instead.
//
// A [Rule] is an immutable description of one rule: its name, its priority,
// its options, and NewState, which makes the [State] it keeps for one run.
// A guard computes the [Facts] of each step once (hashes of arguments and
// outcomes, normalised text, usage, counters) and hands them to every state
// in priority order. A state that keeps something between steps is also a
// [Saver], so that it is saved and restored with the run; a rule whose
// state keeps nothing writes no snapshot code. The built-in rules (package
// detector and its subpackages) are written exactly this way, and package
// guardtest checks a rule against the contract.
//
// The types here are aliases of the engine's own (package internal/core);
// their methods and fields are documented there: go doc
// github.com/loopguard/loopguard/internal/core.Facts (and .Call, .Verdict, ...).
package rule

import (
	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/core"
)

// Spec tells an options document how to build a rule: its keys and its constructor.
type Spec = core.Spec

// Input is what a [Spec] builds its rule from.
type Input = core.Input

// Metered is a [Rule] that draws a counter under the audit's timeline.
type Metered = core.Metered

// Meter is a rule's counter, as the audit's timeline draws it.
type Meter = core.Meter

// Hinter is evidence that gives Explain a short hint for people.
type Hinter = core.Hinter

// Rule is one rule, described: immutable, shared by every guard built with it.
type Rule = core.Rule

// State is what a [Rule] keeps of one run.
type State = core.State

// Saver is a [State] that is saved with its run.
type Saver = core.Saver

// Summarizer is a [State] that adds a summary of itself to the guard's summary.
type Summarizer = core.Summarizer

// Limiter is a [Rule] whose options are only limits, which a restore may change.
type Limiter = core.Limiter

// Successor is a [Rule] whose options gained a field since an earlier release: a restore takes
// the states saved under its prior options as its own.
type Successor = core.Successor

// Bounded is a [State] that checks a restored state against the run's counters.
type Bounded = core.Bounded

// NormalFinisher is evidence that may say a stop is a normal finish.
type NormalFinisher = core.NormalFinisher

// Facts are the facts of one step, computed once by the guard.
type Facts = core.Facts

// Call are the facts of one tool call.
type Call = core.Call

// Counters are the counts of a run, as a snapshot holds them.
type Counters = core.Counters

// SnapshotOptions say how a state is saved: with previews or not, and how tool names are written.
type SnapshotOptions = core.SnapshotOptions

// Verdict is a state's answer on a step.
type Verdict = core.Verdict

// Warning is a warning on a step that goes on.
type Warning = core.Warning

// Reason names why a rule stops a run.
type Reason = core.Reason

// Phase says whether facts are of a finished step or of calls before they run.
type Phase = core.Phase

// Step is one finished step, as [Facts.Step] gives it.
type Step = core.Step

// ToolCall is one tool call of a step.
type ToolCall = core.ToolCall

// Usage is what a step cost.
type Usage = core.Usage

// Totals are a run's usage totals.
type Totals = core.Totals

// OptionError reports an invalid option of a rule: name the field.
type OptionError = core.OptionError

// UnmarshalState reads a state's JSON strictly into v, as Saver.Restore must.
func UnmarshalState(data []byte, v any) error { return core.UnmarshalState(data, v) }

// Clean escapes what a terminal could act on and cuts s to MaxNameLen bytes.
func Clean(s string) string { return core.Clean(s) }

// Quote is Clean in double quotes.
func Quote(s string) string { return core.Quote(s) }

// FormatNumber writes a number of evidence or detail as people read it.
func FormatNumber(f float64) string { return core.FormatNumber(f) }

// HashName returns the hashed form of a tool name that is not a plain name.
func HashName(name string) string { return core.HashName(name) }

// IsHashedName reports whether s is a name HashName made.
func IsHashedName(s string) bool { return core.IsHashedName(s) }

// PlainName reports whether a tool name is written as it is in a snapshot without previews.
func PlainName(name string) bool { return core.PlainName(name) }

// ValidName reports whether name can name a rule.
func ValidName(name string) bool { return core.ValidName(name) }

// NormalizeFinishReason normalises a provider's finish reason as the guard does.
func NormalizeFinishReason(s string) string { return core.NormalizeFinishReason(s) }

// IsFault reports whether v stops the run for a fault.
func IsFault(v Verdict) bool { return core.IsFault(v) }

// The values of the vocabulary,.
const (
	// PriorityFinish is the priority of the finish-reason rule.
	PriorityFinish = core.PriorityFinish
	// PriorityBudget is the priority of the budget rule.
	PriorityBudget = core.PriorityBudget
	// PriorityToolLimit is the priority of the tool-limit rule.
	PriorityToolLimit = core.PriorityToolLimit
	// PriorityRepeat is the priority of the repeat rules.
	PriorityRepeat = core.PriorityRepeat
	// PriorityOscillation is the priority of the oscillation rule.
	PriorityOscillation = core.PriorityOscillation
	// PriorityNoProgress is the priority of the no-progress rules.
	PriorityNoProgress = core.PriorityNoProgress
	// PriorityCustom is a good priority for a rule that should only speak when no built-in rule stops the run.
	PriorityCustom = core.PriorityCustom
	// PhaseCheck is the phase of a finished step.
	PhaseCheck = core.PhaseCheck
	// PhasePreflight is the phase of calls before they run.
	PhasePreflight = core.PhasePreflight
	// ReasonCustom is the reason of a stop that gives none.
	ReasonCustom = core.ReasonCustom
	// CodeCustom is the code of a stop that gives none.
	CodeCustom = core.CodeCustom
	// FinishStop is the normalised finish reason of a model that finished its turn.
	FinishStop = core.FinishStop
	// FinishToolCalls is the normalised finish reason of a model that asks for tool calls.
	FinishToolCalls = core.FinishToolCalls
	// FinishLength is the normalised finish reason of an output cut at a token limit.
	FinishLength = core.FinishLength
	// FinishContentFilter is the normalised finish reason of an output withheld or refused.
	FinishContentFilter = core.FinishContentFilter
	// FinishError is the normalised finish reason of a provider that failed to finish the turn.
	FinishError = core.FinishError
	// FinishOther is the provider's own "other".
	FinishOther = core.FinishOther
	// Redacted is what a preview reads in a snapshot without previews.
	Redacted = core.Redacted
	// PreviewLen is the longest preview of a call, in characters.
	PreviewLen = core.PreviewLen
	// MaxNameLen is the longest name or code that evidence and details show.
	MaxNameLen = core.MaxNameLen
	// MaxPlainNameLen is the longest tool name written as it is.
	MaxPlainNameLen = core.MaxPlainNameLen
)

// Errors to compare with errors.Is.
var (
	// ErrInvalidOption is wrapped by every [OptionError].
	ErrInvalidOption = core.ErrInvalidOption
	// ErrInvalidState is what a Restore that refuses a state wraps.
	ErrInvalidState = core.ErrInvalidState
)

// Fingerprint returns the fingerprint of a rule's options: the hash of
// their canonical JSON.
func Fingerprint(r Rule) canonical.Sum { return core.Fingerprint(r) }
