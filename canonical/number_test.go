package canonical

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// numberBits returns the float64 that HashJSON reads from the JSON number
// text, and whether it is valid.
func numberBits(text string) (uint64, bool) {
	var e encoder
	e.maxValues = math.MaxInt
	i, ok := e.jsonNumber([]byte(text), 0)
	if !ok || i != len(text) || len(e.buf) != 9 || e.buf[0] != tagNumber {
		return 0, false
	}
	var u uint64
	for k := 8; k >= 1; k-- {
		u = u<<8 | uint64(e.buf[k])
	}
	return u, true
}

// checkNumber compares what jsonNumber reads from text with
// strconv.ParseFloat.
func checkNumber(t interface{ Fatalf(string, ...any) }, text string) {
	f, err := strconv.ParseFloat(text, 64)
	got, ok := numberBits(text)
	if err != nil {
		if ok {
			t.Fatalf("%s: read as %v, but ParseFloat fails: %v", text, math.Float64frombits(got), err)
		}
		return
	}
	want := math.Float64bits(f)
	if f == 0 {
		want = 0
	}
	if !ok || got != want {
		t.Fatalf("%s: read as %v (%#x, %v), want %v (%#x)", text, math.Float64frombits(got), got, ok, f, want)
	}
}

// TestPropertyNumbers: numbers of any digits, point and exponent are read
// as strconv.ParseFloat reads them, bit for bit.
func TestPropertyNumbers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		intDigits := rapid.StringMatching(`0|[1-9][0-9]{0,24}`).Draw(t, "int")
		text := intDigits
		if rapid.Bool().Draw(t, "neg") {
			text = "-" + text
		}
		if rapid.Bool().Draw(t, "frac") {
			text += "." + rapid.StringMatching(`0{0,25}[0-9]{1,25}`).Draw(t, "frac")
		}
		if rapid.Bool().Draw(t, "exp") {
			text += rapid.SampledFrom([]string{"e", "E", "e+", "e-", "E-"}).Draw(t, "e") +
				strconv.Itoa(rapid.IntRange(0, 400).Draw(t, "x"))
		}
		checkNumber(t, text)
	})
}

// TestNumbersNearTies: decimals of 16 to 19 digits, the hardest to round,
// with exponents around those read here, and halfway cases between
// doubles.
func TestNumbersNearTies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	for range n {
		digits := 16 + r.IntN(4)
		var b strings.Builder
		b.WriteByte(byte('1' + r.IntN(9)))
		for range digits - 1 {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		mant := b.String()
		point := r.IntN(digits + 1)
		text := mant[:point]
		if point == 0 {
			text = "0"
		}
		if point < digits {
			text += "." + mant[point:]
		}
		if r.IntN(2) == 0 {
			text += "e" + strconv.Itoa(r.IntN(50)-25)
		}
		checkNumber(t, text)
	}
	// Exactly halfway between two doubles, and just either side.
	for range n / 10 {
		f := math.Float64frombits(r.Uint64()>>2 + 0x3C00000000000000) // 1e-19 to 1e19
		next := math.Nextafter(f, math.Inf(1))
		for _, text := range []string{
			strconv.FormatFloat((f+next)/2, 'e', 25, 64), // not exact, but near
			strconv.FormatFloat(f, 'e', 18, 64),
			strconv.FormatFloat(f, 'f', -1, 64),
		} {
			checkNumber(t, text)
		}
	}
	for _, text := range []string{
		"9007199254740993", "9007199254740992.5", "18446744073709551615", "18446744073709551616",
		"1.8446744073709551615e19", "0.1", "0.30000000000000004", "123456789012345678e-19",
		"9999999999999999999", "9999999999999999999e19", "1e-19", "1e19", "1e23", "1e37", "1e38",
		"4.9406564584124654e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "1e309",
		"0.000000000000000000001", "100000000000000000000000", "-0.0", "0e1000000000000",
	} {
		checkNumber(t, text)
	}
}
