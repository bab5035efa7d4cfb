package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/loopguard/loopguard/guard"
)

// Responses is the wire format of OpenAI's Responses API
// (POST /v1/responses).
//
// A request's history is its "input": an array of items (messages with a
// role, function_call and function_call_output items, reasoning items and
// others), or a string, which is one user message: that item is then the
// raw JSON string itself. "instructions" is the Head. A request that names
// a stored conversation ("conversation", "previous_response_id") is
// Stateful: its input holds only what is new.
//
// The model's tool calls are its function_call items; a call's ID is its
// call_id (what the function_call_output answering it names), not the
// item's "fc_…" id.
type Responses struct{}

// Name returns "responses".
func (Responses) Name() string { return "responses" }

// ParseRequest reads a Responses request. "input" must be a string or an
// array; it may be absent (or null) only when the request names its
// history another way (previous_response_id, conversation or a stored
// prompt). Session is the conversation's id, else a "session_id" or
// "conversation_id" string in "metadata"; Previous is
// previous_response_id; User is "safety_identifier", else "user".
func (Responses) ParseRequest(body []byte) (Request, error) {
	var (
		req              Request
		input            []byte
		conversation     string
		metaSession      string
		previous         string
		user, safetyID   string
		hasStoredHistory bool
	)
	var inputItems [][]byte
	err := fieldsCutting(body, "input", &inputItems, func(k, v []byte) {
		switch string(k) {
		case "model":
			req.Model, _ = str(v)
		case "stream":
			req.Stream = string(v) == "true"
		case "input":
			input = v
		case "instructions":
			if string(v) != "null" {
				req.Head = v
			} else {
				req.Head = nil
			}
		case "previous_response_id":
			if s, ok := str(v); ok && s != "" {
				previous = s
				hasStoredHistory = true
			}
		case "conversation":
			if s := conversationID(v); s != "" {
				conversation = s
				hasStoredHistory = true
			}
		case "prompt":
			if string(v) != "null" {
				hasStoredHistory = true
			}
		case "user":
			user, _ = str(v)
		case "safety_identifier":
			safetyID, _ = str(v)
		case "metadata":
			metaSession = metadataSession(v)
		}
	})
	if err != nil {
		return Request{}, err
	}
	switch {
	case input == nil || string(input) == "null":
		if !hasStoredHistory {
			return Request{}, errors.New("wire: responses request: input is missing")
		}
	case input[0] == '"':
		req.Items = [][]byte{input}
	case input[0] == '[':
		req.Items = inputItems
	default:
		return Request{}, errors.New("wire: responses request: input is neither a string nor an array")
	}
	req.Stateful = conversation != "" || previous != ""
	switch {
	case conversation != "":
		req.Session = conversation
	case metaSession != "":
		req.Session = metaSession
	}
	req.Previous = previous
	req.User = user
	if safetyID != "" {
		req.User = safetyID
	}
	return req, nil
}

// conversationID reads "conversation": a string or an object with an "id".
func conversationID(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if v[0] == '"' {
		s, _ := str(v)
		return s
	}
	var id string
	if v[0] == '{' {
		Fields(v, func(k, v []byte) bool {
			if Key(k, "id") {
				id, _ = str(v)
				return false
			}
			return true
		})
	}
	return id
}

// str decodes a raw JSON string; ok is false when v is not one.
func str(v []byte) (s string, ok bool) {
	if len(v) < 2 || v[0] != '"' {
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

// modelItems are the types of the items that the model produces in a
// response's output (and that come back in a later request's input).
var modelItems = map[string]bool{
	"function_call":         true,
	"custom_tool_call":      true,
	"reasoning":             true,
	"web_search_call":       true,
	"file_search_call":      true,
	"computer_call":         true,
	"code_interpreter_call": true,
	"image_generation_call": true,
	"local_shell_call":      true,
	"shell_call":            true,
	"apply_patch_call":      true,
	"mcp_call":              true,
	"mcp_list_tools":        true,
	"mcp_approval_request":  true,
	"tool_search_call":      true,
}

// Assistant reports whether item is the model's: an assistant message (an
// item of type "message", or with no type, whose role is "assistant"), or
// an item that only the model produces (function_call, reasoning,
// custom_tool_call, a hosted tool's call, ...). A string item (a string
// input) is the user's.
func (Responses) Assistant(item []byte) bool {
	var typ, role string
	var hasType, hasRole bool
	Fields(item, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			typ, _ = str(v)
			hasType = true
			if typ != "message" {
				return false
			}
		case "role":
			role, _ = str(v)
			hasRole = true
		}
		return !(hasType && hasRole)
	})
	if hasType && typ != "message" {
		return modelItems[typ]
	}
	return role == "assistant"
}

