// Package guard watches an LLM agent's run step by step and says, with
// evidence, when the run should stop.
//
// A [Guard] is built from an explicit list of [Detector] values: the standard
// set from package detector, detectors of your own, or both. Each finished
// step goes to [Guard.Check], which reduces it once to comparable [Facts]
// (hashes of canonical arguments and outcomes, normalised text and finish
// reason, usage numbers), lets every detector observe those facts in priority
// order, and returns the first stop as a [Verdict]. [Guard.Preflight] asks,
// before a tool call runs, whether running it would trip a rule; it changes
// nothing.
//
// An agent loop, an SDK adapter or a framework integration drives the guard
// through a [Turn] ([Guard.Begin]): it decides the calls of each model reply,
// keyed by their IDs, runs or refuses them, and records the step, refused
// calls in [Step.Refused]. A refused call comes back as a [*RefusedError]
// whose text is safe to hand to the model; a stop ends the loop with a
// [*StopError] carrying the verdict, and a normal finish is not an error.
// Servers in which each call is a step of its own use [Guard.StartCall].
//
// The package imports no detector. The built-in detectors use exactly the
// [Detector] interface a custom detector uses: they are ordered by the same
// priorities, fingerprinted and saved in snapshots on equal footing. Package
// guardtest checks that a detector of your own keeps the interface's
// contract, as the built-ins' tests do with it.
//
// A Guard is safe for concurrent use. Detectors are called with the guard's
// lock held and need no locking of their own; a detector is the state of one
// run, and [New] refuses one that another guard holds (see [Owned]). A step
// is hashed before the lock is taken, and once Check returns the guard keeps
// no reference to it. A Guard's memory is bounded by
// its options, not by the length of the run: raw steps are kept only when
// [Options.History] asks for it, and then only that many.
package core
