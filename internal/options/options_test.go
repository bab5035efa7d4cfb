package options

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/rule"
)

// messages returns the messages of err's joined errors.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range multi.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func TestReaderFields(t *testing.T) {
	type opts struct {
		N, M  int
		On    bool
		Mode  string
		Ratio float64
	}
	tests := []struct {
		doc  string
		want opts
		errs []string
	}{
		{`{}`, opts{}, nil},
		{`{"n": 2, "m": 5, "on": true, "mode": "b", "ratio": 0.5}`, opts{N: 2, M: 5, On: true, Mode: "b", Ratio: 0.5}, nil},
		{`{"n": 1}`, opts{}, []string{"r: option s.n: must be a whole number >= 2, not 1"}},
		{`{"n": 2.5}`, opts{}, []string{"r: option s.n: must be a whole number >= 2, not 2.5"}},
		{`{"m": 6}`, opts{M: 6}, []string{"r: option s.m: must be at most 5, not 6"}},
		{`{"m": 1}`, opts{}, []string{"r: option s.m: must be a whole number >= 2, not 1"}},
		{`{"on": 1}`, opts{}, []string{"r: option s.on: must be true or false, not a number"}},
		{`{"mode": "c"}`, opts{}, []string{`r: option s.mode: must be "a", "b" or "x", not "c"`}},
		{`{"mode": 3}`, opts{}, []string{"r: option s.mode: must be a string, not a number"}},
		{`{"ratio": 1.5}`, opts{}, []string{"r: option s.ratio: must be a number from 0 to 1, not 1.5"}},
		// Problems come in key order; an unknown key suggests a known one.
		{`{"ratios": 1, "Mode": "a", "n": 0}`, opts{}, []string{
			`r: option s.Mode: unknown option (did you mean "mode"?)`,
			"r: option s.n: must be a whole number >= 2, not 0",
			`r: option s.ratios: unknown option (did you mean "ratio"?)`}},
	}
	for _, tt := range tests {
		r := NewReader("r")
		var o opts
		ms, ok := r.Object("s", json.RawMessage(tt.doc))
		if !ok {
			t.Fatalf("%s: not an object: %v", tt.doc, r.Err())
		}
		r.Fields("s", ms, map[string]Field{
			"n":     r.SetInt(&o.N, 2),
			"m":     r.SetIntRange(&o.M, 2, 5),
			"on":    r.SetBool(&o.On),
			"mode":  SetOneOf(r, &o.Mode, "a", "b", "x"),
			"ratio": func(path string, raw json.RawMessage) { o.Ratio = r.Ratio(path, raw) },
		})
		if diff := cmp.Diff(tt.want, o); diff != "" {
			t.Errorf("%s: options (-want +got):\n%s", tt.doc, diff)
		}
		if diff := cmp.Diff(tt.errs, messages(r.Err())); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// sectionRule is the rule of TestSectionSpec.
type sectionRule struct{ o sectionOpts }

type sectionOpts struct {
	Threshold int
	Warn      bool
}

func (*sectionRule) Name() string         { return "sect" }
func (*sectionRule) Priority() int        { return rule.PriorityCustom }
func (r *sectionRule) Options() any       { return r.o }
func (*sectionRule) NewState() rule.State { return nil }
func newSectionRule(o sectionOpts) (*sectionRule, error) {
	if o.Threshold > 9 {
		return nil, &rule.OptionError{Detector: "sect", Field: "Threshold", Err: errors.New("too high")}
	}
	return &sectionRule{o}, nil
}

func TestSectionSpec(t *testing.T) {
	fields := func(r *Reader, o *sectionOpts) map[string]Field {
		return map[string]Field{"threshold": r.SetInt(&o.Threshold, 2), "warn": r.SetBool(&o.Warn)}
	}
	on := SectionSpec("sect", "section", true, newSectionRule, fields)
	off := SectionSpec("sect", "section", false, newSectionRule, fields)
	if on.Name != "sect" || !cmp.Equal(on.Keys, []string{"section"}) || !on.Default || off.Default || on.ToolFields != nil {
		t.Errorf("specs: %+v and %+v", on, off)
	}
	raw := func(s string) rule.Input {
		if s == "" {
			return rule.Input{}
		}
		return rule.Input{Values: map[string]json.RawMessage{"section": json.RawMessage(s)}}
	}
	tests := []struct {
		doc  string
		want any // the rule's options, or nil for none
		errs []string
	}{
		{"", sectionOpts{}, nil},
		{"true", sectionOpts{}, nil},
		{"false", nil, nil},
		{`{"threshold": 3, "warn": true}`, sectionOpts{Threshold: 3, Warn: true}, nil},
		{`{"threshold": 1}`, nil, []string{"sect: option section.threshold: must be a whole number >= 2, not 1"}},
		{`3`, nil, []string{"sect: option section: must be an object, true or false, not a number"}},
		// The constructor's errors name the option's path.
		{`{"threshold": 10}`, nil, []string{"sect: option section.threshold: too high"}},
	}
	for _, tt := range tests {
		r, err := on.Build(raw(tt.doc))
		var got any
		if r != nil {
			got = r.Options()
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q: options (-want +got):\n%s", tt.doc, diff)
		}
		if diff := cmp.Diff(tt.errs, messages(err)); diff != "" {
			t.Errorf("%q: problems (-want +got):\n%s", tt.doc, diff)
		}
		if err != nil && !errors.Is(err, rule.ErrInvalidOption) {
			t.Errorf("%q: %v is not an ErrInvalidOption", tt.doc, err)
		}
	}
}