// responseWire is what ParseResponse decodes of a response object.
type responseWire struct {
	ID     string            `json:"id"`
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Usage  *usageWire        `json:"usage"`
}

type usageWire struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

func (u *usageWire) usage() guard.Usage {
	if u == nil {
		return guard.Usage{}
	}
	return guard.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
}

// itemWire is what is read of an output item.
type itemWire struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Content   json.RawMessage `json:"content"`
}

type partWire struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// call returns the guard's call of a function_call item.
func (it *itemWire) call() guard.ToolCall {
	c := guard.ToolCall{ID: it.CallID, Name: it.Name}
	if args, ok := str(it.Arguments); ok {
		if args != "" {
			c.Args = Raw([]byte(args))
		}
	} else if len(it.Arguments) > 0 && string(it.Arguments) != "null" {
		// Not a string: take the value as the arguments' JSON.
		c.Args = Raw(it.Arguments)
	}
	return c
}

// text returns the output_text of a message item's content.
func (it *itemWire) text() string {
	var parts []partWire
	if len(it.Content) == 0 || it.Content[0] != '[' || json.Unmarshal(it.Content, &parts) != nil {
		return ""
	}
	var s string
	for _, p := range parts {
		if p.Type == "output_text" {
			s += p.Text
		}
	}
	return s
}

// ParseResponse reads a response object: its id, the text of its assistant
// messages' output_text parts (joined, as the SDKs' output_text), its
// function_call items (ID is the call_id), Finish its status ("completed",
// "incomplete", ...) and its usage. It is an error if body is not an object
// with an "output" array.
func (Responses) ParseResponse(body []byte) (Output, error) {
	var r responseWire
	if err := json.Unmarshal(body, &r); err != nil {
		return Output{}, errors.New("wire: responses response: " + err.Error())
	}
	if r.Output == nil {
		return Output{}, errors.New("wire: responses response: output is missing")
	}
	out := Output{ID: r.ID, Finish: r.Status, Usage: r.Usage.usage()}
	for i, raw := range r.Output {
		var it itemWire
		if err := json.Unmarshal(raw, &it); err != nil {
			return Output{}, errors.New("wire: responses response: output[" + strconv.Itoa(i) + "]: " + err.Error())
		}
		switch it.Type {
		case "message":
			out.Text += it.text()
		case "function_call":
			out.Calls = append(out.Calls, it.call())
		}
	}
	return out, nil
}

// Rewrite removes the function_call items at the indexes refused (among
// the response's function_call items) from body's "output" and adds text
// as an assistant message item of its own at the end of the output. The
// status stays as it was: a Responses response that asks for calls is
// "completed" too, and one without calls is the normal end of turn. All
// other members of body are kept byte for byte. With no index refused,
// body is returned unchanged.
func (Responses) Rewrite(body []byte, refused []int, text string) ([]byte, error) {
	if len(refused) == 0 {
		return body, nil
	}
	var output []byte
	err := Fields(body, func(k, v []byte) bool {
		if Key(k, "output") {
			output = v
		}
		return true
	})
	if err != nil {
		return nil, errors.New("wire: responses response: " + err.Error())
	}
	if output == nil {
		return nil, errors.New("wire: responses response: output is missing")
	}
	items, err := Items(output)
	if err != nil {
		return nil, errors.New("wire: responses response: output: " + err.Error())
	}
	kept := dropCalls(items, refused)
	if text != "" {
		kept = append(kept, textItem(newID("msg_lg"), text, "completed"))
	}
	return replaceValues(body, map[string][]byte{"output": joinArray(kept)}), nil
}

