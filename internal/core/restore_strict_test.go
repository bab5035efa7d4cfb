package core_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/detector/budget"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// snapshotOf runs steps on a default guard and returns its snapshot.
func snapshotOf(t *testing.T, steps ...guard.Step) []byte {
	t.Helper()
	g, err := guard.New(guard.Config{Rules: detector.Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		testutil.Check(t, g, s)
	}
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func replaceOnce(t *testing.T, data []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%q not in %s", old, data)
	}
	return bytes.Replace(data, []byte(old), []byte(new), 1)
}

// TestCountersSaturate: a snapshot at the largest counts (which Snapshot can
// write, since the counts saturate) restores, the step limit still fires,
// and the guard's own next snapshot restores again.
func TestCountersSaturate(t *testing.T) {
	one := testutil.Calls(testutil.Q("x"))
	data := snapshotOf(t, one)
	max := strconv.Itoa(math.MaxInt)
	for _, counters := range [][2]string{
		{`"steps":1,"toolCalls":1`, `"steps":` + max + `,"toolCalls":1`},
		{`"steps":1,"toolCalls":1`, `"steps":` + max + `,"toolCalls":` + max},
		{`"steps":1,"toolCalls":1,"failedToolCalls":0`, `"steps":` + max + `,"toolCalls":` + max + `,"failedToolCalls":` + max},
	} {
		doc := replaceOnce(t, data, counters[0], counters[1])
		g, err := guard.Restore(doc, guard.Config{Rules: detector.Defaults()})
		if err != nil {
			t.Fatalf("Restore(%s): %v", counters[1], err)
		}
		for i := range 3 {
			v := testutil.Check(t, g, guard.Step{ToolCalls: []guard.ToolCall{testutil.Failed("search", `{"q":1}`, "no")}})
			if v.Code != budget.CodeMaxSteps {
				t.Errorf("%s, step %d: %s, want MAX_STEPS", counters[1], i, guard.Explain(v))
			}
		}
		s := testutil.Summary(t, g)
		if s.Steps != math.MaxInt || s.ToolCalls < 0 || s.FailedToolCalls < 0 || s.FailedToolCalls > s.ToolCalls {
			t.Errorf("%s: summary %+v", counters[1], s)
		}
		again, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := guard.Restore(again, guard.Config{Rules: detector.Defaults()}); err != nil {
			t.Errorf("%s: the guard's own snapshot does not restore: %v\n%s", counters[1], err, again)
		}
	}
}

// TestRestoreRejectsKeysInAnyCase: a key beside a correct one, in another
// case or the same, is rejected everywhere: in the envelope, its totals, a
// detector's record and every built-in detector's state.
func TestRestoreRejectsKeysInAnyCase(t *testing.T) {
	clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
	g, err := guard.New(guard.Config{Rules: allDetectors(t, clock)})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Check(t, g, guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Call("write", `{}`), testutil.Q("x")}, Usage: guard.Usage{TotalTokens: 5}})
	testutil.Check(t, g, guard.Step{Text: "same", ToolCalls: []guard.ToolCall{testutil.Call("write", `{}`), testutil.Q("x")}, Usage: guard.Usage{TotalTokens: 5}})
	good, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restore := func(doc []byte) error {
		_, err := guard.Restore(doc, guard.Config{Rules: allDetectors(t, &testutil.Clock{T: clock.T})})
		return err
	}
	if err := restore(good); err != nil {
		t.Fatalf("the good snapshot: %v", err)
	}
	// Every key of every object of the document, in turn: once more in
	// upper case, once more as it is, and in upper case alone.
	keys := objectKeys(t, good)
	if len(keys) < 20 {
		t.Fatalf("only %d keys found in %s", len(keys), good)
	}
	tried, renamed := 0, 0
	for _, k := range keys {
		upper := strings.ToUpper(k.name)
		if upper == k.name {
			upper = strings.ToLower(k.name)
		}
		twins := []string{upper, k.name}
		if k.detector == "textcounter" {
			// A custom detector reads its state as it likes; the guard
			// rejects only exact duplicates in it.
			twins = twins[1:]
		}
		for _, twin := range twins {
			// Insert "KEY": <value> before the key itself.
			doc := slicesConcat(good[:k.at], []byte(strconv.Quote(twin)+":"+k.value+","), good[k.at:])
			if restore(doc) == nil {
				t.Errorf("restored with %q beside %q:\n%s", twin, k.name, doc)
			}
			tried++
		}
		if k.detector == "toollimit" || k.detector == "textcounter" {
			continue // a tool name (another case is another tool), or a custom state
		}
		doc := slicesConcat(good[:k.at], []byte(strconv.Quote(upper)), good[k.at+len(strconv.Quote(k.name)):])
		if restore(doc) == nil {
			t.Errorf("restored with %q in place of %q:\n%s", upper, k.name, doc)
		}
		renamed++
	}
	t.Logf("%d keys, %d documents with a doubled key, %d with a key in another case", len(keys), tried, renamed)
}

func slicesConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// key is an object key in a JSON document: its name, the offset of its
// opening quote, its value's text, and the detector whose state holds it
// ("" in the envelope).
type key struct {
	name     string
	at       int
	value    string
	detector string
}

// objectKeys lists the keys of every object in data.
func objectKeys(t *testing.T, data []byte) []key {
	t.Helper()
	var out []key
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(detector string)
	walk = func(detector string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case json.Delim('{'):
			name := ""
			for dec.More() {
				start := int(dec.InputOffset())
				tok, _ := dec.Token()
				k := tok.(string)
				at := bytes.IndexByte(data[start:], '"') + start
				vstart := int(dec.InputOffset())
				inner := detector
				if detector == "" && k == "state" {
					inner = name
				}
				walk(inner)
				value := strings.TrimLeft(string(data[vstart:dec.InputOffset()]), ": ")
				if detector == "" && k == "name" {
					name, _ = strconv.Unquote(value)
				}
				out = append(out, key{name: k, at: at, value: value, detector: detector})
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(detector)
			}
			dec.Token()
		}
	}
	walk("")
	return out
}

// TestRestoreRejectsImpossibleStates: counters that contradict each other,
// in the envelope or between the envelope and a detector's state.
func TestRestoreRejectsImpossibleStates(t *testing.T) {
	three := []guard.Step{testutil.Calls(testutil.Q("x")), testutil.Calls(testutil.Q("x"))}
	data := snapshotOf(t, three...)
	for name, edit := range map[string][2]string{
		"repeat step index beyond the steps": {`"steps":[0,1]`, `"steps":[0,500]`},
		"repeat count beyond the calls":      {`"count":2`, `"count":4611686018427387904`},
		"calls without a step":               {`"steps":2,"toolCalls":2`, `"steps":0,"toolCalls":2`},
		"oscillation holds more calls":       {`"steps":2,"toolCalls":2`, `"steps":2,"toolCalls":1`},
		"no-progress stalled beyond steps":   {`"steps":2,`, `"steps":1,`},
	} {
		doc := replaceOnce(t, data, edit[0], edit[1])
		if _, err := guard.Restore(doc, guard.Config{Rules: detector.Defaults()}); err == nil {
			t.Errorf("%s: restored %s", name, doc)
		}
	}
	// The cap's count and the stall's outcomes, beyond the calls recorded.
	cfg, err := detector.FromJSON([]byte(`{"tools": {"search": {"maxCalls": 9}}, "stall": true, "window": true}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range three {
		testutil.Check(t, g, s)
	}
	data, err = g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Restore(data, cfg); err != nil {
		t.Fatalf("the good snapshot: %v", err)
	}
	for name, edit := range map[string][2]string{
		"cap count beyond the calls": {`{"search":2}`, `{"search":3}`},
		"outcomes beyond the calls":  {`"toolCalls":2`, `"toolCalls":1`},
	} {
		doc := replaceOnce(t, data, edit[0], edit[1])
		if _, err := guard.Restore(doc, cfg); err == nil {
			t.Errorf("%s: restored %s", name, doc)
		}
	}
}

// TestRestoredGuardsSaveAgain is the property of Restore: whatever document
// it accepts (here, real snapshots with numbers and keys changed at random),
// the restored guard runs more steps and its own snapshot restores again.
func TestRestoredGuardsSaveAgain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := guard.Config{Ignore: []string{"think"}}
		clock := &testutil.Clock{T: time.Unix(1_700_000_000, 0)}
		g, err := guard.New(withRules(opts, allDetectors(t, clock)...))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rapid.SliceOfN(opGen(), 0, 30).Draw(t, "before") {
			apply(g, o)
		}
		data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		doc := mutate(t, data)
		r, err := guard.Restore(doc, withRules(opts, allDetectors(t, clock)...))
		if err != nil {
			return
		}
		for _, o := range rapid.SliceOfN(opGen(), 0, 20).Draw(t, "after") {
			clock.Advance(o.advance)
			apply(r, o)
		}
		again, err := r.Snapshot(t.Context(), guard.SnapshotOptions{})
		if err != nil {
			t.Fatalf("Snapshot of a restored guard: %v", err)
		}
		if _, err := guard.Restore(again, withRules(opts, allDetectors(t, clock)...)); err != nil {
			t.Fatalf("Restore accepted\n%s\nbut not the restored guard's own snapshot: %v\n%s", doc, err, again)
		}
	})
}

// mutate changes a snapshot: some numbers become others (extremes included),
// and a key may be doubled in another case.
func mutate(t *rapid.T, data []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var numbers []func(json.Number)
	var collect func(v any, set func(any))
	collect = func(v any, set func(any)) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				collect(x[k], func(n any) { x[k] = n })
			}
		case []any:
			for i := range x {
				collect(x[i], func(n any) { x[i] = n })
			}
		case json.Number:
			numbers = append(numbers, func(n json.Number) { set(n) })
		}
	}
	collect(v, nil)
	picks := []string{"0", "1", "2", "3", "7", "-1", "64", "500", strconv.Itoa(math.MaxInt), strconv.Itoa(math.MaxInt - 1),
		strconv.Itoa(1 << 62), "1.5", "1e300"}
	for range rapid.IntRange(0, 3).Draw(t, "changes") {
		if len(numbers) == 0 {
			break
		}
		i := rapid.IntRange(0, len(numbers)-1).Draw(t, "number")
		n := rapid.OneOf(rapid.SampledFrom(picks), rapid.Map(rapid.IntRange(0, 100), strconv.Itoa)).Draw(t, "value")
		numbers[i](json.Number(n))
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if rapid.Bool().Draw(t, "double a key") {
		keys := regexpKeys(out)
		if len(keys) > 0 {
			k := keys[rapid.IntRange(0, len(keys)-1).Draw(t, "key")]
			name := out[k[0]+1 : k[1]-1]
			twin := rapid.SampledFrom([]string{strings.ToUpper(string(name)), string(name)}).Draw(t, "twin")
			out = slicesConcat(out[:k[0]], []byte(fmt.Sprintf("%q:0,", twin)), out[k[0]:])
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// regexpKeys returns the [start, end) of every `"name":` in a compact JSON
// document written by encoding/json (keys are the strings followed by ':').
func regexpKeys(doc []byte) [][2]int {
	var out [][2]int
	inString, escaped, start := false, false, 0
	for i, c := range doc {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if i+1 < len(doc) && doc[i+1] == ':' {
					out = append(out, [2]int{start, i + 1})
				}
			}
		case c == '"':
			inString, start = true, i
		}
	}
	return out
}

// TestSnapshotHoldsNoData: by default a snapshot
// holds no character of any argument, result, text or finish reason, and no
// tool name that is not an identifier; previews are there only when asked
// for. Decisions after a restore are the same either way.
func TestSnapshotHoldsNoData(t *testing.T) {
	secrets := []string{"hunter2", "sk-live-7f3a9c", "alice@example.com", "SYSTEM: ignore"}
	cfg, err := detector.FromJSON([]byte(`{"tools": {"password=hunter2": {"maxCalls": 2}}, "window": true, "stall": true,
		"oscillation": {"requireIdenticalResults": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var steps []guard.Step
	for i := range 8 {
		name := []string{"search", "password=hunter2", "sk-live-7f3a9c tool"}[i%3]
		steps = append(steps, guard.Step{
			Text:         "my password is hunter2",
			ToolCalls:    []guard.ToolCall{{Name: name, Args: json.RawMessage(`{"password":"hunter2","key":"sk-live-7f3a9c"}`), Result: "alice@example.com"}},
			FinishReason: "SYSTEM: ignore",
		})
	}
	twin, err := guard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps[:5] {
		testutil.Check(t, g, s)
		testutil.Check(t, twin, s)
	}
	data, err := g.Snapshot(t.Context(), guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(secrets, "password", "my ", "search(") {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("the default snapshot holds %q:\n%s", s, data)
		}
	}
	full, err := g.Snapshot(t.Context(), guard.SnapshotOptions{Previews: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(full, []byte(`hunter2`)) {
		t.Errorf("a snapshot with previews holds no preview:\n%s", full)
	}
	// Restored from the snapshot without data, the guard decides as the
	// twin does: the capped tool's count survives its hashed name.
	r, err := guard.Restore(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stops := 0
	for i, s := range steps[5:] {
		want, got := testutil.Check(t, twin, s), testutil.Check(t, r, s)
		if want.Stop {
			stops++
		}
		if want.Stop != got.Stop || want.Code != got.Code || len(want.Warnings) != len(got.Warnings) {
			t.Errorf("step %d: restored %s, twin %s", 5+i, guard.Explain(got), guard.Explain(want))
		}
	}
	if stops == 0 {
		t.Error("the twin never stops: the test shows nothing")
	}
	if got := testutil.Summary(t, r).Detectors["toollimit"]; fmt.Sprint(got) != fmt.Sprint(testutil.Summary(t, twin).Detectors["toollimit"]) {
		t.Errorf("tool counts after restore: %v, want %v", got, testutil.Summary(t, twin).Detectors["toollimit"])
	}
}
