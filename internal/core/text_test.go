package core_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	guard "github.com/loopguard/loopguard/internal/core"
)

func TestClean(t *testing.T) {
	long := strings.Repeat("a", guard.MaxNameLen)
	tests := []struct{ in, clean, quoted string }{
		{"search", "search", `"search"`},
		{"", "", `""`},
		{`say "hi"\`, `say "hi"\`, `"say \"hi\"\\"`},
		{"red\x1b[31m", `red\x1b[31m`, `"red\x1b[31m"`},
		{"a\nb\tc\r", `a\nb\tc\r`, `"a\nb\tc\r"`},
		{"del\x7f", `del\x7f`, `"del\x7f"`},
		{"csi\u009b2J", `csi\u009b2J`, `"csi\u009b2J"`},
		{"rtl\u202eexe.txt", `rtl\u202eexe.txt`, `"rtl\u202eexe.txt"`},
		{"zero\u200bwidth", `zero\u200bwidth`, `"zero\u200bwidth"`},
		{"bad\xff\xfe", `bad\xff\xfe`, `"bad\xff\xfe"`},
		{"héllo wörld", "héllo wörld", `"héllo wörld"`},
		// Cut to MaxNameLen bytes, never inside a character or an escape.
		{long, long, `"` + long + `"`},
		{long + "b", long, `"` + long + `"`},
		{long[:255] + "é", long[:255], `"` + long[:255] + `"`},
		{long[:254] + "\x1b", long[:254], `"` + long[:254] + `"`},
		{long[:252] + "\x1b", long[:252] + `\x1b`, `"` + long[:252] + `\x1b"`},
		{strings.Repeat("\x1b", 10<<20), strings.Repeat(`\x1b`, 64), `"` + strings.Repeat(`\x1b`, 64) + `"`},
	}
	for _, tt := range tests {
		if got := guard.Clean(tt.in); got != tt.clean {
			t.Errorf("Clean(%.40q) = %.300q, want %.300q", tt.in, got, tt.clean)
		}
		if got := guard.Quote(tt.in); got != tt.quoted {
			t.Errorf("Quote(%.40q) = %.300q, want %.300q", tt.in, got, tt.quoted)
		}
	}
}

// hostileText reports the first character of s that a terminal could act
// on, if any.
func hostileText(s string) (rune, bool) {
	for _, r := range s {
		if r == '\n' {
			continue // Explain's own line breaks
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return r, true
		}
	}
	return 0, false
}

// TestExplainAndLogValueEscape: whatever a detector puts in a verdict,
// Explain and LogValue print no character that a terminal could act on, and
// no more than 256 bytes of a reason or code, 4 KiB of a detail.
func TestExplainAndLogValueEscape(t *testing.T) {
	bad := "\x1b]0;pwned\x07\x1b[2J\u202e\u009b" + strings.Repeat("x\x1b", 5<<20)
	v := guard.Verdict{Stop: true, Reason: guard.Reason(bad), Code: bad, Detail: bad, Detector: "mine",
		Warnings: []guard.Warning{{Code: bad, Detail: bad}}}
	d := guard.Decision{Reason: guard.Reason(bad), Code: bad, Detail: bad, Detector: "mine", Warnings: v.Warnings}

	explain := guard.Explain(v)
	if r, ok := hostileText(explain); ok {
		t.Errorf("Explain prints %U", r)
	}
	if len(explain) > 3*guard.MaxNameLen+2*4096+200 {
		t.Errorf("Explain is %d bytes", len(explain))
	}
	for _, value := range []slog.LogValuer{v, d, guard.Event{Verdict: v}} {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("step", "v", value)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		var walk func(x any)
		walk = func(x any) {
			switch x := x.(type) {
			case map[string]any:
				for _, y := range x {
					walk(y)
				}
			case []any:
				for _, y := range x {
					walk(y)
				}
			case string:
				if r, ok := hostileText(x); ok {
					t.Errorf("LogValue of %T logs %U", value, r)
				}
				if len(x) > 4096 {
					t.Errorf("LogValue of %T logs %d bytes in one value", value, len(x))
				}
			}
		}
		walk(line)
		if buf.Len() > 16<<10 {
			t.Errorf("the log line of %T is %d bytes", value, buf.Len())
		}
	}
}
