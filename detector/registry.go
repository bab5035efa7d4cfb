package detector

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/loopguard/loopguard/guard"
)

// The parts of an options document that the registry reads itself.
const (
	// ToolsKey is the top-level key of the per-tool policies.
	ToolsKey = "tools"
	// IgnoreField is the tool-policy field that leaves a tool out of every
	// rule. It becomes [guard.Options.Ignore].
	IgnoreField = "ignore"
	// DropArgsKey is the top-level key, and DropArgsField the tool-policy
	// field, that list argument fields to leave out of a call's key
	// (request ids, timestamps, nonces). They become
	// [guard.Options.DropArgs] and [guard.ToolOptions.DropArgs].
	DropArgsKey   = "dropArgs"
	DropArgsField = "dropArgs"
	// FailWhenKey is the top-level key, and FailWhenField the tool-policy
	// field, that list regular expressions marking a result as a failure
	// ("^ERROR:", "<returncode>[1-9]"). They become
	// [guard.Options.FailWhen] and [guard.ToolOptions.FailWhen].
	FailWhenKey   = "failWhen"
	FailWhenField = "failWhen"
)

// Input is what an [Entry] builds its detector from: the parts of the
// options document that it registered, as raw JSON.
type Input struct {
	// Values holds the entry's top-level keys that are present in the
	// document. A key set to false is present, with the value false.
	Values map[string]json.RawMessage
	// Tools maps a tool's name to the entry's tool-policy fields that are
	// present under tools.<name>. Tools without any of them are left out.
	Tools map[string]map[string]json.RawMessage
	// Now is the clock for detectors that read the time; nil means
	// time.Now.
	Now func() time.Time
}

// Off reports whether the document switches the entry's detector off, by
// the convention of the built-in detectors: it sets at least one of the
// entry's keys, every one of them to false, and none of its tool fields. A
// Build that follows the convention starts with
//
//	if in.Off() {
//		return nil, nil
//	}
func (in Input) Off() bool {
	if len(in.Values) == 0 || len(in.Tools) > 0 {
		return false
	}
	for _, v := range in.Values {
		if !isLiteral(v, "false") {
			return false
		}
	}
	return true
}

// An Entry tells a [Registry] how to build one detector from an options
// document.
type Entry struct {
	// Keys are the top-level keys of the document that the entry reads,
	// such as "maxSteps" and "budget". Names are exact and case-sensitive.
	Keys []string
	// ToolFields are the fields of tools.<name> that the entry reads,
	// such as "repeatThreshold" and "polling".
	ToolFields []string
	// Default makes the entry build its detector even when none of its
	// keys or tool fields is present (the built-in detectors are on by
	// default). Without it, the entry is only built when the document
	// mentions one of them.
	Default bool
	// Build returns the detector for these options, or nil and a nil error
	// when the options switch it off. A key set to false is passed to it
	// as false; to follow the built-ins' convention, where false switches
	// a detector off, return nil, nil when [Input.Off] says so. The
	// detector's Name must be the entry's name. Build is called again for
	// every guard a [Config] makes, possibly from several goroutines at
	// once: it must return a new detector each time, the same for the same
	// input, and must not modify in. Errors should be *guard.OptionError
	// values whose Field is the path in the document
	// (repeatedToolCall.threshold); other errors are wrapped in one.
	Build func(in Input) (guard.Detector, error)
}

// A Registry knows how to build detectors from a JSON options document: which
// detector reads which keys. It holds no detector itself; every Build makes
// new ones.
//
// A Registry is not safe for concurrent Register calls; once filled, Build may
// be called from many goroutines.
type Registry struct {
	names     []string // in registration order
	entries   map[string]Entry
	keys      map[string]string // top-level key -> entry name
	toolField map[string]string // tool-policy field -> entry name
}

// NewRegistry returns an empty registry: it builds no detector, and every key
// but "tools" and "dropArgs" (with only "ignore" and "dropArgs" in the tool
// policies) is unknown to it.
func NewRegistry() *Registry {
	return &Registry{
		entries:   make(map[string]Entry),
		keys:      make(map[string]string),
		toolField: make(map[string]string),
	}
}