// dropCalls returns items without the function_call items at the indexes
// refused (counted among the function_call items).
func dropCalls(items [][]byte, refused []int) [][]byte {
	kept := make([][]byte, 0, len(items)+1)
	n := 0
	for _, it := range items {
		if itemType(it) == "function_call" {
			i := n
			n++
			if contains(refused, i) {
				continue
			}
		}
		kept = append(kept, it)
	}
	return kept
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// itemType returns an item's "type".
func itemType(item []byte) string {
	var typ string
	Fields(item, func(k, v []byte) bool {
		if Key(k, "type") {
			typ, _ = str(v)
			return false
		}
		return true
	})
	return typ
}

func joinArray(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// replaceValues returns obj, a JSON object, with the values of the members
// named in repl replaced; everything else is kept byte for byte. Members
// that obj does not have are not added.
func replaceValues(obj []byte, repl map[string][]byte) []byte {
	out := make([]byte, 0, len(obj)+64)
	last := 0
	Fields(obj, func(k, v []byte) bool {
		if nv, ok := repl[string(k)]; ok {
			start := cap(obj) - cap(v)
			out = append(out, obj[last:start]...)
			out = append(out, nv...)
			last = start + len(v)
		}
		return true
	})
	return append(out, obj[last:]...)
}

// textItem returns an assistant message item that holds text.
func textItem(id, text, status string) []byte {
	return mustMarshal(messageWire{ID: id, Type: "message", Status: status, Role: "assistant",
		Content: []textPartWire{textPart(text)}})
}

type messageWire struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Status  string         `json:"status"`
	Content []textPartWire `json:"content"`
	Role    string         `json:"role"`
}

type textPartWire struct {
	Type        string     `json:"type"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
	Text        string     `json:"text"`
}

func textPart(text string) textPartWire {
	return textPartWire{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: text}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("wire: " + err.Error()) // only the package's own types are marshalled
	}
	return b
}

// newID returns prefix followed by 32 random hex digits.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// finalResponse is the response object of Final.
type finalResponse struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	CompletedAt        *int64          `json:"completed_at"`
	Error              *struct{}       `json:"error"`
	IncompleteDetails  *struct{}       `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             json.RawMessage `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Store       bool    `json:"store"`
	Temperature float64 `json:"temperature"`
	Text        struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
	ToolChoice string          `json:"tool_choice"`
	Tools      []struct{}      `json:"tools"`
	TopP       float64         `json:"top_p"`
	Truncation string          `json:"truncation"`
	Usage      json.RawMessage `json:"usage"`
	User       *string         `json:"user"`
	Metadata   struct{}        `json:"metadata"`
}

const zeroUsage = `{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`

func newFinalResponse(req *Request, id string, now int64) finalResponse {
	r := finalResponse{
		ID: id, Object: "response", CreatedAt: now, Status: "completed",
		Instructions: json.RawMessage("null"), ParallelToolCalls: true,
		Store: true, Temperature: 1, ToolChoice: "auto", Tools: []struct{}{}, TopP: 1,
		Truncation: "disabled", Usage: json.RawMessage(zeroUsage), Output: json.RawMessage("[]"),
	}
	r.Text.Format.Type = "text"
	if req != nil {
		r.Model = req.Model
		if len(req.Head) > 0 && json.Valid(req.Head) {
			r.Instructions = json.RawMessage(req.Head)
		}
	}
	r.CompletedAt = &now
	return r
}

// Final returns a completed response whose output is one assistant message
// holding text, with the request's model and instructions and zero usage.
// Its ids are fresh ("resp_lg…", "msg_lg…"). As a stream it is the whole
// sequence the API sends for such a response: response.created,
// response.in_progress, response.output_item.added,
// response.content_part.added, one response.output_text.delta,
// response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed.
func (Responses) Final(req *Request, text string, stream bool) []byte {
	now := time.Now().Unix()
	r := newFinalResponse(req, newID("resp_lg"), now)
	msgID := newID("msg_lg")
	if !stream {
		r.Output = joinArray([][]byte{textItem(msgID, text, "completed")})
		return mustMarshal(r)
	}
	var b []byte
	seq := 0
	start := r
	start.Status = "in_progress"
	start.CompletedAt = nil
	start.Usage = json.RawMessage("null")
	b = append(b, streamEvent("response.created", &seq, map[string]any{"response": start})...)
	b = append(b, streamEvent("response.in_progress", &seq, map[string]any{"response": start})...)
	b = append(b, messageEvents(msgID, 0, text, &seq)...)
	r.Output = joinArray([][]byte{textItem(msgID, text, "completed")})
	b = append(b, streamEvent("response.completed", &seq, map[string]any{"response": r})...)
	return b
}

// streamEvent returns one event of type typ with its sequence number
// (*seq, then incremented) and the members of fields.
func streamEvent(typ string, seq *int, fields map[string]any) []byte {
	// encoding/json writes map keys sorted; "type" and "sequence_number"
	// are put first by hand, as the API does.
	var b []byte
	b = append(b, `{"type":`...)
	b = append(b, mustMarshal(typ)...)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(*seq), 10)
	*seq++
	for _, k := range eventKeys {
		v, ok := fields[k]
		if !ok {
			continue
		}
		b = append(b, ',')
		b = append(b, mustMarshal(k)...)
		b = append(b, ':')
		b = append(b, mustMarshal(v)...)
	}
	b = append(b, '}')
	return Event(typ, b)
}

// eventKeys are the members of the events this package writes, in the
// order the API writes them.
var eventKeys = []string{"response", "output_index", "item_id", "content_index", "item", "part", "delta", "text", "logprobs"}

// messageEvents returns the events of one assistant message item that
// holds text, at output_index index.
func messageEvents(id string, index int, text string, seq *int) []byte {
	empty := messageWire{ID: id, Type: "message", Status: "in_progress", Role: "assistant", Content: []textPartWire{}}
	done := empty
	done.Status = "completed"
	done.Content = []textPartWire{textPart(text)}
	var b []byte
	b = append(b, streamEvent("response.output_item.added", seq, map[string]any{"output_index": index, "item": empty})...)
	b = append(b, streamEvent("response.content_part.added", seq, map[string]any{
		"item_id": id, "output_index": index, "content_index": 0, "part": textPart("")})...)
	b = append(b, streamEvent("response.output_text.delta", seq, map[string]any{
		"item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []struct{}{}})...)
	b = append(b, streamEvent("response.output_text.done", seq, map[string]any{
		"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []struct{}{}})...)
	b = append(b, streamEvent("response.content_part.done", seq, map[string]any{
		"item_id": id, "output_index": index, "content_index": 0, "part": textPart(text)})...)
	b = append(b, streamEvent("response.output_item.done", seq, map[string]any{"output_index": index, "item": done})...)
	return b
}

// errorType is the "type" of loopguard's errors. The SDKs map an error to
// their classes by the HTTP status (422: UnprocessableEntityError in
// Python and Node, *openai.Error with StatusCode 422 in Go), not by this
// type; "invalid_request_error" is the type OpenAI gives its own 4xx
// errors, which a client does not retry.
const errorType = "invalid_request_error"

type errorWire struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// Error returns OpenAI's error body:
// {"error":{"message","type":"invalid_request_error","param":null,"code"}}.
// The status is the caller's to send (with x-should-retry: false).
func (Responses) Error(status int, code, message string) []byte {
	return mustMarshal(struct {
		Error errorWire `json:"error"`
	}{errorWire{Message: message, Type: errorType, Code: code}})
}

// ErrorEvent returns the Responses stream's error event (event: error)
// with sequence number 0; Stream.Fail numbers it after the stream's
// events.
func (Responses) ErrorEvent(code, message string) []byte {
	return errorEvent(code, message, 0)
}

// errorEvent writes the error event both as the API reference documents
// it (code, message and param at the top, which the SDKs' typed
// ResponseErrorEvent reads) and as the API sends it (an "error" object,
// which makes the SDKs' stream readers end with an error: openai-go's
// stream.Err() is an *ssestream.StreamError).
func errorEvent(code, message string, seq int) []byte {
	e := errorWire{Message: message, Type: errorType, Code: code}
	data := mustMarshal(struct {
		Type           string    `json:"type"`
		SequenceNumber int       `json:"sequence_number"`
		Code           string    `json:"code"`
		Message        string    `json:"message"`
		Param          *string   `json:"param"`
		Error          errorWire `json:"error"`
	}{"error", seq, code, message, nil, e})
	return Event("error", data)
}

// NewStream returns the filter of one streamed response.
func (Responses) NewStream(req *Request) Stream {
	return &responsesStream{req: req, index: map[int]int{}}
}

// responsesStream filters one Responses stream. It holds the events from
// the first function_call item's response.output_item.added on.
type responsesStream struct {
	req     *Request
	out     Output
	calls   []streamCall // the function_call items, in order
	index   map[int]int  // output_index -> index in calls
	holding bool
	held    []heldEvent
	lastSeq int // the highest sequence_number seen, -1 before any
	seenSeq bool
	items   int // 1 + the highest output_index seen
}

type streamCall struct {
	outputIndex int
	args        []byte
}

// heldEvent is one held event and what End needs of it.
type heldEvent struct {
	raw         []byte
	name        string
	data        []byte
	typ         string
	outputIndex int // -1 when the event has none
}

// eventFields are the top-level members of an event's data that the
// stream reads.
type eventFields struct {
	typ, seq, outputIndex, item, delta, arguments, response []byte
}

func readEvent(data []byte) (eventFields, bool) {
	var f eventFields
	err := Fields(data, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			f.typ = v
		case "sequence_number":
			f.seq = v
		case "output_index":
			f.outputIndex = v
		case "item":
			f.item = v
		case "delta":
			f.delta = v
		case "arguments":
			f.arguments = v
		case "response":
			f.response = v
		}
		return true
	})
	return f, err == nil
}

func atoi(v []byte) (int, bool) {
	n, err := strconv.Atoi(string(v))
	return n, err == nil && n >= 0
}

func (s *responsesStream) Event(raw []byte) []byte {
	data, name := Data(raw)
	h := heldEvent{name: name, outputIndex: -1}
	if f, ok := readEvent(data); ok {
		h.typ, _ = str(f.typ)
		if n, ok := atoi(f.seq); ok && (!s.seenSeq || n > s.lastSeq) {
			s.lastSeq, s.seenSeq = n, true
		}
		if n, ok := atoi(f.outputIndex); ok {
			h.outputIndex = n
			if n+1 > s.items {
				s.items = n + 1
			}
		}
		s.read(h.typ, h.outputIndex, &f)
	}
	if !s.holding {
		return raw
	}
	h.raw = append([]byte(nil), raw...)
	if len(data) > 0 && h.typ != "" {
		h.data = append([]byte(nil), data...)
	}
	s.held = append(s.held, h)
	return nil
}

// read takes what Output needs from one event, and starts holding at the
// first function_call item.
func (s *responsesStream) read(typ string, index int, f *eventFields) {
	switch typ {
	case "response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed", "response.queued":
		var r struct {
			ID     string     `json:"id"`
			Status string     `json:"status"`
			Usage  *usageWire `json:"usage"`
		}
		if json.Unmarshal(f.response, &r) != nil {
			return
		}
		if r.ID != "" {
			s.out.ID = r.ID
		}
		switch typ {
		case "response.completed", "response.incomplete", "response.failed":
			s.out.Finish = r.Status
			if r.Usage != nil {
				s.out.Usage = r.Usage.usage()
			}
		}
	case "response.output_item.added", "response.output_item.done":
		var it itemWire
		if index < 0 || json.Unmarshal(f.item, &it) != nil || it.Type != "function_call" {
			return
		}
		s.holding = true
		c := it.call()
		i, ok := s.index[index]
		if !ok {
			i = len(s.calls)
			s.index[index] = i
			s.calls = append(s.calls, streamCall{outputIndex: index})
			s.out.Calls = append(s.out.Calls, c)
		}
		cur := &s.out.Calls[i]
		if c.ID != "" {
			cur.ID = c.ID
		}
		if c.Name != "" {
			cur.Name = c.Name
		}
		if typ == "response.output_item.done" || c.Args != nil {
			s.setArgs(i, c.Args)
		}
	case "response.function_call_arguments.delta":
		i, ok := s.index[index]
		d, ok2 := str(f.delta)
		if !ok || !ok2 {
			return
		}
		s.calls[i].args = append(s.calls[i].args, d...)
		s.out.Calls[i].Args = Raw(s.calls[i].args)
	case "response.function_call_arguments.done":
		i, ok := s.index[index]
		a, ok2 := str(f.arguments)
		if !ok || !ok2 {
			return
		}
		s.setArgs(i, Raw([]byte(a)))
	case "response.output_text.delta":
		if d, ok := str(f.delta); ok {
			s.out.Text += d
		}
	}
}

func (s *responsesStream) setArgs(i int, args any) {
	raw, _ := args.(json.RawMessage)
	s.calls[i].args = append(s.calls[i].args[:0], raw...)
	if len(raw) == 0 {
		s.out.Calls[i].Args = nil
		return
	}
	s.out.Calls[i].Args = Raw(s.calls[i].args)
}

func (s *responsesStream) Output() Output {
	o := s.out
	o.Calls = append([]guard.ToolCall(nil), s.out.Calls...)
	return o
}

// End returns the held events. With calls refused, the events of their
// items go, the items after them move down (output_index stays
// consecutive), text comes as an assistant message item of its own after
// the last item, the sequence numbers are given again from the first held
// event's on, and the terminal event's response holds the same output.
func (s *responsesStream) End(refused []int, text string) []byte {
	var b []byte
	if len(refused) == 0 {
		for _, h := range s.held {
			b = append(b, h.raw...)
		}
		return b
	}
	removed := map[int]bool{}
	for _, i := range refused {
		if i >= 0 && i < len(s.calls) {
			removed[s.calls[i].outputIndex] = true
		}
	}
	shift := func(index int) int {
		n := index
		for r := range removed {
			if r < index {
				n--
			}
		}
		return n
	}
	seq := s.lastSeq + 1
	for _, h := range s.held {
		if h.data != nil {
			if n, ok := atoi(fieldOf(h.data, "sequence_number")); ok {
				seq = n
			}
			break
		}
	}
	next := s.items - len(removed)
	msgID := newID("msg_lg")
	added := false
	addText := func() {
		if text != "" && !added {
			b = append(b, messageEvents(msgID, next, text, &seq)...)
			added = true
		}
	}
	for _, h := range s.held {
		if h.data == nil {
			b = append(b, h.raw...)
			continue
		}
		if h.outputIndex >= 0 && removed[h.outputIndex] {
			continue
		}
		repl := map[string][]byte{}
		switch h.typ {
		case "response.completed", "response.incomplete", "response.failed":
			addText()
			if resp := fieldOf(h.data, "response"); resp != nil {
				repl["response"] = rewriteOutput(resp, refused, msgID, text)
			}
		}
		if fieldOf(h.data, "sequence_number") != nil {
			repl["sequence_number"] = strconv.AppendInt(nil, int64(seq), 10)
			seq++
		}
		if h.outputIndex >= 0 {
			repl["output_index"] = strconv.AppendInt(nil, int64(shift(h.outputIndex)), 10)
		}
		b = append(b, Event(h.name, replaceValues(h.data, repl))...)
	}
	addText()
	return b
}

// rewriteOutput returns a terminal event's response with the refused
// calls' items removed and text added as an item of id msgID.
func rewriteOutput(resp []byte, refused []int, msgID, text string) []byte {
	output := fieldOf(resp, "output")
	if output == nil {
		return resp
	}
	items, err := Items(output)
	if err != nil {
		return resp
	}
	kept := dropCalls(items, refused)
	if text != "" {
		kept = append(kept, textItem(msgID, text, "completed"))
	}
	return replaceValues(resp, map[string][]byte{"output": joinArray(kept)})
}

// fieldOf returns the raw value of the member key of obj, or nil.
func fieldOf(obj []byte, key string) []byte {
	var v []byte
	Fields(obj, func(k, val []byte) bool {
		if string(k) == key {
			v = val
			return false
		}
		return true
	})
	return v
}

func (s *responsesStream) Fail(code, message string) []byte {
	s.held = nil
	seq := 0
	if s.seenSeq {
		seq = s.lastSeq + 1
	}
	return errorEvent(code, message, seq)
}
