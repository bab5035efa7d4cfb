package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/guard"
)

// Messages is Anthropic's Messages API (POST /v1/messages), JSON and
// server-sent events. Its zero value is ready to use.
//
// A request's history is "messages" (each item {"role", "content"}, the
// content a string or blocks: text, tool_use, tool_result, thinking, ...)
// and its Head is "system". The response is a message whose content
// blocks are text and tool_use blocks; a call is a tool_use block, its
// Args the raw JSON of the block's "input". Server tools (server_tool_use,
// mcp_tool_use) run at the provider and are not calls of the agent's.
type Messages struct{}

// Name returns "messages".
var _ API = Messages{}

func (Messages) Name() string { return "messages" }

// ParseRequest reads model, stream, system and metadata (user_id, and a
// session_id or conversation_id string) and cuts "messages" into items.
// It is an error when the body is not an object or "messages" is missing
// or not an array; fields of other types than the API's are ignored.
func (Messages) ParseRequest(body []byte) (Request, error) {
	var req Request
	var msgs []byte
	err := Fields(body, func(k, v []byte) bool {
		switch msgKey(k) {
		case "messages":
			msgs = v
		case "system":
			req.Head = v
			if string(v) == "null" {
				req.Head = nil
			}
		case "model":
			req.Model, _ = msgString(v)
		case "stream":
			req.Stream = string(v) == "true"
		case "metadata":
			var md struct {
				UserID         json.RawMessage `json:"user_id"`
				SessionID      json.RawMessage `json:"session_id"`
				ConversationID json.RawMessage `json:"conversation_id"`
			}
			req.User, req.Session = "", ""
			if json.Unmarshal(v, &md) == nil {
				req.User, _ = msgString(md.UserID)
				if req.Session, _ = msgString(md.SessionID); req.Session == "" {
					req.Session, _ = msgString(md.ConversationID)
				}
			}
		}
		return true
	})
	if err != nil {
		return Request{}, fmt.Errorf("wire: messages request: %w", err)
	}
	if msgs == nil {
		return Request{}, errors.New(`wire: messages request: no "messages"`)
	}
	if req.Items, err = Items(msgs); err != nil {
		return Request{}, fmt.Errorf(`wire: messages request: "messages" is not an array: %w`, err)
	}
	return req, nil
}

// Assistant reports whether item is a message whose role is "assistant".
func (Messages) Assistant(item []byte) bool {
	var role string
	Fields(item, func(k, v []byte) bool {
		if msgKey(k) != "role" {
			return true
		}
		role, _ = msgString(v)
		return false
	})
	return role == "assistant"
}

