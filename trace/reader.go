package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/loopguard/loopguard/guard"
)

// An EntryKind is the kind of one entry of a log.
type EntryKind uint8

// The kinds of entries. Only loopguard's step lines hold the control lines
// (preflight, snapshot and reset); a transcript holds steps only.
const (
	// StepEntry is a step: feed it to [guard.Guard.Check].
	StepEntry EntryKind = iota
	// PreflightEntry is {"preflight": CALL} or {"preflight": [CALL, ...]}:
	// ask [guard.Guard.Preflight] about the calls, which changes nothing.
	PreflightEntry
	// SnapshotEntry is {"snapshot": true}: save the guard and go on with
	// one restored from what was saved.
	SnapshotEntry
	// ResetEntry is {"reset": true}: forget the run.
	ResetEntry
)

var entryNames = [...]string{StepEntry: "step", PreflightEntry: "preflight", SnapshotEntry: "snapshot", ResetEntry: "reset"}

// String returns the kind's name: "step", "preflight", "snapshot" or "reset".
func (k EntryKind) String() string {
	if int(k) < len(entryNames) {
		return entryNames[k]
	}
	return fmt.Sprintf("EntryKind(%d)", k)
}

// An Entry is one entry of a log: a step, or a control line.
type Entry struct {
	// Kind says which of the fields below the entry fills.
	Kind EntryKind
	// Line is the 1-based line of the input where the entry starts: its
	// step line, or the assistant message or response it was made from.
	Line int
	// Step is the step of a StepEntry.
	Step guard.Step
	// Calls are the calls of a PreflightEntry. A preflight whose value is
	// neither a call nor an array has none.
	Calls []guard.ToolCall
	// Run names the run the entry belongs to in a log that holds several
	// (an OTLP file: the gen_ai.conversation.id, or the trace ID); it is
	// empty in the other formats. The entries of one run come one after
	// the other, and a new name starts a new run.
	Run string
}

// A KeyPolicy says what a key that loopguard's step lines do not have does,
// when it resembles none they have. A key that resembles a known one (in
// another case, with underscores, misspelt, or a provider's spelling such as
// "tool_calls" or "arguments") is an error under every policy: it was meant
// to say something, and reading the line without it would say something
// else.
type KeyPolicy uint8

// The key policies. Whatever the policy, "meta" is free-form and never
// looked into.
const (
	// RejectUnknownKeys makes every unknown key an error.
	RejectUnknownKeys KeyPolicy = iota
	// WarnUnknownKeys ignores an unknown key, after telling
	// [Options.Warn] of it once per key (the first time it is seen).
	WarnUnknownKeys
	// IgnoreUnknownKeys ignores unknown keys.
	IgnoreUnknownKeys
)

// DefaultMaxBytes is how much a [Reader] reads at most when its options set
// no limit: 64 MiB.
const DefaultMaxBytes = 64 << 20

// ErrTooLarge is wrapped by the error of a [Reader] whose input goes on past
// [Options.MaxBytes].
var ErrTooLarge = errors.New("too large")

// Options say how a [Reader] reads. The zero value detects the format,
// rejects unknown keys and reads at most [DefaultMaxBytes].
type Options struct {
	// Format is the format of the log; Unknown detects it.
	Format Format
	// UnknownKeys says what a key that no step line has does, in step
	// lines.
	UnknownKeys KeyPolicy
	// Warn, when not nil, is told of each unknown key that UnknownKeys
	// lets through with a warning, once per key: an *Error naming the
	// line and wrapping an *UnknownKeyError. For OTLP traces, it is also
	// told of each run whose tool calls carry no arguments: an *Error
	// wrapping ErrNoContent, on the run's first line.
	Warn func(error)
	// MaxBytes is the most bytes read from the input: the input going on
	// past it is an error wrapping ErrTooLarge. Zero means
	// DefaultMaxBytes, and a negative value no limit.
	MaxBytes int64
}

// A Reader reads a log entry by entry.
//
// loopguard's step lines are read one line at a time, so that its memory
// grows with the longest line, not with the length of the log. An OpenAI or
// Anthropic transcript pairs results with calls wherever they come in the
// log, and OTLP spans are ordered by their start times, so those are read
// whole (up to [Options.MaxBytes]) before their first entry. Of OTLP traces,
// what is held is each span's part of its step (not its attributes), and the
// steps of one run at a time; a file of one document per line, as the
// Collector's file exporter writes, is read line by line, and is not held.
//
// When the format is to be detected, the first item decides: an object with
// a role, a chat completion or a message object makes a transcript, and an
// object with "resourceSpans" OTLP traces (then read whole); an object with a
// step's keys (or
// a provider's spelling of them, to be reported), a control line or {} makes
// step lines.
type Reader struct {
	opt Options
	dec *decoder
	in  *limitReader
	br  *bufio.Reader

	format  Format
	started bool
	line    int    // the lines read so far
	first   *Entry // an entry read while detecting the format
	whole   *Trace // a transcript read whole, or the OTLP run being read
	otlp    *otlpRuns
	run     string // the name of the OTLP run being read
	array   *items // a JSON array of steps
	next    int    // the next step of whole
	err     error  // the error every later call returns
	scratch []byte // a line that spans several reads
	arena   []byte // where short lines are copied, so that they are not one allocation each
}

