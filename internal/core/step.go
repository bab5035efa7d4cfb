package core

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"time"
)

// A Step is one finished turn of an agent: the model's text, the tool calls
// it made (with their results or errors), the finish reason its provider
// reported and the usage numbers of the turn.
//
// Every field may be zero. A Guard never modifies a Step, and keeps it only
// when [Config.History] asks it to: otherwise, once Check returns, the
// guard holds no reference to the step nor to anything reachable from it
// (its arguments and results can be collected).
type Step struct {
	// Text is what the model wrote in this turn.
	Text string
	// ToolCalls are the calls the model made in this turn, in order,
	// with their outcomes. Parallel calls are listed one by one.
	ToolCalls []ToolCall
	// FinishReason is the provider's finish reason ("stop", "tool-calls",
	// "length", ...). Empty means none was given.
	FinishReason string
	// Usage holds the turn's token counts, cost and duration.
	Usage Usage
	// Input is new information the agent received in this turn that is not
	// a tool result, such as a user's reply in a conversational agent.
	// Non-empty Input counts as progress for the rules that look for it.
	Input string
	// Refused are the calls the model asked for in this turn that the
	// guard refused, in order: they did not run, so they are not in
	// ToolCalls, and their Result and Err are ignored. They let the guard
	// see a model that keeps asking for a refused call (the refusal rule
	// stops it). [Turn.End] fills
	// it with the turn's refusals and [Guard.StartCall] records each
	// refusal as a step that holds only it; a loop that preflights calls
	// itself puts here the calls whose [Decision] did not allow them.
	Refused []ToolCall
}

// A ToolCall is one call of a tool: its name, its arguments and, once it has
// run, its result or error.
type ToolCall struct {
	// ID is the call's ID as the provider gave it (OpenAI's tool call ID,
	// Anthropic's tool_use ID), or empty. It names the call in a [Turn]
	// and in traces; the rules never read it, so calls that differ only
	// in their IDs are the same call.
	ID string
	// Name is the tool's name as the model gave it.
	Name string
	// Args are the call's arguments. A json.RawMessage is taken as JSON
	// text (as LLM APIs deliver arguments); any other value is compared by
	// its JSON encoding (see package canonical). Nil means null.
	//
	// Arguments that arrive as JSON text in a Go string (openai-go's
	// Function.Arguments, a log line) must be converted to be read as
	// JSON: Args: json.RawMessage(s). A plain string is one JSON string,
	// so `{"q": 1}` and `{"q":1}` would then be different arguments.
	Args any
	// Result is what the tool returned; nil means no result.
	Result any
	// Err is the error the call failed with; nil means it did not fail.
	Err error
}

// Usage is what one step consumed. Values that are negative, or not finite,
// are ignored.
type Usage struct {
	// InputTokens is the number of prompt tokens.
	InputTokens int64
	// OutputTokens is the number of completion tokens.
	OutputTokens int64
	// TotalTokens is the number of tokens in all. When it is zero, the
	// sum of InputTokens and OutputTokens is used instead.
	TotalTokens int64
	// CostUSD is the step's cost in US dollars.
	CostUSD float64
	// Duration is how long the step took.
	Duration time.Duration
}

// sanitize returns u with every unusable number set to zero and the total
// filled in from input and output when it is missing.
func (u Usage) sanitize() Usage {
	if u.InputTokens < 0 {
		u.InputTokens = 0
	}
	if u.OutputTokens < 0 {
		u.OutputTokens = 0
	}
	if u.TotalTokens <= 0 {
		u.TotalTokens = satAdd(u.InputTokens, u.OutputTokens)
	}
	if !(u.CostUSD >= 0) || math.IsInf(u.CostUSD, 0) {
		u.CostUSD = 0
	}
	if u.Duration < 0 {
		u.Duration = 0
	}
	return u
}

