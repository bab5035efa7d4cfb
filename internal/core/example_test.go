package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
)

// The examples of the guard's doors (New, Check, Begin, StartCall,
// Snapshot and Restore) are in package guard, where go doc shows them.

// Preflight asks, before calls run, whether running them would trip a rule,
// and changes nothing. Ask about all the calls of a step at once: three
// identical calls made in parallel are refused together, where asking about
// each alone would let every one through.
func ExampleGuard_Preflight() {
	ctx := context.Background()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		log.Fatal(err)
	}
	call := guard.ToolCall{Name: "search", Args: json.RawMessage(`{"query": "loopguard"}`)}

	one, err := g.Preflight(ctx, call)
	if err != nil {
		log.Fatal(err)
	}
	three, err := g.Preflight(ctx, call, call, call)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("one call:", one.Allow)
	fmt.Println("three at once:", three.Allow, three.Code)
	fmt.Println("to the model:", three.Feedback)
	// Output:
	// one call: true
	// three at once: false REPEATED_TOOL_CALL
	// to the model: That call was not run: it would have been the 3rd call in a row to `search` with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.
}

// textLimit is a rule of one's own: it stops a run when the model writes
// more than max characters in a step. It implements guard.Rule as the
// built-in rules do, so it is ordered and fingerprinted like them; its
// state keeps nothing from one step to the next, so it is no Saver and is
// saved as null.
type textLimit struct{ max int }

// textLimitState is a textLimit's state of one run: the length of the last
// step's text, when over max.
type textLimitState struct {
	max  int
	over int
}

func (r *textLimit) Name() string          { return "textlimit" }
func (r *textLimit) Priority() int         { return guard.PriorityCustom }
func (r *textLimit) Options() any          { return map[string]int{"maxTextChars": r.max} }
func (r *textLimit) NewState() guard.State { return &textLimitState{max: r.max} }

func (s *textLimitState) Preflight(*guard.Facts) guard.Verdict { return guard.Verdict{} }

func (s *textLimitState) Observe(f *guard.Facts) {
	s.over = 0
	if n := len([]rune(f.Text())); n > s.max {
		s.over = n
	}
}

func (s *textLimitState) Verdict() guard.Verdict {
	if s.over == 0 {
		return guard.Verdict{}
	}
	return guard.Verdict{Stop: true, Reason: "text-limit", Code: "TEXT_TOO_LONG",
		Detail: fmt.Sprintf("the step wrote %d characters, more than %d", s.over, s.max)}
}

// A rule of one's own runs beside the built-in ones, after them.
func ExampleRule() {
	g, err := guard.New(guard.Config{Rules: append(detector.Defaults(), &textLimit{max: 20})})
	if err != nil {
		log.Fatal(err)
	}
	v, err := g.Check(context.Background(), guard.Step{Text: "Let me think about this at some length.", FinishReason: "tool-calls"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(guard.Explain(v))
	// Output:
	// stop: text-limit (TEXT_TOO_LONG): the step wrote 39 characters, more than 20
}
