package hook

import (
	"context"
	"errors"
	"fmt"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
)

// KeyedOptions tune [NewKeyed]; R is the SDK's tool call request. The zero
// value (with a default key) keys calls with the server defaults, in this
// process's memory.
type KeyedOptions[R any] struct {
	// Key names the run of each call: calls with one key share one run,
	// whichever session, connection or replica they come through. An error
	// means the call cannot be keyed: it does not run, it is answered with
	// [NoKeyText], and the error goes to OnError. Nil means the SDK's
	// default key (its session's ID).
	Key func(ctx context.Context, req R) (string, error)

	// Guards configures the runs' guards; a Config without Rules gets the
	// rules of [ServerDefaults] (its other fields are kept).
	Guards guard.Config

	// Store keeps the runs; nil keeps them in this process's memory. Give
	// every replica of a server the same shared store (such as
	// stores/redis) and the same key function, and each run has one guard
	// whichever replica serves its calls.
	Store snapshot.Store

	// Runs tunes how runs are kept: the policy when the store fails, TTLs
	// (set one: keys that stop being used are otherwise kept), signing.
	Runs snapshot.Options

	// OnError, when set, is told of the errors of the key function (with
	// an empty key) and of the store (Runs.OnError is told too, when set).
	// The answer to the call has been given already, following the policy.
	OnError func(key string, err error)
}

// Keyed finds the run of each tool call of a server by a key, in a
// [snapshot.Runs]: the guard of a call is the run's *guard.Guard
// ([snapshot.Runs.Guard]), used as a server's single guard is, so that a
// call is asked of the run's latest state before it runs and recorded after
// it, whichever replica serves it.
type Keyed[R any] struct {
	runs    *snapshot.Runs
	key     func(context.Context, R) (string, error)
	onError func(string, error)
}

// ServerDefaults returns the configuration of a server's guards when it
// names none: detector.Defaults() without the step limit (the options
// document {"maxSteps": false}). A server's run (a session, a user, a run
// ID) has no natural length, and a limit of 150 steps would refuse every
// call of a long session after the 150th; configure one (with maxSteps in
// the options document) where you want it.
func ServerDefaults() guard.Config {
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": false}`))
	if err != nil {
		panic("loopguard: the server defaults do not build: " + err.Error()) // a constant document
	}
	return cfg
}

// NewKeyed returns Keyed runs with these options; def is the key of the
// calls when o.Key is nil. The errors are those of [snapshot.New].
func NewKeyed[R any](o KeyedOptions[R], def func(context.Context, R) (string, error)) (*Keyed[R], error) {
	if o.Key == nil {
		o.Key = def
	}
	if o.Key == nil {
		return nil, &guard.OptionError{Field: "Key", Err: errors.New("is nil")}
	}
	if o.Guards.Rules == nil {
		o.Guards.Rules = ServerDefaults().Rules
	}
	if o.Store == nil {
		o.Store = snapshot.NewMemory(nil)
	}
	if onError, theirs := o.OnError, o.Runs.OnError; onError != nil {
		o.Runs.OnError = func(key string, err error) {
			if theirs != nil {
				theirs(key, err)
			}
			onError(key, err)
		}
	}
	runs, err := snapshot.New(o.Store, o.Guards, o.Runs)
	if err != nil {
		return nil, err
	}
	return &Keyed[R]{runs: runs, key: o.Key, onError: o.OnError}, nil
}

// Runs returns the runs, so that the server's own code can read a run's
// summary (Runs().Guard(key).Summary(ctx)) or reset it.
func (k *Keyed[R]) Runs() *snapshot.Runs { return k.runs }

// Guard returns the guard of the run that req belongs to. When the key
// function fails, its error goes to OnError and Guard returns it wrapped in
// [ErrNoKey] (unless it wraps ErrNoKey already), so that [Serve] answers the
// call with [NoKeyText].
func (k *Keyed[R]) Guard(ctx context.Context, req R) (*guard.Guard, error) {
	key, err := k.key(ctx, req)
	if err != nil {
		if k.onError != nil {
			k.onError("", err)
		}
		if !errors.Is(err, ErrNoKey) {
			err = fmt.Errorf("%w: %w", ErrNoKey, err)
		}
		return nil, err
	}
	return k.runs.Guard(key), nil
}
