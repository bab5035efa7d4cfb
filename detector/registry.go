package detector

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/options"
	"github.com/loopguard/loopguard/rule"
)

// The parts of an options document that the registry reads itself.
const (
	// ToolsKey is the top-level key of the per-tool policies.
	ToolsKey = options.ToolsKey
	// IgnoreField is the tool-policy field that leaves a tool out of every
	// rule. It becomes [guard.Config].Ignore.
	IgnoreField = "ignore"
	// DropArgsKey is the top-level key, and DropArgsField the tool-policy
	// field, that list argument fields to leave out of a call's key
	// (request ids, timestamps, nonces). They become
	// [guard.Config].DropArgs and [guard.ToolOptions.DropArgs].
	DropArgsKey   = "dropArgs"
	DropArgsField = "dropArgs"
	// FailWhenKey is the top-level key, and FailWhenField the tool-policy
	// field, that list regular expressions marking a result as a failure
	// ("^ERROR:", "<returncode>[1-9]"). They become
	// [guard.Config].FailWhen and [guard.ToolOptions.FailWhen].
	FailWhenKey   = "failWhen"
	FailWhenField = "failWhen"
	// RejectionsKey is the top-level key that switches the harnesses'
	// rejection messages off when false (they mark results as failures by
	// default; see [guard.RejectionPhrases]). It becomes
	// [guard.Config].DisableRejections; true is the default.
	RejectionsKey = "rejections"
)

// Input is what a [rule.Spec] builds its rule from; it is rule.Input.
type Input = rule.Input

// Entry is the former name of [rule.Spec], which tells a [Registry] how to
// build one rule from an options document.
type Entry = rule.Spec

// A Registry knows how to build rules from a JSON options document: which
// rule reads which keys. It holds no rule itself; every Build makes new ones.
//
// A Registry is not safe for concurrent Register calls; once filled, Build may
// be called from many goroutines.
type Registry struct {
	names     []string // in registration order
	specs     map[string]rule.Spec
	keys      map[string]string // top-level key -> spec name
	toolField map[string]string // tool-policy field -> spec name
}

// NewRegistry returns an empty registry: it builds no rule, and every key
// but "tools" and "dropArgs" (with only "ignore" and "dropArgs" in the tool
// policies) is unknown to it.
func NewRegistry() *Registry {
	return &Registry{
		specs:     make(map[string]rule.Spec),
		keys:      make(map[string]string),
		toolField: make(map[string]string),
	}
}

// Standard returns a new registry that holds the built-in rules under the
// reference's option names: finishReason, maxSteps and budget,
// repeatedToolCall, oscillation, noProgress, and the per-tool fields
// maxCalls, repeatThreshold and polling; and those beyond the reference:
// toolLimit (options of the caps), window and stall (both off unless
// present). Register rules of your own on it to read their options from the
// same document.
func Standard() *Registry {
	r := NewRegistry()
	for _, s := range standard() {
		if err := r.Register(s); err != nil {
			panic("detector: built-in spec: " + err.Error()) // a bug in this package, never data
		}
	}
	return r
}

// ErrRegistry is wrapped by every error of [Registry.Register].
var ErrRegistry = errors.New("detector: cannot register")

