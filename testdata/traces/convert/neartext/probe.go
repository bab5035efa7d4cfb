// Command probe writes, per step of every run in a directory, what the
// repeatedText rule sees (issue 22, near-identical texts): whether the step
// counts today (it has text, brings no new successful outcome, repeats no
// input, refuses nothing, is no speaker label), its normalised text, its
// input hash, and the reason of the default guard's verdict on it. The rule's
// counting is copied here (the probe is a rule of its own, after the others).
// Run from the repository root:
//
//	go run ./testdata/traces/convert/neartext testdata/traces > steps.jsonl
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
	"github.com/loopguard/loopguard/trace"
)

// rec is what the probe records of one step.
type rec struct {
	File      string `json:"file"`
	Step      int    `json:"step"`
	Text      string `json:"text"`
	HasText   bool   `json:"hasText"`
	Progress  bool   `json:"progress"`
	SameInput bool   `json:"sameInput"`
	NewInput  bool   `json:"newInput"`
	Input     string `json:"input"`
	Refused   bool   `json:"refused"`
	Label     bool   `json:"label"`
	Calls     int    `json:"calls"`
	Failed    int    `json:"failed"`
	Stop      string `json:"stop"` // the reason of the default guard's verdict, "" to go on
}

// probe is a rule that judges nothing: it records each step as repeatedText
// counts it, into out.
type probe struct {
	out  *[]rec
	file string
}

func (p *probe) Name() string  { return "zprobe" }
func (p *probe) Priority() int { return rule.PriorityCustom + 1000 }
func (p *probe) Options() any  { return nil }
func (p *probe) NewState() rule.State {
	return &pstate{p: p}
}

// pstate is one run's probe: the successful outcomes of the last 10 steps
// (at most 4 each, as text.MaxStepOutcomes) and the last input hash.
type pstate struct {
	p    *probe
	outs [][]canonical.Sum
	last canonical.Sum
}

// seen reports whether a step in the window, but the one the next step
// pushes out, brought outcome o (as the rule's seen).
func (s *pstate) seen(o canonical.Sum) bool {
	from := 0
	if len(s.outs) == 10 {
		from = 1
	}
	for _, step := range s.outs[from:] {
		for _, x := range step {
			if x == o {
				return true
			}
		}
	}
	return false
}

// isLabel is the rule's speaker label test (detector/text).
func isLabel(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) < 3 || len(s) > 34 {
		return false
	}
	if first, last := s[0], s[len(s)-1]; !(first == '[' && last == ']' || first == '<' && last == '>') {
		return false
	}
	for _, c := range []byte(s[1 : len(s)-1]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Observe records the step.
func (s *pstate) Observe(f *rule.Facts) {
	r := rec{File: s.p.file, Step: f.Index, Text: f.Text(), HasText: f.HasText, NewInput: f.NewInput}
	r.SameInput = f.NewInput && f.InputHash == s.last
	s.last = f.InputHash
	if f.NewInput {
		r.Input = hex.EncodeToString(f.InputHash[:8])
	}
	var mine []canonical.Sum
	for _, c := range f.Calls {
		r.Calls++
		if c.Ignored {
			continue
		}
		if c.Failed {
			r.Failed++
			continue
		}
		if !s.seen(c.Outcome) {
			r.Progress = true
		}
		if len(mine) < 4 {
			mine = append(mine, c.Outcome)
		}
	}
	r.Refused = len(f.Refused) > 0
	r.Label = f.Step() != nil && isLabel(f.Step().Text)
	s.outs = append(s.outs, mine)
	if len(s.outs) > 10 {
		s.outs = s.outs[1:]
	}
	*s.p.out = append(*s.p.out, r)
}

// Verdict and Preflight judge nothing.
func (s *pstate) Verdict() rule.Verdict              { return rule.Verdict{} }
func (s *pstate) Preflight(*rule.Facts) rule.Verdict { return rule.Verdict{} }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe DIR > steps.jsonl")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

// run replays every .jsonl run in dir through the default set and the
// probe, and writes the probe's records.
func run(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for _, fn := range files {
		data, err := os.ReadFile(fn)
		if err != nil {
			return err
		}
		t, err := trace.Parse(data, trace.Unknown)
		if err != nil {
			return fmt.Errorf("%s: %w", fn, err)
		}
		var out []rec
		p := &probe{out: &out, file: filepath.Base(fn)}
		// The audit's guard: the default options, a frozen clock.
		cfg, err := detector.Standard().Build([]byte("{}"), detector.BuildOptions{Now: func() time.Time { return time.Unix(0, 0) }})
		if err != nil {
			return err
		}
		cfg.Rules = append(cfg.Rules, p)
		g, err := guard.New(cfg)
		if err != nil {
			return err
		}
		for _, st := range t.Steps {
			v, err := g.Check(context.Background(), st)
			if err != nil {
				return fmt.Errorf("%s: %w", fn, err)
			}
			if v.Stop && len(out) > 0 {
				out[len(out)-1].Stop = string(v.Reason)
			}
		}
		for _, r := range out {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	return nil
}
