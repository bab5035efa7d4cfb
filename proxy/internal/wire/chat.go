package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loopguard/loopguard/guard"
)

// Chat is OpenAI Chat Completions (POST /v1/chat/completions): the history
// is "messages", the model's turn is choices[0].message with its
// "tool_calls", and a stream is "chat.completion.chunk" events ended by
// "data: [DONE]".
//
// Only choice 0 is judged and rewritten. A request with n > 1 gets several
// choices; the others are kept as they came (their calls are not judged),
// since an agent's loop follows one choice and the proxy cannot know which.
type Chat struct{}

// Name returns "chat".
func (Chat) Name() string { return "chat" }

var (
	errChatRequest  = errors.New(`wire: chat request: not an object with a "messages" array`)
	errChatResponse = errors.New(`wire: chat response: not an object with a "choices" array`)
)

// ParseRequest reads model, stream, stream_options.include_usage, user,
// safety_identifier and metadata.session_id / conversation_id, and cuts
// "messages" into items. A small field of the wrong type is left zero (the
// upstream rejects it); only a body that is not an object, or whose
// "messages" is missing or not an array, is an error.
func (Chat) ParseRequest(body []byte) (Request, error) {
	var req Request
	var user, safety string
	found := false
	err := walkFields(body, func(k []byte, start int) int {
		if string(k) == "messages" {
			// The history is most of the body: cut it as it is crossed,
			// in one pass.
			items, end := arrayItems(body, start, make([][]byte, 0, 16))
			req.Items, found = items, end >= 0
			return end
		}
		end := skipValue(body, start)
		if end < 0 {
			return end
		}
		switch v := body[start:end]; string(k) {
		case "model":
			req.Model = ""
			json.Unmarshal(v, &req.Model)
		case "stream":
			req.Stream = false
			json.Unmarshal(v, &req.Stream)
		case "stream_options":
			var o struct {
				IncludeUsage bool `json:"include_usage"`
			}
			json.Unmarshal(v, &o)
			req.IncludeUsage = o.IncludeUsage
		case "user":
			user = ""
			json.Unmarshal(v, &user)
		case "safety_identifier":
			safety = ""
			json.Unmarshal(v, &safety)
		case "metadata":
			req.Session = metadataSession(v)
		}
		return end
	})
	if err != nil || !found {
		return Request{}, errChatRequest
	}
	req.User = user
	if req.User == "" {
		req.User = safety
	}
	return req, nil
}

// metadataSession returns metadata's "session_id" string, else its
// "conversation_id" string, else "".
func metadataSession(v []byte) string {
	var m struct {
		SessionID      any `json:"session_id"`
		ConversationID any `json:"conversation_id"`
	}
	if json.Unmarshal(v, &m) != nil {
		return ""
	}
	if s, ok := m.SessionID.(string); ok && s != "" {
		return s
	}
	s, _ := m.ConversationID.(string)
	return s
}

// Assistant reports whether a message's "role" is "assistant". It stops
// reading the item at its role.
func (Chat) Assistant(item []byte) bool {
	found := false
	Fields(item, func(k, v []byte) bool {
		if string(k) != "role" {
			return true
		}
		found = string(v) == `"assistant"`
		return false
	})
	return found
}

