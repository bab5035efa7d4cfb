package escape

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestString pins the escapes of the one policy.
func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, café, 日本", "plain text, café, 日本"},
		{"", ""},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"nul\x00", `nul\x00`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"bell\x07 del\x7f", `bell\a del\x7f`},
		{"c1 \u0085 \u009b", `c1 \u0085 \u009b`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`},
		{"marks \u200e\u200f", `marks \u200e\u200f`},
		{"lines \u2028 \u2029", `lines \u2028 \u2029`},
		{"zero\u200bwidth \ufeffbom", `zero\u200bwidth \ufeffbom`},
		{"non-characters \ufffe\uffff", `non-characters \ufffe\uffff`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"replacement \ufffd kept", "replacement \ufffd kept"},
		{`back\slash \n "stays"`, `back\slash \n "stays"`},
		// Joiners are format characters too: an emoji sequence shows
		// its parts.
		{"emoji 👩‍💻", `emoji 👩\u200d💻`},
		{"accents e\u0301 and 👍🏽", "accents e\u0301 and 👍🏽"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNothingHostileLeft checks every rune of the first planes, and every
// byte: what String returns holds no control or format character, no
// separator but the space, and is valid UTF-8.
func TestNothingHostileLeft(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r < 0x30000; r++ {
		b.WriteRune(r)
	}
	for c := 0x80; c < 0x100; c++ {
		b.WriteByte(byte(c))
	}
	out := String(b.String())
	if !utf8.ValidString(out) {
		t.Fatal("not valid UTF-8")
	}
	for _, r := range out {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp) || r != ' ' && unicode.IsSpace(r) {
			t.Errorf("%U is left as it is", r)
		}
	}
}

// TestAppendCuts checks the limit: never inside a character or an escape.
func TestAppendCuts(t *testing.T) {
	for _, tt := range []struct {
		in    string
		quote bool
		limit int
		want  string
	}{
		{"abc", false, 3, "abc"},
		{"abcd", false, 3, "abc"},
		{"ab\x1b", false, 5, "ab"},
		{"ab\x1b", false, 6, `ab\x1b`},
		{"aé", false, 2, "a"},
		{"aé", false, 3, "aé"},
		{`a"b`, true, 3, `a\"`},
		{`a"b`, false, 3, `a"b`},
		{"a\xff", false, 4, "a"},
		{"a\xff", false, 5, `a\xff`},
	} {
		if got := string(Append(nil, tt.in, tt.quote, tt.limit)); got != tt.want {
			t.Errorf("Append(%q, %t, %d) = %q, want %q", tt.in, tt.quote, tt.limit, got, tt.want)
		}
	}
}

// TestStringNoCopy checks that text with nothing to escape is not copied.
func TestStringNoCopy(t *testing.T) {
	s := strings.Repeat("plain café ", 100)
	if n := testing.AllocsPerRun(100, func() { String(s) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
