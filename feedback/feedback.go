// Package feedback writes the model-facing text of loopguard's verdicts: a
// few plain sentences, fixed for each code, that can be pasted into the
// model's next turn or a tool result so that it changes course.
//
// The text is built from fixed sentences, counts, limits and the tool's name,
// and nothing else. It never repeats arguments, results, model text or
// provider strings: those can hold secrets or personal data, and this text is
// sent to a model and ends up in logs and transcripts. A tool name is used
// only when it looks like an ordinary identifier (see [ToolName]).
package feedback

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// MaxToolNameLen is the longest tool name the feedback repeats.
const MaxToolNameLen = rule.MaxPlainNameLen

// ThatTool is what the feedback says in place of a tool name it will not
// repeat.
const ThatTool = "that tool"

// ToolName returns name quoted in backticks when it looks like an ordinary
// identifier (1 to 64 ASCII letters, digits and '_', '.', ':', '/', '-'), and
// "that tool" otherwise. The model chooses tool names, so anything else could
// carry text that must not be repeated.
func ToolName(name string) string {
	if !SafeName(name) {
		return ThatTool
	}
	return "`" + name + "`"
}

// SafeName reports whether name may appear in feedback: whether it is a
// [rule.PlainName]. Snapshots taken without previews keep such names too,
// and hash the others.
func SafeName(name string) bool { return rule.PlainName(name) }

// fields are the evidence fields the texts use. Evidence of any type is read
// through its JSON form, so a custom detector's evidence with the same field
// names gets the same treatment.
type fields struct {
	Tool      string   `json:"tool"`
	Tools     []string `json:"tools"`
	Count     float64  `json:"count"`
	Calls     float64  `json:"calls"`
	Limit     float64  `json:"limit"`
	Threshold float64  `json:"threshold"`
	Steps     float64  `json:"steps"`
	Period    float64  `json:"period"`
	Repeats   float64  `json:"repeats"`
	Metric    string   `json:"metric"`
	Value     float64  `json:"value"`
	// IdenticalResults: a repeat rule that compared results too.
	IdenticalResults bool `json:"identicalResults"`
}

func readFields(evidence any) (f fields) {
	defer func() {
		if recover() != nil {
			f = fields{}
		}
	}()
	switch ev := evidence.(type) {
	case nil:
		return f
	case json.RawMessage:
		_ = json.Unmarshal(ev, &f)
		return f
	}
	if b, err := json.Marshal(evidence); err == nil {
		_ = json.Unmarshal(b, &f)
	}
	return f
}

// num prints a count or limit: whole numbers without a fraction, others
// rounded to at most four decimals.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "?"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(math.Round(f*1e4)/1e4, 'f', -1, 64)
}

func times(n float64) string {
	if n == 1 {
		return "once"
	}
	if n == 2 {
		return "twice"
	}
	return num(n) + " times"
}

var metricWords = map[string]string{
	"totalTokens":  "token budget",
	"inputTokens":  "input-token budget",
	"outputTokens": "output-token budget",
	"costUsd":      "cost budget (in US dollars)",
	"durationMs":   "time budget (in milliseconds)",
}

// For returns the default model-facing text for v in the given phase, or ""
// when there is none: for a verdict that goes on, for a normal "stop" finish,
// and for codes this package does not know (a custom detector supplies its
// own text).
func For(v guard.Verdict, phase guard.Phase) string {
	if !v.Stop || !guard.IsFault(v) {
		return ""
	}
	f := readFields(v.Evidence)
	if phase == guard.PhasePreflight {
		if v.Code == CodeStall || v.Code == CodeRepeatedFailure || v.Code == CodeRepeatedRefusal || v.Code == CodeRepeatedText {
			return "" // these rules never refuse a call
		}
		if body := refusal(v.Code, f); body != "" {
			return "That call was not run: " + body
		}
		if body := text(v.Code, f); body != "" {
			return "That call was not run. " + body
		}
		return ""
	}
	return text(v.Code, f)
}

// ForDecision returns the default text for a refused call ("" for an allowed
// one).
func ForDecision(d guard.Decision) string {
	return For(d.Verdict(), guard.PhasePreflight)
}

// ordinal writes 2nd, 3rd, 11th, ...
func ordinal(f float64) string {
	n := num(f)
	switch {
	case strings.HasSuffix(n, "11"), strings.HasSuffix(n, "12"), strings.HasSuffix(n, "13"):
		return n + "th"
	case strings.HasSuffix(n, "1"):
		return n + "st"
	case strings.HasSuffix(n, "2"):
		return n + "nd"
	case strings.HasSuffix(n, "3"):
		return n + "rd"
	}
	return n + "th"
}

