// Package core is the engine behind packages guard (what agents' loops
// call) and rule (what rule authors write against): both are aliases of the
// types here, so that a rule and a guard speak of one Step, one Verdict and
// one Facts. Import guard or rule, never this package.
//
// A [Guard] is built from a [Config] that lists its [Rule] values: the
// standard set from package detector, rules of your own, or both. The
// Config is shared, read-only, by any number of guards; each guard makes its
// own per-run [State] of every rule with NewState. Each finished step goes
// to [Guard.Check], which reduces it once to comparable [Facts] (hashes of
// canonical arguments and outcomes, normalised text and finish reason, usage
// numbers), lets every state observe those facts in priority order, and
// returns the first stop as a [Verdict]. [Guard.Preflight] asks, before a
// tool call runs, whether running it would trip a rule; it changes nothing.
//
// An agent loop, an SDK adapter or a framework integration drives the guard
// through a [Turn] ([Guard.Begin]): it decides the calls of each model reply,
// keyed by their IDs, runs or refuses them, and records the step, refused
// calls in [Step.Refused]. A refused call comes back as a [*RefusedError]
// whose text is safe to hand to the model; a stop ends the loop with a
// [*StopError] carrying the verdict, and a normal finish is not an error.
// Servers in which each call is a step of its own use [Guard.StartCall].
// Once a run stops for a fault, turns and StartCall refuse every call with
// that stop ([Summary].FirstStop) until [Guard.Reset] or a step with new user
// input; Check and Preflight keep the reference's per-step reading.
//
// A guard's run lives in memory, or, behind a [Backend], in a store that
// many workers share (package snapshot): the Guard is the same type either
// way.
//
// The package imports no rule. The built-in rules use exactly the [Rule]
// and [State] interfaces a rule of your own uses: they are ordered by the
// same priorities, fingerprinted and saved in snapshots on equal footing.
// Package guardtest checks that a rule of your own keeps the contract.
//
// A Guard is safe for concurrent use. States are called with the guard's
// lock held and need no locking of their own. A step is hashed before the
// lock is taken, and once Check returns the guard keeps no reference to it.
// A Guard's memory is bounded by its configuration, not by the length of the
// run: raw steps are kept only when [Config.History] asks for it, and then
// only that many.
package core
