package detector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"unicode/utf8"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

func ExampleDefaults() {
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	search := guard.Step{
		ToolCalls:    []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q": "loopguard"}`), Result: "no results"}},
		FinishReason: "tool-calls",
	}
	for i := range 5 {
		v, _ := g.Check(ctx, search)
		if v.Stop {
			fmt.Printf("step %d: %s (%s)\n", i, v.Reason, v.Code)
			break
		}
		fmt.Printf("step %d: go on\n", i)
	}
	// Output:
	// step 0: go on
	// step 1: go on
	// step 2: repeated-tool-call (REPEATED_TOOL_CALL)
}

func ExampleFromJSON() {
	cfg, err := detector.FromJSON([]byte(`{
		"maxSteps": 20,
		"repeatedToolCall": {"threshold": 2},
		"tools": {"think": {"ignore": true}, "deploy": {"maxCalls": 1}}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range cfg.Rules { // guard.New(cfg) builds a guard, as many as you like
		fmt.Println(r.Name())
	}
	fmt.Println("ignored:", cfg.Ignore)

	// A misspelt option is an error that names it.
	_, err = detector.FromJSON([]byte(`{"tools": {"search": {"maxcalls": 8}}}`))
	fmt.Println(err)
	// Output:
	// finish
	// budget
	// toollimit
	// refusal
	// repeat
	// failure
	// sameresult
	// oscillation
	// noprogress
	// text
	// input
	// ignored: [think]
	// option tools.search.maxcalls: unknown option (did you mean "maxCalls"?)
}

// textLimit is a rule of one's own: it stops a run when the model writes
// more than a number of characters in one step.
type textLimit struct{ max int }

func (r *textLimit) Name() string         { return "textlimit" }
func (r *textLimit) Priority() int        { return rule.PriorityCustom }
func (r *textLimit) Options() any         { return map[string]int{"maxTextChars": r.max} }
func (r *textLimit) NewState() rule.State { return &textOver{max: r.max} }

// textOver is a run's state of textLimit. It keeps nothing from one step to
// the next, so it is no rule.Saver and needs no snapshot code.
type textOver struct {
	max  int
	over int // the length of the last step's text, when over max
}

func (s *textOver) Preflight(*rule.Facts) guard.Verdict { return guard.Verdict{} }

func (s *textOver) Observe(f *rule.Facts) {
	s.over = 0
	if n := utf8.RuneCountInString(f.Text()); n > s.max {
		s.over = n
	}
}

func (s *textOver) Verdict() guard.Verdict {
	if s.over == 0 {
		return guard.Verdict{}
	}
	return guard.Verdict{Stop: true, Reason: "text-limit", Code: "TEXT_TOO_LONG",
		Detail: fmt.Sprintf("the step wrote %d characters, more than %d", s.over, s.max)}
}

func ExampleRegistry_Register() {
	r := detector.Standard()
	err := r.Register(rule.Spec{Name: "textlimit",
		Keys: []string{"maxTextChars"},
		Build: func(in rule.Input) (rule.Rule, error) {
			var max int
			if err := json.Unmarshal(in.Values["maxTextChars"], &max); err != nil || max < 1 {
				return nil, &guard.OptionError{Detector: "textlimit", Field: "maxTextChars",
					Err: fmt.Errorf("must be a whole number >= 1")}
			}
			return &textLimit{max: max}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	cfg, err := r.Build([]byte(`{"maxTextChars": 10, "maxSteps": 5}`), detector.BuildOptions{})
	if err != nil {
		log.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	v, _ := g.Check(context.Background(), guard.Step{Text: "Let me think about this at length.", FinishReason: "tool-calls"})
	fmt.Println(guard.Explain(v))

	_, err = r.Build([]byte(`{"maxTextChars": 0}`), detector.BuildOptions{})
	fmt.Println(err)
	// Output:
	// stop: text-limit (TEXT_TOO_LONG): the step wrote 34 characters, more than 10
	// textlimit: option maxTextChars: must be a whole number >= 1
}