// Register adds the spec of a rule under its Name (see [rule.ValidName]).
// It is an error to register a name twice, to claim a key or tool field that
// another spec reads (or the registry's own "tools", "dropArgs", "failWhen",
// "rejections" and "ignore"), or to give a spec with no Build, or one that could never be
// built.
//
// Build is called once for each document [Registry.Build] reads, possibly
// from several goroutines at once. The rule it returns is shared by every
// guard of the configuration, so it must be immutable (see [rule.Rule]).
func (r *Registry) Register(e rule.Spec) error {
	name := e.Name
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrRegistry, name, fmt.Sprintf(format, args...))
	}
	switch {
	case !rule.ValidName(name):
		return fail("%v", core.ErrInvalidName)
	case r.specs[name].Build != nil:
		return fail("the name is taken")
	case e.Build == nil:
		return fail("Build is nil")
	case !e.Default && len(e.Keys) == 0 && len(e.ToolFields) == 0:
		return fail("no keys, no tool fields and not Default: it would never be built")
	}
	seen := make(map[string]bool)
	for _, k := range e.Keys {
		switch {
		case k == "":
			return fail("empty key")
		case k == ToolsKey, k == DropArgsKey, k == FailWhenKey, k == RejectionsKey:
			return fail("key %q is the registry's own", k)
		case r.keys[k] != "":
			return fail("key %q is read by %q", k, r.keys[k])
		case seen[k]:
			return fail("key %q is listed twice", k)
		}
		seen[k] = true
	}
	seen = make(map[string]bool)
	for _, f := range e.ToolFields {
		switch {
		case f == "":
			return fail("empty tool field")
		case f == IgnoreField, f == DropArgsField, f == FailWhenField:
			return fail("tool field %q is the registry's own", f)
		case r.toolField[f] != "":
			return fail("tool field %q is read by %q", f, r.toolField[f])
		case seen[f]:
			return fail("tool field %q is listed twice", f)
		}
		seen[f] = true
	}
	e.Keys = slices.Clone(e.Keys)
	e.ToolFields = slices.Clone(e.ToolFields)
	for _, k := range e.Keys {
		r.keys[k] = name
	}
	for _, f := range e.ToolFields {
		r.toolField[f] = name
	}
	r.specs[name] = e
	r.names = append(r.names, name)
	return nil
}

// Names returns the names of the registered specs, in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// buildRule builds the rule of one spec; nil, nil when its options switch
// it off.
func buildRule(name string, build func(rule.Input) (rule.Rule, error), in rule.Input) (rule.Rule, error) {
	d, err := build(in)
	if err != nil {
		return nil, asOptionError(name, in, err)
	}
	if d == nil {
		return nil, nil
	}
	if got := d.Name(); got != name {
		return nil, fmt.Errorf("detector: entry %q built a detector named %q", name, got)
	}
	return d, nil
}

// BuildOptions tune [Registry.Build].
type BuildOptions struct {
	// Now is the clock handed to rules that read the time (the duration
	// budget); nil means time.Now. A frozen clock makes a replay
	// count only the durations the steps report.
	Now func() time.Time
}