// satAdd adds two non-negative numbers, saturating instead of overflowing.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// Totals are the running sums of a run's usage.
type Totals struct {
	// InputTokens is the sum of the steps' input tokens.
	InputTokens int64 `json:"inputTokens"`
	// OutputTokens is the sum of the steps' output tokens.
	OutputTokens int64 `json:"outputTokens"`
	// TotalTokens is the sum of the steps' total tokens.
	TotalTokens int64 `json:"totalTokens"`
	// CostUSD is the sum of the steps' costs.
	CostUSD float64 `json:"costUsd"`
	// Duration is the sum of the steps' durations (never a wall-clock
	// reading).
	Duration time.Duration `json:"-"`
}

// add adds a sanitised usage to the totals.
func (t *Totals) add(u Usage) {
	t.InputTokens = satAdd(t.InputTokens, u.InputTokens)
	t.OutputTokens = satAdd(t.OutputTokens, u.OutputTokens)
	t.TotalTokens = satAdd(t.TotalTokens, u.TotalTokens)
	t.CostUSD += u.CostUSD
	if math.IsInf(t.CostUSD, 0) {
		t.CostUSD = math.MaxFloat64
	}
	t.Duration = time.Duration(satAdd(int64(t.Duration), int64(u.Duration)))
}

// DurationMs is the summed duration in milliseconds.
func (t Totals) DurationMs() float64 { return float64(t.Duration) / float64(time.Millisecond) }

type totalsJSON struct {
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	TotalTokens  int64   `json:"totalTokens"`
	CostUSD      float64 `json:"costUsd"`
	DurationMs   float64 `json:"durationMs"`
}

// MarshalJSON writes the totals with the duration in milliseconds
// (durationMs), as the JSON shapes of loopguard have it.
func (t Totals) MarshalJSON() ([]byte, error) {
	return json.Marshal(totalsJSON{t.InputTokens, t.OutputTokens, t.TotalTokens, t.CostUSD, t.DurationMs()})
}

// UnmarshalJSON reads what MarshalJSON writes. It rejects negative counts,
// numbers that are not finite, and keys that MarshalJSON does not write (in
// another case, twice, or unknown).
func (t *Totals) UnmarshalJSON(data []byte) error {
	var j totalsJSON
	if err := UnmarshalState(data, &j); err != nil {
		return err
	}
	if j.InputTokens < 0 || j.OutputTokens < 0 || j.TotalTokens < 0 || !finiteNonNeg(j.CostUSD) || !finiteNonNeg(j.DurationMs) || j.DurationMs > maxDurationMs {
		return errors.New("guard: totals hold a negative or impossible number")
	}
	*t = Totals{j.InputTokens, j.OutputTokens, j.TotalTokens, j.CostUSD, msToDuration(j.DurationMs)}
	return nil
}

// maxDurationMs is the longest duration, in milliseconds, that a
// time.Duration holds.
const maxDurationMs = float64(math.MaxInt64) / float64(time.Millisecond)

func finiteNonNeg(f float64) bool { return f >= 0 && !math.IsInf(f, 0) }

