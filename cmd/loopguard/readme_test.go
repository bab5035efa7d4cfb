package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestREADME runs every command the README shows with its output (a block
// whose first line is "$ loopguard ..."), from the repository's root, and
// compares what it prints with what the README says, byte for byte. A block
// that ends in "..." shows the start of the output only.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		line int
		args []string
		out  string
	}
	var cases []shown
	sc := bufio.NewScanner(strings.NewReader(string(readme)))
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
			cur = &shown{line: n, args: strings.Fields(strings.TrimPrefix(line, "$ loopguard "))}
		case inBlock && cur != nil:
			out.WriteString(line + "\n")
		}
		if !inBlock {
			out.Reset()
		}
	}
	if len(cases) < 2 {
		t.Fatalf("%d commands with their output in README.md", len(cases))
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
			t.Errorf("README.md:%d: loopguard %s prints (-README +got):\n%s", c.line, strings.Join(c.args, " "), diff)
		}
		if c.args[0] == "audit" && !strings.Contains(strings.Join(c.args, " "), "--format json") {
			checkWidth(t, res.stdout)
		}
	}
}
