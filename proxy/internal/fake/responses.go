package fake

import "strings"

// The Responses API's shapes, with the members in the order the API
// writes them (checked against openai-go v3.98.0's Response and event
// types).

type respObject struct {
	ID                 string         `json:"id"`
	Object             string         `json:"object"`
	CreatedAt          int64          `json:"created_at"`
	Status             string         `json:"status"`
	Background         bool           `json:"background"`
	CompletedAt        *int64         `json:"completed_at"`
	Error              *struct{}      `json:"error"`
	IncompleteDetails  *struct{}      `json:"incomplete_details"`
	Instructions       *string        `json:"instructions"`
	MaxOutputTokens    *int64         `json:"max_output_tokens"`
	Model              string         `json:"model"`
	Output             []any          `json:"output"`
	ParallelToolCalls  bool           `json:"parallel_tool_calls"`
	PreviousResponseID *string        `json:"previous_response_id"`
	Reasoning          respReasoning  `json:"reasoning"`
	Store              bool           `json:"store"`
	Temperature        float64        `json:"temperature"`
	Text               respTextConfig `json:"text"`
	ToolChoice         string         `json:"tool_choice"`
	Tools              []any          `json:"tools"`
	TopP               float64        `json:"top_p"`
	Truncation         string         `json:"truncation"`
	Usage              *respUsage     `json:"usage"`
	User               *string        `json:"user"`
	Metadata           map[string]any `json:"metadata"`
}

type respReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type respTextConfig struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type respMessage struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Content []respPart `json:"content"`
	Role    string     `json:"role"`
}

type respPart struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

type respCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

// Events, each with its members in the API's order.

type evResponse struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	Response       respObject `json:"response"`
}

type evItem struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	OutputIndex    int    `json:"output_index"`
	Item           any    `json:"item"`
}

type evPart struct {
	Type           string   `json:"type"`
	SequenceNumber int      `json:"sequence_number"`
	ItemID         string   `json:"item_id"`
	OutputIndex    int      `json:"output_index"`
	ContentIndex   int      `json:"content_index"`
	Part           respPart `json:"part"`
}

type evTextDelta struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Delta          string `json:"delta"`
	Logprobs       []any  `json:"logprobs"`
}

type evTextDone struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Text           string `json:"text"`
	Logprobs       []any  `json:"logprobs"`
}

type evArgsDelta struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Delta          string `json:"delta"`
}

type evArgsDone struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Name           string `json:"name"`
	Arguments      string `json:"arguments"`
}

// chunks cuts s into n pieces of about the same length (at least one).
func chunks(s string, n int) []string {
	if len(s) <= n || n < 2 {
		return []string{s}
	}
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}

// responses returns the whole JSON response for rep and, when stream is set, the
// server-sent events of the same response in the order the real API sends
// them: response.created, response.in_progress, for each output item
// response.output_item.added, its content or arguments events and
// response.output_item.done, and response.completed holding the whole
// response (the Responses API sends no "[DONE]").
func responses(model string, n int, rep Reply, stream bool) (whole []byte, events [][]byte) {
	id := "resp_fake" + itoa(n)
	created := int64(1764000000 + n)
	r := respObject{
		ID: id, Object: "response", CreatedAt: created, Status: "completed",
		Model: model, ParallelToolCalls: true, Store: true, Temperature: 1,
		ToolChoice: "auto", Tools: []any{}, TopP: 1, Truncation: "disabled",
		Metadata: map[string]any{}, Output: []any{},
	}
	r.Text.Format.Type = "text"
	u := &respUsage{InputTokens: rep.InputTokens, OutputTokens: rep.OutputTokens,
		TotalTokens: rep.InputTokens + rep.OutputTokens}

	msgID := "msg_fake" + itoa(n)
	var msg *respMessage
	if rep.Text != "" {
		msg = &respMessage{ID: msgID, Type: "message", Status: "completed", Role: "assistant",
			Content: []respPart{{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: rep.Text}}}
	}
	var calls []respCall
	for i, c := range rep.Calls {
		calls = append(calls, respCall{ID: "fc_fake" + itoa(n) + "_" + itoa(i), Type: "function_call",
			Status: "completed", Arguments: c.Args, CallID: c.ID, Name: c.Name})
	}
	final := r
	completed := created + 1
	final.CompletedAt = &completed
	final.Usage = u
	if msg != nil {
		final.Output = append(final.Output, *msg)
	}
	for _, c := range calls {
		final.Output = append(final.Output, c)
	}
	whole = mustJSON(final)
	if !stream {
		return whole, nil
	}

	seq := 0
	add := func(name string, v any) {
		events = append(events, sse(name, v))
		seq++
	}
	start := r
	start.Status = "in_progress"
	add("response.created", evResponse{"response.created", seq, start})
	add("response.in_progress", evResponse{"response.in_progress", seq, start})
	index := 0
	if msg != nil {
		empty := *msg
		empty.Status = "in_progress"
		empty.Content = []respPart{}
		part := respPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}}
		add("response.output_item.added", evItem{"response.output_item.added", seq, index, empty})
		add("response.content_part.added", evPart{"response.content_part.added", seq, msgID, index, 0, part})
		for _, d := range strings.SplitAfter(rep.Text, " ") {
			if d != "" {
				add("response.output_text.delta", evTextDelta{"response.output_text.delta", seq, msgID, index, 0, d, []any{}})
			}
		}
		add("response.output_text.done", evTextDone{"response.output_text.done", seq, msgID, index, 0, rep.Text, []any{}})
		part.Text = rep.Text
		add("response.content_part.done", evPart{"response.content_part.done", seq, msgID, index, 0, part})
		add("response.output_item.done", evItem{"response.output_item.done", seq, index, *msg})
		index++
	}
	for _, c := range calls {
		empty := c
		empty.Status = "in_progress"
		empty.Arguments = ""
		add("response.output_item.added", evItem{"response.output_item.added", seq, index, empty})
		for _, d := range chunks(c.Arguments, 2) {
			add("response.function_call_arguments.delta", evArgsDelta{"response.function_call_arguments.delta", seq, c.ID, index, d})
		}
		add("response.function_call_arguments.done", evArgsDone{"response.function_call_arguments.done", seq, c.ID, index, c.Name, c.Arguments})
		add("response.output_item.done", evItem{"response.output_item.done", seq, index, c})
		index++
	}
	add("response.completed", evResponse{"response.completed", seq, final})
	return whole, events
}