// messagesUsage is a message's usage, its counts nil when absent.
type messagesUsage struct {
	InputTokens   *int64 `json:"input_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
}

// merge sets the counts that u2 has (a message_delta's usage holds
// cumulative totals, which replace those of message_start).
func (u *messagesUsage) merge(u2 *messagesUsage) {
	if u2 == nil {
		return
	}
	for _, p := range [...]struct{ dst, src **int64 }{
		{&u.InputTokens, &u2.InputTokens}, {&u.CacheCreation, &u2.CacheCreation},
		{&u.CacheRead, &u2.CacheRead}, {&u.OutputTokens, &u2.OutputTokens},
	} {
		if *p.src != nil {
			*p.dst = *p.src
		}
	}
}

// usage is u as a guard.Usage: the input tokens include the cache's reads
// and writes (Anthropic counts them apart), as the anthropic adapter does.
func (u messagesUsage) usage() guard.Usage {
	n := func(p *int64) int64 {
		if p == nil || *p < 0 {
			return 0
		}
		return *p
	}
	return guard.Usage{
		InputTokens:  n(u.InputTokens) + n(u.CacheCreation) + n(u.CacheRead),
		OutputTokens: n(u.OutputTokens),
	}
}

type messagesBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ParseResponse reads a message: its id, its text blocks' text joined by
// newlines, its tool_use blocks as calls, stop_reason and usage.
func (Messages) ParseResponse(body []byte) (Output, error) {
	var m struct {
		ID         string          `json:"id"`
		Content    []messagesBlock `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      messagesUsage   `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Output{}, fmt.Errorf("wire: messages response: %w", err)
	}
	out := Output{ID: m.ID, Finish: m.StopReason, Usage: m.Usage.usage()}
	var text []string
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			out.Calls = append(out.Calls, guard.ToolCall{ID: b.ID, Name: b.Name, Args: msgArgs(b.Input)})
		}
	}
	out.Text = strings.Join(text, "\n")
	return out, nil
}

// msgArgs is a tool_use input as Args: {} when it is absent.
func msgArgs(input []byte) json.RawMessage {
	if len(input) == 0 {
		return Raw([]byte("{}"))
	}
	return Raw(input)
}

// Rewrite removes the refused tool_use blocks from the message's content
// and adds text as a text block of its own where the first tool_use block
// was (after the model's text; at the end when there was none). When no
// tool_use block is left, stop_reason becomes "end_turn". The other blocks
// and fields are kept byte for byte.
func (Messages) Rewrite(body []byte, refused []int, text string) ([]byte, error) {
	var content, stop []byte
	err := Fields(body, func(k, v []byte) bool {
		switch msgKey(k) {
		case "content":
			content = v
		case "stop_reason":
			stop = v
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wire: messages response: %w", err)
	}
	if content == nil {
		return nil, errors.New(`wire: messages response: no "content"`)
	}
	var blocks [][]byte
	var calls []int // indexes of the tool_use blocks in blocks
	err = Elements(content, func(e []byte) bool {
		if msgBlockType(e) == "tool_use" {
			calls = append(calls, len(blocks))
		}
		blocks = append(blocks, e)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf(`wire: messages response: "content": %w`, err)
	}
	drop, err := msgRefused(refused, len(calls))
	if err != nil {
		return nil, err
	}
	feedback := msgTextBlock(text)
	at := len(blocks) // where the feedback goes
	if len(calls) > 0 {
		at = calls[0]
	}
	var b bytes.Buffer
	b.Grow(len(content) + len(feedback) + 1)
	b.WriteByte('[')
	n, call := 0, 0
	add := func(e []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
		n++
	}
	for i, e := range blocks {
		if i == at && feedback != nil {
			add(feedback)
		}
		if call < len(calls) && calls[call] == i {
			call++
			if drop[call-1] {
				continue
			}
		}
		add(e)
	}
	if at == len(blocks) && feedback != nil {
		add(feedback)
	}
	b.WriteByte(']')

	olds, news := [][]byte{content}, [][]byte{b.Bytes()}
	if len(refused) > 0 && len(refused) == len(calls) {
		if stop != nil {
			olds, news = append(olds, stop), append(news, []byte(`"end_turn"`))
		} else {
			// No stop_reason at all: add one after the content.
			olds = append(olds, content[len(content):])
			news = append(news, []byte(`,"stop_reason":"end_turn"`))
		}
	}
	return msgSplice(body, olds, news), nil
}

// msgRefused checks refused (ascending indexes into n calls) and returns
// it as a set.
func msgRefused(refused []int, n int) ([]bool, error) {
	drop := make([]bool, n)
	for i, r := range refused {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("wire: messages: refused[%d] = %d, not the index of one of the %d calls", i, r, n)
		}
		if i > 0 && r <= refused[i-1] {
			return nil, fmt.Errorf("wire: messages: refused[%d] = %d is not above refused[%d] = %d", i, r, i-1, refused[i-1])
		}
		drop[r] = true
	}
	return drop, nil
}

// msgBlockType returns a content block's "type".
func msgBlockType(block []byte) string {
	var t string
	Fields(block, func(k, v []byte) bool {
		if msgKey(k) != "type" {
			return true
		}
		t, _ = msgString(v)
		return false
	})
	return t
}

// msgTextBlock is a text content block of text, nil for no text (the API
// refuses empty text blocks in a history sent back).
func msgTextBlock(text string) []byte {
	if text == "" {
		return nil
	}
	return append(append([]byte(`{"type":"text","text":`), msgQuote(text)...), '}')
}

// messagesMessage is a message as Final writes it.
type messagesMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []messagesText   `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        messagesZeroUsed `json:"usage"`
}

type messagesText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type messagesZeroUsed struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Final returns a message with one text block, stop_reason "end_turn" and
// zero usage, with a fresh id "msg_lg…". Streamed, it is the events the
// API sends for such a message: message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop.
func (Messages) Final(req *Request, text string, stream bool) []byte {
	m := messagesMessage{
		ID:      "msg_lg" + rand.Text(),
		Type:    "message",
		Role:    "assistant",
		Content: []messagesText{},
	}
	if req != nil {
		m.Model = req.Model
	}
	endTurn := "end_turn"
	if !stream {
		if text != "" {
			m.Content = append(m.Content, messagesText{Type: "text", Text: text})
		}
		m.StopReason = &endTurn
		return msgMarshal(m)
	}
	var b []byte
	b = append(b, Event("message_start", msgMarshal(struct {
		Type    string          `json:"type"`
		Message messagesMessage `json:"message"`
	}{"message_start", m}))...)
	if text != "" {
		b = append(b, msgTextEvents(0, text)...)
	}
	b = append(b, Event("message_delta", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}`))...)
	return append(b, Event("message_stop", []byte(`{"type":"message_stop"}`))...)
}

// msgTextEvents are the events of a text block at index that holds text.
func msgTextEvents(index int, text string) []byte {
	i := strconv.Itoa(index)
	var b []byte
	b = append(b, Event("content_block_start", []byte(`{"type":"content_block_start","index":`+i+`,"content_block":{"type":"text","text":""}}`))...)
	b = append(b, Event("content_block_delta", []byte(`{"type":"content_block_delta","index":`+i+`,"delta":{"type":"text_delta","text":`+string(msgQuote(text))+`}}`))...)
	return append(b, Event("content_block_stop", []byte(`{"type":"content_block_stop","index":`+i+`}`))...)
}

// Error returns {"type":"error","error":{"type","message"}}. The error's
// type follows the status as the API's own do (422 and the other 4xx
// without a type of their own are "invalid_request_error", which no SDK or
// framework retries); the message is code and message, "CODE: message".
func (Messages) Error(status int, code, message string) []byte {
	return msgError(msgErrorType(status), code, message)
}

// ErrorEvent returns an "error" event whose data is the error body with
// type "invalid_request_error": the Anthropic SDKs end the stream with it
// as an API error, and, unlike "overloaded_error" or "api_error", no
// framework takes it for a passing fault to retry.
func (Messages) ErrorEvent(code, message string) []byte {
	return Event("error", msgError("invalid_request_error", code, message))
}

func msgError(typ, code, message string) []byte {
	if code != "" {
		message = code + ": " + message
	}
	return []byte(`{"type":"error","error":{"type":"` + typ + `","message":` + string(msgQuote(message)) + `}}`)
}

// msgErrorType is the Anthropic error type of an HTTP status.
func msgErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// NewStream returns the filter of one streamed message.
func (Messages) NewStream(*Request) Stream { return &messagesStream{} }

// A messagesStream follows a streamed message: text blocks pass as they
// come; from the content_block_start of the first tool_use block on, every
// event is held.
type messagesStream struct {
	id      string
	finish  string
	usage   messagesUsage
	blocks  []*messagesStreamBlock // in the order they started
	holding bool
	held    []messagesHeld
	ended   bool
}

type messagesStreamBlock struct {
	index    int
	typ      string
	text     strings.Builder
	id, name string
	input    []byte // the content_block_start's input
	partial  []byte // the input_json_delta's joined
	deltas   bool   // an input_json_delta came
	isCall   bool
}

// messagesHeld is an event held back, copied.
type messagesHeld struct {
	raw   []byte
	kind  string // the event's type
	index int    // a content block event's index, or -1
}

type messagesEvent struct {
	Type    string `json:"type"`
	Index   *int   `json:"index"`
	Message *struct {
		ID    string        `json:"id"`
		Usage messagesUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *messagesBlock `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *messagesUsage `json:"usage"`
}

func (s *messagesStream) block(index int) *messagesStreamBlock {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if s.blocks[i].index == index {
			return s.blocks[i]
		}
	}
	return nil
}

// Event reads one event and passes it on, or holds it from the first
// tool_use block on.
func (s *messagesStream) Event(raw []byte) []byte {
	data, name := Data(raw)
	var ev messagesEvent
	if len(data) > 0 && json.Unmarshal(data, &ev) != nil {
		ev = messagesEvent{}
	}
	if ev.Type == "" {
		ev.Type = name
	}
	index := -1
	if ev.Index != nil {
		index = *ev.Index
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			s.id = ev.Message.ID
			s.usage.merge(&ev.Message.Usage)
		}
	case "content_block_start":
		if ev.ContentBlock != nil && index >= 0 && s.block(index) == nil {
			b := &messagesStreamBlock{index: index, typ: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			b.text.WriteString(ev.ContentBlock.Text)
			b.input = append([]byte(nil), ev.ContentBlock.Input...)
			if b.typ == "tool_use" {
				b.isCall = true
				s.holding = true
			}
			s.blocks = append(s.blocks, b)
		}
	case "content_block_delta":
		if b := s.block(index); b != nil && ev.Delta != nil {
			switch ev.Delta.Type {
			case "text_delta":
				b.text.WriteString(ev.Delta.Text)
			case "input_json_delta":
				b.partial = append(b.partial, ev.Delta.PartialJSON...)
				b.deltas = true
			}
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != nil {
			s.finish = *ev.Delta.StopReason
		}
		s.usage.merge(ev.Usage)
	}
	if !s.holding || s.ended {
		return raw
	}
	s.held = append(s.held, messagesHeld{raw: append([]byte(nil), raw...), kind: ev.Type, index: index})
	return nil
}

// Output returns the message as read so far.
func (s *messagesStream) Output() Output {
	out := Output{ID: s.id, Finish: s.finish, Usage: s.usage.usage()}
	var text []string
	for _, b := range s.blocks {
		switch b.typ {
		case "text":
			text = append(text, b.text.String())
		case "tool_use":
			in := b.input
			if b.deltas {
				in = b.partial
			}
			out.Calls = append(out.Calls, guard.ToolCall{ID: b.id, Name: b.name, Args: msgArgs(append([]byte(nil), in...))})
		}
	}
	out.Text = strings.Join(text, "\n")
	return out
}

// End returns the held events. With refusals, the refused tool_use blocks'
// events are dropped, text goes in a text block of its own where the first
// tool_use block started, the other blocks' indexes are renumbered so that
// they stay consecutive, and the message_delta's stop_reason becomes
// "end_turn" when no tool_use block is left. Refused indexes that name no
// call are ignored.
func (s *messagesStream) End(refused []int, text string) []byte {
	if s.ended {
		return nil
	}
	s.ended = true
	var calls []*messagesStreamBlock
	for _, b := range s.blocks {
		if b.isCall {
			calls = append(calls, b)
		}
	}
	drop := map[int]bool{} // by block index
	for _, r := range refused {
		if r >= 0 && r < len(calls) {
			drop[calls[r].index] = true
		}
	}
	feedback := text != "" && len(calls) > 0
	var out []byte
	if len(drop) == 0 && !feedback {
		for _, h := range s.held {
			out = append(out, h.raw...)
		}
		return out
	}
	first := calls[0].index
	newIndex := func(i int) int {
		n := i
		for j := range drop {
			if j < i {
				n--
			}
		}
		if feedback && i >= first {
			n++
		}
		return n
	}
	noneLeft := len(drop) == len(calls)
	inserted := !feedback
	for _, h := range s.held {
		switch h.kind {
		case "content_block_start", "content_block_delta", "content_block_stop":
			if h.index == first && !inserted {
				out = append(out, msgTextEvents(first, text)...)
				inserted = true
			}
			if drop[h.index] {
				continue
			}
			if n := newIndex(h.index); n != h.index && h.index >= 0 {
				out = append(out, msgRewriteEvent(h.raw, func(data []byte) []byte {
					return msgSetMember(data, []byte(strconv.Itoa(n)), "index")
				})...)
				continue
			}
		case "message_delta":
			if noneLeft {
				out = append(out, msgRewriteEvent(h.raw, func(data []byte) []byte {
					return msgSetMember(data, []byte(`"end_turn"`), "delta", "stop_reason")
				})...)
				continue
			}
		}
		out = append(out, h.raw...)
	}
	return out
}

// Fail drops the held events and returns the error event.
func (s *messagesStream) Fail(code, message string) []byte {
	s.ended = true
	s.held = nil
	return Messages{}.ErrorEvent(code, message)
}

// msgRewriteEvent returns the event raw with its data changed by fn, written
// as one data line under the event's name.
func msgRewriteEvent(raw []byte, fn func([]byte) []byte) []byte {
	data, name := Data(raw)
	return Event(name, fn(data))
}

// msgSetMember returns obj with the value of the member at path (keys of
// nested objects) replaced by val; obj as it is when the path is not there.
func msgSetMember(obj, val []byte, path ...string) []byte {
	cur := obj
	for _, key := range path {
		var found []byte
		Fields(cur, func(k, v []byte) bool {
			if msgKey(k) == key {
				found = v
			}
			return true
		})
		if found == nil {
			return obj
		}
		cur = found
	}
	return msgSplice(obj, [][]byte{cur}, [][]byte{val})
}

// msgSplice returns data with its sub-slices olds (not overlapping, in
// any order) replaced by news.
func msgSplice(data []byte, olds, news [][]byte) []byte {
	type part struct{ start, end, i int }
	parts := make([]part, len(olds))
	n := len(data)
	for i, old := range olds {
		start := cap(data) - cap(old) // old is data[start:start+len(old)]
		parts[i] = part{start, start + len(old), i}
		n += len(news[i]) - len(old)
	}
	slices.SortFunc(parts, func(a, b part) int { return a.start - b.start })
	out := make([]byte, 0, n)
	at := 0
	for _, p := range parts {
		out = append(out, data[at:p.start]...)
		out = append(out, news[p.i]...)
		at = p.end
	}
	return append(out, data[at:]...)
}

// msgKey is a raw key (as Fields gives it) as a string, its escapes
// decoded.
func msgKey(k []byte) string {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s) != nil {
		return string(k)
	}
	return s
}

// msgString decodes a raw JSON string; ok is false when v is not one.
func msgString(v []byte) (s string, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// msgQuote is s as a JSON string, its HTML characters as they are.
func msgQuote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

func msgMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
