package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loopguard/loopguard/guard"
)

// StepsOf reads items, the JSON values of one tail of a conversation's
// history in format f, into steps, as a transcript of those items is read
// (see the package documentation), but leniently. It is for a program that
// sees a history piece by piece, such as a reverse proxy that reads the part
// of each request's history that is new since the request before.
//
// The items are the elements of a Chat Completions request's "messages"
// (f is [OpenAI]), of a Messages request's "messages" ([Anthropic]) or of a
// Responses request's "input" ([Responses]), and may include the responses
// of the API (a chat completion, a message object, a response object), each
// one value of its own; an item that is an array is not opened. Leniently
// means:
//
//   - a result whose call is not among the items (it was made before the
//     tail), and a second result for one call, are ignored, not errors: a
//     tail that starts with the results of the calls of the step before it
//     gives no step for them;
//   - a message of a role, or an item of a type, that the format's importer
//     does not know is ignored, not an error.
//
// As in a transcript, user messages before the first step are not part of
// any step (they are the task, or answer a step before the tail), and a
// user message after the last step is that step's [guard.Step.Input]. Calls
// whose results are not among the items have none (Result and Err are nil).
//
// An item that is not a JSON object, or whose fields have the wrong types, is
// an *[Error] whose Line is 0 and whose message names the item by its index
// ("items[2]: ..."); so is a format other than the three. No items, or
// items of no step, give no steps and no error.
func StepsOf(f Format, items []json.RawMessage) ([]guard.Step, error) {
	var read func(*builder, itemSeq) error
	switch f {
	case OpenAI:
		read = openAISteps
	case Anthropic:
		read = anthropicSteps
	case Responses:
		read = responsesSteps
	default:
		return nil, &Error{Err: fmt.Errorf("StepsOf reads openai, anthropic or responses items, not %v", f)}
	}
	b := newBuilder()
	b.lenient = true
	seq := func(fn func(raw json.RawMessage, line int) error) error {
		for i, raw := range items {
			if err := fn(bytes.TrimSpace(raw), i+1); err != nil {
				var e *Error
				if errors.As(err, &e) {
					return &Error{Err: fmt.Errorf("items[%d]: %w", i, e.Err)}
				}
				return err
			}
		}
		return nil
	}
	if err := read(b, seq); err != nil {
		return nil, err
	}
	return b.t.Steps, nil
}
