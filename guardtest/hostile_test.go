package guardtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/detector/finish"
	"github.com/loopguard/loopguard/detector/input"
	"github.com/loopguard/loopguard/detector/noprogress"
	"github.com/loopguard/loopguard/detector/oscillation"
	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/detector/sameresult"
	"github.com/loopguard/loopguard/detector/toollimit"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/guardtest"
	"github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
	"github.com/loopguard/loopguard/rule"
)

// hostileCfg returns the configuration of the guards of the hostile-snapshot
// test: every built-in rule.
func hostileCfg(t testing.TB) guard.Config {
	return guard.Config{Ignore: []string{"think"}, Rules: allRules(t)}
}

// allRules returns one rule of each built-in kind, with options that keep
// state in every part of their states.
func allRules(t testing.TB) []rule.Rule {
	t.Helper()
	must := func(r rule.Rule, err error) rule.Rule {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	return []rule.Rule{
		must(finish.New(finish.Options{})),
		must(budget.New(budget.Options{MaxSteps: 5000, WarnAt: 0.5, Now: fixedClock,
			MaxTotalTokens: budget.Limit{Value: 1e7}, MaxCostUSD: budget.Limit{Value: 1000}, MaxDurationMs: budget.Limit{Value: 1e10}})),
		must(toollimit.New(toollimit.Options{MaxCalls: map[string]int{"search": 1500, "read": 1000}})),
		must(repeat.New(repeat.Options{Threshold: 3, Tools: map[string]repeat.ToolPolicy{
			"read": {Polling: true, MaxIdenticalResults: 4}}})),
		must(oscillation.New(oscillation.Options{MaxPeriod: 4, Repeats: 3})),
		must(noprogress.New(noprogress.Options{Threshold: 4, Window: 8})),
		must(sameresult.New(sameresult.Options{Threshold: 3, MinBytes: 1})),
		must(input.New(input.Options{Window: 4, Threshold: 2, MinBytes: 1})),
	}
}

// realSnapshots returns snapshots of a guard of all the built-in detectors
// taken as a random run goes on, with and without previews.
func realSnapshots(t testing.TB) [][]byte {
	g, err := guard.New(hostileCfg(t))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	var out [][]byte
	for i := range 24 {
		if i%8 == 3 {
			for _, o := range []guard.SnapshotOptions{{}, {Previews: true}} {
				s, err := g.Snapshot(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
		s := guardtest.RandomStep(r)
		s.FinishReason = "tool-calls"
		testutil.Check(t, g, s)
	}
	return out
}

// A hostile is a snapshot made wrong on purpose.
type hostile struct {
	kind string
	data []byte
	// must says that Restore must reject it. Others (a flipped bit can
	// make another valid snapshot) must be rejected or give a guard that
	// works.
	must bool
}

// restoreOutcome restores data, and if that works, uses the guard: it
// returns the error, or a panic as an error.
func restoreOutcome(data []byte, cfg guard.Config) (restoreErr error, useErr error) {
	defer func() {
		if r := recover(); r != nil {
			useErr = fmt.Errorf("panic: %v", r)
		}
	}()
	g, err := guard.Restore(data, cfg)
	if err != nil {
		return err, nil
	}
	ctx := context.Background()
	for i := range 3 {
		if _, err := g.Preflight(ctx, guard.ToolCall{Name: "search", Args: json.RawMessage(`{"q":1}`)}); err != nil {
			return nil, fmt.Errorf("Preflight: %v", err)
		}
		if _, err := g.Check(ctx, guard.Step{Text: "again", ToolCalls: []guard.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":1}`)}},
			Usage: guard.Usage{TotalTokens: int64(i)}}); err != nil {
			return nil, fmt.Errorf("Check: %v", err)
		}
	}
	again, err := g.Snapshot(ctx, guard.SnapshotOptions{})
	if err != nil {
		return nil, fmt.Errorf("the restored guard cannot be saved: %v", err)
	}
	if _, err := guard.Restore(again, cfg); err != nil {
		return nil, fmt.Errorf("the restored guard's snapshot does not restore: %v", err)
	}
	return nil, nil
}

var firstSnap []byte

func TestHostileSnapshots(t *testing.T) {
	cfg := hostileCfg(t) // one configuration serves every guard of the test
	snaps := realSnapshots(t)
	firstSnap = snaps[0]
	var list []hostile
	for _, s := range snaps {
		list = append(list, hostiles(s)...)
	}
	if race || testing.Short() {
		// A sample keeps the race detector's run short: a twentieth, or a
		// hundredth with both.
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		list = list[:scaled(len(list)*10, 1)/200]
	}
	counts := map[string][3]int{} // tried, rejected, accepted
	for _, h := range list {
		rerr, uerr := restoreOutcome(h.data, cfg)
		c := counts[h.kind]
		c[0]++
		switch {
		case uerr != nil:
			t.Errorf("%s: %v\nsnapshot: %.400s", h.kind, uerr, h.data)
		case rerr != nil:
			c[1]++
			if !errors.Is(rerr, guard.ErrInvalidState) && !errors.Is(rerr, guard.ErrOptionsChanged) {
				t.Errorf("%s: Restore = %v, neither ErrInvalidState nor ErrOptionsChanged\nsnapshot: %.400s", h.kind, rerr, h.data)
			}
		default:
			c[2]++
			if h.must {
				t.Errorf("%s: Restore accepted it\nsnapshot: %.600s", h.kind, h.data)
			}
		}
		counts[h.kind] = c
	}
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	})
	total := 0
	for _, k := range kinds {
		c := counts[k]
		total += c[0]
		t.Logf("%-28s tried %6d, rejected %6d, accepted %6d", k, c[0], c[1], c[2])
	}
	t.Logf("hostile snapshots tried: %d", total)
}

// hostiles returns the hostile variants of a real snapshot.
func hostiles(s []byte) []hostile {
	var out []hostile
	add := func(kind string, must bool, data []byte) { out = append(out, hostile{kind, data, must}) }

	// Every truncation.
	for i := range len(s) {
		add("truncated", true, bytes.Clone(s[:i]))
	}
	// Every bit of every byte, flipped.
	for i := range len(s) {
		for bit := range 8 {
			b := bytes.Clone(s)
			b[i] ^= 1 << bit
			add("bit-flipped", false, b)
		}
	}
	// Every value replaced by values of other types, and numbers by huge,
	// negative and fractional ones.
	var doc any
	dec := json.NewDecoder(bytes.NewReader(s))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		panic("a real snapshot is not JSON")
	}
	others := map[string]any{
		"null": nil, "bool": true, "string": "x", "number": json.Number("7"),
		"array": []any{}, "object": map[string]any{},
	}
	for _, path := range paths(doc, nil) {
		orig := get(doc, path)
		for name, v := range others {
			if kindOf(orig) == name {
				continue
			}
			// null for a field that holds a value is accepted by
			// encoding/json as "leave it as it is": report it, do not
			// require it.
			add("wrong type: "+name, name != "null", replaced(doc, path, v))
		}
		if n, ok := orig.(json.Number); ok {
			for _, h := range []string{"1e400", "-1e400", "9223372036854775808", "-9223372036854775809",
				"18446744073709551616", "1e20", "-1", "0.5", "-0.5", "1e-400", "123456789012345678901234567890"} {
				add("huge or odd number", false, replaced(doc, path, json.Number(h)))
			}
			_ = n
		}
	}
	// Deep nesting, at every value and around the document: always deeper
	// than core.MaxSnapshotDepth.
	for _, path := range paths(doc, nil) {
		add("deep nesting", true, replaced(doc, path, nest(core.MaxSnapshotDepth)))
	}
	add("deep nesting", true, []byte(strings.Repeat("[", 1_000_000)+strings.Repeat("]", 1_000_000)))
	add("deep nesting", true, []byte(strings.Repeat(`{"a":`, 100_000)+"1"+strings.Repeat("}", 100_000)))
	// Duplicate keys: every key of every object written twice, with
	// another value before or after the original, the same or in upper
	// case. encoding/json would keep the last one, in any case: Restore
	// must reject them all.
	for _, d := range duplicates(s) {
		add("duplicate key", true, d)
	}
	// Every key missing (counted, not required: a missing key reads as
	// its zero value), and every key in upper case (encoding/json matches
	// keys without regard to case; the capped tools' names are keys too,
	// and no tool is capped under an upper-case name): required.
	for _, path := range paths(doc, nil) {
		if k, ok := path[len(path)-1].(string); ok {
			add("missing key", false, removed(doc, path))
			if up := strings.ToUpper(k); up != k {
				add("key in upper case", true, renamed(doc, path, up))
			}
		}
	}
	// Larger than core.MaxSnapshotBytes.
	if len(out) > 0 && bytes.Equal(s, firstSnap) {
		big := slices.Concat([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), core.MaxSnapshotBytes), []byte(`",`), s[1:])
		add("too large", true, big)
	}
	// Odd documents.
	for _, d := range []string{"", " ", "null", "true", "[]", "{}", `{"version":1}`, `{"version":"1"}`,
		`{"version":2,"detectors":[]}`, `{"version":1,"detectors":null}`, `{"version":1,"detectors":{}}`,
		string(s) + string(s), string(s) + "x", "\xef\xbb\xbf" + string(s), strings.ReplaceAll(string(s), `"`, `'`)} {
		add("odd document", true, []byte(d))
	}
	return out
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// paths returns the path of every value in v, v itself excluded.
func paths(v any, prefix []any) [][]any {
	var out [][]any
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(slices.Clone(prefix), k)
			out = append(out, p)
			out = append(out, paths(v[k], p)...)
		}
	case []any:
		for i, e := range v {
			p := append(slices.Clone(prefix), i)
			out = append(out, p)
			out = append(out, paths(e, p)...)
		}
	}
	return out
}

