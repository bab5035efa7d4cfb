package readme

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A block is one ```go block of the README.
type block struct {
	line int    // of its first line of code
	code string // as written
}

// goBlocks returns the ```go blocks of a Markdown text.
func goBlocks(t *testing.T, text string) []block {
	t.Helper()
	var blocks []block
	var cur *block
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{line: n + 1}
			b.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.code = b.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			b.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a Go block that does not end", cur.line-1)
	}
	return blocks
}

var adapterImport = regexp.MustCompile(`"github\.com/loopguard/loopguard/adapters/([a-z]+)"`)

// TestGoBlocks builds every Go block of README.md as a file of its own:
// imports included, nothing left to declare. A block that imports an
// adapter is built in that adapter's module, through the workspace. The
// blocks are laid over the tree with go build -overlay, so nothing is
// written into it.
func TestGoBlocks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(t, string(readme))
	if len(blocks) < 8 {
		t.Fatalf("only %d Go blocks in README.md", len(blocks))
	}
	tmp := t.TempDir()
	replace := map[string]string{}
	var pkgs []string
	problems := map[int][]string{} // by block
	names := map[int][]string{}    // the names the compiler may give each block's file
	for i, b := range blocks {
		// A block that is no Go file at all would stop go build from
		// loading any of them: say so here.
		if _, err := parser.ParseFile(token.NewFileSet(), fmt.Sprintf("README.md:%d", b.line), b.code, parser.PackageClauseOnly); err != nil {
			problems[i] = append(problems[i], "not a Go file: "+err.Error())
			continue
		}
		dir := root
		if m := adapterImport.FindStringSubmatch(b.code); m != nil {
			dir = filepath.Join(root, "adapters", m[1])
		}
		pkg := filepath.Join(dir, "internal", "readmeblocks", fmt.Sprintf("block%02d", i))
		file := filepath.Join(tmp, fmt.Sprintf("README-line-%d.go", b.line))
		if err := os.WriteFile(file, []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
		virtual := filepath.Join(pkg, "main.go")
		rel, _ := filepath.Rel(root, virtual)
		replace[virtual] = file
		names[i] = []string{file, virtual, rel}
		pkgs = append(pkgs, pkg)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": replace})
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"build", "-overlay", overlayFile}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "readmeblocks") && !strings.Contains(string(out), tmp) {
		// Not an error in a block: the modules could not be had.
		if os.Getenv("CI") == "true" {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		t.Skipf("SKIPPED: the README's Go blocks cannot be built here (offline?): %v\n%s", err, out)
	}

	// Sort the compiler's messages by block.
	for _, line := range strings.Split(string(out), "\n") {
		for i, ns := range names {
			for _, n := range ns {
				if strings.HasPrefix(line, n+":") {
					problems[i] = append(problems[i], "line "+strings.TrimPrefix(line, n+":"))
				}
			}
		}
	}
	for i, b := range blocks {
		if msgs := problems[i]; len(msgs) > 0 {
			t.Errorf("README.md:%d: the Go block does not build:\n%s", b.line, strings.Join(msgs, "\n"))
		}
	}
}
