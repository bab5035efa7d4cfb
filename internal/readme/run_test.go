package readme

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the // Output: comments of README.md's Go blocks with what they print")

// outputMark opens a block's expected output: the comment lines that follow
// it, each "// " and a line of output, as in a Go example.
const outputMark = "// Output:"

// maxOutputLine is the length beyond which -update cuts a line of output
// short, at a space, with "...".
const maxOutputLine = 100

// runnable reports whether a block is a program that can run anywhere: a
// package main that imports only the standard library and the core module
// (no adapter, no store, no SDK), so that it needs no service, key or
// network. Such a block must say what it prints.
func runnable(b block) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", b.code, parser.ImportsOnly)
	if err != nil || f.Name.Name != "main" || isTestFile(b.code) {
		return false
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		first, _, _ := strings.Cut(path, "/")
		switch {
		case !strings.Contains(first, "."): // the standard library
		case strings.HasPrefix(path, "github.com/loopguard/loopguard/adapters/"),
			strings.HasPrefix(path, "github.com/loopguard/loopguard/stores/"):
			return false
		case strings.HasPrefix(path, "github.com/loopguard/loopguard/"):
		default:
			return false
		}
	}
	return true
}

// shownOutput returns the output a block says it prints: the comment lines
// after its "// Output:" line, and the lines of the block they span (the
// first and one past the last, 0-based within the block), or ok false when
// the block has no such comment.
func shownOutput(code string) (out []string, first, end int, ok bool) {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != outputMark {
			continue
		}
		end = i + 1
		for ; end < len(lines); end++ {
			c, isComment := strings.CutPrefix(strings.TrimSpace(lines[end]), "//")
			if !isComment {
				break
			}
			out = append(out, strings.TrimPrefix(c, " "))
		}
		return out, i + 1, end, true
	}
	return nil, 0, 0, false
}

// matchOutput compares what a block printed with what it shows: line by
// line, where a shown line ending in "..." need only start the printed one.
func matchOutput(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if p, cut := strings.CutSuffix(want[i], "..."); cut && strings.HasPrefix(got[i], p) || want[i] == got[i] {
			continue
		}
		return false
	}
	return true
}

// shorten cuts a line of output to at most maxOutputLine characters, at a
// space, ending it with "...".
func shorten(line string) string {
	if len(line) <= maxOutputLine {
		return line
	}
	if i := strings.LastIndex(line[:maxOutputLine-3], " "); i > 0 {
		return line[:i] + " ..."
	}
	return line
}

