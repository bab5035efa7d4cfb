// Package guard is what an agent's loop calls to keep from looping: a
// [Guard] watches one run, step by step, and says stop or go on, with the
// rule, the evidence and a text that is safe to hand back to the model; it
// can judge a call before it runs. A Guard is built from a [Config], which
// holds the rules (the standard set is detector.Defaults) and is shared,
// read-only, by any number of guards.
//
// A Guard's run lives in memory ([New], [Restore]) or in a store that many
// workers share (package snapshot): it is the same type either way, so every
// adapter works on shared state unchanged. It has one door per use:
//
//   - [Guard.Check] records a finished step, [Guard.Preflight] judges calls
//     before they run: the reference's reading, step by step;
//   - [Guard.Begin] opens a [Turn], the door of hand-written loops and
//     framework adapters: it judges each call, runs it, and records the step;
//   - [Guard.StartCall] is the door of tool servers (MCP), where each call is
//     a step of its own.
//
// A run that stops for a fault stays stopped for turns and StartCall: every
// call is refused with that stop ([Summary].FirstStop) until [Guard.Reset]
// or a step with new user input ([Step].Input) opens a new segment. Check
// and Preflight keep answering each step as the reference reads it.
//
// Writing a rule of your own is the other audience: see package rule.
//
// The types here are aliases of the engine's own (package internal/core, which
// guard and rule share so that a rule and a guard speak of the same Step and
// Verdict). go doc shows each alias's summary; the methods and fields are
// documented on the engine's types: go doc
// github.com/loopguard/loopguard/internal/core.Guard (and .Turn, .Step, ...).
package guard

import "github.com/loopguard/loopguard/internal/core"

// Guard watches one run: see the package documentation and [New].
type Guard = core.Guard

// Config is what guards are built from: rules and options, shared and read-only.
type Config = core.Config

// ToolOptions are the options of one tool in [Config].Tools.
type ToolOptions = core.ToolOptions

// Step is one finished step of a run: the model's text, its tool calls with their outcomes, its finish reason and usage.
type Step = core.Step

// ToolCall is one tool call of a step.
type ToolCall = core.ToolCall

// Usage is what a step cost: tokens, money and time.
type Usage = core.Usage

// Totals are a run's usage totals.
type Totals = core.Totals

// Verdict is the answer to a step: stop or go on, with the rule, the evidence and the feedback.
type Verdict = core.Verdict

// Warning is a rule's warning on a step that goes on.
type Warning = core.Warning

// Decision is the answer to a call before it runs: allowed, or refused with the rule, the evidence and the feedback.
type Decision = core.Decision

// Reason names why a run stopped; each rule's package lists its own.
type Reason = core.Reason

// Summary is a guard's account of its run.
type Summary = core.Summary

// Turn is one step of an agent loop in progress: see [Guard.Begin].
type Turn = core.Turn

// Running is a call that [Guard.StartCall] allowed and that has not finished.
type Running = core.Running

// Event is what [Config].Observer is told after each verdict and decision.
type Event = core.Event

// Phase says whether a verdict answers a finished step or a call before it runs.
type Phase = core.Phase

// StopError ends an agent loop that the guard stopped for a fault.
type StopError = core.StopError

// RefusedError is what [Turn.Run] returns for a call it refused.
type RefusedError = core.RefusedError

// SnapshotOptions tune [Guard.Snapshot].
type SnapshotOptions = core.SnapshotOptions

// OptionError reports an invalid option: errors.Is(err, ErrInvalidOption) holds.
type OptionError = core.OptionError

// DetectorError reports a problem with one rule of a [Config].
type DetectorError = core.DetectorError

// FingerprintError reports a snapshot taken under other options or rules.
type FingerprintError = core.FingerprintError

// Rule is one rule of a [Config]: see package rule.
type Rule = core.Rule

// New returns a guard, in memory, that runs cfg's rules for one run.
func New(cfg Config) (*Guard, error) { return core.New(cfg) }

// Restore rebuilds a guard, in memory, from a snapshot and the configuration it was taken with.
func Restore(data []byte, cfg Config) (*Guard, error) { return core.Restore(data, cfg) }

// IsFault reports whether v stops the run for a fault: every stop but a normal finish.
func IsFault(v Verdict) bool { return core.IsFault(v) }

// Explain returns one line that says what v means, for people.
func Explain(v Verdict) string { return core.Explain(v) }

// RejectionPhrases returns the messages with which coding harnesses reject
// an edit in an ordinary result ("Your proposed edit has introduced new
// syntax error", "No replacement was performed", ...): a text result in
// which a line of its first 1,024 bytes starts with one (after at most 4 of
// '[', '#' and ' ') is a failed call unless [Config].DisableRejections is
// set. It returns a new slice each time.
func RejectionPhrases() []string { return core.RejectionPhrases() }

// The values of the vocabulary,.
const (
	// PhaseCheck is the phase of a verdict on a finished step.
	PhaseCheck = core.PhaseCheck
	// PhasePreflight is the phase of a decision on a call before it runs.
	PhasePreflight = core.PhasePreflight
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
)

// Errors to compare with errors.Is.
var (
	// ErrTurnEnded is returned by the methods of a turn that has ended.
	ErrTurnEnded = core.ErrTurnEnded
	// ErrInvalidOption is wrapped by every [OptionError].
	ErrInvalidOption = core.ErrInvalidOption
	// ErrInvalidState is wrapped by the errors of a snapshot that cannot be restored.
	ErrInvalidState = core.ErrInvalidState
	// ErrOptionsChanged is wrapped by a [FingerprintError].
	ErrOptionsChanged = core.ErrOptionsChanged
)
