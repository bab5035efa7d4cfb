package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/loopguard/loopguard/guard"
)

// A Format is a kind of agent log.
type Format uint8

// The formats. The zero value, Unknown, asks [Parse] to detect the format.
const (
	Unknown Format = iota
	Steps
	OpenAI
	Anthropic
	// OTLP is OpenTelemetry traces in OTLP/JSON whose spans follow the
	// GenAI semantic conventions.
	OTLP
	// Responses is OpenAI Responses API items and response objects.
	Responses
)

var formatNames = [...]string{Unknown: "unknown", Steps: "steps", OpenAI: "openai", Anthropic: "anthropic", OTLP: "otlp", Responses: "responses"}

// String returns the format's name: "steps", "openai", "anthropic", "otlp",
// "responses" or "unknown".
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", f)
}

// ParseFormat returns the format named name ("steps", "openai",
// "responses", "anthropic" or "otlp", in any case; "auto" and "" give
// Unknown, which detects the format).
func ParseFormat(name string) (Format, error) {
	switch strings.ToLower(name) {
	case "", "auto":
		return Unknown, nil
	case "steps":
		return Steps, nil
	case "openai":
		return OpenAI, nil
	case "anthropic":
		return Anthropic, nil
	case "otlp":
		return OTLP, nil
	case "responses":
		return Responses, nil
	}
	return Unknown, fmt.Errorf("trace: unknown format %q (want steps, openai, responses, anthropic or otlp)", name)
}

// An Error is a problem with the data of a log: the 1-based line where the
// offending value starts (0 when there is none, as for empty input) and what
// is wrong with it.
type Error struct {
	Line int
	Err  error
}

// Error says which line and what is wrong with it.
func (e *Error) Error() string {
	if e.Line <= 0 {
		return "trace: " + e.Err.Error()
	}
	return fmt.Sprintf("trace: line %d: %v", e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ErrUnknownFormat is wrapped by the error of [Parse] when it cannot tell
// which format the data is in.
var ErrUnknownFormat = errors.New("not loopguard steps, OpenAI chat messages or Responses items, Anthropic messages or OTLP traces")

// A Trace is a parsed log: one run of an agent, or, in an OTLP file, the
// runs it holds one after the other.
type Trace struct {
	// Format is the format the log was read as.
	Format Format
	// Steps are the run's steps, in order.
	Steps []guard.Step
	// Lines holds, for each step, the 1-based line of the input where the
	// step starts: its step line, or the assistant message or response it
	// was made from (for OTLP, the span).
	Lines []int
	// Runs holds, for each step of an OTLP file, the run it belongs to:
	// its gen_ai.conversation.id, or its trace ID. The steps of one run
	// come one after the other. It is nil for the other formats, whose
	// files hold one run.
	Runs []string
}

// Parse reads a log in format f, or, when f is Unknown, in the format that
// [Detect] finds. Blank input is a run with no steps. A leading UTF-8 byte
// order mark is skipped. Step lines are read strictly: an unknown key is an
// *[UnknownKeyError], and a control line (preflight, snapshot, reset) is an
// error too, since a Trace holds steps only; read such logs with a [Reader].
func Parse(data []byte, f Format) (*Trace, error) {
	r := NewReader(bytes.NewReader(data), &Options{Format: f, MaxBytes: -1})
	t := &Trace{}
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Kind != StepEntry {
			return nil, &Error{Line: e.Line, Err: fmt.Errorf("a %s line, which a Trace cannot hold: read the log with a Reader", e.Kind)}
		}
		t.Steps = append(t.Steps, e.Step)
		t.Lines = append(t.Lines, e.Line)
		if e.Run != "" {
			t.Runs = append(t.Runs, e.Run)
		}
	}
	t.Format = r.Format()
	return t, nil
}

// trimBOM removes a UTF-8 byte order mark. It keeps line numbers as they are.
func trimBOM(data []byte) []byte {
	return bytes.TrimPrefix(data, []byte("\uFEFF"))
}

// unknownFormat explains why data matches no format: a syntax error, or a
// shape that no format has.
func unknownFormat(data []byte) error {
	it := newItems(data)
	for n := 0; ; n++ {
		raw, line, err := it.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if n == 0 && kind(raw) != "an object" {
			// Every format is made of objects.
			return &Error{Line: line, Err: fmt.Errorf("%w: %s, not an object", ErrUnknownFormat, kind(raw))}
		}
	}
	return &Error{Line: lineOf(data, firstNonSpace(data)), Err: ErrUnknownFormat}
}

// Read reads a log from r in the format [Detect] finds.
func Read(r io.Reader) (*Trace, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return Parse(data, Unknown)
}

func read(r io.Reader, f Format) ([]guard.Step, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data, f)
	if err != nil {
		return nil, err
	}
	return t.Steps, nil
}