// Standard returns a new registry that holds the built-in detectors under the
// reference's option names: finishReason, maxSteps and budget,
// repeatedToolCall, oscillation, noProgress, and the per-tool fields
// maxCalls, repeatThreshold and polling; and those beyond the reference:
// toolLimit (options of the caps), window and stall (both off unless
// present). Register detectors of your own on it to read their options from
// the same document.
func Standard() *Registry {
	r := NewRegistry()
	for _, b := range builtins() {
		if err := r.Register(b.name, b.entry); err != nil {
			panic("detector: built-in entry: " + err.Error()) // a bug in this package, never data
		}
	}
	return r
}

// ErrRegistry is wrapped by every error of [Registry.Register].
var ErrRegistry = errors.New("detector: cannot register")

// Register adds an entry under a detector name (see [guard.ValidName]). It is
// an error to register a name twice, to claim a key or tool field that
// another entry reads (or the registry's own "tools", "dropArgs" and
// "ignore"), or to give
// an entry with no Build, or one that could never be built.
func (r *Registry) Register(name string, e Entry) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrRegistry, name, fmt.Sprintf(format, args...))
	}
	switch {
	case !guard.ValidName(name):
		return fail("%v", guard.ErrInvalidName)
	case r.entries[name].Build != nil:
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
		case k == ToolsKey, k == DropArgsKey, k == FailWhenKey:
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
	r.entries[name] = e
	r.names = append(r.names, name)
	return nil
}

// Names returns the names of the registered entries, in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Config is what an options document builds: a factory of guards. Each call
// of [Config.New] (or [Config.Restore]) builds fresh detectors, so one Config
// serves any number of runs, one after another or at the same time:
//
//	cfg, err := detector.FromJSON(doc) // once
//	...
//	g, err := cfg.New() // for each run
//
// A Config is a value that is safe for concurrent use once built; change
// its Guard options before sharing it, not while it builds. The zero Config
// builds the standard set, as FromJSON of {} does: [Defaults].
type Config struct {
	// Guard holds the guard's options: Ignore lists the tools whose
	// policy says "ignore": true, sorted; DropArgs the top-level
	// "dropArgs", and Tools each tool's "dropArgs". New and Restore use
	// them; set more (an Observer, History) before calling them.
	Guard guard.Options

	parts []part // the detectors the document switches on, in order
	built bool   // made by Build; the zero Config stands for FromJSON({})
}

// part is how a Config builds one detector.
type part struct {
	name  string
	build func(Input) (guard.Detector, error)
	in    Input
}

// New returns a new guard with fresh detectors and the options in c.Guard:
// it is c.Guard.New(detectors...). Every call builds detectors of its own.
func (c Config) New() (*guard.Guard, error) {
	dets, err := c.Detectors()
	if err != nil {
		return nil, err
	}
	return c.Guard.New(dets...)
}

// Restore returns a guard restored from a snapshot, with fresh detectors and
// the options in c.Guard: it is c.Guard.Restore(data, detectors...).
func (c Config) Restore(data []byte) (*guard.Guard, error) {
	dets, err := c.Detectors()
	if err != nil {
		return nil, err
	}
	return c.Guard.Restore(data, dets...)
}