// TestOutputs runs every block of README.md that can run anywhere (see
// runnable) and compares what it prints with its "// Output:" comment. Each
// runs in a directory of its own; a block that reads loopguard.json finds
// there the last JSON block of the README before it. With -update, the
// comments are rewritten with what the blocks print (shown lines that still
// match are kept; new long lines are cut short at a space, with "...").
func TestOutputs(t *testing.T) {
	root, readme := readREADME(t)
	readmePath := filepath.Join(root, "README.md")
	blocks := goBlocks(t, readme)
	jsonBefore := lastJSONBlocks(t, readme)
	tmp := t.TempDir()
	files := map[string]block{}
	var pkgs []string
	var run []int
	for i, b := range blocks {
		if !runnable(b) {
			continue
		}
		if _, _, _, ok := shownOutput(b.code); !ok {
			t.Errorf("README.md:%d: the block runs anywhere but does not say what it prints (a %q comment)", b.line, outputMark)
			continue
		}
		pkg := filepath.Join(root, "internal", "readmeblocks", fmt.Sprintf("block%02d", i))
		files[filepath.Join(pkg, "main.go")] = b
		pkgs = append(pkgs, pkg)
		run = append(run, i)
	}
	if len(run) < 4 {
		t.Fatalf("only %d blocks of README.md run anywhere", len(run))
	}
	overlayFile := writeOverlay(t, tmp, "overlay.json", files)
	bin := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", append([]string{"build", "-overlay", overlayFile, "-o", bin + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the blocks that run anywhere: %v\n%s", err, out) // TestGoBlocks names the block
	}

	lines := strings.Split(readme, "\n")
	rewrite := map[int][]string{} // by the README's 0-based line of the first output line
	ends := map[int]int{}
	for _, i := range run {
		b := blocks[i]
		dir := t.TempDir()
		if strings.Contains(b.code, `"loopguard.json"`) {
			doc, ok := jsonBefore[b.line]
			if !ok {
				t.Errorf("README.md:%d: the block reads loopguard.json, and no JSON block comes before it", b.line)
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, "loopguard.json"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, fmt.Sprintf("block%02d", i)))
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		cancel()
		if err != nil {
			t.Errorf("README.md:%d: the block fails: %v\n%s", b.line, err, stderr.String())
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n")
		want, first, end, _ := shownOutput(b.code)
		if matchOutput(want, got) {
			continue
		}
		if *update {
			var out []string
			for k, g := range got {
				if k < len(want) && matchOutput(want[k:k+1], got[k:k+1]) {
					out = append(out, want[k])
				} else {
					out = append(out, shorten(g))
				}
			}
			start := b.line - 1 + first // 0-based README line of the first output line
			rewrite[start] = out
			ends[start] = b.line - 1 + end
			continue
		}
		t.Errorf("README.md:%d: the block prints (run go test ./internal/readme -run TestOutputs -update to rewrite its comment):\n%s\nbut says it prints:\n%s",
			b.line, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(rewrite) == 0 {
		return
	}
	rewritten := len(rewrite)
	var out []string
	for n := 0; n < len(lines); {
		repl, ok := rewrite[n]
		if !ok {
			out = append(out, lines[n])
			n++
			continue
		}
		indent := lines[n-1][:len(lines[n-1])-len(strings.TrimLeft(lines[n-1], " \t"))]
		for _, r := range repl {
			out = append(out, strings.TrimRight(indent+"// "+r, " "))
		}
		delete(rewrite, n)
		n = ends[n]
	}
	if err := os.WriteFile(readmePath, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the output of %d blocks in README.md", rewritten)
}

// lastJSONBlocks maps the first code line of each ```go block to the last
// ```json block before it.
func lastJSONBlocks(t *testing.T, text string) map[int]string {
	found := map[int]string{}
	last, seen := "", false
	for _, b := range fencedBlocks(t, text) {
		switch b.lang {
		case "json":
			last, seen = b.text, true
		case "go":
			if seen {
				found[b.line] = last
			}
		}
	}
	return found
}

// TestTestFileBlocks runs every test-file block of README.md (see
// isTestFile) as the main_test.go of the Go block before it, with go test.
func TestTestFileBlocks(t *testing.T) {
	root, readme := readREADME(t)
	blocks := goBlocks(t, readme)
	tmp := t.TempDir()
	found := 0
	for i, b := range blocks {
		if !isTestFile(b.code) {
			continue
		}
		found++
		if i == 0 || isTestFile(blocks[i-1].code) || !runnable(blocks[i-1]) {
			t.Errorf("README.md:%d: a test file must follow the block it tests, a program that runs anywhere", b.line)
			continue
		}
		pkg := filepath.Join(root, "internal", "readmeblocks", fmt.Sprintf("block%02d", i))
		overlayFile := writeOverlay(t, tmp, fmt.Sprintf("overlay%d.json", i), map[string]block{
			filepath.Join(pkg, "main.go"): blocks[i-1], filepath.Join(pkg, "main_test.go"): b})
		// The package's directory exists only in the overlay: build the
		// test binary, and run it elsewhere.
		bin := filepath.Join(tmp, fmt.Sprintf("block%02d.test", i))
		cmd := exec.Command("go", "test", "-c", "-vet=off", "-overlay", overlayFile, "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README.md:%d: go test -c of the block with the block before it (README.md:%d) fails: %v\n%s", b.line, blocks[i-1].line, err, out)
			continue
		}
		cmd = exec.Command(bin, "-test.v", "-test.short="+strconv.FormatBool(testing.Short()))
		cmd.Dir = t.TempDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README.md:%d: the test of the block with the block before it (README.md:%d) fails: %v\n%s", b.line, blocks[i-1].line, err, out)
		}
	}
	if found == 0 {
		t.Fatal("no test-file block in README.md: the custom detectors' section shows guardtest in one")
	}
}

// readREADME returns the repository's root and its README.md.
func readREADME(t *testing.T) (root, text string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, string(b)
}

// writeOverlay writes each block into dir, as README-line-N.go, and an
// overlay file for go build -overlay that lays each at its path; it
// returns the overlay file's path.
func writeOverlay(t *testing.T, dir, name string, files map[string]block) string {
	t.Helper()
	replace := map[string]string{}
	for path, b := range files {
		file := filepath.Join(dir, fmt.Sprintf("README-line-%d.go", b.line))
		if err := os.WriteFile(file, []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[path] = file
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
