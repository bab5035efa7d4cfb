package guard

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// normaliseTextByRune is normaliseText as it was written first, rune by
// rune: the reference of its ASCII fast path.
func normaliseTextByRune(dst []byte, s string) []byte {
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && len(dst) > 0 {
			dst = append(dst, ' ')
		}
		space = false
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// TestNormaliseTextFastPath: the byte loop gives the same text as the rune
// loop, for any bytes (invalid UTF-8, NEL and NBSP, which are spaces
// outside ASCII, upper-case letters of any script) and any prefix in dst.
func TestNormaliseTextFastPath(t *testing.T) {
	for _, s := range []string{"", " ", "A  b\t\nC", "\u0085x\u00a0Y", "\xff\xfeA", "ÀÉ ΣΑΣ", " lead and trail \r\n"} {
		if got, want := string(normaliseText(nil, s)), string(normaliseTextByRune(nil, s)); got != want {
			t.Errorf("normaliseText(%q) = %q, want %q", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]string{"a", "Z", " ", "\t", "\n", "\v", "\f", "\r", "\u0085", "\u00a0", "\u2003", "É", "ß", "\xff", "\xc3", "İ", "7", "."})
		parts := rapid.SliceOf(alphabet).Draw(t, "parts")
		s := ""
		for _, p := range parts {
			s += p
		}
		prefix := []byte(rapid.SampledFrom([]string{"", "x"}).Draw(t, "prefix"))
		got := normaliseText(append([]byte(nil), prefix...), s)
		want := normaliseTextByRune(append([]byte(nil), prefix...), s)
		if string(got) != string(want) {
			t.Fatalf("normaliseText(%q, %q) = %q, want %q", prefix, s, got, want)
		}
	})
}

// sampleText is 500 characters of an agent's text, in ASCII.
var sampleText = strings.Repeat("I will search for the Loopguard docs, then read\tthe README.\n", 9)

func BenchmarkNormaliseText(b *testing.B) {
	dst := make([]byte, 0, 1024)
	b.SetBytes(int64(len(sampleText)))
	for b.Loop() {
		dst = normaliseText(dst[:0], sampleText)
	}
}

func BenchmarkNormaliseTextByRune(b *testing.B) {
	dst := make([]byte, 0, 1024)
	b.SetBytes(int64(len(sampleText)))
	for b.Loop() {
		dst = normaliseTextByRune(dst[:0], sampleText)
	}
}
