package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

// oaItem is an OpenAI chat message or chat completion object: the fields the
// importer reads.
type oaItem struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Refusal      *string         `json:"refusal"`
	ToolCalls    []oaToolCall    `json:"tool_calls"`
	FunctionCall *oaFunction     `json:"function_call"`
	ToolCallID   *string         `json:"tool_call_id"`
	Name         string          `json:"name"`
	FinishReason *string         `json:"finish_reason"`
	Usage        *oaUsage        `json:"usage"`
	Object       string          `json:"object"`
	Choices      []oaChoice      `json:"choices"`
}

type oaChoice struct {
	Index        int     `json:"index"`
	Message      *oaItem `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

type oaToolCall struct {
	ID       string      `json:"id"`
	Type     string      `json:"type"`
	Function *oaFunction `json:"function"`
	Custom   *struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaUsage struct {
	PromptTokens     float64 `json:"prompt_tokens"`
	CompletionTokens float64 `json:"completion_tokens"`
	TotalTokens      float64 `json:"total_tokens"`
}

// parseOpenAI reads an OpenAI Chat Completions transcript.
func parseOpenAI(data []byte) (*Trace, error) {
	b := newBuilder()
	if err := openAISteps(b, itemsOf(data)); err != nil {
		return nil, err
	}
	return &b.t, nil
}

// openAISteps reads the items of an OpenAI Chat Completions transcript
// into b.
func openAISteps(b *builder, items itemSeq) error {
	return items(func(raw json.RawMessage, line int) error {
		var m oaItem
		if err := object(raw, line, "an OpenAI message", &m); err != nil {
			return err
		}
		if m.Object != "" || m.Choices != nil {
			return openAIResponse(b, &m, line)
		}
		switch m.Role {
		case "assistant":
			return openAIAssistant(b, &m, line, m.FinishReason, m.Usage)
		case "tool":
			if m.ToolCallID == nil {
				return &Error{Line: line, Err: errors.New("a tool message without tool_call_id")}
			}
			text, parts, isText, err := content(m.Content, line, "tool message")
			if err != nil {
				return err
			}
			result, _ := resultValue(text, parts, isText, m.Content)
			return b.result(line, "tool_call_id", *m.ToolCallID, result, false, "")
		case "function":
			text, parts, isText, err := content(m.Content, line, "function message")
			if err != nil {
				return err
			}
			result, _ := resultValue(text, parts, isText, m.Content)
			if b.function == "" {
				if b.lenient {
					return nil
				}
				return &Error{Line: line, Err: fmt.Errorf("a function message for %q, which no earlier function_call has", m.Name)}
			}
			return b.result(line, "", b.function, result, false, "")
		case "user":
			text, parts, isText, err := content(m.Content, line, "user message")
			if err != nil {
				return err
			}
			if !isText {
				text = inputText(parts, func(part) bool { return false })
			}
			b.input(text)
			return nil
		case "system", "developer":
			return nil
		}
		if b.lenient {
			return nil
		}
		if m.Role == "" {
			return &Error{Line: line, Err: errors.New("not an OpenAI message (no role) or chat completion (no choices)")}
		}
		return &Error{Line: line, Err: fmt.Errorf("unknown role %q (want system, developer, user, assistant, tool or function)", m.Role)}
	})
}

// openAIResponse reads a chat completion object: its first choice's message,
// with the choice's finish reason and the response's usage.
func openAIResponse(b *builder, m *oaItem, line int) error {
	if strings.HasPrefix(m.Object, "chat.completion.chunk") {
		return &Error{Line: line, Err: errors.New("a streaming chunk: log the assembled chat completion instead")}
	}
	if m.Object != "" && m.Object != "chat.completion" {
		return &Error{Line: line, Err: fmt.Errorf("an object of type %q, not a chat completion", m.Object)}
	}
	var choice *oaChoice
	for i := range m.Choices {
		if c := &m.Choices[i]; choice == nil || c.Index == 0 && choice.Index != 0 {
			choice = c
		}
	}
	if choice == nil || choice.Message == nil {
		return &Error{Line: line, Err: errors.New("a chat completion without a choice's message")}
	}
	msg := choice.Message
	if msg.Role != "" && msg.Role != "assistant" {
		return &Error{Line: line, Err: fmt.Errorf("a chat completion whose message has role %q", msg.Role)}
	}
	fr := choice.FinishReason
	if fr == nil {
		fr = msg.FinishReason
	}
	usage := m.Usage
	if usage == nil {
		usage = msg.Usage
	}
	return openAIAssistant(b, msg, line, fr, usage)
}

// openAIAssistant makes a step of an assistant message.
func openAIAssistant(b *builder, m *oaItem, line int, finish *string, usage *oaUsage) error {
	text, parts, isText, err := content(m.Content, line, "assistant message")
	if err != nil {
		return err
	}
	if !isText {
		text, _ = joinText(parts, true)
	}
	if m.Refusal != nil && *m.Refusal != "" {
		if text != "" {
			text += "\n"
		}
		text += *m.Refusal
	}
	s := b.step(line)
	s.Text = text
	if finish != nil {
		s.FinishReason = rule.NormalizeFinishReason(*finish)
	}
	if usage != nil {
		s.Usage = guard.Usage{
			InputTokens:  count(usage.PromptTokens),
			OutputTokens: count(usage.CompletionTokens),
			TotalTokens:  count(usage.TotalTokens),
		}
	}
	for i, tc := range m.ToolCalls {
		switch {
		case tc.Function != nil:
			b.call(tc.ID, guard.ToolCall{Name: tc.Function.Name, Args: arguments(tc.Function.Arguments)})
		case tc.Custom != nil:
			b.call(tc.ID, guard.ToolCall{Name: tc.Custom.Name, Args: tc.Custom.Input})
		default:
			return &Error{Line: line, Err: fmt.Errorf("tool_calls[%d] has neither function nor custom", i)}
		}
	}
	if m.FunctionCall != nil {
		// A function message answers the newest function_call.
		b.function = fmt.Sprintf("the function_call on line %d", line)
		b.call(b.function, guard.ToolCall{Name: m.FunctionCall.Name, Args: arguments(m.FunctionCall.Arguments)})
	}
	return nil
}
