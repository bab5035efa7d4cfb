package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// rsItem is an item of the OpenAI Responses API (an input item, an output
// item) or a whole response object: the fields the importer reads.
type rsItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	Error     json.RawMessage `json:"error"`
	// A response object's fields.
	Object            string   `json:"object"`
	Status            string   `json:"status"`
	Usage             *rsUsage `json:"usage"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

type rsUsage struct {
	InputTokens  float64 `json:"input_tokens"`
	OutputTokens float64 `json:"output_tokens"`
	TotalTokens  float64 `json:"total_tokens"`
}

// rsPart is a content part of a Responses message or tool output.
type rsPart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// parseResponses reads an OpenAI Responses transcript.
func parseResponses(data []byte) (*Trace, error) {
	b := newBuilder()
	if err := responsesSteps(b, itemsOf(data)); err != nil {
		return nil, err
	}
	return &b.t, nil
}

// responsesSteps reads the items of an OpenAI Responses transcript into b.
func responsesSteps(b *builder, items itemSeq) error {
	return items(func(raw json.RawMessage, line int) error {
		var m rsItem
		if err := object(raw, line, "a Responses item", &m); err != nil {
			return err
		}
		if m.Object != "" {
			return responseObject(b, &m, line)
		}
		return responsesItem(b, &m, line)
	})
}

// responseObject makes a step of a response object: its output items, a
// finish reason read from its status, and its usage.
func responseObject(b *builder, m *rsItem, line int) error {
	if m.Object != "response" {
		if b.lenient {
			return nil
		}
		return &Error{Line: line, Err: fmt.Errorf("an object of type %q, not a response", m.Object)}
	}
	var outputs []json.RawMessage
	switch kind(m.Output) {
	case "nothing", "null":
	case "an array":
		if err := json.Unmarshal(m.Output, &outputs); err != nil {
			return &Error{Line: line, Err: fmt.Errorf("response output: %w", err)}
		}
	default:
		return &Error{Line: line, Err: fmt.Errorf("response output must be an array, not %s", kind(m.Output))}
	}
	b.step(line)
	step := len(b.t.Steps) - 1
	calls := 0
	for i, out := range outputs {
		var o rsItem
		if err := object(out, line, fmt.Sprintf("response output[%d]", i), &o); err != nil {
			return err
		}
		if isMessage := o.Type == "message" || o.Type == "" && o.Role != ""; isMessage && o.Role != "assistant" || strings.HasSuffix(o.Type, "_call_output") {
			return &Error{Line: line, Err: fmt.Errorf("response output[%d] is a %s item, not the model's output", i, itemName(&o))}
		}
		if o.Type == "function_call" || o.Type == "custom_tool_call" {
			calls++
		}
		b.open = true
		if err := responsesItem(b, &o, line); err != nil {
			return err
		}
	}
	b.open = false
	s := &b.t.Steps[step]
	switch m.Status {
	case "completed":
		s.FinishReason = rule.FinishStop
		if calls > 0 {
			s.FinishReason = rule.FinishToolCalls
		}
	case "incomplete":
		reason := ""
		if m.IncompleteDetails != nil {
			reason = m.IncompleteDetails.Reason
		}
		switch reason {
		case "":
			s.FinishReason = "incomplete"
		default:
			s.FinishReason = rule.NormalizeFinishReason(reason) // max_output_tokens is "length"
		}
	case "failed":
		s.FinishReason = rule.FinishError
	case "cancelled":
		s.FinishReason = "cancelled"
	}
	if m.Usage != nil {
		s.Usage = guard.Usage{
			InputTokens:  count(m.Usage.InputTokens),
			OutputTokens: count(m.Usage.OutputTokens),
			TotalTokens:  count(m.Usage.TotalTokens),
		}
	}
	return nil
}

// itemName names an item's kind for error messages.
func itemName(m *rsItem) string {
	if m.Type == "" || m.Type == "message" {
		return m.Role + " message"
	}
	return m.Type
}

// turn returns the step that a model output item joins: the open one, or a
// new one on line.
func (b *builder) turn(line int) *guard.Step {
	if !b.open || len(b.t.Steps) == 0 {
		b.step(line)
		b.open = true
	}
	return &b.t.Steps[len(b.t.Steps)-1]
}

// responsesItem reads one input or output item.
func responsesItem(b *builder, m *rsItem, line int) error {
	switch {
	case m.Type == "message" || m.Type == "" && m.Role != "":
		return responsesMessage(b, m, line)
	case m.Type == "function_call":
		b.turn(line)
		b.call(m.CallID, guard.ToolCall{Name: m.Name, Args: rsArguments(m.Arguments)})
		return nil
	case m.Type == "custom_tool_call":
		b.turn(line)
		b.call(m.CallID, guard.ToolCall{Name: m.Name, Args: rsString(m.Input)})
		return nil
	case m.Type == "mcp_call":
		// An MCP call carries its outcome.
		b.turn(line)
		c := guard.ToolCall{Name: m.Name, Args: rsArguments(m.Arguments)}
		if e := rsString(m.Error); e != "" {
			c.Err = errors.New(e)
		} else if out := rsString(m.Output); out != "" {
			c.Result = out
		}
		b.call("", c)
		return nil
	case m.Type == "reasoning" || m.Type == "item_reference" || strings.HasPrefix(m.Type, "mcp_"):
		// Not a call, and no text of the step: reasoning, a reference
		// to a stored item, MCP listings and approvals.
		return nil
	case strings.HasSuffix(m.Type, "_call_output"):
		b.open = false
		if m.CallID == "" {
			if b.lenient {
				return nil
			}
			return &Error{Line: line, Err: fmt.Errorf("a %s item without call_id", m.Type)}
		}
		return b.result(line, "call_id", m.CallID, rsOutput(m.Output), false, "")
	case strings.HasSuffix(m.Type, "_call"):
		// A built-in tool's call (web_search_call, computer_call,
		// local_shell_call, ...): the tool is named after the type, its
		// action is its argument.
		b.turn(line)
		var args any
		if k := kind(m.Action); k != "nothing" && k != "null" {
			args = m.Action
		}
		b.call(m.CallID, guard.ToolCall{Name: strings.TrimSuffix(m.Type, "_call"), Args: args})
		return nil
	case m.Type == "" && kind(m.Input) == "a string":
		// A request body whose input is a string: a user's message.
		b.open = false
		b.input(rsString(m.Input))
		return nil
	case m.Type == "":
		if b.lenient {
			return nil
		}
		return &Error{Line: line, Err: errors.New("not a Responses item (no type or role) or response (no object)")}
	case strings.HasPrefix(m.Type, "response."):
		if b.lenient {
			return nil
		}
		return &Error{Line: line, Err: fmt.Errorf("a streaming event (%s): log the assembled response instead", m.Type)}
	}
	// An item of a kind not read here.
	return nil
}

// responsesMessage reads a message item.
func responsesMessage(b *builder, m *rsItem, line int) error {
	what := m.Role + " message"
	switch m.Role {
	case "assistant":
		text, err := rsText(m.Content, line, what, false)
		if err != nil {
			return err
		}
		s := b.turn(line)
		if text != "" {
			if s.Text != "" {
				s.Text += "\n"
			}
			s.Text += text
		}
		return nil
	case "user":
		text, err := rsText(m.Content, line, what, true)
		if err != nil {
			return err
		}
		b.open = false
		b.input(text)
		return nil
	case "system", "developer":
		b.open = false
		return nil
	}
	if b.lenient {
		return nil
	}
	if m.Role == "" {
		return &Error{Line: line, Err: errors.New("a message item without role")}
	}
	return &Error{Line: line, Err: fmt.Errorf("unknown role %q (want user, assistant, system or developer)", m.Role)}
}

// rsText reads a message's content: a string, or parts whose text
// (input_text, output_text, and refusals) is joined by newlines. In input,
// any other part (an image, a file) is marked as "[input_image]".
func rsText(raw json.RawMessage, line int, what string, input bool) (string, error) {
	switch kind(raw) {
	case "nothing", "null":
		return "", nil
	case "a string":
		return rsString(raw), nil
	case "an array":
	default:
		return "", &Error{Line: line, Err: fmt.Errorf("%s content must be a string, an array or null, not %s", what, kind(raw))}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return "", &Error{Line: line, Err: fmt.Errorf("%s content: %w", what, err)}
	}
	var out strings.Builder
	for i, r := range raws {
		var p rsPart
		if err := object(r, line, fmt.Sprintf("%s content[%d]", what, i), &p); err != nil {
			return "", err
		}
		s, ok := p.text()
		if !ok {
			if !input {
				continue
			}
			s = "[" + p.Type + "]"
		}
		if s == "" {
			continue
		}
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(s)
	}
	return out.String(), nil
}

// text returns a part's text, and whether it is a part of text.
func (p *rsPart) text() (string, bool) {
	switch {
	case (p.Type == "input_text" || p.Type == "output_text" || p.Type == "text") && p.Text != nil:
		return *p.Text, true
	case p.Type == "refusal" && p.Refusal != nil:
		return *p.Refusal, true
	}
	return "", false
}

// rsOutput is what a tool output becomes: a string as it is, text parts
// joined by newlines, and anything else (images, files, a computer's
// screenshot) as its raw JSON.
func rsOutput(raw json.RawMessage) any {
	switch kind(raw) {
	case "nothing", "null":
		return nil
	case "a string":
		return rsString(raw)
	case "an array":
		var parts []rsPart
		if json.Unmarshal(raw, &parts) == nil {
			texts := make([]string, 0, len(parts))
			all := true
			for _, p := range parts {
				s, ok := p.text()
				if !ok {
					all = false
					break
				}
				texts = append(texts, s)
			}
			if all {
				return strings.Join(texts, "\n")
			}
		}
	}
	return json.RawMessage(raw)
}

// rsArguments reads arguments given as a JSON string (kept as JSON when the
// string holds JSON) or, as some loggers write them, as JSON itself.
func rsArguments(raw json.RawMessage) any {
	switch kind(raw) {
	case "nothing", "null":
		return nil
	case "a string":
		return arguments(rsString(raw))
	}
	return raw
}

// rsString returns the string raw holds, or "" when it holds none.
func rsString(raw json.RawMessage) string {
	var s string
	if kind(raw) == "a string" {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}
