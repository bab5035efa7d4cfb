package core

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

// TestFailureTextIDs pins the normalised text of failures that carry ids
// (formats from the providers' and tools' public error reports) and of
// text that must stay as it is: words that happen to be hex, lint codes,
// key=value, flags.
func TestFailureTextIDs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"service unavailable (request 8966d0fb-0628-45fb-9593-f629717be3ca)", "service unavailable (request #)"},
		{"Please include the request ID req_1332ed8a813a4caaa2f0f3c55a6a68cb in your message.",
			"please include the request id req_# in your message."},
		{"(Please include the request ID 500d9fff2057e4af93a280f67002c342 in your message.)",
			"(please include the request id # in your message.)"},
		{`"request_id":"req_011CZAZuCr9hV42toiCdnnKB"`, `"request_id":"req_#"`},
		{"'request-id': 'req_01RCc7MbLyQNtGKzBTv8VCep'", "'request-id': 'req_#'"},
		{"call_Vbc0ED1XxIkc4yG8l2WdPb2a chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012 run_abcdefghijklmnopqrstuv5x",
			"call_# chatcmpl-# run_#"},
		{"toolu_01A09q90qw90lq917835lq9 msg_01XFDUDYJgAACzvnptvVoYEL", "toolu_# msg_#"},
		{"<RequestId>7BMJM8PWV1J1FNEH</RequestId>", "<requestid>#</requestid>"},
		{"<RequestId>4442587FB7D0A2F9</RequestId>", "<requestid>#</requestid>"},
		{"<HostId>TW2qeJptLnLL7+0pKGRgdR+t5T/GKN362KnA1JuYa83s+Y0YsVEeIxGoiUK+pCQIRwhNsDNC1ws=</HostId>", "<hostid>#/#</hostid>"},
		{"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "traceparent: #"},
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8", "root=#;parent=#"},
		{"X-GitHub-Request-Id: CF2E:3A7B:1C3F4A:1E2B5C:65A1B2C3", "x-github-request-id: #:#:#:#:#"},
		{"cf-ray 8e695a03eed4f9fd-SJC, chunk 8f3a, commit 881e50b", "cf-ray #-sjc, chunk #, commit #"},
		// Not ids.
		{"dead beef face add cafe decade", "dead beef face add cafe decade"},
		{"E501 F401 W291 line 4 col 12 1e10", "e# f# w# line # col # #e#"},
		{"x=1 a+b a==b --no-verify -x tmp-foo req_name call_back", "x=# a+b a==b --no-verify -x tmp-foo req_name call_back"},
		{"utf8 sha256sum windows1252 Python3Lexer base64", "utf# sha#sum windows# python#lexer base#"},
		{"cannot open /tmp/tmpa1b2c3/conftest.py", "cannot open /tmp/tmp#/conftest.py"},
	}
	for _, tt := range tests {
		if got := string(appendFailureText(nil, tt.in, nil)); got != tt.want {
			t.Errorf("appendFailureText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestFailureTextWords: text without digits is only lower-cased, with its
// white space collapsed, whatever its letters and separators (no word is
// taken for an id without a digit).
func TestFailureTextWords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom([]string{"a", "F", "dead", "face", "z", "Q", "-", "_", "+", "=", ".", "/", " ", ":"})).Draw(t, "parts")
		s := strings.Join(parts, "")
		got := string(appendFailureText(nil, s, nil))
		want := strings.Join(strings.Fields(strings.ToLower(s)), " ")
		if got != want {
			t.Fatalf("appendFailureText(%q) = %q, want %q", s, got, want)
		}
	})
}

// failureSample is a failure's text as an API tool returns it: a message, a
// JSON error with a request id, and a short stack.
var failureSample = `Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CZAZuCr9hV42toiCdnnKB"}
    at makeRequest (/srv/app/node_modules/@anthropic-ai/sdk/core.mjs:347:30)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
request 8966d0fb-0628-45fb-9593-f629717be3ca failed after 3 retries; see https://status.example.com/incidents/8f3a`

// tracebackSample is a failure's text as a code tool returns it, without
// ids: a Python traceback.
var tracebackSample = `Traceback (most recent call last):
  File "/repo/src/app/main.py", line 42, in <module>
    main()
  File "/repo/src/app/main.py", line 37, in main
    result = compute_value(config["input_path"], retries=3)
  File "/repo/src/app/compute.py", line 118, in compute_value
    raise ValueError(f"cannot parse {path!r}: unexpected token at line {n}")
ValueError: cannot parse 'data/input_2024.csv': unexpected token at line 7`

func BenchmarkFailureText(b *testing.B) {
	for _, bc := range []struct{ name, text string }{{"ids", failureSample}, {"traceback", tracebackSample}} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]byte, 0, 1024)
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				dst = appendFailureText(dst[:0], bc.text, nil)
			}
		})
	}
}
