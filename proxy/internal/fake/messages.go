package fake

import (
	"encoding/json"
	"unicode/utf8"
)

// messages returns the whole JSON response for rep and, when stream is set, the
// server-sent events of the same response in the order the real API sends
// them (with the terminal event, such as "data: [DONE]" for chat).
//
// Anthropic Messages: a message with its text block first, then one
// tool_use block per call; stop_reason "tool_use" when there are calls,
// "end_turn" otherwise. The stream is message_start (the message with empty
// content and the input usage), ping, then for each block
// content_block_start, content_block_delta (text_delta, or input_json_delta
// whose first partial_json is empty, as the API sends it) and
// content_block_stop, then message_delta (stop_reason, output usage) and
// message_stop.
func messages(model string, n int, rep Reply, stream bool) (whole []byte, events [][]byte) {
	id := "msg_fake" + itoa(n)
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
	}
	type block map[string]any
	var content []block
	if rep.Text != "" {
		content = append(content, block{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.Calls {
		content = append(content, block{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input(c.Args)})
	}
	if content == nil {
		content = []block{}
	}
	whole = mustJSON(map[string]any{
		"id":            id,
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                rep.InputTokens,
			"cache_creation_input_tokens": 0,
			"cache_read_input_tokens":     0,
			"output_tokens":               rep.OutputTokens,
		},
	})
	if !stream {
		return whole, nil
	}

	events = append(events, sse("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id":            id,
			"type":          "message",
			"role":          "assistant",
			"model":         model,
			"content":       []any{},
			"stop_reason":   nil,
			"stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                rep.InputTokens,
				"cache_creation_input_tokens": 0,
				"cache_read_input_tokens":     0,
				"output_tokens":               1,
			},
		},
	}))
	events = append(events, sse("ping", map[string]any{"type": "ping"}))
	index := 0
	delta := func(d map[string]any) {
		events = append(events, sse("content_block_delta", map[string]any{
			"type": "content_block_delta", "index": index, "delta": d,
		}))
	}
	startStop := func(start bool, b block) {
		if start {
			events = append(events, sse("content_block_start", map[string]any{
				"type": "content_block_start", "index": index, "content_block": b,
			}))
			return
		}
		events = append(events, sse("content_block_stop", map[string]any{
			"type": "content_block_stop", "index": index,
		}))
		index++
	}
	if rep.Text != "" {
		startStop(true, block{"type": "text", "text": ""})
		for _, part := range messageHalves(rep.Text) {
			delta(map[string]any{"type": "text_delta", "text": part})
		}
		startStop(false, nil)
	}
	for _, c := range rep.Calls {
		startStop(true, block{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}})
		delta(map[string]any{"type": "input_json_delta", "partial_json": ""})
		for _, part := range messageHalves(string(input(c.Args))) {
			delta(map[string]any{"type": "input_json_delta", "partial_json": part})
		}
		startStop(false, nil)
	}
	events = append(events, sse("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.OutputTokens},
	}))
	events = append(events, sse("message_stop", map[string]any{"type": "message_stop"}))
	return whole, events
}

// input is a call's arguments as the JSON object of a tool_use block:
// Args when it is JSON, {} when it is empty or is not.
func input(args string) json.RawMessage {
	if args == "" || !json.Valid([]byte(args)) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

// messageHalves cuts s in two at a rune boundary (one part when s is a single
// rune), so that a stream delivers it in more than one delta.
func messageHalves(s string) []string {
	if utf8.RuneCountInString(s) < 2 {
		return []string{s}
	}
	i := len(s) / 2
	for !utf8.RuneStart(s[i]) {
		i++
	}
	return []string{s[:i], s[i:]}
}
