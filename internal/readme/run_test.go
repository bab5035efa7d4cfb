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

var update = flag.Bool("update", false, "rewrite the // Output: comments of the Go blocks of README.md and docs/*.md with what they print")

// outputMark opens a block's expected output: the comment lines that follow
// it, each "// " and a line of output, as in a Go example.
const outputMark = "// Output:"

// maxOutputLine is the length beyond which -update cuts a line of output
// short, at a space, with "...".
const maxOutputLine = 100

// runnable reports whether a block is a program that can run anywhere: a
// package main that imports only the standard library and the core module
// (no adapter, no store, not the proxy, no SDK), so that it needs no
// service, key or network. Such a block must say what it prints.
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
			strings.HasPrefix(path, "github.com/loopguard/loopguard/stores/"),
			path == "github.com/loopguard/loopguard/proxy",
			strings.HasPrefix(path, "github.com/loopguard/loopguard/proxy/"):
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

// TestOutputs runs every block of README.md and docs/*.md that can run
// anywhere (see runnable) and compares what it prints with its "// Output:"
// comment. Each runs in a directory of its own; a block that reads
// loopguard.json finds there the last JSON block of its file before it.
// With -update, the comments are rewritten with what the blocks print
// (shown lines that still match are kept; new long lines are cut short at a
// space, with "...").
func TestOutputs(t *testing.T) {
	root, docs := readDocs(t)
	tmp := t.TempDir()
	files := map[string]block{}
	var pkgs []string
	type toRun struct {
		b        block
		bin      string // the name of its program
		json     string // the last JSON block of its file before it
		jsonSeen bool
	}
	var run []toRun
	for _, d := range docs {
		jsonBefore := lastJSONBlocks(t, d.text)
		for _, b := range goBlocks(t, d.file, d.text) {
			if !runnable(b) {
				continue
			}
			if _, _, _, ok := shownOutput(b.code); !ok {
				t.Errorf("%s: the block runs anywhere but does not say what it prints (a %q comment)", b.name(), outputMark)
				continue
			}
			bin := fmt.Sprintf("block%03d", len(run))
			pkg := filepath.Join(root, "internal", "readmeblocks", bin)
			files[filepath.Join(pkg, "main.go")] = b
			pkgs = append(pkgs, pkg)
			doc, ok := jsonBefore[b.line]
			run = append(run, toRun{b: b, bin: bin, json: doc, jsonSeen: ok})
		}
	}
	if len(run) < 4 {
		t.Fatalf("only %d blocks of README.md and docs/*.md run anywhere", len(run))
	}
	overlayFile := writeOverlay(t, tmp, "overlay.json", files)
	bin := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", append([]string{"build", "-overlay", overlayFile, "-o", bin + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the blocks that run anywhere: %v\n%s", err, out) // TestGoBlocks names the block
	}

	// By file, by the file's 0-based line of the first output line.
	rewrite := map[string]map[int][]string{}
	ends := map[string]map[int]int{}
	for _, r := range run {
		b := r.b
		dir := t.TempDir()
		if strings.Contains(b.code, `"loopguard.json"`) {
			if !r.jsonSeen {
				t.Errorf("%s: the block reads loopguard.json, and no JSON block comes before it in %s", b.name(), b.file)
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, "loopguard.json"), []byte(r.json), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, r.bin))
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		cancel()
		if err != nil {
			t.Errorf("%s: the block fails: %v\n%s", b.name(), err, stderr.String())
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
			if rewrite[b.file] == nil {
				rewrite[b.file], ends[b.file] = map[int][]string{}, map[int]int{}
			}
			start := b.line - 1 + first // 0-based line of the first output line
			rewrite[b.file][start] = out
			ends[b.file][start] = b.line - 1 + end
			continue
		}
		t.Errorf("%s: the block prints (run go test ./internal/readme -run TestOutputs -update to rewrite its comment):\n%s\nbut says it prints:\n%s",
			b.name(), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, d := range docs {
		if rewrite[d.file] == nil {
			continue
		}
		rewritten := len(rewrite[d.file])
		lines := strings.Split(d.text, "\n")
		var out []string
		for n := 0; n < len(lines); {
			repl, ok := rewrite[d.file][n]
			if !ok {
				out = append(out, lines[n])
				n++
				continue
			}
			indent := lines[n-1][:len(lines[n-1])-len(strings.TrimLeft(lines[n-1], " \t"))]
			for _, r := range repl {
				out = append(out, strings.TrimRight(indent+"// "+r, " "))
			}
			n = ends[d.file][n]
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(d.file)), []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the output of %d blocks in %s", rewritten, d.file)
	}
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

// TestTestFileBlocks runs every test-file block of README.md and docs/*.md
// (see isTestFile) as the main_test.go of the Go block before it in its
// file, with go test.
func TestTestFileBlocks(t *testing.T) {
	root, docs := readDocs(t)
	tmp := t.TempDir()
	found := 0
	for _, d := range docs {
		blocks := goBlocks(t, d.file, d.text)
		for i, b := range blocks {
			if !isTestFile(b.code) {
				continue
			}
			found++
			if i == 0 || isTestFile(blocks[i-1].code) || !runnable(blocks[i-1]) {
				t.Errorf("%s: a test file must follow the block it tests, a program that runs anywhere", b.name())
				continue
			}
			pkg := filepath.Join(root, "internal", "readmeblocks", fmt.Sprintf("block%03d", found))
			overlayFile := writeOverlay(t, tmp, fmt.Sprintf("overlay%d.json", found), map[string]block{
				filepath.Join(pkg, "main.go"): blocks[i-1], filepath.Join(pkg, "main_test.go"): b})
			// The package's directory exists only in the overlay: build the
			// test binary, and run it elsewhere.
			bin := filepath.Join(tmp, fmt.Sprintf("block%03d.test", found))
			cmd := exec.Command("go", "test", "-c", "-vet=off", "-overlay", overlayFile, "-o", bin, pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: go test -c of the block with the block before it (%s) fails: %v\n%s", b.name(), blocks[i-1].name(), err, out)
				continue
			}
			cmd = exec.Command(bin, "-test.v", "-test.short="+strconv.FormatBool(testing.Short()))
			cmd.Dir = t.TempDir()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: the test of the block with the block before it (%s) fails: %v\n%s", b.name(), blocks[i-1].name(), err, out)
			}
		}
	}
	if found == 0 {
		t.Fatal("no test-file block in README.md or docs/*.md: the custom detectors' page shows guardtest in one")
	}
}

