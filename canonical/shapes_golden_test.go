package canonical

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The sums of big values, past MaxValues, computed before hashing was made
// linear (issue 12 §4), when the value limit was applied by decoding JSON
// text with encoding/json and reading the Go value in canonical order.
// Sums are stored in snapshots: they must never change.

// shapeText returns the JSON texts of the golden tests.
func shapeText(name string) []byte {
	switch name {
	case "object1M":
		return objectShape(1_000_000, 0)
	case "object300kdup":
		return objectShape(300_000, 5)
	case "array1M":
		return arrayShape(1_000_000)
	case "deep":
		return deepShape(100_000)
	case "wide6":
		return wideShape(6)
	case "string16M":
		return stringShape(16 << 20)
	case "mixed":
		// The cut falls in "b", after the 100,001 values of "a".
		return []byte(`{"b":` + string(arrayShape(150_000)) + `,"a":` + string(objectShape(100_000, 0)) + `,"c":"end"}`)
	}
	panic(name)
}

// TestShapeSums: HashJSON of each text, and Hash of the value it decodes
// into, have the sums they had.
func TestShapeSums(t *testing.T) {
	skipBig(t)
	for name, want := range map[string]string{
		"object1M":      "bd6bcd4ae881fe827d07d721263e6209",
		"object300kdup": "87b1b651d86b39bd2d563d68777aff34",
		"array1M":       "cc195c3edbd6b5bfbc7299330e61c1a1",
		"deep":          "bd3c008616d04840933f0b3578eb7a4f",
		"wide6":         "97c397a4ad8557d053345dfb5a367d92",
		"string16M":     "efaa4ab4621af7e510eec5b780a2fb46",
		"mixed":         "5635b48102c741ac3c53082ffb9efd56",
	} {
		src := shapeText(name)
		if got := HashJSON(src).String(); got != want {
			t.Errorf("HashJSON(%s) = %s, want %s", name, got, want)
		}
		if got := Hash(decode(src)).String(); got != want {
			t.Errorf("Hash(decoded %s) = %s, want %s", name, got, want)
		}
	}
}

// TestShapeTexts: Transform (never cut) and Append (cut) print what they
// printed; HashBytes of their output is compared.
func TestShapeTexts(t *testing.T) {
	skipBig(t)
	for name, want := range map[string]string{
		"object300kdup": "22b2a3ba76322439c6f98d3e3a02838c",
		"wide6":         "b676e851ebc3677a3f622815d3de3335",
		"deep":          "0c03c7892725ed961cc7d62812e6e151",
	} {
		out, err := Transform(shapeText(name))
		if got := HashBytes(out).String(); err != nil || got != want {
			t.Errorf("Transform(%s): sum %s, %v; want %s", name, got, err, want)
		}
	}
	out, err := Transform(stringShape(1 << 20))
	if got := HashBytes(out).String(); err != nil || got != "eaad10bb2d819953225cdab4eb5a0f17" {
		t.Errorf("Transform(string1M): sum %s, %v", got, err)
	}
	for name, want := range map[string]string{
		"object300kdup": "aa685142cb8280ad9a17cc94795880f0",
		"wide6":         "edd825786b411ecbdbfa4f45b3e1bad4",
		"mixed":         "ceb55e6100909a327827524b99eb10f3",
	} {
		if got := HashBytes(Append(nil, decode(shapeText(name)))).String(); got != want {
			t.Errorf("Append(decoded %s): sum %s, want %s", name, got, want)
		}
	}
	if got := HashBytes(Append(nil, intMap())).String(); got != "2c4b7390e7d9e755811841b4988d6c06" {
		t.Errorf("Append(intMap): sum %s", got)
	}
}

// shapeTextKey names map keys through MarshalText: keys n and n+250,000
// have the same name (and the same value, so that the sum does not depend
// on which of them the map's order puts last).
type shapeTextKey struct{ n int }

func (k shapeTextKey) MarshalText() ([]byte, error) {
	return fmt.Appendf(nil, "t%d", k.n%250_000), nil
}

func intMap() map[int]string {
	m := map[int]string{}
	for i := range 300_000 {
		m[i*7] = "x"
	}
	return m
}

// TestShapeSumsGo: Go values past MaxValues read through reflection, or
// holding JSON text, have the sums they had.
func TestShapeSumsGo(t *testing.T) {
	skipBig(t)
	textKeys := map[shapeTextKey]int{}
	for i := range 300_000 {
		textKeys[shapeTextKey{i}] = i % 250_000 % 3
	}
	type holder struct {
		Z int            `json:"z"`
		M map[int]string `json:"m"`
		A []any          `json:"a"`
	}
	var chain any = "bottom" // 9,000 pointers to pointers
	for range 9_000 {
		c := chain
		chain = &c
	}
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"intMap", intMap(), "a2db98e3a9a16f05002b55861777c3b2"},
		{"textKeys", textKeys, "154c770bde35eefc223bd2640f64e7ab"},
		{"holder", holder{1, intMap(), decode(arrayShape(1000)).([]any)}, "ba4315441658c45e0f7d78cc513e74ff"},
		{"empties", make([]struct{}, 1<<40), "d7277289c2629bbfa145de4c8165f35a"},
		{"chain", chain, "66c621bf6b03f5fe3d63960e801f2570"},
		{"rawInMap", map[string]any{"r": json.RawMessage(objectShape(300_000, 5)), "a": 1}, "935f53137399ea487eed9859bb5e45b0"},
	} {
		if got := Hash(c.v).String(); got != c.want {
			t.Errorf("Hash(%s) = %s, want %s", c.name, got, c.want)
		}
	}
}

// skipBig skips a test of big inputs with -short, and under the race
// detector, which makes them take minutes (they run no goroutines).
func skipBig(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("big inputs: skipped with -short and under the race detector")
	}
}
