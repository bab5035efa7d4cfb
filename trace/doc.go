// Package trace reads agent logs into [guard.Step] values, so that a finished
// run can be replayed through a guard (the loopguard audit command does this)
// and so that adapters for agent SDKs can share one mapping of the providers'
// shapes onto steps.
//
// Five formats are read:
//
//   - [Steps]: loopguard's own step lines, one JSON object per line (see
//     [guard.Step.UnmarshalJSON]), or a JSON array of them.
//   - [OpenAI]: OpenAI Chat Completions messages.
//   - [Responses]: OpenAI Responses API items and response objects.
//   - [Anthropic]: Anthropic Messages API messages.
//   - [OTLP]: OpenTelemetry traces in OTLP/JSON whose spans follow the GenAI
//     semantic conventions (see below).
//
// A [Reader] reads any of them entry by entry, with a size limit; it is what
// the loopguard command reads logs with. [Detect] tells the formats apart;
// [Parse] reads any of them and keeps, for each step, the line it starts on.
// [ReadSteps], [ReadOpenAI], [ReadResponses] and [ReadAnthropic] read one
// format from an io.Reader. [StepsOf] reads the items of a piece of a
// conversation's history, leniently, as a proxy sees them request by
// request.
//
// # Step lines
//
// A step line is an object with the keys text, toolCalls, finishReason,
// usage, input, userReply (another name for input), refused and meta; a call
// (in toolCalls or refused) has name, args, result, error, id and meta; usage
// has inputTokens, outputTokens, totalTokens, costUsd and durationMs. "meta"
// holds free-form annotations and is never looked into. Values are read as
// [guard.Step.UnmarshalJSON] reads them: odd ones are ignored.
//
// Keys are strict. A key that resembles a known one (in another case, with
// underscores or hyphens, misspelt, or a provider's spelling such as
// "tool_calls", "finish_reason", "arguments", "role" or "content") is an
// *[UnknownKeyError] saying what was probably meant:
//
//	trace: line 3: unknown key "tool_calls" (did you mean "toolCalls"?)
//
// Any other unknown key is an error too, unless [Options.UnknownKeys] lets it
// through, with a warning or silently: logs that carry annotations beside
// the steps' keys can still be read.
//
// A log of step lines may also hold the control lines of loopguard replay:
// {"preflight": CALL} (or an array of calls), {"snapshot": true} and
// {"reset": true}, each alone on its line (with "meta" at most). A Reader
// returns them as entries of their own kinds.
//
// # Layout of a transcript
//
// An OpenAI, Responses or Anthropic transcript is a sequence of items, each
// a message (for Responses, an input or output item) or a whole API
// response. The sequence may be given as
//
//   - a JSON array of items (the messages or input parameter of a request),
//   - a JSON object with a "messages" array, or (Responses) an "input" array
//     (a request body),
//   - one item per line (JSON Lines), or several JSON values one after the
//     other; a line may itself be an array or an object with "messages" or
//     "input".
//
// An OpenAI response is a chat completion object ("choices"; the first choice
// is read), a Responses response a response object ("object": "response"),
// an Anthropic response a message object ("type": "message"). Responses
// carry the finish reason and usage that bare messages lack, so a log that
// interleaves responses with the tool and user messages sent back gives the
// most complete steps. Streaming chunks and events are not read: log the
// assembled response.
//
// # From messages to steps
//
// Each assistant message (or response) is one step: its text, and its tool
// calls in order, parallel calls one by one. In a Responses transcript, where
// a model turn is several items (reasoning, message and function_call items),
// the model's items one after the other, up to the next item that is not
// the model's (a function_call_output, a user message), are one step, and a
// response object is one step of its output items. A tool result is paired
// with its call by id (OpenAI's tool_call_id, the Responses call_id,
// Anthropic's tool_use_id) wherever it comes later in the transcript; a
// result for an id that no earlier call made, or a second result for one
// call, is an error ([StepsOf] ignores both). A call with no result
// has none (Result and Err are nil). A user message that follows a step (and
// is not only tool results) is new input: its text becomes that step's
// [guard.Step.Input], as a user's reply to the step. System and developer
// messages, and user messages before the first step, are not part of any step.
//
// OpenAI tool messages and Responses function_call_output items have no
// error flag, so a failed tool's output is a result like any other.
// Anthropic's "is_error": true makes the call fail: [guard.ToolCall.Err]
// holds the result's text.
//
// Arguments: OpenAI (in both APIs) delivers them as a JSON string; when that
// string holds valid JSON it becomes a json.RawMessage, otherwise the
// string itself is the argument. Anthropic's "input" object is kept as a
// json.RawMessage. A result given as a string, or as text parts only (joined
// by newlines), is kept as a string; any other content (images, documents,
// a server tool's search results) is kept as a json.RawMessage.
//
// Finish reasons are normalised as the guard normalises them ("end_turn" is
// "stop", "tool_calls" is "tool-calls"; see [rule.NormalizeFinishReason]); a
// Responses response has a status instead, read as [ReadResponses] says.
// Usage is mapped onto [guard.Usage]: see [ReadOpenAI], [ReadResponses] and
// [ReadAnthropic]. Missing usage is zero usage.
//
// # OpenTelemetry GenAI traces
//
// An OTLP file is what the OpenTelemetry Collector's file exporter writes:
// one OTLP/JSON export request ({"resourceSpans": [{"scopeSpans": [{"spans":
// [...]}]}]}) per line, or such documents one after the other, or a JSON
// array of them. Trace and span IDs are read as given (hex in OTLP/JSON,
// base64 from a generic protobuf JSON encoder); 64-bit numbers may be
// strings or numbers, enums numbers or names. The spans are read by their
// gen_ai.operation.name:
//
//   - chat, text_completion and generate_content spans (model calls) are
//     steps. gen_ai.output.messages (when present) gives the step's text
//     (the text parts of the first message) and the tool calls it asks for
//     (its tool_call parts, with their ids and arguments); the finish reason
//     is that message's finish_reason, or the first of
//     gen_ai.response.finish_reasons ("tool_call" is "tool-calls",
//     "content_filter" "content-filter"), or "error" for a span whose status
//     is an error; gen_ai.usage.input_tokens and output_tokens are the
//     usage. The user messages that the next model call's
//     gen_ai.input.messages holds after its last assistant message are the
//     step's new input.
//   - execute_tool spans are tool calls: gen_ai.tool.name (or the span's
//     name after "execute_tool "), gen_ai.tool.call.id,
//     gen_ai.tool.call.arguments and gen_ai.tool.call.result (a string
//     holding a JSON object or array is read as that JSON). A tool span whose
//     gen_ai.tool.call.id names a call a model span asked for gives that
//     call its outcome; any other is a call of the newest step, or a step of
//     its own when no model span came before it. A span whose status is an
//     error is a failed call: its error is the error.type attribute (or
//     "error"), and its result the span's status message (or its exception
//     event's message) when it records no result.
//   - other spans (invoke_agent, embeddings, HTTP, ...) make no steps; they
//     only pass their gen_ai.conversation.id on to the spans below them.
//
// A file may hold several runs: one per gen_ai.conversation.id (a span's own,
// its nearest ancestor's, or that of the earliest span of its trace that has
// one), so that the traces of a conversation's turns are one run, and one per
// trace for the spans of traces without one. Runs come in the order of their
// first span, and each run's steps in the order their spans started; a
// [Reader] names each step's run in [Entry.Run], and [Trace.Runs] does the
// same. A step's line is the line where its span starts. Spans are not read
// for refusals, costs or durations.
//
// Arguments, results and messages are opt-in content attributes that many
// deployments leave out. Without them the guard still sees, per step, the
// tool names, their order, which calls failed (span status and error.type,
// with the status message standing for the result), the finish reasons and
// the token counts, so these rules judge as usual: the finish reason, the
// token budgets and max steps, tool caps, and repeated failures (by tool,
// error type and status message). But every call of a tool then looks like
// the last one, since the arguments that would tell them apart are missing:
// the repeat, windowed-repeat and oscillation rules judge runs, counts and
// cycles of tool names, so three calls of "search" in a row stop the run
// whatever they searched for; no-progress sees no text and no new results,
// so it counts steps that call only tools already called; and there is no
// text for the repeated-text rule and no input for the rules that count it
// as progress. A [Reader] warns of such runs ([ErrNoContent]).
//
// # Errors
//
// Every error that is about the data is an *[Error] naming the 1-based line
// where the offending value starts. In a transcript, odd values that do not
// stop a step from being read (an unknown field, a content part of a kind not
// listed here) are ignored.
package trace
