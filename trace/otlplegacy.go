package trace

import (
	"encoding/json"
	"strings"
)

// This file reads the older shape of the GenAI semantic conventions, which
// their transition plan has instrumentations keep emitting by default: the
// messages as span events (gen_ai.system.message, gen_ai.user.message,
// gen_ai.assistant.message, gen_ai.tool.message and gen_ai.choice, or,
// older still, gen_ai.content.prompt and gen_ai.content.completion) rather
// than the gen_ai.input.messages and gen_ai.output.messages attributes, and
// the older attribute names (gen_ai.usage.prompt_tokens and
// completion_tokens; no gen_ai.operation.name).

// The attributes of the older conventions.
const (
	attrSystem           = "gen_ai.system"
	attrRequestModel     = "gen_ai.request.model"
	attrPromptTokens     = "gen_ai.usage.prompt_tokens"
	attrCompletionTokens = "gen_ai.usage.completion_tokens"
	attrEventContent     = "gen_ai.event.content"
	attrPrompt           = "gen_ai.prompt"
	attrCompletion       = "gen_ai.completion"
)

// operation is a span's gen_ai.operation.name, or, for a span of the older
// conventions that has none, the first word of its name ("chat gpt-4o")
// when it has gen_ai.system or gen_ai.request.model.
func (s *spanAttrs) operation() string {
	if op := s.str(attrOperation); op != "" {
		return op
	}
	if s.attr(attrSystem) == nil && s.attr(attrRequestModel) == nil {
		return ""
	}
	op, _, _ := strings.Cut(s.sp.Name, " ")
	return op
}

// legacyRead is what legacyMessages read of a span.
type legacyRead struct{ in, out []otelMessage }

// legacyBody is what an event of the older conventions says: the fields of
// its body. A span event has no body, so instrumentations write it as
// attributes: one per field (role, content, id, tool_calls, finish_reason,
// message; a structured field as JSON text or as a structured value), or the
// whole body as JSON text in gen_ai.event.content (or body).
type legacyBody struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ID           string          `json:"id"`
	ToolCallID   string          `json:"tool_call_id"`
	ToolCalls    []legacyCall    `json:"tool_calls"`
	FinishReason string          `json:"finish_reason"`
	Index        *float64        `json:"index"`
	Message      *legacyBody     `json:"message"`
}

type legacyCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// eventBody reads the body of an event of the older conventions.
func eventBody(e *otlpEvent) legacyBody {
	fields := make(map[string]any, len(e.Attributes))
	for i := range e.Attributes {
		kv := &e.Attributes[i]
		v := kv.Value.value()
		switch kv.Key {
		case attrEventContent, "body":
			if s, ok := v.(string); ok {
				var whole map[string]any
				if json.Unmarshal([]byte(s), &whole) == nil {
					for k, x := range whole {
						fields[k] = x
					}
					continue
				}
				fields["content"] = s
			} else if m, ok := v.(map[string]any); ok {
				for k, x := range m {
					fields[k] = x
				}
			}
			continue
		case "tool_calls", "message":
			// Structured fields, often written as JSON text.
			if s, ok := v.(string); ok {
				var x any
				if json.Unmarshal([]byte(s), &x) == nil {
					v = x
				}
			}
		}
		if _, dup := fields[kv.Key]; !dup {
			fields[kv.Key] = v
		}
	}
	var b legacyBody
	if data, err := json.Marshal(jsonSafe(fields)); err == nil {
		// A field of the wrong type is left out; the others are read.
		_ = json.Unmarshal(data, &b)
	}
	return b
}

// legacyContent is the text of a body's content: a string, the text of
// parts ({"type": "text", "text": ...}), or {"text": {"value": ...}}.
func legacyContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text    *string `json:"text"`
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var texts []string
		for _, p := range parts {
			switch {
			case p.Text != nil:
				texts = append(texts, *p.Text)
			case p.Content != nil:
				texts = append(texts, *p.Content)
			}
		}
		return strings.Join(texts, "\n")
	}
	var obj struct {
		Text json.RawMessage `json:"text"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Text != nil {
		if json.Unmarshal(obj.Text, &s) == nil {
			return s
		}
		var v struct {
			Value string `json:"value"`
		}
		_ = json.Unmarshal(obj.Text, &v)
		return v.Value
	}
	return ""
}

// message turns a body into a message of the newer conventions.
func (b *legacyBody) message(role string) otelMessage {
	if b.Role != "" {
		role = b.Role
	}
	m := otelMessage{Role: role, FinishReason: b.FinishReason}
	if role == "tool" {
		id := b.ID
		if id == "" {
			id = b.ToolCallID
		}
		m.Parts = append(m.Parts, otelPart{Type: "tool_call_response", ID: &id, Response: b.Content})
		return m
	}
	if t := legacyContent(b.Content); t != "" {
		text, _ := json.Marshal(t)
		m.Parts = append(m.Parts, otelPart{Type: "text", Content: text})
	}
	for _, c := range b.ToolCalls {
		id := c.ID
		m.Parts = append(m.Parts, otelPart{Type: "tool_call", ID: &id, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return m
}

// legacyMessages reads a span's messages from the events of the older
// conventions: the input from the message events (or gen_ai.content.prompt),
// the output from the first choice (or gen_ai.content.completion).
func (s *spanAttrs) legacyMessages() (in, out []otelMessage) {
	if s.legacy != nil {
		return s.legacy.in, s.legacy.out
	}
	defer func() { s.legacy = &legacyRead{in, out} }()
	choice := -1.0
	for i := range s.sp.Events {
		e := &s.sp.Events[i]
		switch e.Name {
		case "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message":
			b := eventBody(e)
			role := strings.TrimSuffix(strings.TrimPrefix(e.Name, "gen_ai."), ".message")
			in = append(in, b.message(role))
		case "gen_ai.choice":
			b := eventBody(e)
			index := 0.0
			if b.Index != nil {
				index = *b.Index
			}
			if choice >= 0 && index >= choice {
				continue // the first choice, or the one of index 0
			}
			m := otelMessage{Role: "assistant"}
			if b.Message != nil {
				m = b.Message.message("assistant")
			}
			m.FinishReason = b.FinishReason
			out, choice = []otelMessage{m}, index
		case "gen_ai.content.prompt", "gen_ai.content.completion":
			key := attrPrompt
			if e.Name == "gen_ai.content.completion" {
				key = attrCompletion
			}
			for j := range e.Attributes {
				kv := &e.Attributes[j]
				if kv.Key != key || kv.Value.StringValue == nil {
					continue
				}
				var bodies []legacyBody
				_ = json.Unmarshal([]byte(*kv.Value.StringValue), &bodies)
				for _, b := range bodies {
					m := b.message("user")
					if key == attrCompletion {
						if b.Message != nil { // a choice
							m = b.Message.message("assistant")
							m.FinishReason = b.FinishReason
						}
						out = append(out, m)
						continue
					}
					in = append(in, m)
				}
			}
		}
	}
	return in, out
}