func get(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// replaced returns doc with the value at path replaced, as JSON.
func replaced(doc any, path []any, with any) []byte {
	var walk func(v any, path []any) any
	walk = func(v any, path []any) any {
		if len(path) == 0 {
			return with
		}
		switch k := path[0].(type) {
		case string:
			m := v.(map[string]any)
			c := make(map[string]any, len(m))
			for key, val := range m {
				c[key] = val
			}
			c[k] = walk(m[k], path[1:])
			return c
		default:
			a := slices.Clone(v.([]any))
			a[k.(int)] = walk(a[k.(int)], path[1:])
			return a
		}
	}
	b, err := json.Marshal(walk(doc, path))
	if err != nil {
		panic(err)
	}
	return b
}

// removed returns doc without the key at path, as JSON.
func removed(doc any, path []any) []byte {
	return edit(doc, path, func(m map[string]any, k string) { delete(m, k) })
}

// renamed returns doc with the key at path renamed, as JSON.
func renamed(doc any, path []any, to string) []byte {
	return edit(doc, path, func(m map[string]any, k string) { m[to] = m[k]; delete(m, k) })
}

// edit applies fn to a copy of the object that holds the key at path.
func edit(doc any, path []any, fn func(m map[string]any, k string)) []byte {
	var walk func(v any, path []any) any
	walk = func(v any, path []any) any {
		switch k := path[0].(type) {
		case string:
			m := maps.Clone(v.(map[string]any))
			if len(path) == 1 {
				fn(m, k)
			} else {
				m[k] = walk(m[k], path[1:])
			}
			return m
		default:
			a := slices.Clone(v.([]any))
			a[k.(int)] = walk(a[k.(int)], path[1:])
			return a
		}
	}
	b, err := json.Marshal(walk(doc, path))
	if err != nil {
		panic(err)
	}
	return b
}

// nest returns a value nested n arrays deep.
func nest(n int) any {
	var v any = 1
	for range n {
		v = []any{v}
	}
	return v
}

// duplicates returns s with each key written twice: once with a changed
// value, before the original.
func duplicates(s []byte) [][]byte {
	var out [][]byte
	for i := 0; i < len(s); i++ {
		if s[i] != '"' || i == 0 || (s[i-1] != '{' && s[i-1] != ',') {
			continue
		}
		end := bytes.IndexByte(s[i+1:], '"')
		if end < 0 || i+end+2 >= len(s) || s[i+end+2] != ':' {
			continue
		}
		key := s[i : i+end+2]
		vend := valueEnd(s, i+end+3)
		for _, k := range [][]byte{key, bytes.ToUpper(key)} {
			for _, v := range []string{"0", `"x"`, "null", "{}", "[]", strconv.Itoa(1 << 40)} {
				out = append(out, slices.Concat(s[:i], k, []byte(":"+v+","), s[i:]))
				if vend > 0 {
					out = append(out, slices.Concat(s[:vend], []byte(","), k, []byte(":"+v), s[vend:]))
				}
			}
		}
	}
	return out
}

// valueEnd returns the offset just past the JSON value that starts at i, or
// -1.
func valueEnd(s []byte, i int) int {
	d := json.NewDecoder(bytes.NewReader(s[i:]))
	var v json.RawMessage
	if d.Decode(&v) != nil {
		return -1
	}
	return i + int(d.InputOffset())
}