// NewReader returns a Reader of r. A nil opt is the zero Options.
func NewReader(r io.Reader, opt *Options) *Reader {
	rd := &Reader{}
	if opt != nil {
		rd.opt = *opt
	}
	max := rd.opt.MaxBytes
	if max == 0 {
		max = DefaultMaxBytes
	}
	rd.in = &limitReader{r: r, n: max, max: max}
	rd.br = bufio.NewReaderSize(rd.in, 16<<10)
	rd.dec = newDecoder(rd.opt.UnknownKeys, rd.opt.Warn)
	rd.format = rd.opt.Format
	return rd
}

// Format returns the format of the log: the one the options name, or, once
// Next has been called, the one detected. An empty log reads as Steps.
func (r *Reader) Format() Format { return r.format }

// Next returns the next entry, or io.EOF after the last. Every error that is
// about the data is an *[Error]; input beyond [Options.MaxBytes] is an
// *Error (line 0) wrapping [ErrTooLarge]. After an error, Next returns it
// again. An entry's arguments and results are its own: they do not change
// when Next is called again.
func (r *Reader) Next() (Entry, error) {
	if r.err != nil {
		return Entry{}, r.err
	}
	e, err := r.next1()
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) next1() (Entry, error) {
	if !r.started {
		r.started = true
		if err := r.start(); err != nil {
			return Entry{}, err
		}
	}
	switch {
	case r.first != nil:
		e := *r.first
		r.first = nil
		return e, nil
	case r.otlp != nil:
		for r.whole == nil || r.next >= len(r.whole.Steps) {
			t, run, noArgs, err := r.otlp.nextRun()
			if err != nil {
				r.whole = nil
				return Entry{}, err
			}
			if noArgs && r.opt.Warn != nil {
				r.opt.Warn(&Error{Line: t.Lines[0], Err: fmt.Errorf("run %s: %w", run, ErrNoContent)})
			}
			r.whole, r.next, r.run = t, 0, run
		}
		i := r.next
		r.next++
		return Entry{Kind: StepEntry, Line: r.whole.Lines[i], Step: r.whole.Steps[i], Run: r.run}, nil
	case r.whole != nil:
		if r.next >= len(r.whole.Steps) {
			return Entry{}, io.EOF
		}
		i := r.next
		r.next++
		e := Entry{Kind: StepEntry, Line: r.whole.Lines[i], Step: r.whole.Steps[i]}
		if r.whole.Runs != nil {
			e.Run = r.whole.Runs[i]
		}
		return e, nil
	case r.array != nil:
		raw, line, err := r.array.next()
		if err != nil {
			return Entry{}, err
		}
		return r.dec.entry(raw, line)
	}
	text, line, err := r.readLine()
	if err != nil {
		return Entry{}, err
	}
	return r.dec.entry(text, line)
}

// start reads up to the first item and decides how to read the rest.
func (r *Reader) start() error {
	switch r.format {
	case OpenAI, Anthropic, Responses:
		return r.readWhole(nil)
	case Unknown, Steps, OTLP:
	default:
		return fmt.Errorf("trace: unknown format %v", r.format)
	}
	text, line, err := r.readLine()
	if err == io.EOF {
		if r.format == Unknown {
			r.format = Steps
		}
		return nil
	}
	if err != nil {
		return err
	}
	if text[0] == '{' && r.format != Steps {
		if f, _ := detectItem(text); f == OTLP {
			// An OTLP document on one line, as the Collector's file
			// exporter writes them: read the file line by line.
			r.format = OTLP
			return r.readOTLPLines(text, line)
		}
	}
	if r.format == OTLP {
		return r.readWhole(append(bytes.Repeat([]byte{'\n'}, line-1), append(text, '\n')...))
	}
	if text[0] == '{' && (r.format == Steps || firstIsSteps(text)) {
		r.format = Steps
		e, err := r.dec.entry(text, line)
		if err != nil {
			return err
		}
		r.first = &e
		return nil
	}
	// The first line is an array, a transcript's item, a value that spans
	// lines, or something that decides nothing: read the log whole.
	head := append(bytes.Repeat([]byte{'\n'}, line-1), text...)
	return r.readWhole(append(head, '\n'))
}

// firstIsSteps reports whether the first line of a log makes it step lines.
func firstIsSteps(text []byte) bool {
	f, _ := detectItem(text)
	return f == Steps
}