// msToDuration converts milliseconds to a Duration, saturating; unusable
// values become zero.
func msToDuration(ms float64) time.Duration {
	if !finiteNonNeg(ms) {
		return 0
	}
	if ms >= maxDurationMs {
		return math.MaxInt64
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// stepJSON is the JSON shape of a step. Every field is read leniently.
type stepJSON struct {
	Text         json.RawMessage `json:"text"`
	ToolCalls    json.RawMessage `json:"toolCalls"`
	FinishReason json.RawMessage `json:"finishReason"`
	Usage        json.RawMessage `json:"usage"`
	Input        json.RawMessage `json:"input"`
	UserReply    json.RawMessage `json:"userReply"`
	Refused      json.RawMessage `json:"refused"`
}

type toolCallJSON struct {
	ID     json.RawMessage `json:"id"`
	Name   json.RawMessage `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type usageJSON struct {
	InputTokens  json.RawMessage `json:"inputTokens"`
	OutputTokens json.RawMessage `json:"outputTokens"`
	TotalTokens  json.RawMessage `json:"totalTokens"`
	CostUSD      json.RawMessage `json:"costUsd"`
	DurationMs   json.RawMessage `json:"durationMs"`
}

// ErrNotObject is returned by [Step.UnmarshalJSON] for JSON text that is not
// an object.
var ErrNotObject = errors.New("guard: a step must be a JSON object")

// UnmarshalJSON reads a step in loopguard's JSON shape:
//
//	{"text": "...", "toolCalls": [{"name": "search", "args": {...}, "result": ..., "error": "..."|null, "id": "call_1"}],
//	 "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3,
//	 "costUsd": 0.01, "durationMs": 1200}, "input": "...", "refused": [{"name": "search", "args": {...}, "id": "call_2"}]}
//
// It fails only when data is not a JSON object. Odd values inside it (a
// number where text belongs, a toolCalls that is not an array, an entry that
// is not an object or whose name is not a string, unusable usage numbers) are
// ignored. Unknown fields are ignored; "userReply" is read as Input. Arguments
// and results are kept as json.RawMessage; null ones become nil, and so does
// an "error" of null. Any other error value marks the call as failed. An "id"
// that is not a string is ignored. The entries of "refused" are read as those
// of "toolCalls" are, without their result or error.
func (s *Step) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return ErrNotObject
	}
	var j stepJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Step{
		Text:         jsonString(j.Text),
		FinishReason: jsonString(j.FinishReason),
		Input:        jsonString(j.Input),
	}
	if s.Input == "" {
		s.Input = jsonString(j.UserReply)
	}
	s.ToolCalls = readCalls(j.ToolCalls, true)
	s.Refused = readCalls(j.Refused, false)
	var u usageJSON
	if len(j.Usage) > 0 && j.Usage[0] == '{' && json.Unmarshal(j.Usage, &u) == nil {
		s.Usage = Usage{
			InputTokens:  jsonCount(u.InputTokens),
			OutputTokens: jsonCount(u.OutputTokens),
			TotalTokens:  jsonCount(u.TotalTokens),
			CostUSD:      jsonNumber(u.CostUSD),
			Duration:     msToDuration(jsonNumber(u.DurationMs)),
		}
	}
	return nil
}

// readCalls reads a JSON array of calls leniently: entries that are not
// objects, or whose name is not a string, are left out. The outcome (result
// and error) is read only with outcome set.
func readCalls(data json.RawMessage, outcome bool) []ToolCall {
	var raws []json.RawMessage
	if json.Unmarshal(data, &raws) != nil {
		return nil
	}
	var calls []ToolCall
	for _, r := range raws {
		var c toolCallJSON
		if r = bytes.TrimSpace(r); len(r) == 0 || r[0] != '{' || json.Unmarshal(r, &c) != nil {
			continue
		}
		var name string
		if json.Unmarshal(c.Name, &name) != nil || isNull(c.Name) {
			continue
		}
		tc := ToolCall{ID: jsonString(c.ID), Name: name, Args: rawOrNil(c.Args)}
		if outcome {
			tc.Result = rawOrNil(c.Result)
			if !isNull(c.Error) {
				msg, ok := jsonStringOK(c.Error)
				if !ok {
					msg = string(c.Error)
				}
				tc.Err = errors.New(msg)
			}
		}
		calls = append(calls, tc)
	}
	return calls
}

// MarshalJSON writes the step in the shape UnmarshalJSON reads. Arguments and
// results that encoding/json cannot write, or that nest arrays and objects
// deeper than MaxStepDepth levels, are left out (arguments are written as
// null); it never fails on them. Empty IDs, and an empty Refused, are left
// out; refused calls are written without a result or an error.
func (s Step) MarshalJSON() ([]byte, error) {
	type call struct {
		Name   string `json:"name"`
		Args   any    `json:"args"`
		Result any    `json:"result,omitempty"`
		Error  any    `json:"error"`
		ID     string `json:"id,omitempty"`
	}
	type refused struct {
		Name string `json:"name"`
		Args any    `json:"args"`
		ID   string `json:"id,omitempty"`
	}
	type usage struct {
		InputTokens  int64   `json:"inputTokens,omitempty"`
		OutputTokens int64   `json:"outputTokens,omitempty"`
		TotalTokens  int64   `json:"totalTokens,omitempty"`
		CostUSD      float64 `json:"costUsd,omitempty"`
		DurationMs   float64 `json:"durationMs,omitempty"`
	}
	out := struct {
		Text         string    `json:"text"`
		ToolCalls    []call    `json:"toolCalls"`
		FinishReason string    `json:"finishReason,omitempty"`
		Usage        *usage    `json:"usage,omitempty"`
		Input        string    `json:"input,omitempty"`
		Refused      []refused `json:"refused,omitempty"`
	}{Text: s.Text, FinishReason: s.FinishReason, Input: s.Input, ToolCalls: []call{}}
	for _, tc := range s.ToolCalls {
		c := call{Name: tc.Name, Args: encodable(tc.Args), Result: encodable(tc.Result), ID: tc.ID}
		if tc.Err != nil {
			c.Error = errorText(tc.Err)
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	for _, tc := range s.Refused {
		out.Refused = append(out.Refused, refused{Name: tc.Name, Args: encodable(tc.Args), ID: tc.ID})
	}
	if s.Usage != (Usage{}) {
		u := s.Usage
		if !finiteNonNeg(u.CostUSD) {
			u.CostUSD = 0 // JSON has no NaN or infinity; such a cost is ignored anyway
		}
		out.Usage = &usage{u.InputTokens, u.OutputTokens, u.TotalTokens, u.CostUSD, float64(u.Duration) / float64(time.Millisecond)}
	}
	return json.Marshal(out)
}

// MaxStepDepth is how deeply the arguments or the result of a call may nest
// arrays and objects for [Step.MarshalJSON] to write them.
const MaxStepDepth = 1000

// encodable returns v's JSON text if encoding/json can write it and it nests
// no deeper than MaxStepDepth, and nil otherwise. The depth of a Go value is
// measured before it is encoded, without recursion deeper than the limit, so
// that a value nested a million levels deep costs no stack.
func encodable(v any) (out any) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	if v == nil {
		return nil
	}
	if !shallow(reflect.ValueOf(v), MaxStepDepth) {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || jsonDepth(b) > MaxStepDepth {
		return nil
	}
	return json.RawMessage(b)
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodesItself reports whether json.Marshal writes values of t by a method
// of their own.
func encodesItself(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Implements(textMarshalerType)
}

// shallow reports whether the Go value v encodes as JSON nested at most
// depth levels deep. It counts every pointer and interface it follows too,
// so that it ends on cycles; values that encode themselves (json.Marshaler,
// json.RawMessage) are checked on their output by the caller.
func shallow(v reflect.Value, depth int) bool {
	hops := 4 * depth // pointers and interfaces followed, at most
	var walk func(v reflect.Value, depth int) bool
	walk = func(v reflect.Value, depth int) bool {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return true
			}
			if hops--; hops < 0 {
				return false
			}
			if encodesItself(v.Type()) {
				return true
			}
			v = v.Elem()
		}
		if encodesItself(v.Type()) || encodesItself(reflect.PointerTo(v.Type())) {
			return true
		}
		switch v.Kind() {
		case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		default:
			return true
		}
		if depth == 0 {
			return false
		}
		switch v.Kind() {
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				if !walk(it.Value(), depth-1) {
					return false
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return true // base64 text
			}
			for i := range v.Len() {
				if !walk(v.Index(i), depth-1) {
					return false
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() && !walk(v.Field(i), depth-1) {
					return false
				}
			}
		}
		return true
	}
	return walk(v, depth)
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func rawOrNil(raw json.RawMessage) any {
	if isNull(raw) {
		return nil
	}
	return json.RawMessage(bytes.TrimSpace(raw))
}

func jsonStringOK(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func jsonString(raw json.RawMessage) string {
	s, _ := jsonStringOK(raw)
	return s
}

// jsonNumber returns a finite, non-negative JSON number, or 0.
func jsonNumber(raw json.RawMessage) float64 {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || !finiteNonNeg(f) {
		return 0
	}
	return f
}

// jsonCount returns a token count: a non-negative whole JSON number that
// fits in an int64, or 0.
func jsonCount(raw json.RawMessage) int64 {
	f := jsonNumber(raw)
	if f != math.Trunc(f) || f >= math.MaxInt64 {
		return 0
	}
	return int64(f)
}

// errorText returns err.Error(), or a fixed text if Error panics.
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = "(error text unavailable)"
		}
	}()
	return err.Error()
}
