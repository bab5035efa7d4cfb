package fake

import (
	"strings"
	"unicode/utf8"
)

// The shapes below are those of OpenAI Chat Completions, as its SDK
// (openai-go's ChatCompletion and ChatCompletionChunk) reads them.

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"` // chunks only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Refusal     *string        `json:"refusal"`
	Annotations []any          `json:"annotations"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens            int            `json:"prompt_tokens"`
	CompletionTokens        int            `json:"completion_tokens"`
	TotalTokens             int            `json:"total_tokens"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// chatDelta is a chunk's delta: a member that is nil is left out, except
// that the first chunk has "content" and "refusal" null or "" as the API
// sends them.
type chatDelta map[string]any

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             *chatUsage        `json:"usage"`
}

// chat returns the whole JSON response for rep and, when stream is set, the
// server-sent events of the same response in the order the real API sends
// them (with the terminal event, such as "data: [DONE]" for chat).
//
// The stream is the one the API sends with "stream_options":
// {"include_usage": true} (the fake does not see the request's options):
// every chunk has "usage": null and a last chunk with no choices holds the
// usage. The first chunk has the role (with content "" before text, null
// before a call); text comes a word a chunk; each call starts with a delta
// of its index, id, type and name with empty arguments, then its arguments
// in two pieces; a chunk with an empty delta has the finish reason.
func chat(model string, n int, rep Reply, stream bool) (whole []byte, events [][]byte) {
	id := "chatcmpl-fake" + itoa(n)
	created := int64(1767225600 + n)
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	usage := chatUsage{
		PromptTokens:            rep.InputTokens,
		CompletionTokens:        rep.OutputTokens,
		TotalTokens:             rep.InputTokens + rep.OutputTokens,
		PromptTokensDetails:     map[string]int{"cached_tokens": 0, "audio_tokens": 0},
		CompletionTokensDetails: map[string]int{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
	msg := chatMessage{Role: "assistant", Annotations: []any{}}
	if rep.Text != "" {
		msg.Content = &rep.Text
	}
	for _, c := range rep.Calls {
		msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Args}})
	}
	whole = mustJSON(chatCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices:     []chatChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:       usage,
		ServiceTier: "default", SystemFingerprint: "fp_fake",
	})
	if !stream {
		return whole, nil
	}

	chunk := func(delta chatDelta, finish *string) []byte {
		return sse("", chatChunk{
			ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			ServiceTier: "default", SystemFingerprint: "fp_fake",
			Choices: []chatChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
		})
	}
	first := chatDelta{"role": "assistant", "content": "", "refusal": nil}
	if rep.Text == "" && len(rep.Calls) > 0 {
		first["content"] = nil
	}
	if rep.Text == "" && len(rep.Calls) == 0 {
		events = append(events, chunk(first, nil))
	}
	for i, w := range words(rep.Text) {
		if i == 0 {
			events = append(events, chunk(first, nil))
		}
		events = append(events, chunk(chatDelta{"content": w}, nil))
	}
	for i, c := range rep.Calls {
		index := i
		start := chatDelta{"tool_calls": []chatToolCall{{Index: &index, ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name}}}}
		if i == 0 && rep.Text == "" {
			first["tool_calls"] = start["tool_calls"]
			start = first
		}
		events = append(events, chunk(start, nil))
		a, b := halves(c.Args)
		for _, p := range []string{a, b} {
			if p != "" {
				events = append(events, chunk(chatDelta{"tool_calls": []chatToolCall{{Index: &index, Function: chatFunction{Arguments: p}}}}, nil))
			}
		}
	}
	events = append(events, chunk(chatDelta{}, &finish))
	events = append(events, sse("", chatChunk{
		ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		ServiceTier: "default", SystemFingerprint: "fp_fake",
		Choices: []chatChunkChoice{}, Usage: &usage,
	}))
	events = append(events, []byte("data: [DONE]\n\n"))
	return whole, events
}

// words cuts s after each space.
func words(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// halves cuts s in two at a rune boundary near its middle.
func halves(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}
