package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// anItem is an Anthropic message, or a message object from the API: the
// fields the importer reads.
type anItem struct {
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      *anUsage        `json:"usage"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anUsage struct {
	InputTokens              float64 `json:"input_tokens"`
	OutputTokens             float64 `json:"output_tokens"`
	CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     float64 `json:"cache_read_input_tokens"`
}

// isAnthropicCall reports whether a content block is a tool call.
func isAnthropicCall(p part) bool {
	return p.Type == "tool_use" || p.Type == "server_tool_use" || p.Type == "mcp_tool_use"
}

// isAnthropicResult reports whether a content block is a tool's result:
// tool_result, mcp_tool_result, or a server tool's result block
// (web_search_tool_result, ...).
func isAnthropicResult(p part) bool {
	return p.Type == "tool_result" || strings.HasSuffix(p.Type, "_tool_result") && p.ToolUseID != ""
}

// parseAnthropic reads an Anthropic Messages transcript.
func parseAnthropic(data []byte) (*Trace, error) {
	b := newBuilder()
	if err := anthropicSteps(b, itemsOf(data)); err != nil {
		return nil, err
	}
	return &b.t, nil
}

// anthropicSteps reads the items of an Anthropic Messages transcript into b.
func anthropicSteps(b *builder, items itemSeq) error {
	return items(func(raw json.RawMessage, line int) error {
		var m anItem
		if err := object(raw, line, "an Anthropic message", &m); err != nil {
			return err
		}
		switch {
		case m.Type == "error":
			msg := "an API error"
			if m.Error != nil {
				msg = fmt.Sprintf("an API error: %s: %s", m.Error.Type, m.Error.Message)
			}
			return &Error{Line: line, Err: errors.New(msg)}
		case m.Type != "" && m.Type != "message":
			if b.lenient {
				return nil
			}
			return &Error{Line: line, Err: fmt.Errorf("an object of type %q, not a message", m.Type)}
		}
		text, parts, isText, err := content(m.Content, line, m.Role+" message")
		if err != nil {
			return err
		}
		switch m.Role {
		case "assistant":
			return anthropicAssistant(b, &m, line, text, parts, isText)
		case "user":
			for _, p := range parts {
				if isAnthropicResult(p) {
					if err := anthropicResult(b, p, line); err != nil {
						return err
					}
				}
			}
			if !isText {
				text = inputText(parts, isAnthropicResult)
			}
			b.input(text)
			return nil
		}
		if b.lenient {
			return nil
		}
		if m.Role == "" {
			return &Error{Line: line, Err: errors.New("not an Anthropic message: no role")}
		}
		return &Error{Line: line, Err: fmt.Errorf("unknown role %q (want user or assistant)", m.Role)}
	})
}

// anthropicAssistant makes a step of an assistant message.
func anthropicAssistant(b *builder, m *anItem, line int, text string, parts []part, isText bool) error {
	s := b.step(line)
	if m.StopReason != nil {
		s.FinishReason = rule.NormalizeFinishReason(*m.StopReason)
	}
	if m.Usage != nil {
		s.Usage = guard.Usage{
			InputTokens:  count(m.Usage.InputTokens) + count(m.Usage.CacheCreationInputTokens) + count(m.Usage.CacheReadInputTokens),
			OutputTokens: count(m.Usage.OutputTokens),
		}
	}
	if isText {
		s.Text = text
		return nil
	}
	var texts []string
	for _, p := range parts {
		switch {
		case p.Type == "text" && p.Text != nil:
			texts = append(texts, *p.Text)
		case isAnthropicCall(p):
			var args any
			if kind(p.Input) != "null" && kind(p.Input) != "nothing" {
				args = p.Input
			}
			b.call(p.ID, guard.ToolCall{Name: p.Name, Args: args})
		case isAnthropicResult(p): // a server tool's result, in the same message
			if err := anthropicResult(b, p, line); err != nil {
				return err
			}
		}
	}
	b.t.Steps[len(b.t.Steps)-1].Text = strings.Join(texts, "\n")
	return nil
}

// anthropicResult pairs a result block with its call.
func anthropicResult(b *builder, p part, line int) error {
	text, parts, isText, err := content(p.Content, line, p.Type)
	if err != nil {
		// A server tool's content may be a single object, such as
		// {"type": "web_search_tool_result_error", "error_code": ...}.
		if kind(p.Content) != "an object" {
			return err
		}
		var e struct {
			Type      string `json:"type"`
			ErrorCode string `json:"error_code"`
		}
		_ = json.Unmarshal(p.Content, &e)
		if strings.HasSuffix(e.Type, "_error") {
			return b.result(line, "tool_use_id", p.ToolUseID, nil, true, e.Type+": "+e.ErrorCode)
		}
		return b.result(line, "tool_use_id", p.ToolUseID, json.RawMessage(p.Content), false, "")
	}
	result, errText := resultValue(text, parts, isText, p.Content)
	return b.result(line, "tool_use_id", p.ToolUseID, result, p.IsError, errText)
}
