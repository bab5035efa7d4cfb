package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/strictjson"
)

// This file reads OpenTelemetry traces in OTLP/JSON, the format of the
// OpenTelemetry Collector's file exporter, whose spans follow the GenAI
// semantic conventions. See the package documentation for the mapping.

// The attributes of the GenAI semantic conventions that the reader looks at.
const (
	attrOperation     = "gen_ai.operation.name"
	attrConversation  = "gen_ai.conversation.id"
	attrToolName      = "gen_ai.tool.name"
	attrToolCallID    = "gen_ai.tool.call.id"
	attrToolArguments = "gen_ai.tool.call.arguments"
	attrToolResult    = "gen_ai.tool.call.result"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
	attrFinishReasons = "gen_ai.response.finish_reasons"
	attrInputMessages = "gen_ai.input.messages"
	attrOutputMessage = "gen_ai.output.messages"
	attrErrorType     = "error.type"
)

// ErrNoContent is wrapped by the warning ([Options.Warn]) about a run of
// OpenTelemetry spans whose tool calls carry no arguments: their calls are
// told apart by the tool's name alone.
var ErrNoContent = errors.New("no tool call arguments (gen_ai.tool.call.arguments, or tool_call parts in gen_ai.output.messages): calls are told apart by tool name alone")

// An otlpSpan is one span of OTLP/JSON: the fields the reader uses.
type otlpSpan struct {
	TraceID      string      `json:"traceId"`
	SpanID       string      `json:"spanId"`
	ParentSpanID string      `json:"parentSpanId"`
	Name         string      `json:"name"`
	Start        otlpUint    `json:"startTimeUnixNano"`
	Attributes   []otlpKV    `json:"attributes"`
	Status       *otlpStatus `json:"status"`
	Events       []otlpEvent `json:"events"`
}

type otlpKV struct {
	Key   string   `json:"key"`
	Value otlpAnyV `json:"value"`
}

