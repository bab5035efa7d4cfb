package trace

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/loopguard/loopguard/internal/strictjson"
)

// detectLimit is how many items Detect looks at before it gives up on
// telling the transcripts apart.
const detectLimit = 1000

// Detect returns the format of a log, or Unknown when data is not JSON or
// holds none of the formats' shapes.
//
// An object with "role" is a message; it is OpenAI's when it has a role
// only OpenAI's Chat Completions use (tool, function) or fields or parts
// only they have (tool_calls, tool_call_id, image_url, ...), a Responses
// item when it has parts only Responses items have (input_text,
// output_text, ...), Anthropic's when it has blocks only Anthropic has
// (tool_use, tool_result, thinking, ...). A chat completion object
// ("choices") is OpenAI's; a response object ("object": "response") and an
// item of a type only Responses has (function_call, function_call_output,
// reasoning, ...) are Responses'; a message object ("type": "message") is
// Anthropic's when its content is blocks or it has "stop_reason", and a
// Responses message otherwise. An object with "resourceSpans" is an OTLP
// document (OTLP logs and metrics are detected too, to be refused by name).
// An object with no role is a step when it
// has one of a step's keys (text, toolCalls, finishReason, usage, input,
// userReply, refused, meta), a control line's (preflight, snapshot, reset),
// or one resembling them (tool_calls, finish_reason), or none at all ({}).
// Items are looked at in order until one decides; a transcript of plain
// system, user and assistant text, which every provider's importer reads
// alike, is OpenAI's.
func Detect(data []byte) Format {
	it := newItems(trimBOM(data))
	messages := false
	for n := 0; n < detectLimit; n++ {
		raw, _, err := it.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Unknown
		}
		f, isMessage := detectItem(raw)
		if f != Unknown {
			return f
		}
		messages = messages || isMessage
	}
	if messages {
		return OpenAI
	}
	return Unknown
}

// probe holds the fields that tell the formats apart.
type probe struct {
	Role         *json.RawMessage `json:"role"`
	Type         *json.RawMessage `json:"type"`
	Content      json.RawMessage  `json:"content"`
	ToolCalls    *json.RawMessage `json:"tool_calls"`
	ToolCallID   *json.RawMessage `json:"tool_call_id"`
	FunctionCall *json.RawMessage `json:"function_call"`
	Refusal      *json.RawMessage `json:"refusal"`
	Choices      *json.RawMessage `json:"choices"`
	Object       *json.RawMessage `json:"object"`
	StopReason   *json.RawMessage `json:"stop_reason"`
	// OTLP
	ResourceSpans   *json.RawMessage `json:"resourceSpans"`
	ResourceLogs    *json.RawMessage `json:"resourceLogs"`
	ResourceMetrics *json.RawMessage `json:"resourceMetrics"`
}

// stepKeys reports whether an object without a role is meant as a step line:
// it is empty, or has a key of a step or a control line, or one that
// resembles a step's key (such as "tool_calls", which is then reported).
func stepKeys(raw json.RawMessage) bool {
	ms, err := strictjson.Members(raw)
	if err != nil {
		return false
	}
	if len(ms) == 0 {
		return true
	}
	for _, m := range ms {
		if isKnown(placeStep, m.Key) || slices.Contains(controlKeys, m.Key) {
			return true
		}
		if s, _ := resemble(placeStep, m.Key); s != "" {
			return true
		}
	}
	return false
}

// detectItem returns the format an item decides, and whether it is a
// message at all.
func detectItem(raw json.RawMessage) (Format, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return Unknown, false
	}
	var p probe
	if json.Unmarshal(raw, &p) != nil {
		return Unknown, false
	}
	typ := ""
	if p.Type != nil {
		typ = str(*p.Type)
	}
	switch {
	case p.ResourceSpans != nil || p.ResourceLogs != nil || p.ResourceMetrics != nil:
		return OTLP, false
	case p.Choices != nil || p.Object != nil && strings.HasPrefix(str(*p.Object), "chat.completion"):
		return OpenAI, true
	case p.Object != nil && str(*p.Object) == "response":
		return Responses, true
	case responsesType(typ):
		return Responses, true
	}
	if f := detectParts(p.Content); f != Unknown {
		return f, true
	}
	switch {
	case p.StopReason != nil:
		return Anthropic, true
	case typ == "message":
		// Anthropic's message objects have blocks (or a stop_reason), a
		// Responses message item may have a string.
		if kind(p.Content) == "an array" {
			return Anthropic, true
		}
		return Responses, true
	case p.Role == nil:
		if stepKeys(raw) {
			return Steps, false
		}
		return Unknown, false
	}
	switch str(*p.Role) {
	case "tool", "function":
		return OpenAI, true
	}
	if p.ToolCalls != nil || p.ToolCallID != nil || p.FunctionCall != nil || p.Refusal != nil {
		return OpenAI, true
	}
	// System and developer messages of plain text are OpenAI's, in Chat
	// Completions or in Responses: the items after them decide.
	return Unknown, true
}

// responsesType reports whether an item's type is one only Responses items
// have.
func responsesType(typ string) bool {
	switch typ {
	case "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "reasoning", "item_reference":
		return true
	}
	return strings.HasSuffix(typ, "_call") || strings.HasSuffix(typ, "_call_output")
}

// detectParts returns the format that a message's content parts decide.
func detectParts(content json.RawMessage) Format {
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return Unknown
	}
	for _, part := range parts {
		switch part.Type {
		case "input_text", "output_text", "input_image", "input_file":
			return Responses
		case "image_url", "input_audio", "file", "refusal":
			return OpenAI
		case "text", "":
		default:
			// tool_use, tool_result, thinking, image, document, ...
			return Anthropic
		}
	}
	return Unknown
}

// str returns the JSON string raw holds, or "".
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
