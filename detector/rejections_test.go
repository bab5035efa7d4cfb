package detector_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// TestBuildRejections: "rejections": false switches the harnesses'
// rejection messages off (guard.Config.DisableRejections); true and absence
// keep them; anything else is an error that names the key.
func TestBuildRejections(t *testing.T) {
	tests := []struct {
		doc     string
		disable bool
	}{
		{`{}`, false},
		{`{"rejections": true}`, false},
		{`{"rejections": false}`, true},
		{`{"rejections": false, "failWhen": ["^ERROR:"]}`, true},
	}
	for _, tt := range tests {
		cfg, err := detector.FromJSON([]byte(tt.doc))
		if err != nil {
			t.Fatalf("FromJSON(%s): %v", tt.doc, err)
		}
		if cfg.DisableRejections != tt.disable {
			t.Errorf("FromJSON(%s).DisableRejections = %v, want %v", tt.doc, cfg.DisableRejections, tt.disable)
		}
	}
	errTests := []struct {
		doc  string
		want []problem
	}{
		{`{"rejections": "off"}`, []problem{{"", "rejections", "must be true or false, not a string"}}},
		{`{"rejections": null}`, []problem{{"", "rejections", "must be true or false, not null"}}},
		{`{"rejection": false}`, []problem{{"", "rejection", `unknown option (did you mean "rejections"?)`}}},
		{`{"tools": {"edit": {"rejections": false}}}`, []problem{{"", "tools.edit.rejections", "unknown option"}}},
	}
	for _, tt := range errTests {
		_, err := detector.FromJSON([]byte(tt.doc))
		if !errors.Is(err, guard.ErrInvalidOption) {
			t.Errorf("FromJSON(%s) = %v, want an invalid option", tt.doc, err)
			continue
		}
		got := problems(err)
		for i := range got {
			if i < len(tt.want) && strings.HasPrefix(got[i].Err, tt.want[i].Err) {
				got[i].Err = tt.want[i].Err
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("FromJSON(%s) problems (-want +got):\n%s", tt.doc, diff)
		}
	}
	build := func(rule.Input) (rule.Rule, error) { return nil, nil }
	err := detector.Standard().Register(rule.Spec{Name: "mine", Keys: []string{detector.RejectionsKey}, Build: build})
	if err == nil || !strings.Contains(err.Error(), `key "rejections" is the registry's own`) {
		t.Errorf("Register of a spec reading %q: %v, want the registry's own", detector.RejectionsKey, err)
	}
}

// TestRejectionsReachTheGuard: with the defaults a harness's rejection is a
// failed call; with "rejections": false it is not.
func TestRejectionsReachTheGuard(t *testing.T) {
	for _, tt := range []struct {
		doc    string
		failed int
	}{{`{}`, 1}, {`{"rejections": false}`, 0}} {
		cfg, err := detector.FromJSON([]byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		g, err := guard.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		step := guard.Step{ToolCalls: []guard.ToolCall{{Name: "editor",
			Result: "[Your proposed edit has introduced new syntax error(s). Please understand the errors and retry your edit command.]"}}}
		if _, err := g.Check(t.Context(), step); err != nil {
			t.Fatal(err)
		}
		s, err := g.Summary(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if s.FailedToolCalls != tt.failed {
			t.Errorf("%s: %d failed calls, want %d", tt.doc, s.FailedToolCalls, tt.failed)
		}
	}
}
