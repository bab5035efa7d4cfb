// Package wire reads and writes the three model APIs that the proxy judges,
// in their wire formats: OpenAI Chat Completions, OpenAI Responses and
// Anthropic Messages, JSON and server-sent events.
//
// It knows only the fields the proxy needs. Everything else in a body is
// left as it is: a response is rewritten only when the guard refused one
// of its calls, and then only the parts that hold the calls, the text and
// the finish reason change.
package wire

import (
	"encoding/json"

	"github.com/loopguard/loopguard/guard"
)

// API is one provider API's wire format. Its methods are safe for
// concurrent use; a Stream is used by one response only.
type API interface {
	// Name is the API's name in metrics, logs and headers: "chat",
	// "responses" or "messages".
	Name() string

	// ParseRequest reads a request body. It decodes only what the proxy
	// needs (model, stream, run metadata) and cuts the history into its
	// items without decoding them. A body it cannot read is an error: the
	// proxy then forwards it unjudged, and the upstream answers it.
	ParseRequest(body []byte) (Request, error)

	// Assistant reports whether a history item is the model's (an
	// assistant message; in Responses also a function_call item). It
	// reads as little of the item as it can.
	Assistant(item []byte) bool

	// ParseResponse reads a complete (not streamed) response body.
	ParseResponse(body []byte) (Output, error)

	// Rewrite returns body, a complete response, with the calls at the
	// indexes refused (indexes into Output.Calls, ascending) removed and
	// text added to the model's text (after it, as a text part of its
	// own where the API has parts). When no call is left the finish
	// reason becomes the API's normal end of turn ("stop", "end_turn",
	// a completed response). Every other field is kept.
	Rewrite(body []byte, refused []int, text string) ([]byte, error)

	// Final returns a complete response that holds only text and ends the
	// turn normally (no tool calls, finish reason stop / end_turn /
	// completed), in the shape a real response of req has: model, ids,
	// zero usage. stream selects server-sent events (the whole stream, as
	// the API sends it for such a response) over JSON.
	Final(req *Request, text string, stream bool) []byte

	// Error returns the API's error body for an HTTP error with the given
	// status: code is loopguard's code (such as "REPEATED_TOOL_CALL"),
	// message the text for the user.
	Error(status int, code, message string) []byte

	// ErrorEvent returns the API's error as a server-sent event, for a
	// stream whose headers went out already.
	ErrorEvent(code, message string) []byte

	// NewStream returns the filter of one streamed response to req.
	NewStream(req *Request) Stream
}

// Request is what the proxy reads of a request body.
type Request struct {
	// Model is the request's model.
	Model string
	// Stream reports whether the response will be streamed.
	Stream bool
	// Items are the history's items in order, each a raw JSON value of
	// the body (sub-slices of it): Chat and Messages "messages", Responses
	// "input" (a string input is one user message item).
	Items [][]byte
	// Head is the raw value of what precedes the history and names the
	// conversation as much as its first message does: Messages' "system",
	// Responses' "instructions"; nil when absent. (Chat puts its system
	// message in Items.)
	Head []byte
	// Session is the API's own name of the conversation, or "":
	// Responses' "conversation" (its id); a "session_id" or
	// "conversation_id" string in "metadata".
	Session string
	// Previous is Responses' "previous_response_id", or "": the response
	// this request goes on from, whose run the proxy looks up.
	Previous string
	// User is the API's own name of the end user, or "": Chat's and
	// Responses' "user" or "safety_identifier", Messages' metadata.user_id.
	User string
	// Stateful reports that the upstream keeps the history (Responses
	// with previous_response_id or conversation): Items hold only what is
	// new since the previous response, whose output the proxy saw.
	Stateful bool
	// IncludeUsage reports that a streamed response ends with a chunk of
	// usage (Chat's "stream_options": {"include_usage": true}), which a
	// made-up stream (Final) must then send as well: a client that did not
	// ask for it may not expect a chunk without choices.
	IncludeUsage bool
}

// Output is what the proxy reads of a response: the model's turn.
type Output struct {
	// ID is the response's id ("chatcmpl-…", "resp_…", "msg_…").
	ID string
	// Text is the model's text, its parts joined.
	Text string
	// Calls are the tool calls it asks for, in order: ID, Name and Args
	// (a json.RawMessage of the arguments' JSON text).
	Calls []guard.ToolCall
	// Finish is the finish reason as the API gave it ("tool_calls",
	// "tool_use", "completed", ...).
	Finish string
	// Usage holds the response's token counts.
	Usage guard.Usage
}

// Stream filters one streamed response. The proxy gives it the upstream's
// events one by one as they arrive, and sends on at once what Event
// returns; the text of the model must pass at once. From the first event
// that is part of a tool call on, Event holds the events back (returns
// nil) so that the calls can be judged once complete; at the end of the
// stream End says what to do with them.
type Stream interface {
	// Event takes one whole event as it came (its lines and the blank line
	// that ends it) and returns the bytes to send now: the event itself,
	// or nil to hold it. The returned slice may alias raw.
	Event(raw []byte) []byte
	// Output is the response as read so far.
	Output() Output
	// End is called once, after the last event (or after the upstream
	// broke off: then the held events go out as they came). It returns
	// the bytes to send: the held events with the calls at the indexes
	// refused removed and text added, the finish reason made the normal
	// end of turn when no call is left, exactly as Rewrite does for a
	// complete response; with no refusal, the held events unchanged.
	End(refused []int, text string) []byte
	// Fail is called in place of End when the run must end with an
	// error: it returns the API's error event (the held events dropped).
	Fail(code, message string) []byte
}

// Raw is a json.RawMessage of b, for guard.ToolCall.Args.
func Raw(b []byte) json.RawMessage { return json.RawMessage(b) }