// Build reads an options document and returns the guards' configuration it
// asks for: the rules it switches on, in registration order, in Rules, and
// the guard's own options the document holds: Ignore lists the tools whose
// policy says "ignore": true, sorted; DropArgs and FailWhen the top-level
// "dropArgs" and "failWhen", and Tools each tool's; DisableRejections is set
// by "rejections": false. Set more (an Observer,
// History) before the Config is shared; its rules are immutable, so one
// Config serves any number of guards, one after another or at the same time.
//
// The document is a JSON object. Every top-level key must be read by a
// registered spec, or be "tools", "dropArgs", "failWhen" or "rejections";
// every field of tools.<name> must be read by a spec, or be "ignore",
// "dropArgs" or "failWhen". Names are exact and case-sensitive, and a key may appear only
// once. Each spec then builds its rule from the keys it reads; specs marked
// Default are built even when none is present, others only when one is. A
// spec's Build may switch its rule off.
//
// Every problem is reported, joined in one error: an unknown key (with the
// name it was probably meant to be), a value of the wrong type or out of
// range. Each is a *guard.OptionError whose Field is the path in the
// document, such as tools.search.maxCalls; errors.Is(err,
// guard.ErrInvalidOption) holds for all of them.
func (r *Registry) Build(doc []byte, o BuildOptions) (guard.Config, error) {
	members, err := options.Object(doc)
	if err != nil {
		return guard.Config{}, fmt.Errorf("%w: the options are not a JSON object: %v", guard.ErrInvalidOption, err)
	}
	top := options.NewReader("")
	values := make(map[string]map[string]json.RawMessage)           // spec -> key -> value
	tools := make(map[string]map[string]map[string]json.RawMessage) // spec -> tool -> field -> value
	var gopts guard.Config
	for _, m := range members {
		switch m.Key {
		case ToolsKey:
			r.readTools(top, m.Value, tools, &gopts)
			continue
		case DropArgsKey:
			gopts.DropArgs = readDropArgs(top, DropArgsKey, m.Value)
			continue
		case FailWhenKey:
			gopts.FailWhen = readFailWhen(top, FailWhenKey, m.Value)
			continue
		case RejectionsKey:
			gopts.DisableRejections = !top.Bool(RejectionsKey, m.Value)
			continue
		}
		name, ok := r.keys[m.Key]
		if !ok {
			top.Unknown("", m.Key, append(options.SortedKeys(r.keys), DropArgsKey, FailWhenKey, RejectionsKey, ToolsKey))
			continue
		}
		if values[name] == nil {
			values[name] = make(map[string]json.RawMessage)
		}
		values[name][m.Key] = m.Value
	}
	errs := top.Errs()
	for _, name := range r.names {
		e := r.specs[name]
		in := rule.Input{Values: values[name], Tools: tools[name], Now: o.Now}
		if !e.Default && len(in.Values) == 0 && len(in.Tools) == 0 {
			continue
		}
		d, err := buildRule(name, e.Build, in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			gopts.Rules = append(gopts.Rules, d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return guard.Config{}, err
	}
	return gopts, nil
}

// readDropArgs reads a list of argument fields to drop: an array of
// non-empty strings, each once.
func readDropArgs(r *options.Reader, path string, raw json.RawMessage) []string {
	list := r.Strings(path, raw)
	seen := make(map[string]bool, len(list))
	for i, f := range list {
		switch {
		case f == "":
			r.Failf(fmt.Sprintf("%s[%d]", path, i), "must not be empty")
		case seen[f]:
			r.Failf(fmt.Sprintf("%s[%d]", path, i), "%q is listed twice", f)
		}
		seen[f] = true
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

// readFailWhen reads a list of regular expressions that mark a result as a
// failure: non-empty strings that compile (RE2 syntax).
func readFailWhen(r *options.Reader, path string, raw json.RawMessage) []string {
	list := r.Strings(path, raw)
	for i, p := range list {
		if p == "" {
			r.Failf(fmt.Sprintf("%s[%d]", path, i), "must not be empty")
			continue
		}
		if _, err := regexp.Compile(p); err != nil {
			r.Failf(fmt.Sprintf("%s[%d]", path, i), "%v", err)
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

// readTools reads the "tools" object into the specs' tool inputs, and the
// guard's own tool fields into o: the ignored tools (sorted) and the
// argument fields each tool drops.
func (r *Registry) readTools(top *options.Reader, raw json.RawMessage, tools map[string]map[string]map[string]json.RawMessage, o *guard.Config) {
	toolMembers, ok := top.Object(ToolsKey, raw)
	if !ok {
		return
	}
	for _, t := range toolMembers {
		tpath := options.Join(ToolsKey, t.Key)
		fields, ok := top.Object(tpath, t.Value)
		if !ok {
			continue
		}
		for _, f := range fields {
			switch f.Key {
			case IgnoreField:
				if top.Bool(options.Join(tpath, f.Key), f.Value) {
					o.Ignore = append(o.Ignore, t.Key) // in key order, since members are sorted
				}
				continue
			case DropArgsField:
				if drop := readDropArgs(top, options.Join(tpath, f.Key), f.Value); len(drop) > 0 {
					if o.Tools == nil {
						o.Tools = make(map[string]guard.ToolOptions)
					}
					to := o.Tools[t.Key]
					to.DropArgs = drop
					o.Tools[t.Key] = to
				}
				continue
			case FailWhenField:
				if fw := readFailWhen(top, options.Join(tpath, f.Key), f.Value); len(fw) > 0 {
					if o.Tools == nil {
						o.Tools = make(map[string]guard.ToolOptions)
					}
					to := o.Tools[t.Key]
					to.FailWhen = fw
					o.Tools[t.Key] = to
				}
				continue
			}
			name, ok := r.toolField[f.Key]
			if !ok {
				top.Unknown(tpath, f.Key, append(options.SortedKeys(r.toolField), DropArgsField, FailWhenField, IgnoreField))
				continue
			}
			if tools[name] == nil {
				tools[name] = make(map[string]map[string]json.RawMessage)
			}
			if tools[name][t.Key] == nil {
				tools[name][t.Key] = make(map[string]json.RawMessage)
			}
			tools[name][t.Key][f.Key] = f.Value
		}
	}
}

// asOptionError makes sure that a spec's error says errors.Is(err,
// guard.ErrInvalidOption) and names an option: errors that do not are
// wrapped in an *guard.OptionError on the first key the spec was given.
func asOptionError(name string, in rule.Input, err error) error {
	if errors.Is(err, guard.ErrInvalidOption) {
		return err
	}
	field := name
	if keys := options.SortedKeys(in.Values); len(keys) > 0 {
		field = keys[0]
	} else if tools := options.SortedKeys(in.Tools); len(tools) > 0 {
		field = options.Join(ToolsKey, tools[0])
	}
	return &rule.OptionError{Detector: name, Field: field, Err: err}
}

// FromJSON builds the guards' configuration, with the standard rules, from
// an options document with the reference's names. It is
// Standard().Build(doc, BuildOptions{}).
//
// The document, in full:
//
//	{"maxSteps": 50,
//	 "repeatedToolCall": {"threshold": 3, "requireIdenticalResults": false, "ignoreErrors": false},
//	 "oscillation": {"maxPeriod": 3, "repeats": 3},
//	 "noProgress": {"threshold": 3},
//	 "finishReason": {"terminal": ["stop", "length", "content-filter", "error"], "otherPolicy": "stop-if-text-only"},
//	 "budget": {"maxTotalTokens": 1000, "maxInputTokens": 1000, "maxOutputTokens": 1000,
//	            "maxCostUsd": 1, "maxDurationMs": 60000, "warnAt": 0.8},
//	 "tools": {"search": {"maxCalls": 8, "repeatThreshold": 2, "polling": {"maxIdenticalResults": 6}, "ignore": false}}}
//
// Beyond the reference, the document may hold:
//
//	{"dropArgs": ["request_id", "timestamp"],
//	 "repeatedToolCall": {"countNewResults": false, "countAcrossTurns": false, "warn": true}, "noProgress": {"warn": true},
//	 "oscillation": {"requireIdenticalResults": true, "sameResults": 2, "warn": true},
//	 "toolLimit": {"warn": true},
//	 "window": {"window": 10, "threshold": 3, "warn": true},
//	 "stall": {"threshold": 5, "warn": true},
//	 "repeatedFailure": {"threshold": 5, "window": 10, "sameCall": 3, "warn": true},
//	 "sameResult": {"threshold": 4, "minBytes": 512, "warn": true},
//	 "tools": {"search": {"dropArgs": ["nonce"]}}}
//
// dropArgs lists top-level argument fields that no call's key includes, for
// every tool or (under tools) for one; warn switches a rule's early warnings
// on; toolLimit holds the options of all tool caps; window and stall switch
// those rules on (they are not in [Defaults]).
//
// An absent key means the rule's default, true means the defaults too, and
// false switches the rule off ("maxSteps": false keeps the budget
// limits without a step limit). A budget limit is a number or {"limit": N,
// "warnAt": R}; polling is true, false or {"maxIdenticalResults": N}. The
// empty document {} builds exactly the rules of [Defaults].
func FromJSON(doc []byte) (guard.Config, error) {
	return Standard().Build(doc, BuildOptions{})
}