// Detectors returns fresh detectors, new at every call, that the document
// switches on, in registration order: for a guard of your own composition,
// such as c.Guard.New(append(dets, mine)...). Their state is one run's: give
// each guard its own. The error is only ever that of an entry whose Build
// fails on options it once accepted.
func (c Config) Detectors() ([]guard.Detector, error) {
	if !c.built {
		// A zero Config (a field someone left unset) is not a guard that
		// watches nothing: it is the standard set, as {} builds it.
		std, err := Standard().Build([]byte("{}"), BuildOptions{})
		if err != nil {
			return nil, err
		}
		c.parts = std.parts
	}
	dets := make([]guard.Detector, 0, len(c.parts))
	var errs []error
	for _, p := range c.parts {
		d, err := buildPart(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			dets = append(dets, d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return dets, nil
}

// buildPart builds one detector; nil, nil when its options switch it off.
func buildPart(p part) (guard.Detector, error) {
	d, err := p.build(p.in)
	if err != nil {
		return nil, asOptionError(p.name, p.in, err)
	}
	if d == nil {
		return nil, nil
	}
	if got := d.Name(); got != p.name {
		return nil, fmt.Errorf("detector: entry %q built a detector named %q", p.name, got)
	}
	return d, nil
}

// BuildOptions tune [Registry.Build].
type BuildOptions struct {
	// Now is the clock handed to detectors that read the time (the
	// duration budget); nil means time.Now. A frozen clock makes a replay
	// count only the durations the steps report.
	Now func() time.Time
}

// Build reads an options document and returns the Config that builds the
// detectors it asks for (building them once, to check every option).
//
// The document is a JSON object. Every top-level key must be read by a
// registered entry, or be "tools" or "dropArgs"; every field of tools.<name>
// must be read by an entry, or be "ignore" or "dropArgs". Names are exact and
// case-sensitive, and a key may
// appear only once. Each entry then builds its detector from the keys it
// reads; entries marked Default are built even when none is present, others
// only when one is. An entry's Build may switch its detector off.
//
// Every problem is reported, joined in one error: an unknown key (with the
// name it was probably meant to be), a value of the wrong type or out of
// range. Each is a *guard.OptionError whose Field is the path in the
// document, such as tools.search.maxCalls; errors.Is(err,
// guard.ErrInvalidOption) holds for all of them.
func (r *Registry) Build(doc []byte, o BuildOptions) (Config, error) {
	members, err := readObject(doc)
	if err != nil {
		return Config{}, fmt.Errorf("%w: the options are not a JSON object: %v", guard.ErrInvalidOption, err)
	}
	top := &reader{}
	values := make(map[string]map[string]json.RawMessage)           // entry -> key -> value
	tools := make(map[string]map[string]map[string]json.RawMessage) // entry -> tool -> field -> value
	var gopts guard.Options
	for _, m := range members {
		switch m.key {
		case ToolsKey:
			r.readTools(top, m.val, tools, &gopts)
			continue
		case DropArgsKey:
			gopts.DropArgs = readDropArgs(top, DropArgsKey, m.val)
			continue
		case FailWhenKey:
			gopts.FailWhen = readFailWhen(top, FailWhenKey, m.val)
			continue
		}
		name, ok := r.keys[m.key]
		if !ok {
			top.unknown("", m.key, append(r.sortedKeys(), DropArgsKey, FailWhenKey, ToolsKey))
			continue
		}
		if values[name] == nil {
			values[name] = make(map[string]json.RawMessage)
		}
		values[name][m.key] = m.val
	}
	errs := top.errs
	var parts []part
	for _, name := range r.names {
		e := r.entries[name]
		in := Input{Values: values[name], Tools: tools[name], Now: o.Now}
		if !e.Default && len(in.Values) == 0 && len(in.Tools) == 0 {
			continue
		}
		p := part{name: name, build: e.Build, in: in}
		// Built once here, so that every problem shows now.
		d, err := buildPart(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			parts = append(parts, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return Config{Guard: gopts, parts: parts, built: true}, nil
}

// readDropArgs reads a list of argument fields to drop: an array of
// non-empty strings, each once.
func readDropArgs(r *reader, path string, raw json.RawMessage) []string {
	list := r.stringList(path, raw)
	seen := make(map[string]bool, len(list))
	for i, f := range list {
		switch {
		case f == "":
			r.failf(fmt.Sprintf("%s[%d]", path, i), "must not be empty")
		case seen[f]:
			r.failf(fmt.Sprintf("%s[%d]", path, i), "%q is listed twice", f)
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
func readFailWhen(r *reader, path string, raw json.RawMessage) []string {
	list := r.stringList(path, raw)
	for i, p := range list {
		if p == "" {
			r.failf(fmt.Sprintf("%s[%d]", path, i), "must not be empty")
			continue
		}
		if _, err := regexp.Compile(p); err != nil {
			r.failf(fmt.Sprintf("%s[%d]", path, i), "%v", err)
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

// readTools reads the "tools" object into the entries' tool inputs, and the
// guard's own tool fields into o: the ignored tools (sorted) and the
// argument fields each tool drops.
func (r *Registry) readTools(top *reader, raw json.RawMessage, tools map[string]map[string]map[string]json.RawMessage, o *guard.Options) {
	toolMembers, ok := top.object(ToolsKey, raw)
	if !ok {
		return
	}
	for _, t := range toolMembers {
		tpath := join(ToolsKey, t.key)
		fields, ok := top.object(tpath, t.val)
		if !ok {
			continue
		}
		for _, f := range fields {
			switch f.key {
			case IgnoreField:
				if top.boolean(join(tpath, f.key), f.val) {
					o.Ignore = append(o.Ignore, t.key) // in key order, since members are sorted
				}
				continue
			case DropArgsField:
				if drop := readDropArgs(top, join(tpath, f.key), f.val); len(drop) > 0 {
					if o.Tools == nil {
						o.Tools = make(map[string]guard.ToolOptions)
					}
					to := o.Tools[t.key]
					to.DropArgs = drop
					o.Tools[t.key] = to
				}
				continue
			case FailWhenField:
				if fw := readFailWhen(top, join(tpath, f.key), f.val); len(fw) > 0 {
					if o.Tools == nil {
						o.Tools = make(map[string]guard.ToolOptions)
					}
					to := o.Tools[t.key]
					to.FailWhen = fw
					o.Tools[t.key] = to
				}
				continue
			}
			name, ok := r.toolField[f.key]
			if !ok {
				top.unknown(tpath, f.key, append(r.sortedToolFields(), DropArgsField, FailWhenField, IgnoreField))
				continue
			}
			if tools[name] == nil {
				tools[name] = make(map[string]map[string]json.RawMessage)
			}
			if tools[name][t.key] == nil {
				tools[name][t.key] = make(map[string]json.RawMessage)
			}
			tools[name][t.key][f.key] = f.val
		}
	}
}

func (r *Registry) sortedKeys() []string {
	out := make([]string, 0, len(r.keys))
	for k := range r.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (r *Registry) sortedToolFields() []string {
	out := make([]string, 0, len(r.toolField))
	for f := range r.toolField {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// asOptionError makes sure that an entry's error says errors.Is(err,
// guard.ErrInvalidOption) and names an option: errors that do not are
// wrapped in an *guard.OptionError on the first key the entry was given.
func asOptionError(name string, in Input, err error) error {
	if errors.Is(err, guard.ErrInvalidOption) {
		return err
	}
	field := name
	if keys := sortedMapKeys(in.Values); len(keys) > 0 {
		field = keys[0]
	} else if tools := sortedMapKeys(in.Tools); len(tools) > 0 {
		field = join(ToolsKey, tools[0])
	}
	return &guard.OptionError{Detector: name, Field: field, Err: err}
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// FromJSON builds the standard detectors from an options document with the
// reference's names. It is Standard().Build(doc, BuildOptions{}).
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
//	 "repeatedToolCall": {"warn": true}, "noProgress": {"warn": true},
//	 "oscillation": {"requireIdenticalResults": true, "warn": true},
//	 "toolLimit": {"warn": true},
//	 "window": {"window": 10, "threshold": 3, "warn": true},
//	 "stall": {"threshold": 5, "warn": true},
//	 "repeatedFailure": {"threshold": 5, "window": 10, "sameCall": 3, "warn": true},
//	 "tools": {"search": {"dropArgs": ["nonce"]}}}
//
// dropArgs lists top-level argument fields that no call's key includes, for
// every tool or (under tools) for one; warn switches a rule's early warnings
// on; toolLimit holds the options of all tool caps; window and stall switch
// those rules on (they are not in [Defaults]).
//
// An absent key means the detector's default, true means the defaults too,
// and false switches the detector off ("maxSteps": false keeps the budget
// limits without a step limit). A budget limit is a number or {"limit": N,
// "warnAt": R}; polling is true, false or {"maxIdenticalResults": N}. The
// empty document {} builds exactly [Defaults].
func FromJSON(doc []byte) (Config, error) {
	return Standard().Build(doc, BuildOptions{})
}
