package core

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/loopguard/loopguard/canonical"
)

// ToolOptions are the guard's options for one tool.
type ToolOptions struct {
	// DropArgs lists top-level argument fields to leave out before the
	// arguments are hashed, such as "request_id" or "timestamp": two calls
	// that differ only in them are the same call. They add to
	// Config.DropArgs.
	DropArgs []string

	// Key, when set, replaces the tool's arguments by what it returns
	// before they are hashed (after DropArgs). It overrides Config.Key.
	// It must be deterministic and safe for concurrent use (see
	// Config.Key); it is not part of the fingerprint.
	Key func(args any) any

	// FailWhen lists regular expressions (RE2 syntax) that mark a result
	// of this tool as a failure when one matches its text. They add to
	// Config.FailWhen.
	FailWhen []string
}

// keyer decides what of a call's arguments is hashed. It is built once, in
// New, from the options.
type keyer struct {
	drop    map[string]bool            // all tools
	tools   map[string]map[string]bool // per tool, including drop
	key     func(tool string, args any) any
	toolKey map[string]func(args any) any
}

func newKeyer(o *Config) *keyer {
	k := &keyer{key: o.Key}
	if len(o.DropArgs) > 0 {
		k.drop = make(map[string]bool, len(o.DropArgs))
		for _, f := range o.DropArgs {
			k.drop[f] = true
		}
	}
	for name, t := range o.Tools {
		if len(t.DropArgs) > 0 {
			set := maps.Clone(k.drop)
			if set == nil {
				set = make(map[string]bool, len(t.DropArgs))
			}
			for _, f := range t.DropArgs {
				set[f] = true
			}
			if k.tools == nil {
				k.tools = make(map[string]map[string]bool)
			}
			k.tools[name] = set
		}
		if t.Key != nil {
			if k.toolKey == nil {
				k.toolKey = make(map[string]func(any) any)
			}
			k.toolKey[name] = t.Key
		}
	}
	if k.drop == nil && k.tools == nil && k.key == nil && k.toolKey == nil {
		return nil
	}
	return k
}

// args returns the arguments of a call of tool as they are to be hashed.
func (k *keyer) args(tool string, args any) any {
	drop := k.drop
	if set, ok := k.tools[tool]; ok {
		drop = set
	}
	if len(drop) > 0 {
		args = dropFields(args, drop)
	}
	if f := k.toolKey[tool]; f != nil {
		return f(args)
	}
	if k.key != nil {
		return k.key(tool, args)
	}
	return args
}

// dropFields returns args without the top-level object members named in
// drop. Arguments that are not an object are returned as they are; so is
// JSON text that is not valid.
func dropFields(args any, drop map[string]bool) any {
	var m map[string]any
	switch a := args.(type) {
	case nil:
		return nil
	case map[string]any:
		m = a
	case json.RawMessage:
		if !mayHoldMember(a, drop) {
			return args // the common case, decided without decoding
		}
		if json.Unmarshal(a, &m) != nil || m == nil {
			return args
		}
	default:
		b, err := json.Marshal(a)
		if err != nil || json.Unmarshal(b, &m) != nil || m == nil {
			return args
		}
	}
	hit := false
	for f := range drop {
		if _, ok := m[f]; ok {
			hit = true
			break
		}
	}
	if !hit {
		return args
	}
	out := make(map[string]any, len(m))
	for name, v := range m {
		if !drop[name] {
			out[name] = v
		}
	}
	return out
}

// mayHoldMember reports whether JSON text might hold a member named in
// drop: false only when no name appears in it as written and it has no
// escape sequence that could spell one.
func mayHoldMember(text []byte, drop map[string]bool) bool {
	if bytes.Contains(text, []byte(`\u`)) {
		return true
	}
	for name := range drop {
		if bytes.Contains(text, []byte(name)) {
			return true
		}
	}
	return false
}

// keyFingerprint is the part of the options that change a call's facts and
// can be fingerprinted: the dropped fields and the failure patterns, each a
// set (functions cannot be), and whether the rejections are off.
func (o *Config) keyFingerprint() map[string]any {
	fp := map[string]any{}
	if len(o.DropArgs) > 0 {
		fp["dropArgs"] = sortedSet(o.DropArgs)
	}
	tools := map[string]any{}
	for name, t := range o.Tools {
		if len(t.DropArgs) > 0 {
			tools[name] = sortedSet(t.DropArgs)
		}
	}
	if len(tools) > 0 {
		fp["toolDropArgs"] = tools
	}
	if len(o.FailWhen) > 0 {
		fp["failWhen"] = sortedSet(o.FailWhen)
	}
	failTools := map[string]any{}
	for name, t := range o.Tools {
		if len(t.FailWhen) > 0 {
			failTools[name] = sortedSet(t.FailWhen)
		}
	}
	if len(failTools) > 0 {
		fp["toolFailWhen"] = failTools
	}
	if o.DisableRejections {
		// Only when set: the default's fingerprint is that of the
		// versions before the rejections, whose snapshots restore.
		fp["rejections"] = false
	}
	return fp
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// hashArgs hashes a call's arguments, through the keyer when there is one.
// A key function that panics makes the call's arguments unique (canonical's
// placeholder for a value that could not be read).
func (g *Guard) hashArgs(tool string, args any) (sum canonical.Sum) {
	if g.keys == nil {
		return canonical.Hash(args)
	}
	defer func() {
		if recover() != nil {
			sum = canonical.Hash(failing{})
		}
	}()
	return canonical.Hash(g.keys.args(tool, args))
}

// failing is a value whose reading fails, so that it hashes to a unique sum.
type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errFailing }

var errFailing = errorString("key function panicked")

type errorString string

func (e errorString) Error() string { return string(e) }