// readWhole reads the rest of the input after head (the lines already read,
// blank ones as empty lines) and prepares its entries.
func (r *Reader) readWhole(head []byte) error {
	rest, err := io.ReadAll(r.br)
	if err != nil {
		return r.readErr(err)
	}
	data := trimBOM(append(head, rest...))
	if r.format == Unknown {
		if len(bytes.TrimSpace(data)) == 0 {
			r.format = Steps
			return nil
		}
		r.format = Detect(data)
	}
	switch r.format {
	case Steps:
		if off := firstNonSpace(data); off < len(data) && data[off] == '[' {
			r.array = newItems(data)
			return nil
		}
		// Step lines whose first line decided nothing: read them line by
		// line from memory.
		r.br = bufio.NewReader(bytes.NewReader(data))
		r.line = 0
		return nil
	case OpenAI:
		r.whole, err = parseOpenAI(data)
	case Anthropic:
		r.whole, err = parseAnthropic(data)
	case Responses:
		r.whole, err = parseResponses(data)
	case OTLP:
		r.otlp, err = parseOTLP(data)
	default:
		return unknownFormat(data)
	}
	return err
}

// readOTLPLines reads OTLP traces whose first document is the line text, at
// line: each line that holds a document is read on its own and let go, so
// that the spans, not the file, are held. From a line that is not a document
// by itself on, the rest is read whole.
func (r *Reader) readOTLPLines(text []byte, line int) error {
	var p otlpSpans
	for {
		if text[0] == '{' && json.Valid(text) {
			if err := p.doc(text, line); err != nil {
				return err
			}
		} else {
			rest, err := io.ReadAll(r.br)
			if err != nil {
				return r.readErr(err)
			}
			head := append(bytes.Repeat([]byte{'\n'}, line-1), text...)
			if err := p.items(append(append(head, '\n'), rest...)); err != nil {
				return err
			}
			break
		}
		var err error
		text, line, err = r.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	var err error
	r.otlp, err = newOTLPRuns(p.spans)
	return err
}

// readLine returns the next line that is not blank, trimmed, in memory of
// its own, with its number, or io.EOF.
func (r *Reader) readLine() ([]byte, int, error) {
	for {
		frag, err := r.br.ReadSlice('\n')
		var line []byte
		switch {
		case err == bufio.ErrBufferFull:
			// A long line: gather it.
			r.scratch = append(r.scratch[:0], frag...)
			for err == bufio.ErrBufferFull {
				frag, err = r.br.ReadSlice('\n')
				r.scratch = append(r.scratch, frag...)
			}
			line = r.scratch
		default:
			line = frag
		}
		if err != nil && err != io.EOF {
			return nil, 0, r.readErr(err)
		}
		if len(line) == 0 && err == io.EOF {
			return nil, 0, io.EOF
		}
		r.line++
		if r.line == 1 {
			line = trimBOM(line)
		}
		text := bytes.TrimSpace(line)
		if len(text) > 0 {
			text = r.own(text)
			if cap(r.scratch) > 1<<20 {
				r.scratch = nil // do not keep a huge line's memory
			}
			return text, r.line, nil
		}
		if err == io.EOF {
			return nil, 0, io.EOF
		}
	}
}

// Lines up to arenaLine bytes are copied into shared blocks of arenaBlock
// bytes; longer ones get memory of their own. A block lives as long as an
// entry that points into it.
const (
	arenaBlock = 32 << 10
	arenaLine  = 4 << 10
)

// own returns a copy of text that no later read overwrites.
func (r *Reader) own(text []byte) []byte {
	if len(text) > arenaLine {
		return bytes.Clone(text)
	}
	if len(r.arena)+len(text) > cap(r.arena) {
		r.arena = make([]byte, 0, arenaBlock)
	}
	start := len(r.arena)
	r.arena = append(r.arena, text...)
	return r.arena[start:len(r.arena):len(r.arena)]
}

// readErr turns an error of the input into the Reader's error: an *Error
// on the line being read, or for input past the limit, on no line.
func (r *Reader) readErr(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return &Error{Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.in.max)}
	}
	return &Error{Line: r.line + 1, Err: err}
}

// limitReader reads from r and fails with ErrTooLarge when r holds more
// than max bytes (a negative max is no limit).
type limitReader struct {
	r      io.Reader
	n, max int64 // the bytes still allowed, and the limit
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.max < 0 {
		return l.r.Read(p)
	}
	if l.n <= 0 {
		// Anything more is too much.
		var one [1]byte
		for {
			k, err := l.r.Read(one[:])
			if k > 0 {
				return 0, ErrTooLarge
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// readAll reads every entry of a log.
func readAll(r *Reader) ([]Entry, error) {
	var es []Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return es, nil
		}
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
}
