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

// A fenced block of a Markdown text: its info string ("go", "sh", "") and
// its text.
type fenced struct {
	line int // of its first line of text
	lang string
	text string
}

// fencedBlocks returns the fenced blocks of a Markdown text.
func fencedBlocks(t *testing.T, text string) []fenced {
	t.Helper()
	var blocks []fenced
	var cur *fenced
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &fenced{line: n + 1, lang: strings.TrimPrefix(trimmed, "```")}
			b.Reset()
		case cur != nil && trimmed == "```":
			cur.text = b.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			b.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("line %d: a block that does not end", cur.line-1)
	}
	return blocks
}

// goBlocks returns the ```go blocks of a Markdown text.
func goBlocks(t *testing.T, text string) []block {
	t.Helper()
	var blocks []block
	for _, f := range fencedBlocks(t, text) {
		if f.lang == "go" {
			blocks = append(blocks, block{line: f.line, code: f.text})
		}
	}
	return blocks
}

var adapterImport = regexp.MustCompile(`"github\.com/loopguard/loopguard/adapters/([a-z]+)"`)

// TestGoBlocks builds every Go block of README.md as a file of its own:
// imports included, nothing left to declare. A block that imports an
// adapter is built in that adapter's module: through the workspace, or, for
// a module that go.work leaves out, on the module's own go.mod (GOWORK=off).
// The blocks are laid over the tree with go build -overlay, so nothing is
// written into it. A build that fails without naming a block fails too.
func TestGoBlocks(t *testing.T) {
	root, readme := readREADME(t)
	blocks := goBlocks(t, readme)
	if len(blocks) < 8 {
		t.Fatalf("only %d Go blocks in README.md", len(blocks))
	}
	inWork := workspaceDirs(t, root)
	tmp := t.TempDir()
	// A build is one go build: its directory (the root for the workspace,
	// an adapter's directory for a module outside it) and its blocks.
	type build struct {
		dir     string
		replace map[string]string
		pkgs    []string
		blocks  []int
	}
	builds := map[string]*build{}
	var order []string
	problems := map[int][]string{} // by block
	names := map[int][]string{}    // the names the compiler may give each block's file
	for i, b := range blocks {
		// A block that is no Go file at all would stop go build from
		// loading any of them: say so here.
		if _, err := parser.ParseFile(token.NewFileSet(), fmt.Sprintf("README.md:%d", b.line), b.code, parser.PackageClauseOnly); err != nil {
			problems[i] = append(problems[i], "not a Go file: "+err.Error())
			continue
		}
		if isTestFile(b.code) {
			continue // built and run with the block before it by TestTestFileBlocks
		}
		dir, buildDir := root, root
		if m := adapterImport.FindStringSubmatch(b.code); m != nil {
			dir = filepath.Join(root, "adapters", m[1])
			if !inWork[dir] {
				buildDir = dir
			}
		}
		bd := builds[buildDir]
		if bd == nil {
			bd = &build{dir: buildDir, replace: map[string]string{}}
			builds[buildDir] = bd
			order = append(order, buildDir)
		}
		pkg := filepath.Join(dir, "internal", "readmeblocks", fmt.Sprintf("block%02d", i))
		file := filepath.Join(tmp, fmt.Sprintf("README-line-%d.go", b.line))
		if err := os.WriteFile(file, []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
		virtual := filepath.Join(pkg, "main.go")
		relRoot, _ := filepath.Rel(root, virtual)
		relBuild, _ := filepath.Rel(buildDir, virtual)
		bd.replace[virtual] = file
		names[i] = []string{file, virtual, relRoot, relBuild}
		bd.pkgs = append(bd.pkgs, pkg)
		bd.blocks = append(bd.blocks, i)
	}
	for _, key := range order {
		bd := builds[key]
		overlay, _ := json.Marshal(map[string]any{"Replace": bd.replace})
		overlayFile := filepath.Join(tmp, fmt.Sprintf("overlay%d.json", len(bd.blocks)*1000+bd.blocks[0]))
		if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", append([]string{"build", "-overlay", overlayFile}, bd.pkgs...)...)
		cmd.Dir = bd.dir
		if bd.dir != root {
			cmd.Env = append(os.Environ(), "GOWORK=off")
		}
		out, err := cmd.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "readmeblocks") && !strings.Contains(string(out), tmp) {
			// Not an error in a block: the modules could not be had.
			if os.Getenv("CI") == "true" {
				t.Fatalf("go build in %s: %v\n%s", bd.dir, err, out)
			}
			t.Skipf("SKIPPED: the README's Go blocks cannot be built here (offline?): %v\n%s", err, out)
		}

		// Sort the compiler's messages by block.
		named := false
		for _, line := range strings.Split(string(out), "\n") {
			for _, i := range bd.blocks {
				for _, n := range names[i] {
					if strings.HasPrefix(line, n+":") {
						problems[i] = append(problems[i], "line "+strings.TrimPrefix(line, n+":"))
						named = true
					}
				}
			}
		}
		if err != nil && !named {
			t.Errorf("go build of the README's Go blocks in %s failed, naming no block: %v\n%s", bd.dir, err, out)
		}
	}
	for i, b := range blocks {
		if msgs := problems[i]; len(msgs) > 0 {
			t.Errorf("README.md:%d: the Go block does not build:\n%s", b.line, strings.Join(msgs, "\n"))
		}
	}
}

// workspaceDirs returns the directories of the modules of root's go.work.
func workspaceDirs(t *testing.T, root string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &work); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, u := range work.Use {
		dirs[filepath.Join(root, u.DiskPath)] = true
	}
	return dirs
}