// ReadSteps reads loopguard step lines: one JSON object per line in the shape
// [guard.Step.UnmarshalJSON] reads (blank lines are skipped), or a JSON array
// of such objects. A line that is not a JSON object, or has a key that no
// step has, is an *Error.
func ReadSteps(r io.Reader) ([]guard.Step, error) { return read(r, Steps) }

// ReadOpenAI reads an OpenAI Chat Completions transcript (see the package
// documentation for the layouts it accepts).
//
// Assistant messages are steps. Their "content" (a string or text parts) and
// "refusal" are the step's text; "tool_calls" are its calls (function calls
// and custom tool calls; the deprecated "function_call" too), paired with the
// "tool" messages that answer them by "tool_call_id" (a legacy "function"
// message answers the function_call before it). A chat completion object
// gives the first choice's message, its "finish_reason" and the response's
// "usage": prompt_tokens, completion_tokens and total_tokens become
// InputTokens, OutputTokens and TotalTokens. A message that carries
// "finish_reason" or "usage" fields itself (as some loggers write) is read the
// same way.
func ReadOpenAI(r io.Reader) ([]guard.Step, error) { return read(r, OpenAI) }

// ReadAnthropic reads an Anthropic Messages transcript (see the package
// documentation for the layouts it accepts).
//
// Assistant messages are steps. Their "text" blocks are the step's text
// (thinking blocks are not); "tool_use" blocks (and server_tool_use and
// mcp_tool_use blocks) are its calls, paired with the "tool_result" blocks
// (and the server tools' result blocks) that answer them by "tool_use_id". A
// result with "is_error": true makes the call fail. Text and other non-result
// blocks of a user message that follows a step are that step's input. A
// message object from the API gives "stop_reason" (normalised, see
// [rule.NormalizeFinishReason]) and "usage": input_tokens plus
// cache_creation_input_tokens plus cache_read_input_tokens (which Anthropic
// counts apart) become InputTokens, and output_tokens OutputTokens.
func ReadAnthropic(r io.Reader) ([]guard.Step, error) { return read(r, Anthropic) }

// ReadResponses reads an OpenAI Responses transcript (see the package
// documentation for the layouts it accepts): the input items of requests
// and the response objects of the API.
//
// A model turn is a step: the assistant "message" items and the
// "function_call" items of one response (in input, the model's items one
// after the other, up to the next item that is not the model's). Message
// content (a string, or output_text and refusal parts) is the step's text;
// reasoning items are not. "function_call" and "custom_tool_call" items are
// its calls, paired with the "function_call_output" and
// "custom_tool_call_output" items that answer them by "call_id". The
// built-in tools' calls (web_search_call, computer_call, local_shell_call,
// ...) are calls too, named after their type ("web_search") with their
// "action" as arguments, and "mcp_call" items are calls that carry their
// output or error. A user message after a step is the step's input.
//
// A response object ("object": "response") is one step of its output
// items, with a finish reason read from its "status": a completed response
// finishes with "tool-calls" when it made a function or custom tool call
// and "stop" when it did not, an incomplete one with the reason of its
// "incomplete_details" ("max_output_tokens" is "length", none
// "incomplete"), a failed one with "error", a cancelled one with
// "cancelled". Its "usage": input_tokens, output_tokens and total_tokens
// become InputTokens, OutputTokens and TotalTokens.
func ReadResponses(r io.Reader) ([]guard.Step, error) { return read(r, Responses) }
