package guardtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/internal/testutil"
)

// A program decodes fuzz bytes into a run of Checks, Preflights, snapshots
// and resets, with steps that hold every odd value a Go caller can pass.
type program struct {
	data []byte
}

func (p *program) byte() byte {
	if len(p.data) == 0 {
		return 0
	}
	b := p.data[0]
	p.data = p.data[1:]
	return b
}

func (p *program) uint64() uint64 {
	var b [8]byte
	n := copy(b[:], p.data)
	p.data = p.data[n:]
	return binary.LittleEndian.Uint64(b[:])
}

// bytes returns up to 63 bytes of the input, as they are.
func (p *program) bytes() []byte {
	n := min(int(p.byte()&63), len(p.data))
	b := bytes.Clone(p.data[:n])
	p.data = p.data[n:]
	return b
}

var (
	fuzzTools = []string{"search", "read", "write", "think", "", "bad\xff", strings.Repeat("t", 300)}
	fuzzTexts = []string{"", "same", "SAME  ", "other", "\xff\xfe"}
)

func (p *program) text() string {
	if b := p.byte(); b < 200 {
		return fuzzTexts[int(b)%len(fuzzTexts)]
	}
	return string(p.bytes())
}

// value returns a Go value for arguments or results.
func (p *program) value(depth int) any {
	switch k := p.byte() % 16; k {
	case 0:
		return nil
	case 1, 2, 3:
		return json.RawMessage(p.bytes()) // JSON text, often invalid
	case 4:
		return string(p.bytes())
	case 5:
		return math.Float64frombits(p.uint64()) // NaN, Inf, -0, ...
	case 6:
		return int64(p.uint64())
	case 7:
		if depth > 3 {
			return nil
		}
		m := map[string]any{}
		for range p.byte() % 4 {
			m[string(p.bytes())] = p.value(depth + 1)
		}
		return m
	case 8:
		if depth > 3 {
			return nil
		}
		var a []any
		for range p.byte() % 4 {
			a = append(a, p.value(depth+1))
		}
		return a
	case 9:
		m := map[string]any{"q": 1}
		m["self"] = m
		return m
	case 10:
		return []byte(p.bytes())
	case 11:
		return struct {
			Q any `json:"q"`
			F func()
		}{p.value(depth + 1), nil}
	case 12:
		return make(chan int)
	default:
		return json.RawMessage(`{"q":` + string(rune('0'+k%3)) + `}`)
	}
}

func (p *program) call() guard.ToolCall {
	c := guard.ToolCall{Args: p.value(0)}
	if b := p.byte(); b < 240 {
		c.Name = fuzzTools[int(b)%len(fuzzTools)]
	} else {
		c.Name = string(p.bytes())
	}
	switch p.byte() % 4 {
	case 1:
		c.Result = p.value(0)
	case 2:
		c.Err = errors.New(string(p.bytes()))
	}
	return c
}

func (p *program) step() guard.Step {
	s := guard.Step{Text: p.text()}
	for range p.byte() % 5 {
		s.ToolCalls = append(s.ToolCalls, p.call())
	}
	if b := p.byte(); b%4 == 0 {
		s.FinishReason = string(p.bytes())
	} else {
		s.FinishReason = []string{"", "tool-calls", "tool_calls", "stop", "length", "other"}[int(b)%6]
	}
	if p.byte()%3 == 0 {
		s.Usage = guard.Usage{InputTokens: int64(p.uint64()), OutputTokens: int64(p.uint64()), TotalTokens: int64(p.uint64()),
			CostUSD: math.Float64frombits(p.uint64()), Duration: time.Duration(p.uint64())}
	} else {
		s.Usage = guard.Usage{InputTokens: int64(p.byte()), OutputTokens: int64(p.byte()), CostUSD: float64(p.byte()) / 100}
	}
	if p.byte()%8 == 0 {
		s.Input = string(p.bytes())
	}
	return s
}

// fuzzGuard returns a guard of the default detectors, and every other
// built-in one.
func fuzzGuard(t testing.TB, data []byte) *guard.Guard {
	t.Helper()
	cfg := guard.Config{Ignore: []string{"think"}, History: 2, Rules: allRules(t)}
	var g *guard.Guard
	var err error
	if data == nil {
		g, err = guard.New(cfg)
	} else {
		g, err = guard.Restore(data, cfg)
	}
	if err != nil {
		t.Fatalf("guard: %v", err)
	}
	return g
}