// otlpAnyV is an AnyValue.
type otlpAnyV struct {
	StringValue *string     `json:"stringValue"`
	BoolValue   *bool       `json:"boolValue"`
	IntValue    *otlpInt    `json:"intValue"`
	DoubleValue *otlpDouble `json:"doubleValue"`
	ArrayValue  *struct {
		Values []otlpAnyV `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []otlpKV `json:"values"`
	} `json:"kvlistValue"`
	BytesValue *string `json:"bytesValue"`
}

type otlpStatus struct {
	Code    otlpEnumLike `json:"code"`
	Message string       `json:"message"`
}

type otlpEvent struct {
	Name       string   `json:"name"`
	Attributes []otlpKV `json:"attributes"`
}

// otlpStatusError is the code of a span that failed (STATUS_CODE_ERROR).
const otlpStatusError = 2

// otlpUint is an unsigned 64-bit number, which OTLP/JSON writes as a decimal
// string or as a number.
type otlpUint uint64

func (u *otlpUint) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "null" || s == "" {
		*u = 0
		return nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a whole number of nanoseconds, not %s", b)
	}
	*u = otlpUint(n)
	return nil
}

// otlpInt is a signed 64-bit number, written as a decimal string or a number.
type otlpInt int64

func (i *otlpInt) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("intValue: want a whole number, not %s", b)
	}
	*i = otlpInt(n)
	return nil
}

// otlpDouble is a number, or one of the strings "NaN", "Infinity" and
// "-Infinity" that protobuf's JSON mapping writes for what JSON cannot.
type otlpDouble float64

func (d *otlpDouble) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	switch s {
	case "NaN":
		*d = otlpDouble(math.NaN())
		return nil
	case "Infinity":
		*d = otlpDouble(math.Inf(1))
		return nil
	case "-Infinity":
		*d = otlpDouble(math.Inf(-1))
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("doubleValue: want a number, not %s", b)
	}
	*d = otlpDouble(f)
	return nil
}

// otlpEnumLike is an enum, which OTLP/JSON writes as a number and protobuf's
// JSON mapping may write by name ("STATUS_CODE_ERROR", "SPAN_KIND_CLIENT").
type otlpEnumLike int

var otlpEnumNames = map[string]int{
	"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2,
	"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
	"SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
}

func (e *otlpEnumLike) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var name string
		if err := json.Unmarshal(b, &name); err != nil {
			return err
		}
		n, ok := otlpEnumNames[name]
		if !ok {
			return fmt.Errorf("unknown enum value %q", name)
		}
		*e = otlpEnumLike(n)
		return nil
	}
	if string(b) == "null" {
		*e = 0
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("want an enum number, not %s", b)
	}
	*e = otlpEnumLike(n)
	return nil
}

// value returns the Go value of an AnyValue: a string, bool, int64,
// float64, []any, map[string]any, or nil for an empty one. Bytes are kept
// as their base64 text.
func (v *otlpAnyV) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		return int64(*v.IntValue)
	case v.DoubleValue != nil:
		return float64(*v.DoubleValue)
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i := range v.ArrayValue.Values {
			out[i] = v.ArrayValue.Values[i].value()
		}
		return out
	case v.KvlistValue != nil:
		out := make(map[string]any, len(v.KvlistValue.Values))
		for i := range v.KvlistValue.Values {
			kv := &v.KvlistValue.Values[i]
			out[kv.Key] = kv.Value.value()
		}
		return out
	case v.BytesValue != nil:
		return *v.BytesValue
	}
	return nil
}

// The kinds of GenAI spans that make steps.
const (
	spanOther = iota // not read: invoke_agent, embeddings, spans of other libraries, ...
	spanModel        // a model call: chat, text_completion, generate_content
	spanTool         // execute_tool
)

// A genSpan is what the reader keeps of a span: its place in the file and in
// its trace, and what it says about a step, worked out when it is read, so
// that a file's spans cost little more than the steps they make (the
// attributes, such as the message histories of gen_ai.input.messages, are
// not kept).
type genSpan struct {
	traceID, spanID, parentID string
	own                       string // its gen_ai.conversation.id
	conv                      string // its conversation: its own or an ancestor's
	start                     uint64
	line                      int
	order                     int // in the file
	kind                      int
	// A model span's step: its text, calls, finish reason and usage (or
	// the error of its output messages), and the new input its input
	// messages show (or their error), read only when an earlier model
	// span of the run made a step.
	step     *guard.Step
	stepErr  error
	input    string
	results  []toolResult // results of earlier calls that its input messages show
	inputErr error
	// A tool span's call.
	call *guard.ToolCall
}

// newGenSpan reads what the reader keeps of a span.
func newGenSpan(sp *otlpSpan, line, order int) *genSpan {
	s := &genSpan{traceID: sp.TraceID, spanID: sp.SpanID, parentID: sp.ParentSpanID, start: uint64(sp.Start), line: line, order: order}
	a := spanAttrs{sp: sp, line: line, attrs: make(map[string]*otlpAnyV, len(sp.Attributes))}
	for i := range sp.Attributes {
		kv := &sp.Attributes[i]
		if _, dup := a.attrs[kv.Key]; !dup {
			a.attrs[kv.Key] = &kv.Value
		}
	}
	s.own = a.str(attrConversation)
	switch a.operation() {
	case "chat", "text_completion", "generate_content":
		s.kind = spanModel
		s.step = &guard.Step{}
		s.stepErr = modelStep(s.step, &a)
		s.input, s.results, s.inputErr = newInput(&a)
	case "execute_tool":
		s.kind = spanTool
		c := toolCall(&a)
		s.call = &c
	}
	return s
}

// spanAttrs is a span as it is read, with its attributes by key.
type spanAttrs struct {
	sp     *otlpSpan
	attrs  map[string]*otlpAnyV
	line   int
	legacy *legacyRead // the messages of its events, once read
}

func (s *spanAttrs) attr(key string) *otlpAnyV { return s.attrs[key] }

// str returns a string attribute, or "".
func (s *spanAttrs) str(key string) string {
	if v := s.attrs[key]; v != nil && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

// failed reports whether the span's status is an error.
func (s *spanAttrs) failed() bool { return s.sp.Status != nil && s.sp.Status.Code == otlpStatusError }

// parseOTLP reads OTLP/JSON traces: one document per line, as the Collector's
// file exporter writes them, or documents one after the other, or a JSON
// array of them. Their runs are made into steps one by one, as they are
// read (see otlpRuns).
func parseOTLP(data []byte) (*otlpRuns, error) {
	var p otlpSpans
	if err := p.items(data); err != nil {
		return nil, err
	}
	return newOTLPRuns(p.spans)
}

// otlpSpans gathers the spans of a file, document by document.
type otlpSpans struct{ spans []*genSpan }

// doc adds the spans of a document that is one line, line.
func (p *otlpSpans) doc(raw json.RawMessage, line int) error {
	return otlpWalk(raw, line, func(sp json.RawMessage, _ int64) error { return p.span(sp, line) })
}

// items adds the spans of the documents in data, whose first byte is on
// line 1.
func (p *otlpSpans) items(data []byte) error {
	lines := lineCounter{data: data, line: 1}
	it := newItems(data)
	for {
		raw, line, err := it.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		base := it.lastStart
		err = otlpWalk(raw, line, func(sp json.RawMessage, off int64) error { return p.span(sp, lines.at(base+off)) })
		if err != nil {
			return err
		}
	}
}

func (p *otlpSpans) span(sp json.RawMessage, line int) error {
	var s otlpSpan
	if err := object(sp, line, "a span", &s); err != nil {
		return err
	}
	p.spans = append(p.spans, newGenSpan(&s, line, len(p.spans)))
	return nil
}

// otlpWalk calls fn with every span of an OTLP/JSON document
// (ExportTraceServiceRequest or TracesData: {"resourceSpans": [{"scopeSpans":
// [{"spans": [...]}]}]}) and the offset in raw where the span starts. raw is
// valid JSON that starts on line.
func otlpWalk(raw json.RawMessage, line int, fn func(span json.RawMessage, off int64) error) error {
	if len(raw) == 0 || raw[0] != '{' {
		return &Error{Line: line, Err: fmt.Errorf("an OTLP document must be a JSON object, not %s", kind(raw))}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	shape := func(what string) error {
		return &Error{Line: line, Err: fmt.Errorf("%s must be an array of objects", what)}
	}
	found := false
	notOTLP := &Error{Line: line, Err: errors.New("not an OTLP document")}
	err := strictjson.EachMember(dec, notOTLP, func(key string) error {
		switch key {
		case "resourceSpans":
			found = true
		case "resourceLogs", "resourceMetrics", "resourceProfiles":
			return &Error{Line: line, Err: fmt.Errorf("OTLP %s, not traces: only spans are read", strings.TrimPrefix(key, "resource"))}
		default:
			return strictjson.Skip(dec)
		}
		return strictjson.EachElement(dec, shape("resourceSpans"), func() error {
			return strictjson.EachMember(dec, shape("resourceSpans"), func(key string) error {
				if key != "scopeSpans" {
					return strictjson.Skip(dec)
				}
				return strictjson.EachElement(dec, shape("scopeSpans"), func() error {
					return strictjson.EachMember(dec, shape("scopeSpans"), func(key string) error {
						if key != "spans" {
							return strictjson.Skip(dec)
						}
						return strictjson.EachElement(dec, shape("spans"), func() error {
							off := dec.InputOffset()
							for off < int64(len(raw)) && strings.IndexByte(" \t\r\n,", raw[off]) >= 0 {
								off++
							}
							var sp json.RawMessage
							if err := dec.Decode(&sp); err != nil {
								return err
							}
							return fn(sp, off)
						})
					})
				})
			})
		})
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return &Error{Line: line, Err: fmt.Errorf("invalid OTLP document: %w", err)}
	}
	if !found {
		return &Error{Line: line, Err: errors.New(`an OTLP document without "resourceSpans"`)}
	}
	return nil
}

// otlpRuns are the runs of an OTLP file, in order, made into steps one run
// at a time: only the spans of the runs not yet read, and the steps of the
// run being read, are held.
type otlpRuns struct {
	order []string
	runs  map[string][]*genSpan // sorted by start time
	next  int                   // the next run of order
}

// newOTLPRuns sorts the spans of a file into runs. Every error the steps of
// the runs will meet is found here, before any step is read.
func newOTLPRuns(spans []*genSpan) (*otlpRuns, error) {
	o := &otlpRuns{}
	if len(spans) == 0 {
		return o, nil
	}
	type spanKey struct{ trace, span string }
	byID := make(map[spanKey]*genSpan, len(spans))
	for _, s := range spans {
		if s.spanID != "" {
			if _, dup := byID[spanKey{s.traceID, s.spanID}]; !dup {
				byID[spanKey{s.traceID, s.spanID}] = s
			}
		}
	}
	// A span's conversation is its own, or its nearest ancestor's. Each
	// span is resolved once: the chain of ancestors walked is given the
	// conversation found, so that the work is linear even when parents
	// form a cycle.
	resolved := make(map[*genSpan]bool, len(spans))
	var chain []*genSpan
	for _, s := range spans {
		chain = chain[:0]
		conv := ""
		for p := s; p != nil && !resolved[p]; {
			resolved[p] = true
			chain = append(chain, p)
			if p.own != "" || p.parentID == "" {
				break
			}
			next := byID[spanKey{p.traceID, p.parentID}]
			if next != nil && resolved[next] {
				conv = next.conv // already resolved, or on this chain (a cycle: "")
				break
			}
			p = next
		}
		// Down the chain, a span's own conversation replaces its
		// ancestors'.
		for i := len(chain) - 1; i >= 0; i-- {
			p := chain[i]
			if p.own != "" {
				conv = p.own
			}
			p.conv = conv
		}
	}
	byID, resolved = nil, nil
	// Spans with no conversation of their own take their trace's: that of
	// its earliest span that has one.
	traceConv := make(map[string]*genSpan)
	for _, s := range spans {
		if s.conv == "" {
			continue
		}
		if c := traceConv[s.traceID]; c == nil || s.start < c.start {
			traceConv[s.traceID] = s
		}
	}
	o.runs = make(map[string][]*genSpan)
	genAI := 0
	for _, s := range spans {
		if s.kind == spanOther {
			continue
		}
		genAI++
		run := s.conv
		if run == "" {
			if c := traceConv[s.traceID]; c != nil {
				run = c.conv
			} else {
				run = s.traceID
			}
		}
		if _, ok := o.runs[run]; !ok {
			o.order = append(o.order, run)
		}
		o.runs[run] = append(o.runs[run], s)
	}
	if genAI == 0 {
		return nil, &Error{Line: spans[0].line, Err: fmt.Errorf("none of the %d spans is a GenAI model call or tool execution (gen_ai.operation.name chat, text_completion, generate_content or execute_tool)", len(spans))}
	}
	for _, run := range o.order {
		slices.SortStableFunc(o.runs[run], func(a, b *genSpan) int {
			switch {
			case a.start < b.start:
				return -1
			case a.start > b.start:
				return 1
			}
			return a.order - b.order
		})
	}
	slices.SortStableFunc(o.order, func(a, b string) int {
		x, y := o.runs[a][0], o.runs[b][0]
		switch {
		case x.start < y.start:
			return -1
		case x.start > y.start:
			return 1
		}
		return x.order - y.order
	})
	// The errors, in the order the runs' steps would meet them.
	for _, run := range o.order {
		made := false // a model span of the run made a step
		for _, s := range o.runs[run] {
			if s.kind != spanModel {
				continue
			}
			if made && s.inputErr != nil {
				return nil, s.inputErr
			}
			if s.stepErr != nil {
				return nil, s.stepErr
			}
			made = true
		}
	}
	return o, nil
}

// nextRun returns the steps of the next run, its name and whether its calls
// carry no arguments (ErrNoContent), or io.EOF after the last run. The run's
// spans are let go.
func (o *otlpRuns) nextRun() (t *Trace, run string, noArgs bool, err error) {
	for o.next < len(o.order) {
		run = o.order[o.next]
		o.next++
		spans := o.runs[run]
		delete(o.runs, run)
		t = &Trace{Format: OTLP}
		noArgs = otlpRun(t, spans)
		clear(spans)
		if len(t.Steps) > 0 {
			return t, run, noArgs, nil
		}
	}
	return nil, "", false, io.EOF
}

// An otelMessage is a message of gen_ai.input.messages or
// gen_ai.output.messages.
type otelMessage struct {
	Role         string     `json:"role"`
	Parts        []otelPart `json:"parts"`
	FinishReason string     `json:"finish_reason"`
}

type otelPart struct {
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ID        *string         `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Response  json.RawMessage `json:"response"`
}

// A toolResult is a tool's result that a model call's input messages show.
type toolResult struct {
	id     string
	result any
}

// messages reads a messages attribute: a JSON string, or structured values.
func (s *spanAttrs) messages(key string) ([]otelMessage, bool, error) {
	v := s.attr(key)
	if v == nil {
		return nil, false, nil
	}
	var data []byte
	if v.StringValue != nil {
		data = []byte(*v.StringValue)
	} else {
		var err error
		if data, err = json.Marshal(jsonSafe(v.value())); err != nil {
			return nil, true, &Error{Line: s.line, Err: fmt.Errorf("%s: %w", key, err)}
		}
	}
	var ms []otelMessage
	if err := json.Unmarshal(data, &ms); err != nil {
		return nil, true, &Error{Line: s.line, Err: fmt.Errorf("%s: not an array of messages: %v", key, err)}
	}
	return ms, true, nil
}

// jsonSafe replaces the numbers that JSON cannot hold (NaN, infinities) with
// null, so that structured values can be marshalled.
func jsonSafe(v any) any {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
	case []any:
		for i := range v {
			v[i] = jsonSafe(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = jsonSafe(v[k])
		}
	}
	return v
}

// partText is the text of a text part, or "".
func partText(p otelPart) string {
	var s string
	if json.Unmarshal(p.Content, &s) == nil {
		return s
	}
	return ""
}

// contentValue is a tool call's arguments or result as an attribute gives
// it: a string that holds a JSON object or array is read as that JSON
// (instrumentations write structured values as JSON strings), anything else
// is kept as it is.
func contentValue(v *otlpAnyV) any {
	if v == nil {
		return nil
	}
	if v.StringValue != nil {
		return jsonContent(*v.StringValue)
	}
	return v.value()
}

// jsonContent is a string that may hold a JSON object or array: that JSON
// (a json.RawMessage), or the string itself.
func jsonContent(s string) any {
	if b := []byte(strings.TrimSpace(s)); len(b) > 0 && (b[0] == '{' || b[0] == '[') && json.Valid(b) {
		return json.RawMessage(b)
	}
	return s
}

// otlpFinishReason maps a finish reason of the GenAI conventions onto the
// guard's names: "tool_call" (and "tool_calls") becomes "tool-calls",
// "content_filter" "content-filter"; others are kept.
func otlpFinishReason(r string) string {
	switch r {
	case "tool_call", "tool_calls":
		return "tool-calls"
	case "content_filter":
		return "content-filter"
	}
	return r
}

// otlpRun appends the steps of one run's spans, sorted by start time, to t,
// and reports whether the run's calls carry no arguments. newOTLPRuns has
// checked them for errors.
func otlpRun(t *Trace, spans []*genSpan) (noArgs bool) {
	b := &builder{t: *t, pending: make(map[string]callRef), answered: make(map[string]int)}
	defer func() { *t = b.t }()
	first := len(b.t.Steps)
	hasModel := slices.ContainsFunc(spans, func(s *genSpan) bool { return s.kind == spanModel })
	calls, withArgs := 0, 0
	current := -1 // the step of the newest model span
	for _, s := range spans {
		switch s.kind {
		case spanModel:
			// The results of earlier calls that no tool span gave, as the
			// model call's input messages show them (instrumentations of
			// model clients make no tool spans).
			for _, r := range s.results {
				ref, ok := b.pending[r.id]
				if !ok {
					continue
				}
				delete(b.pending, r.id)
				b.answered[r.id] = s.line
				if c := &b.t.Steps[ref.step].ToolCalls[ref.call]; c.Result == nil && c.Err == nil {
					c.Result = r.result
				}
			}
			if current >= 0 && s.input != "" {
				st := &b.t.Steps[current]
				if st.Input != "" {
					st.Input += "\n"
				}
				st.Input += s.input
			}
			st := b.step(s.line)
			current = len(b.t.Steps) - 1
			*st = *s.step
			st.ToolCalls = nil
			for _, c := range s.step.ToolCalls {
				b.call(c.ID, c)
				calls++
				if c.Args != nil {
					withArgs++
				}
			}
		case spanTool:
			c := *s.call
			if ref, ok := b.pending[c.ID]; ok && c.ID != "" {
				delete(b.pending, c.ID)
				b.answered[c.ID] = s.line
				call := &b.t.Steps[ref.step].ToolCalls[ref.call]
				if call.Args == nil && c.Args != nil {
					call.Args = c.Args
					withArgs++
				}
				call.Result, call.Err = c.Result, c.Err
				continue
			}
			if !hasModel || current < 0 {
				b.step(s.line)
			}
			calls++
			if c.Args != nil {
				withArgs++
			}
			st := &b.t.Steps[len(b.t.Steps)-1]
			st.ToolCalls = append(st.ToolCalls, c)
		}
	}
	return len(b.t.Steps) > first && calls > 0 && withArgs == 0
}

// toolCall reads the call of an execute_tool span.
func toolCall(s *spanAttrs) guard.ToolCall {
	name := s.str(attrToolName)
	if name == "" {
		name = strings.TrimPrefix(s.sp.Name, "execute_tool ")
	}
	c := guard.ToolCall{ID: s.str(attrToolCallID), Name: name, Args: contentValue(s.attr(attrToolArguments))}
	if v := s.attr(attrToolResult); v != nil {
		c.Result = contentValue(v)
	}
	if s.failed() {
		kind := s.str(attrErrorType)
		if kind == "" {
			kind = "error"
		}
		c.Err = errors.New(kind)
		if c.Result == nil {
			c.Result = failureText(s)
		}
	}
	return c
}

// failureText is what a failed span says about its failure: its status
// message, or the message of its exception event; nil when neither is given.
func failureText(s *spanAttrs) any {
	if st := s.sp.Status; st != nil && st.Message != "" {
		return st.Message
	}
	for _, e := range s.sp.Events {
		if e.Name != "exception" {
			continue
		}
		for i := range e.Attributes {
			if kv := &e.Attributes[i]; kv.Key == "exception.message" && kv.Value.StringValue != nil {
				return *kv.Value.StringValue
			}
		}
	}
	return nil
}

// modelStep fills a step from a model span: its text and requested tool
// calls from gen_ai.output.messages, its finish reason and usage.
func modelStep(st *guard.Step, s *spanAttrs) error {
	out, ok, err := s.messages(attrOutputMessage)
	if err != nil {
		return err
	}
	if !ok {
		_, out = s.legacyMessages()
	}
	var texts []string
	for _, m := range out {
		if m.Role != "" && m.Role != "assistant" {
			continue
		}
		for _, p := range m.Parts {
			switch p.Type {
			case "text":
				if t := partText(p); t != "" {
					texts = append(texts, t)
				}
			case "tool_call":
				id := ""
				if p.ID != nil {
					id = *p.ID
				}
				var args any
				if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
					var s string
					if json.Unmarshal(p.Arguments, &s) == nil {
						args = jsonContent(s)
					} else {
						args = json.RawMessage(bytes.Clone(p.Arguments))
					}
				}
				st.ToolCalls = append(st.ToolCalls, guard.ToolCall{ID: id, Name: p.Name, Args: args})
			}
		}
		if st.FinishReason == "" && m.FinishReason != "" {
			st.FinishReason = otlpFinishReason(m.FinishReason)
		}
		break // the first choice
	}
	st.Text = strings.Join(texts, "\n")
	if st.FinishReason == "" {
		if v := s.attr(attrFinishReasons); v != nil {
			switch r := v.value().(type) {
			case []any:
				if len(r) > 0 {
					if s, ok := r[0].(string); ok {
						st.FinishReason = otlpFinishReason(s)
					}
				}
			case string:
				st.FinishReason = otlpFinishReason(r)
			}
		}
	}
	if st.FinishReason == "" && s.failed() {
		st.FinishReason = "error"
	}
	st.Usage.InputTokens = tokenCount(s.attr(attrInputTokens))
	st.Usage.OutputTokens = tokenCount(s.attr(attrOutputTokens))
	if s.attr(attrInputTokens) == nil {
		st.Usage.InputTokens = tokenCount(s.attr(attrPromptTokens))
	}
	if s.attr(attrOutputTokens) == nil {
		st.Usage.OutputTokens = tokenCount(s.attr(attrCompletionTokens))
	}
	return nil
}

