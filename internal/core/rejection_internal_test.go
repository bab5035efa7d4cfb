package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestListingLinesDropped pins which lines of a failure's text are a
// numbered listing (dropListingLines): two numbered lines in a row are, one
// is not, and neither are lines whose numbers do not follow each other or
// whose mark is another. The listings are those of real runs
// (testdata/traces: OpenHands' edit_file_by_replace in
// openhands-resolver-darkmode, SWE-agent's edit in sweagent-gpt4-pydicom-1458,
// openhands-aci's cat -n in openhands-llama4-ponyc-4588).
func TestListingLinesDropped(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"OpenHands' N| listing",
			"[This is how your edit would have looked if applied]\n-----\n(this is the beginning of the file)\n1|\n2|import React from 'react'\n3|  }\n(this is the end of the file)\n-----",
			"[This is how your edit would have looked if applied]\n-----\n(this is the beginning of the file)\n(this is the end of the file)\n-----"},
		{"SWE-agent's N: window",
			"(281 more lines above)\n282:            \"Unable to convert the pixel data\"\n283:        )\n284:\n(89 more lines below)",
			"(281 more lines above)\n(89 more lines below)"},
		{"cat -n's N\\t lines",
			"Here's the result of running `cat -n` on /w/a.c:\n   316\t    case TK_MATCH_DONTCARE:\n   317\t      return pattern_type;\n",
			"Here's the result of running `cat -n` on /w/a.c:\n"},
		{"a listing at the end of the text, without a newline", "error\n9|a\n10|b", "error\n"},
		{"a listing that is the whole text", "1|a\n2|b", ""},
		{"two listings", "applied:\n1|a\n2|b\noriginal:\n1|c\n2|d\nend", "applied:\noriginal:\nend"},
		// The boundary: two lines in a row make a listing, one does not.
		{"one numbered line stays", "x\n5|only\ny", "x\n5|only\ny"},
		{"two numbered lines go", "x\n5|a\n6|b\ny", "x\ny"},
		{"a number that does not follow starts a new run", "x\n5|a\n7|b\ny", "x\n5|a\n7|b\ny"},
		{"the line after a gap starts a run of its own", "5|a\n7|b\n8|c", "5|a\n"},
		{"another mark breaks the run", "1|a\n2:b\n3\tc", "1|a\n2:b\n3\tc"},
		// Numbered lines that are no listing.
		{"a linter's line:column lines stay",
			"/src/a.js\n  12:3  error  'x' is defined but never used  no-unused-vars\n  13:1  error  Unexpected console statement  no-console",
			"/src/a.js\n  12:3  error  'x' is defined but never used  no-unused-vars\n  13:1  error  Unexpected console statement  no-console"},
		{"timestamps stay", "12:03:44 ERROR a\n12:03:45 ERROR b", "12:03:44 ERROR a\n12:03:45 ERROR b"},
		{"grep -n's matches stay", "12:foo = 1\n40:foo = 2", "12:foo = 1\n40:foo = 2"},
		{"rustc's snippet lines stay", "4 |     let x: i32 = \"a\";\n5 |     x", "4 |     let x: i32 = \"a\";\n5 |     x"},
		{"a number alone stays", "1\n2\n3", "1\n2\n3"},
		{"ten digits are no line number", "1234567890|a\n1234567891|b", "1234567890|a\n1234567891|b"},
		{"no newline", "1|a", "1|a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, dropListingLines(tt.in)); diff != "" {
				t.Errorf("dropListingLines(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestListingLinesNoAllocation: a text without a listing is returned as it
// is.
func TestListingLinesNoAllocation(t *testing.T) {
	s := "Traceback (most recent call last):\n  File \"a.py\", line 3\n    x = (\nSyntaxError: '(' was never closed"
	if n := testing.AllocsPerRun(100, func() { _ = dropListingLines(s) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// The harnesses' rejections as they wrote them, in real runs of
// testdata/traces and in their sources.
const (
	// SWE-agent's tools/windowed_edit_linting/bin/edit (_LINT_ERROR_TEMPLATE).
	rejectionSWEAgent = "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.\n\nERRORS:\n- E999 IndentationError: unexpected indent\n\nThis is how your edit would have looked if applied\n"
	// OpenHands' edit_file_by_replace (openhands-resolver-darkmode, line 5).
	rejectionOpenHandsLint = "[Your proposed edit has introduced new syntax error(s). Please understand the errors and retry your edit command.]\n/workspace/src/App.tsx:22\n[This is how your edit would have looked if applied]\n"
	// openhands-aci's str_replace_editor (openhands-llama4-ponyc-4593,
	// line 24).
	rejectionOpenHandsACI = "ERROR:\nNo replacement was performed, old_str `return CommandParser._sub(cs, this)._parse_command(tokens, options, args, envsmap, opt_stop)` did not appear verbatim in /workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony."
	// Anthropic's text editor, as SWE-agent's tools/edit_anthropic runs it.
	rejectionMultiple = "No replacement was performed. Multiple occurrences of old_str `x = 1` in lines [3, 9]. Please ensure it is unique"
	// OpenHands' edit_file_by_replace (openhands-resolver-darkmode, line
	// 14).
	rejectionNoExactMatch = "[No exact match found in /workspace/src/PullRequestViewer.tsx for\n```\n\nimport React, { useState, useEffect } from 'react';\n```\n]"
	// CrewAI's task_repeated_usage (crewai-repeated-tool-usage-gpt4, line 3).
	rejectionCrewAI = "I tried reusing the same input, I must stop using this action input. I'll try something else instead.\n\n"
	// aider (aider-claude35-20240809-1724, line 3).
	rejectionAider = "Committing aider/commands.py before applying edits.\nCommit 566ac8d fix: Remove unnecessary else block in Commands.run_pager method\nThe LLM did not conform to the edit format.\nhttps://aider.chat/docs/troubleshooting/edit-errors.html\n# 1 SEARCH/REPLACE block failed to match!\n\n## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in aider/commands.py\n<<<<<<< SEARCH\n"
)

func rejectionJSON(s string) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestRejects(t *testing.T) {
	phrase := "No replacement was performed"
	tests := []struct {
		name   string
		result any
		want   bool
	}{
		{"SWE-agent's linting editor", rejectionSWEAgent, true},
		{"OpenHands' linting editor, in brackets", rejectionOpenHandsLint, true},
		{"openhands-aci's editor, after ERROR:", rejectionOpenHandsACI, true},
		{"Anthropic's editor, multiple occurrences", rejectionMultiple, true},
		{"OpenHands' no exact match, in brackets", rejectionNoExactMatch, true},
		{"aider, after its own lines", rejectionAider, true},
		{"CrewAI's repeated usage", rejectionCrewAI, true},
		{"CrewAI's repeated usage, as JSON text", rejectionJSON(rejectionCrewAI), true},
		{"CrewAI's phrase in a model's own words", "Thought: I tried reusing the same input, I must stop using this action input.", false},
		{"as JSON text of a string", rejectionJSON(rejectionOpenHandsLint), true},
		{"as JSON text, after a \\n escape", rejectionJSON(rejectionOpenHandsACI), true},
		{"as JSON text, aider's line after \\n escapes", rejectionJSON(rejectionAider), true},
		{"as JSON text, at the start of a string in an object",
			json.RawMessage(`{"content":[{"type":"text","text":"No replacement was performed, old_str ` + "`x`" + ` did not appear verbatim in /a.py."}]}`), true},
		{"as a []byte", []byte(rejectionAider), true},
		// Where a phrase does not start a line.
		{"in the middle of a line", "the tool said: No replacement was performed", false},
		{"quoted in code", "    raise ToolError(f\"No replacement was performed, old_str did not appear verbatim in {path}.\")", false},
		{"in a grep -n match", "editor.py:212:            'No replacement was performed, old_str'", false},
		{"after an escaped quote in JSON text", json.RawMessage(`"print(\"No replacement was performed\")"`), false},
		{"after an escaped backslash and n in JSON text", json.RawMessage(`"a\\nNo replacement was performed"`), false},
		{"after 4 spaces", "    " + phrase, true},
		{"after 5 spaces", "     " + phrase, false},
		{"after ## and a space", "## " + phrase, true},
		{"in another case", "no replacement was performed", false},
		{"cut short", phrase[:len(phrase)-1], false},
		// The first rejectionScanMax bytes are read.
		{"ending at the last byte read", strings.Repeat("x", rejectionScanMax-len(phrase)-1) + "\n" + phrase, true},
		{"ending a byte beyond", strings.Repeat("x", rejectionScanMax-len(phrase)) + "\n" + phrase, false},
		// Results that are not text are not read.
		{"a map", map[string]any{"output": rejectionOpenHandsACI}, false},
		{"a number", 42, false},
		{"nil", nil, false},
		{"an ordinary result", "Here's the result of running `cat -n` on /a.py:\n     1\tNo = 1\n", false},
	}
	for _, tt := range tests {
		if got := rejects(tt.result); got != tt.want {
			t.Errorf("%s: rejects = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRejectionPhrasesAnchored: each phrase's anchor is its first byte of
// rejectionAnchors, which the search looks for.
func TestRejectionPhrasesAnchored(t *testing.T) {
	for _, p := range rejectionPhrases {
		if i := strings.IndexAny(p.text, rejectionAnchors); i != p.anchor {
			t.Errorf("%q: anchor %d, but its first of %q is at %d", p.text, p.anchor, rejectionAnchors, i)
		}
		if !rejects(p.text) {
			t.Errorf("%q alone is no rejection", p.text)
		}
	}
	got := RejectionPhrases()
	got[0] = "changed"
	if RejectionPhrases()[0] == "changed" {
		t.Error("RejectionPhrases returns the package's own array")
	}
}

func TestRejectsNoAllocation(t *testing.T) {
	results := []any{rejectionAider, json.RawMessage(`{"hits":[{"title":"Result 1"}],"note":"Not Yet"}`), []byte(rejectionSWEAgent)}
	if n := testing.AllocsPerRun(100, func() {
		for _, r := range results {
			_ = rejects(r)
		}
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// BenchmarkRejects measures the search for a rejection in a result without
// one: the typical 300-byte JSON result of BenchmarkCheck, and 20 KB of
// text (of which 1,024 bytes are read).
func BenchmarkRejects(b *testing.B) {
	typical := json.RawMessage(`{"hits":[{"title":"Result 00000001","url":"https://docs.example.com/a/00000001"}],"total":1,"took_ms":12,"note":"` + strings.Repeat("x", 180) + `"}`)
	long := strings.Repeat("Collecting packages from index. Name: loopguard, Version: 1.0\n", 320)
	for _, bc := range []struct {
		name   string
		result any
	}{{"typical", typical}, {"text20k", long}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if rejects(bc.result) {
					b.Fatal("a rejection")
				}
			}
		})
	}
}