// refusal is the body of a refusal in preflight where it reads differently
// from the verdict: the refused call has not been made.
func refusal(code string, f fields) string {
	switch code {
	case "REPEATED_TOOL_CALL":
		return fmt.Sprintf("it would have been the %s call in a row to %s with exactly the same arguments, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", ordinal(f.Count), ToolName(f.Tool))
	case CodeWindowedRepeat:
		return fmt.Sprintf("it would have been exactly the same call to %s for the %s time among your recent calls, and it would not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", ToolName(f.Tool), ordinal(f.Count))
	case "OSCILLATION":
		return fmt.Sprintf("it would have completed the same cycle of %s calls (%s) for the %s time without getting closer to an answer. Break the cycle: try a different approach, or answer with what you already know.", num(f.Period), toolList(f.Tools), ordinal(f.Repeats))
	}
	return ""
}

// text is the body of the message for a code.
func text(code string, f fields) string {
	switch code {
	case "MAX_STEPS":
		return fmt.Sprintf("This run has reached its limit of %s steps. Do not call more tools: give your final answer now with what you have found.", num(f.Limit))
	case "TOOL_CALL_CAP":
		if f.Limit == 0 {
			return fmt.Sprintf("The tool %s may not be used in this run. Do not call it again; use another tool or answer with what you have.", ToolName(f.Tool))
		}
		return fmt.Sprintf("The tool %s may be called at most %s in this run, and that many calls have been made. Do not call it again; use another tool or answer with what you have.", ToolName(f.Tool), times(f.Limit))
	case "REPEATED_TOOL_CALL":
		if f.IdenticalResults {
			return fmt.Sprintf("You have called %s %s in a row with exactly the same arguments and got the same result every time; it is not changing. Stop waiting on it: use a different tool or arguments, or answer with what you already know.", ToolName(f.Tool), times(f.Count))
		}
		return fmt.Sprintf("You have called %s %s in a row with exactly the same arguments, and another identical call will not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", ToolName(f.Tool), times(f.Count))
	case "OSCILLATION":
		return fmt.Sprintf("You are going round in a circle: the same %s calls (%s) have repeated %s without getting closer to an answer. Break the cycle: try a different approach, or answer with what you already know.", num(f.Period), toolList(f.Tools), times(f.Repeats))
	case "NO_PROGRESS":
		return fmt.Sprintf("Your last %s steps said the same thing and brought no new information. Do something different that can bring new information, or give your final answer.", num(f.Steps))
	case CodeWindowedRepeat:
		return fmt.Sprintf("You have made exactly the same call to %s %s among your recent calls, and another one will not tell you anything new. Change the arguments, use a different tool, or answer with what you already know.", ToolName(f.Tool), times(f.Count))
	case CodeRepeatedFailure:
		return fmt.Sprintf("Your calls to %s have failed %s the same way, whatever the arguments. Another call like them will fail like the others. Read the error, step back and try a different approach, or answer with what you know.", ToolName(f.Tool), times(f.Count))
	case CodeRepeatedText:
		return fmt.Sprintf("You have written the same message %s among your recent turns; repeating it does not move the task forward. Say something new that helps, try a different approach, or give your final answer.", times(f.Count))
	case CodeRepeatedRefusal:
		return fmt.Sprintf("You have asked %s for a call to %s that is not allowed to run, and it was refused each time. It will not be run, so the run is being ended here. Give your final answer with what you have.", times(f.Count), ToolName(f.Tool))
	case CodeStall:
		return fmt.Sprintf("Your last %s steps brought no new information: no tool call returned anything new. Stop and think about what could bring new information, or give your final answer with what you have.", num(f.Steps))
	case "FINISH_TERMINAL":
		return "Your last turn ended in a way that lets the run go no further (for example, the output was cut off or withheld). Give a short, complete final answer."
	case "FINISH_OTHER", "FINISH_OTHER_TEXT_ONLY":
		return "Your last turn ended without a tool call and without a normal finish, so the run is being ended here. If you have an answer, state it plainly and completely."
	}
	if strings.HasPrefix(code, "BUDGET_") && f.Metric != "" {
		words, ok := metricWords[f.Metric]
		if !ok {
			words = "budget"
		}
		return fmt.Sprintf("This run has used its %s: %s of %s. Do not call more tools: give your final answer now with what you have found.", words, num(f.Value), num(f.Limit))
	}
	return ""
}

// toolList writes tool names for a cycle: each name once, in order.
func toolList(tools []string) string {
	seen := make(map[string]bool, len(tools))
	var out []string
	for _, t := range tools {
		n := ToolName(t)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	switch len(out) {
	case 0:
		return ThatTool
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}