// chatResponse is what ParseResponse decodes of a response; choices are
// kept raw so that only choice 0 is decoded.
type chatResponse struct {
	ID      string            `json:"id"`
	Choices []json.RawMessage `json:"choices"`
	Usage   *chatUsage        `json:"usage"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func (u *chatUsage) usage() guard.Usage {
	if u == nil {
		return guard.Usage{}
	}
	return guard.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

type chatChoice struct {
	Message struct {
		Content   json.RawMessage `json:"content"`
		ToolCalls []chatToolCall  `json:"tool_calls"`
	} `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

// chatToolCall is a tool call of a message, or a delta of one in a chunk.
// A "custom" tool's call has its input text in place of arguments.
type chatToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

// call returns c as a guard.ToolCall: a function's arguments are JSON
// text, a custom tool's input a plain string.
func (c *chatToolCall) call() guard.ToolCall {
	if c.Type == "custom" {
		return guard.ToolCall{ID: c.ID, Name: c.Custom.Name, Args: c.Custom.Input}
	}
	return guard.ToolCall{ID: c.ID, Name: c.Function.Name, Args: Raw([]byte(c.Function.Arguments))}
}

// contentText returns the text of a message's content: a string, or the
// "text" of its text parts joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ParseResponse reads the id, usage and choice 0: its text, tool calls
// and finish reason.
func (Chat) ParseResponse(body []byte) (Output, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Choices == nil {
		return Output{}, errChatResponse
	}
	out := Output{ID: r.ID, Usage: r.Usage.usage()}
	if len(r.Choices) == 0 {
		return out, nil
	}
	var c chatChoice
	if err := json.Unmarshal(r.Choices[0], &c); err != nil {
		return Output{}, errors.New("wire: chat response: choices[0]: " + err.Error())
	}
	out.Text = contentText(c.Message.Content)
	for i := range c.Message.ToolCalls {
		out.Calls = append(out.Calls, c.Message.ToolCalls[i].call())
	}
	if c.FinishReason != nil {
		out.Finish = *c.FinishReason
	}
	return out, nil
}

// Rewrite removes the refused calls from choices[0].message.tool_calls
// (the member is dropped when none is left, as in a response without
// calls), adds text to its content (after "\n\n" when it had text) and,
// when no call is left, turns a finish_reason of "tool_calls" into "stop"
// (another reason, such as "length", says something of its own and is
// kept). The message's members are written again in their order, compact;
// every other byte of body is kept.
func (Chat) Rewrite(body []byte, refused []int, text string) ([]byte, error) {
	var choices []byte
	if err := Fields(body, func(k, v []byte) bool {
		if string(k) == "choices" {
			choices = v
		}
		return true
	}); err != nil || choices == nil {
		return nil, errChatResponse
	}
	var choice []byte
	if err := Elements(choices, func(e []byte) bool { choice = e; return false }); err != nil || choice == nil {
		return nil, errors.New("wire: chat response: no choices[0]")
	}
	var message, finish []byte
	if err := Fields(choice, func(k, v []byte) bool {
		switch string(k) {
		case "message":
			message = v
		case "finish_reason":
			finish = v
		}
		return true
	}); err != nil || message == nil {
		return nil, errors.New(`wire: chat response: choices[0] has no "message"`)
	}
	left := 0
	hasContent := false
	msg, err := rewriteObject(message, func(k, v []byte) ([]byte, error) {
		switch string(k) {
		case "tool_calls":
			if string(v) == "null" {
				return v, nil
			}
			kept, n, err := dropArrayElements(v, refused)
			left = n
			if err != nil || n == 0 {
				return nil, err
			}
			return kept, nil
		case "content":
			hasContent = true
			return addText(v, text)
		}
		return v, nil
	})
	if err != nil {
		return nil, errors.New("wire: chat response: choices[0].message: " + err.Error())
	}
	if !hasContent && text != "" {
		msg = appendObjectMember(msg, "content", jsonQuote(text))
	}
	edits := []jsonEdit{{old: message, new: msg}}
	if left == 0 && finish != nil && (string(finish) == `"tool_calls"` || string(finish) == `"function_call"`) {
		edits = append(edits, jsonEdit{old: finish, new: []byte(`"stop"`)})
	}
	return applyEdits(body, edits), nil
}

// Final returns a chat.completion (or its chunks, then "data: [DONE]") with
// one choice whose message is text, finish_reason "stop" and zero usage.
func (Chat) Final(req *Request, text string, stream bool) []byte {
	if req == nil {
		req = &Request{}
	}
	id := jsonQuote("chatcmpl-lg" + rand.Text())
	created := strconv.AppendInt(nil, time.Now().Unix(), 10)
	model := jsonQuote(req.Model)
	const usage = `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
	if !stream {
		b := []byte(`{"id":`)
		b = append(b, id...)
		b = append(b, `,"object":"chat.completion","created":`...)
		b = append(b, created...)
		b = append(b, `,"model":`...)
		b = append(b, model...)
		b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		b = append(b, jsonQuote(text)...)
		b = append(b, `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":`...)
		b = append(b, usage...)
		return append(b, '}')
	}
	c := chunkHead{id: id, created: created, model: model, usage: req.IncludeUsage}
	b := c.chunk(nil, `{"role":"assistant","content":"","refusal":null}`, "null")
	if text != "" {
		b = c.chunk(b, `{"content":`+string(jsonQuote(text))+`}`, "null")
	}
	b = c.chunk(b, `{}`, `"stop"`)
	if req.IncludeUsage {
		b = c.usageChunk(b, usage)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// chunkHead holds the members that every chunk of a stream repeats, as
// raw JSON values.
type chunkHead struct {
	id, created, model []byte
	usage              bool // chunks carry "usage": null
}

// chunk appends one event of a chunk with choice 0's delta and
// finish_reason (raw JSON).
func (c *chunkHead) chunk(b []byte, delta, finish string) []byte {
	b = c.open(b)
	b = append(b, `"choices":[{"index":0,"delta":`...)
	b = append(b, delta...)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	b = append(b, finish...)
	b = append(b, "}]"...)
	if c.usage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

// usageChunk appends the last chunk of a stream with include_usage: no
// choices, the usage.
func (c *chunkHead) usageChunk(b []byte, usage string) []byte {
	b = c.open(b)
	b = append(b, `"choices":[],"usage":`...)
	b = append(b, usage...)
	return append(b, "}\n\n"...)
}

func (c *chunkHead) open(b []byte) []byte {
	b = append(b, `data: {"id":`...)
	b = append(b, c.id...)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = append(b, c.created...)
	b = append(b, `,"model":`...)
	b = append(b, c.model...)
	return append(b, ',')
}

// chatErrorType returns the error's "type": "invalid_request_error" for a
// 4xx status (OpenAI's type for requests it will not serve, which no
// client retries; the SDKs choose their error class by status, 422 being
// UnprocessableEntity), "server_error" for 5xx.
func chatErrorType(status int) string {
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// Error returns {"error":{"message","type","param":null,"code"}}.
func (Chat) Error(status int, code, message string) []byte {
	return chatErrorBody(chatErrorType(status), code, message)
}

func chatErrorBody(typ, code, message string) []byte {
	b := []byte(`{"error":{"message":`)
	b = append(b, jsonQuote(message)...)
	b = append(b, `,"type":`...)
	b = append(b, jsonQuote(typ)...)
	b = append(b, `,"param":null,"code":`...)
	b = append(b, jsonQuote(code)...)
	return append(b, "}}"...)
}

// ErrorEvent returns the error as the API sends it inside a stream: a
// data line holding {"error":{...}}, on which the SDKs stop the stream
// with an error (openai-go: *ssestream.StreamError). It has the type
// "invalid_request_error", as Error for 422.
func (Chat) ErrorEvent(code, message string) []byte {
	return Event("", chatErrorBody("invalid_request_error", code, message))
}

// NewStream returns the filter of one streamed response.
func (Chat) NewStream(req *Request) Stream {
	return &chatStream{head: chunkHead{id: []byte(`""`), created: []byte("0"), model: jsonQuote(req.Model)}}
}

// chatStream filters a chat completion stream. Choice 0's tool_calls
// deltas name their call by "index"; Calls are in the order of the
// indexes' first deltas (the API's order, from 0).
type chatStream struct {
	out     Output
	index   []int // the stream index of each call of out.Calls
	args    []strings.Builder
	head    chunkHead
	hasHead bool
	held    [][]byte
}

// chatChunk is what the stream reads of a chunk.
type chatChunk struct {
	ID      string          `json:"id"`
	Created json.RawMessage `json:"created"`
	Model   json.RawMessage `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string        `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func (s *chatStream) Event(raw []byte) []byte {
	data, _ := Data(raw)
	hold := s.held != nil
	if len(data) > 0 && data[0] == '{' {
		var c chatChunk
		if json.Unmarshal(data, &c) == nil {
			hold = s.read(&c) || hold
		}
	}
	if hold {
		s.held = append(s.held, bytes.Clone(raw))
		return nil
	}
	return raw
}

// read takes in a chunk and reports whether it has a tool call delta of
// choice 0.
func (s *chatStream) read(c *chatChunk) (call bool) {
	if !s.hasHead && c.ID != "" {
		s.hasHead = true
		s.out.ID = c.ID
		s.head.id = jsonQuote(c.ID)
		if c.Created != nil {
			s.head.created = c.Created
		}
		if c.Model != nil {
			s.head.model = c.Model
		}
	}
	if c.Usage != nil {
		// With include_usage every chunk has "usage", null until the last.
		s.head.usage = true
		var u chatUsage
		if string(c.Usage) != "null" && json.Unmarshal(c.Usage, &u) == nil {
			s.out.Usage = u.usage()
		}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if ch.Delta.Content != nil {
			s.out.Text += *ch.Delta.Content
		}
		if ch.FinishReason != nil {
			s.out.Finish = *ch.FinishReason
		}
		for j := range ch.Delta.ToolCalls {
			call = true
			d := &ch.Delta.ToolCalls[j]
			k := slices.Index(s.index, d.Index)
			if k < 0 {
				k = len(s.index)
				s.index = append(s.index, d.Index)
				s.args = append(s.args, strings.Builder{})
				s.out.Calls = append(s.out.Calls, guard.ToolCall{})
			}
			tc := &s.out.Calls[k]
			if d.ID != "" {
				tc.ID = d.ID
			}
			if d.Type == "custom" {
				tc.Name += d.Custom.Name
				s.args[k].WriteString(d.Custom.Input)
				tc.Args = s.args[k].String()
				continue
			}
			tc.Name += d.Function.Name
			s.args[k].WriteString(d.Function.Arguments)
			tc.Args = Raw([]byte(s.args[k].String()))
		}
	}
	return call
}

// Fail drops the held events and returns the error event.
func (s *chatStream) Fail(code, message string) []byte {
	s.held = nil
	return Chat{}.ErrorEvent(code, message)
}

func (s *chatStream) Output() Output {
	out := s.out
	out.Calls = slices.Clone(out.Calls)
	return out
}

// End returns the held events; with refusals (or text), choice 0's
// refused tool_calls deltas are removed, the calls left renumbered from 0,
// a chunk of text is put before the chunk with the finish reason, and that
// reason becomes "stop" when no call is left. A chunk that held only
// refused deltas is dropped, and so is one that cannot be read. When
// nothing was held (a turn without calls) End returns nil.
func (s *chatStream) End(refused []int, text string) []byte {
	held := s.held
	s.held = nil
	if len(held) == 0 {
		return nil // all went on already, [DONE] too
	}
	if len(refused) == 0 && text == "" {
		return slices.Concat(held...)
	}
	// renumber maps a stream index to its new index, or -1 if refused.
	renumber := make(map[int]int, len(s.index))
	n := 0
	for k, idx := range s.index {
		if slices.Contains(refused, k) {
			renumber[idx] = -1
			continue
		}
		renumber[idx] = n
		n++
	}
	left := n
	if text != "" && s.out.Text != "" {
		text = "\n\n" + text
	}
	var b []byte
	textOut := text == ""
	putText := func() {
		if !textOut {
			textOut = true
			b = s.head.chunk(b, `{"content":`+string(jsonQuote(text))+`}`, "null")
		}
	}
	for _, ev := range held {
		data, _ := Data(ev)
		if len(data) == 0 || data[0] != '{' {
			if bytes.HasPrefix(data, []byte("[DONE]")) {
				putText()
			}
			b = append(b, ev...)
			continue
		}
		chunk, finished, drop, err := rewriteChunk(data, renumber, left)
		if finished {
			putText()
		}
		// A chunk that cannot be rewritten may hold a refused call: it
		// does not go on.
		if err == nil && !drop {
			b = append(b, Event("", chunk)...)
		}
	}
	putText()
	return b
}

// rewriteChunk rewrites choice 0 of a chunk: its tool_calls deltas
// renumbered (refused ones, -1, removed) and, when left is 0, a
// finish_reason of "tool_calls" made "stop". finished reports that the
// chunk ends choice 0; drop that nothing is left of it.
func rewriteChunk(data []byte, renumber map[int]int, left int) (out []byte, finished, drop bool, err error) {
	var choices []byte
	usage := false
	if err := Fields(data, func(k, v []byte) bool {
		switch string(k) {
		case "choices":
			choices = v
		case "usage":
			usage = string(v) != "null"
		}
		return true
	}); err != nil || choices == nil {
		return nil, false, false, ErrSyntax
	}
	var edits []jsonEdit
	nchoices := 0
	emptied := false
	var ferr error
	err = Elements(choices, func(choice []byte) bool {
		nchoices++
		var delta, finish, index []byte
		if Fields(choice, func(k, v []byte) bool {
			switch string(k) {
			case "delta":
				delta = v
			case "finish_reason":
				finish = v
			case "index":
				index = v
			}
			return true
		}) != nil || string(index) != "0" {
			return true
		}
		if finish != nil && string(finish) != "null" {
			finished = true
			if left == 0 && (string(finish) == `"tool_calls"` || string(finish) == `"function_call"`) {
				edits = append(edits, jsonEdit{old: finish, new: []byte(`"stop"`)})
			}
		}
		if delta == nil {
			return true
		}
		hadCalls, members := false, 0
		nd, e := rewriteObject(delta, func(k, v []byte) ([]byte, error) {
			if string(k) != "tool_calls" {
				members++
				return v, nil
			}
			hadCalls = true
			kept, err := renumberCalls(v, renumber)
			if err != nil || kept == nil {
				return nil, err
			}
			members++
			return kept, nil
		})
		if e != nil {
			ferr = e
			return false
		}
		if hadCalls {
			edits = append(edits, jsonEdit{old: delta, new: nd})
			emptied = members == 0 && !finished
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return nil, false, false, err
	}
	drop = emptied && nchoices == 1 && !usage
	return applyEdits(data, edits), finished, drop, nil
}

// renumberCalls returns the tool_calls deltas of arr that renumber keeps,
// with their new "index", or nil when none is kept.
func renumberCalls(arr []byte, renumber map[int]int) ([]byte, error) {
	var out []byte
	var ferr error
	err := Elements(arr, func(e []byte) bool {
		var index []byte
		if Fields(e, func(k, v []byte) bool {
			if string(k) == "index" {
				index = v
			}
			return true
		}) != nil {
			ferr = ErrSyntax
			return false
		}
		i, err := strconv.Atoi(string(index))
		if index == nil {
			i, err = 0, nil // as the SDKs read a delta without one
		}
		if err != nil {
			ferr = errors.New(`tool_calls: bad "index"`)
			return false
		}
		n, ok := renumber[i]
		if !ok {
			n = i
		}
		if n < 0 {
			return true
		}
		var ne []byte
		if index != nil {
			ne = applyEdits(e, []jsonEdit{{old: index, new: strconv.AppendInt(nil, int64(n), 10)}})
		} else {
			ne, _ = rewriteObject(e, func(_, v []byte) ([]byte, error) { return v, nil })
			ne = appendObjectMember(ne, "index", strconv.AppendInt(nil, int64(n), 10))
		}
		if out == nil {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = append(out, ne...)
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil || out == nil {
		return nil, err
	}
	return append(out, ']'), nil
}

// dropArrayElements returns arr without its elements at the indexes drop, and
// how many are left.
func dropArrayElements(arr []byte, drop []int) ([]byte, int, error) {
	out := []byte{'['}
	i, n := 0, 0
	err := Elements(arr, func(e []byte) bool {
		if !slices.Contains(drop, i) {
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, e...)
			n++
		}
		i++
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	return append(out, ']'), n, nil
}

// addText returns a content value with text added: null becomes the
// text, a string gets "\n\n" and the text, an array of parts a text part.
func addText(content []byte, text string) ([]byte, error) {
	if text == "" {
		return content, nil
	}
	switch {
	case string(content) == "null":
		return jsonQuote(text), nil
	case len(content) > 0 && content[0] == '"':
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, errors.New("content: " + err.Error())
		}
		if s != "" {
			s += "\n\n"
		}
		return jsonQuote(s + text), nil
	case len(content) > 0 && content[0] == '[':
		part := append(append([]byte(`{"type":"text","text":`), jsonQuote(text)...), '}')
		if bytes.Equal(bytes.TrimSpace(content[1:len(content)-1]), nil) {
			return append(append([]byte{'['}, part...), ']'), nil
		}
		return append(append(append(bytes.Clone(content[:len(content)-1]), ','), part...), ']'), nil
	}
	return content, nil
}