// tokenCount reads a token count: a non-negative whole number, or 0.
func tokenCount(v *otlpAnyV) int64 {
	if v == nil {
		return 0
	}
	switch n := v.value().(type) {
	case int64:
		return max(n, 0)
	case float64:
		return count(n)
	case string:
		f, _ := strconv.ParseFloat(n, 64)
		return count(f)
	}
	return 0
}

// newInput is the new input that a model span's gen_ai.input.messages show
// after the previous step: the user messages after the last assistant
// message (all of them when there is none), and the tools' results there.
func newInput(s *spanAttrs) (string, []toolResult, error) {
	in, ok, err := s.messages(attrInputMessages)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		in, _ = s.legacyMessages()
	}
	start := 0
	for i, m := range in {
		if m.Role == "assistant" {
			start = i + 1
		}
	}
	var texts []string
	var results []toolResult
	for _, m := range in[start:] {
		for _, p := range m.Parts {
			if p.Type == "tool_call_response" && p.ID != nil && *p.ID != "" {
				results = append(results, toolResult{*p.ID, responseValue(p.Response)})
			}
		}
		if m.Role != "user" {
			continue
		}
		for _, p := range m.Parts {
			switch p.Type {
			case "text":
				if t := partText(p); t != "" {
					texts = append(texts, t)
				}
			case "tool_call_response":
			default:
				texts = append(texts, "["+p.Type+"]")
			}
		}
	}
	return strings.Join(texts, "\n"), results, nil
}

// responseValue is a tool_call_response's response: a string (holding a JSON
// object or array, that JSON), or other JSON as it is; nil for none.
func responseValue(raw json.RawMessage) any {
	switch kind(raw) {
	case "nothing", "null":
		return nil
	case "a string":
		return jsonContent(str(raw))
	}
	return json.RawMessage(bytes.Clone(raw))
}