func snapshot(t *testing.T, g *guard.Guard) []byte {
	t.Helper()
	return testutil.Snapshot(t, g, guard.SnapshotOptions{})
}

// FuzzCheck runs fuzzed steps through a guard of every built-in detector.
// Nothing may panic; Preflight leaves the snapshot as it was; a guard
// restored from a snapshot, and a guard that never was, give the same
// verdicts; Reset gives a fresh guard.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"", "\x00", "\x01\x00\x01\x01\x00\x00", "\x08\x03\x07\x01", "\x00\x00\x03\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00",
		"\x06\x00\x02\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x0d\x00\x00\x00\x00\x00\x00\x00\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(runFuzzCheck)
}

func runFuzzCheck(t *testing.T, data []byte) {
	{
		p := &program{data: data}
		g := fuzzGuard(t, nil)    // the guard under test, restored now and then
		twin := fuzzGuard(t, nil) // never restored
		for i := 0; len(p.data) > 0 && i < 64; i++ {
			switch op := p.byte() % 10; {
			case op < 6:
				s := p.step()
				v, w := testutil.Check(t, g, s), testutil.Check(t, twin, s)
				if a, b := jsonOf(v), jsonOf(w); a != b {
					t.Fatalf("op %d: the restored guard gives %s, its twin %s", i, a, b)
				}
			case op < 8:
				s := p.step()
				before := snapshot(t, g)
				d, e := testutil.Preflight(t, g, s.ToolCalls...), testutil.Preflight(t, twin, s.ToolCalls...)
				if after := snapshot(t, g); !bytes.Equal(before, after) {
					t.Fatalf("op %d: Preflight changed the snapshot:\n%s\n%s", i, before, after)
				}
				if a, b := jsonOf(d), jsonOf(e); a != b {
					t.Fatalf("op %d: the restored guard answers %s, its twin %s", i, a, b)
				}
			case op == 8:
				s := snapshot(t, g)
				g = fuzzGuard(t, s)
				// The same JSON value: a tool name that is not UTF-8 is
				// stored with U+FFFD once restored, which JSON cannot tell
				// from the \ufffd escape it was written with.
				if again := snapshot(t, g); !equalJSON(s, again) {
					t.Fatalf("op %d: restored, the snapshot differs:\n%s\n%s", i, s, again)
				}
			default:
				if err := g.Reset(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := twin.Reset(context.Background()); err != nil {
					t.Fatal(err)
				}
				if a, b := snapshot(t, g), snapshot(t, fuzzGuard(t, nil)); !bytes.Equal(a, b) {
					t.Fatalf("op %d: after Reset, the snapshot is not a fresh guard's:\n%s\n%s", i, a, b)
				}
			}
		}
	}
}

// FuzzStepJSON reads fuzzed JSON lines as steps (as the loopguard command
// reads traces) and runs them through the default detectors. A line that is
// a step must also survive a JSON round trip: written and read back, it gives
// the same verdicts.
func FuzzStepJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"text":"a","toolCalls":[{"name":"search","args":{"q":1},"result":"r","error":null}],"finishReason":"tool-calls"}`,
		`{"toolCalls":[{"name":1},{"name":"a","args":"x"},7,null],"usage":{"inputTokens":-1,"costUsd":1e999}}`,
		`{"text":null,"userReply":"go on","usage":{"durationMs":0.0000001,"totalTokens":1.5}}`,
		`{"toolCalls":[{"name":"a","error":{"code":1}},{"name":"a","error":""}]}` + "\n" + `[1]` + "\n" + `{"finishReason":"STOP"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := guard.Config{Rules: detector.Defaults()}
		g, err := guard.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := guard.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var s guard.Step
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				continue
			}
			v := testutil.Check(t, g, s)
			testutil.Preflight(t, g, s.ToolCalls...)
			out, err := json.Marshal(s)
			if err != nil {
				t.Fatalf("a step read from %q cannot be written: %v", sc.Bytes(), err)
			}
			var back guard.Step
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("a step written as %s cannot be read back: %v", out, err)
			}
			if w := testutil.Check(t, rt, back); jsonOf(v) != jsonOf(w) {
				t.Fatalf("line %q gives %s, written and read back as %s it gives %s", sc.Bytes(), jsonOf(v), out, jsonOf(w))
			}
		}
	})
}

// equalJSON reports whether a and b hold the same JSON value.
func equalJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	decode := func(b []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}
