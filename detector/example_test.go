package detector_test

import (
	"encoding/json"
	"fmt"
	"log"
	"unicode/utf8"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

func ExampleDefaults() {
	g, err := guard.New(detector.Defaults()...)
	if err != nil {
		log.Fatal(err)
	}
	search := guard.Step{
		ToolCalls:    []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q": "loopguard"}`), Result: "no results"}},
		FinishReason: "tool-calls",
	}
	for i := range 5 {
		v := g.Check(search)
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
	dets, err := cfg.Detectors() // fresh ones at every call; cfg.New() builds a guard
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range dets {
		fmt.Println(d.Name())
	}
	fmt.Println("ignored:", cfg.Guard.Ignore)

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
	// oscillation
	// noprogress
	// text
	// ignored: [think]
	// option tools.search.maxcalls: unknown option (did you mean "maxCalls"?)
}

// textLimit is a detector of one's own: it stops a run when the model writes
// more than a number of characters in one step.
type textLimit struct {
	max  int
	over int // the length of the last step's text, when over max
}

func (d *textLimit) Name() string                                   { return "textlimit" }
func (d *textLimit) Priority() int                                  { return guard.PriorityCustom }
func (d *textLimit) Options() any                                   { return map[string]int{"maxTextChars": d.max} }
func (d *textLimit) Preflight(*guard.Facts) guard.Verdict           { return guard.Verdict{} }
func (d *textLimit) Snapshot(guard.SnapshotOptions) ([]byte, error) { return []byte("null"), nil }
func (d *textLimit) Restore([]byte) error                           { return nil }
func (d *textLimit) Reset()                                         { d.over = 0 }

func (d *textLimit) Observe(f *guard.Facts) {
	d.over = 0
	if n := utf8.RuneCountInString(f.Text()); n > d.max {
		d.over = n
	}
}

func (d *textLimit) Verdict() guard.Verdict {
	if d.over == 0 {
		return guard.Verdict{}
	}
	return guard.Verdict{Stop: true, Reason: "text-limit", Code: "TEXT_TOO_LONG",
		Detail: fmt.Sprintf("the step wrote %d characters, more than %d", d.over, d.max)}
}

func ExampleRegistry_Register() {
	r := detector.Standard()
	err := r.Register("textlimit", detector.Entry{
		Keys: []string{"maxTextChars"},
		Build: func(in detector.Input) (guard.Detector, error) {
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
	g, err := cfg.New()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(guard.Explain(g.Check(guard.Step{Text: "Let me think about this at length.", FinishReason: "tool-calls"})))

	_, err = r.Build([]byte(`{"maxTextChars": 0}`), detector.BuildOptions{})
	fmt.Println(err)
	// Output:
	// stop: text-limit (TEXT_TOO_LONG): the step wrote 34 characters, more than 10
	// textlimit: option maxTextChars: must be a whole number >= 1
}
