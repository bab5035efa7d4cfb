package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestREADME runs every command that README.md and docs/*.md show with its
// output (a block whose first line is "$ loopguard ..."), from the
// repository's root, and compares what it prints with what the file says,
// byte for byte. A block that ends in "..." shows the start of the output
// only.
func TestREADME(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md") // in lexical order
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../../README.md"}, files...)
	type shown struct {
		file string // relative to the repository's root
		line int
		args []string
		out  string
	}
	var cases []shown
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.ToSlash(strings.TrimPrefix(f, "../../"))
		sc := bufio.NewScanner(strings.NewReader(string(text)))
		inBlock, n := false, 0
		var cur *shown
		var out strings.Builder
		for sc.Scan() {
			n++
			line := sc.Text()
			switch {
			case !inBlock && strings.HasPrefix(line, "```"):
				inBlock = true
			case inBlock && line == "```":
				inBlock = false
				if cur != nil {
					cur.out = out.String()
					cases = append(cases, *cur)
					cur = nil
				}
			case inBlock && cur == nil && out.Len() == 0 && strings.HasPrefix(line, "$ loopguard "):
				cur = &shown{file: name, line: n, args: strings.Fields(strings.TrimPrefix(line, "$ loopguard "))}
			case inBlock && cur != nil:
				out.WriteString(line + "\n")
			}
			if !inBlock {
				out.Reset()
			}
		}
	}
	if len(cases) < 2 {
		t.Fatalf("%d commands with their output in README.md and docs/*.md", len(cases))
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, c := range cases {
		res := runCmd(t, "", c.args...)
		got, want := res.stdout, c.out
		if head, cut := strings.CutSuffix(want, "...\n"); cut {
			want = head
			got = got[:min(len(got), len(head))]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s:%d: loopguard %s prints (-%s +got):\n%s", c.file, c.line, strings.Join(c.args, " "), c.file, diff)
		}
		if c.args[0] == "audit" && !strings.Contains(strings.Join(c.args, " "), "--format json") {
			checkWidth(t, res.stdout)
		}
	}
}