// A doc is one of the Markdown files whose Go blocks are built.
type doc struct {
	file string // relative to the repository's root, slash-separated
	text string
}

// readDocs returns the repository's root and its README.md and docs/*.md,
// in the order of docs.
func readDocs(t *testing.T) (root string, ds []doc) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := docs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, doc{file: f, text: string(b)})
	}
	return root, ds
}

// writeOverlay writes each block into dir, as FILE-line-N.go (README.md-line-12.go,
// docs-loop.md-line-40.go), and an overlay file for go build -overlay that
// lays each at its path; it returns the overlay file's path.
func writeOverlay(t *testing.T, dir, name string, files map[string]block) string {
	t.Helper()
	replace := map[string]string{}
	for path, b := range files {
		file := filepath.Join(dir, fmt.Sprintf("%s-line-%d.go", strings.ReplaceAll(b.file, "/", "-"), b.line))
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

// TestRunnableLeavesOutTheProxy holds runnable to the modules that need
// more than the machine: the proxy's blocks listen and reach an upstream,
// as an adapter's reach an SDK's service, so they must not be run.
func TestRunnableLeavesOutTheProxy(t *testing.T) {
	for imp, want := range map[string]bool{
		"github.com/loopguard/loopguard/guard":               true,
		"github.com/loopguard/loopguard/proxy":               false,
		"github.com/loopguard/loopguard/proxy/internal/wire": false,
		"github.com/loopguard/loopguard/proxyish":            true,
		"github.com/loopguard/loopguard/adapters/openai":     false,
		"github.com/loopguard/loopguard/stores/redis":        false,
	} {
		b := block{code: "package main\n\nimport _ \"" + imp + "\"\n\nfunc main() {}\n"}
		if got := runnable(b); got != want {
			t.Errorf("runnable(a block importing %s) = %v, want %v", imp, got, want)
		}
	}
}
