package readme

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// corePath is the module path of the core, at the root of the repository.
const corePath = "github.com/loopguard/loopguard"

// A block is one ```go block of a Markdown file.
type block struct {
	file string // relative to the repository's root, slash-separated
	line int    // of its first line of code
	code string // as written
}

// name is the block's place: file:line.
func (b block) name() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// padded returns the block's code after as many empty lines as precede it
// in its file, so that a parser's or a compiler's line numbers are those of
// the file.
func (b block) padded() string { return strings.Repeat("\n", b.line-1) + b.code }

// docs returns the Markdown files whose Go blocks are built, relative to
// root and slash-separated: README.md, then docs/*.md in order.
func docs(root string) ([]string, error) {
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	slices.Sort(more)
	for _, f := range more {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}

// blocks returns the Go blocks of README.md and docs/*.md under root.
func blocks(root string) ([]block, error) {
	files, err := docs(root)
	if err != nil {
		return nil, err
	}
	var all []block
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		bs, err := parseGoBlocks(f, string(text))
		if err != nil {
			return nil, err
		}
		all = append(all, bs...)
	}
	return all, nil
}

// A fenced block of a Markdown text: its info string ("go", "sh", "") and
// its text.
type fenced struct {
	line int // of its first line of text
	lang string
	text string
}

// fences returns the fenced blocks of a Markdown text.
func fences(text string) ([]fenced, error) {
	var blocks []fenced
	var cur *fenced
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, len(text)+1)
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
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: a block that does not end", cur.line-1)
	}
	return blocks, nil
}

// parseGoBlocks returns the ```go blocks of a Markdown text, the content of
// file.
func parseGoBlocks(file, text string) ([]block, error) {
	fs, err := fences(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var blocks []block
	for _, f := range fs {
		if f.lang == "go" {
			blocks = append(blocks, block{file: file, line: f.line, code: f.text})
		}
	}
	return blocks, nil
}

// isTestFile reports whether a block is a test file (it declares a
// TestXxx(*testing.T) function): it is tested with the Go block before it,
// as that block's main_test.go, by TestTestFileBlocks, not built alone.
func isTestFile(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", code, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Type.Params.NumFields() == 1 {
			return true
		}
	}
	return false
}

// modules returns the directory, relative to root and slash-separated, of
// each Go module under root ("." for the core), by module path.
func modules(root string) (map[string]string, error) {
	mods := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		mod, err := modulePath(p)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		mods[mod] = filepath.ToSlash(dir)
		return nil
	})
	return mods, err
}

// modulePath returns the module path that a go.mod file declares.
func modulePath(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// owner returns the directory of the module that builds a block, relative
// to the root ("." for the core), given the modules by path: the adapter
// it imports, else the store it imports, else the core. A block that
// imports two adapters, or two stores and no adapter, has no owner.
func owner(b block, mods map[string]string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), b.file, b.padded(), parser.ImportsOnly)
	if err != nil {
		return "", fmt.Errorf("not a Go file: %w", err)
	}
	var adapters, stores, others []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return "", err
		}
		dir := moduleOf(p, mods)
		switch {
		case dir == "" || dir == ".":
		case strings.HasPrefix(dir, "adapters/"):
			adapters = append(adapters, dir)
		case strings.HasPrefix(dir, "stores/"):
			stores = append(stores, dir)
		default:
			others = append(others, dir)
		}
	}
	for _, set := range [][]string{adapters, stores, others} {
		set = slices.Compact(slices.Sorted(slices.Values(set)))
		switch len(set) {
		case 0:
			continue
		case 1:
			return set[0], nil
		default:
			return "", fmt.Errorf("imports the modules %s: which one builds it?", strings.Join(set, ", "))
		}
	}
	return ".", nil
}

// moduleOf returns the directory of the module of mods that holds the
// package of an import path ("" for none): the longest module path that is
// a prefix of it.
func moduleOf(pkg string, mods map[string]string) string {
	best, dir := "", ""
	for m, d := range mods {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(best) {
			best, dir = m, d
		}
	}
	return dir
}

// findRoot returns the repository's root, the nearest directory at or above
// dir whose go.mod declares the core's module path.
func findRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := modulePath(filepath.Join(d, "go.mod")); err == nil && mod == corePath {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s at or above %s", corePath, dir)
		}
	}
}

// findModule returns the directory of the nearest go.mod at or above dir.
func findModule(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
	}
}

// workspace returns the directories of the modules of root's go.work,
// relative to root and slash-separated.
func workspace(root string) (map[string]bool, error) {
	cmd := exec.Command("go", "work", "edit", "-json", filepath.Join(root, "go.work"))
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go work edit -json: %w", err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &work); err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, u := range work.Use {
		dirs[path.Clean(filepath.ToSlash(u.DiskPath))] = true
	}
	return dirs, nil
}

// Test builds, each in a subtest named file:line, the Go blocks of
// README.md and docs/*.md that belong to the module of the calling test
// (the nearest go.mod at or above its directory): imports included, nothing
// left to declare. A block is built as a package of that module with go
// build -overlay, so nothing is written into the tree, compiled but not
// linked (a package main must declare func main), and with -race
// when the test runs under the race detector, so that it reuses what the
// module's own tests compiled. A module outside go.work is built on its own
// go.mod (GOWORK=off). A module that owns no block fails: its call of Test
// has nothing left to do.
//
// A build that fails without naming the block (the modules could not be
// downloaded) skips, loudly, except under CI=true. A build still running
// shortly before the test's deadline (go test -timeout) is stopped, and the
// block's subtest fails saying so, rather than the whole test binary
// panicking at the deadline.
func Test(t *testing.T) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	modDir, err := findModule(wd)
	if err != nil {
		t.Fatal(err)
	}
	root, err := findRoot(modDir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, modDir)
	if err != nil {
		t.Fatal(err)
	}
	rel = filepath.ToSlash(rel)
	all, err := blocks(root)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := modules(root)
	if err != nil {
		t.Fatal(err)
	}
	work, err := workspace(root)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	if !work[rel] {
		env = []string{"GOWORK=off"}
	}
	tmp := t.TempDir()
	n := 0
	for i, b := range all {
		own, err := owner(b, mods)
		if err != nil {
			// The core's test says so, once.
			if rel == "." {
				t.Errorf("%s: %v", b.name(), err)
			}
			continue
		}
		if own != rel || isTestFile(b.code) {
			continue
		}
		n++
		t.Run(b.name(), func(t *testing.T) {
			build(t, b, modDir, filepath.Join(tmp, strconv.Itoa(i)), env)
		})
	}
	if n == 0 && !t.Failed() {
		t.Fatalf("no Go block of README.md or docs/*.md belongs to the module in %s: remove its call of readme.Test", rel)
	}
}

// deadlineMargin is how long before the test's deadline a block's build is
// stopped: time for the test to report it.
const deadlineMargin = 20 * time.Second

// build builds one block as the main package of the module in modDir,
// writing only in tmp, with env added to the environment.
func build(t *testing.T, b block, modDir, tmp string, env []string) {
	t.Helper()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	code, err := library(b)
	if err != nil {
		t.Fatalf("%s: %v", b.name(), err)
	}
	file := filepath.Join(tmp, "block.go")
	if err := os.WriteFile(file, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(modDir, "internal", "readmeblocks", filepath.Base(tmp))
	virtual := filepath.Join(pkg, "main.go")
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{virtual: file}})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"build", "-overlay", overlayFile}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, pkg)

	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-deadlineMargin))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		timeout := "?"
		if f := flag.Lookup("test.timeout"); f != nil {
			timeout = f.Value.String()
		}
		t.Fatalf("%s: go build %s was stopped after %s, %s before the test's deadline (go test -timeout %s): building one block must fit in it\n%s",
			b.name(), strings.Join(args[1:], " "), time.Since(start).Round(time.Second), deadlineMargin, timeout, out)
	}
	if err == nil {
		return
	}
	msgs := blockMessages(string(out), b, []string{file, virtual, relTo(modDir, virtual)})
	if len(msgs) == 0 && !strings.Contains(string(out), "readmeblocks") {
		// Not an error in the block: the modules could not be had.
		var exit *exec.ExitError
		if os.Getenv("CI") == "true" || !errors.As(err, &exit) {
			t.Fatalf("%s: go build in %s: %v\n%s", b.name(), modDir, err, out)
		}
		t.Skipf("SKIPPED: %s cannot be built here (offline?): %v\n%s", b.name(), err, out)
	}
	if len(msgs) == 0 {
		msgs = []string{string(out)}
	}
	t.Errorf("the Go block does not build:\n%s", strings.Join(msgs, "\n"))
}

// library returns a block's code, padded, with a package main renamed,
// after checking that it declares func main, so that go build compiles the
// block and leaves out the link: of a program of Go code, the compiler
// catches whatever the linker would, and linking each block with an SDK
// cost more than compiling it. Lines stay those of the block's file.
func library(b block) (string, error) {
	code := b.padded()
	f, err := parser.ParseFile(token.NewFileSet(), b.file, code, parser.SkipObjectResolution)
	if err != nil {
		return "", fmt.Errorf("not a Go file: %w", err)
	}
	if f.Name.Name != "main" {
		return code, nil
	}
	hasMain := false
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			hasMain = true
		}
	}
	if !hasMain {
		return "", errors.New("package main declares no func main")
	}
	// Only the columns after the name, on the package line, shift.
	at := int(f.Name.Pos()) - 1 // the file's base is 1
	return code[:at] + "readme" + code[at+len("main"):], nil
}

// relTo returns p relative to dir, or p when it has no such form.
func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil {
		return r
	}
	return p
}

// blockMessages returns the lines of a build's output that name the
// block's file by one of names, each naming the block's Markdown file
// instead (the lines are already its own: see padded).
func blockMessages(out string, b block, names []string) []string {
	var msgs []string
	for _, line := range strings.Split(out, "\n") {
		for _, n := range names {
			if rest, ok := strings.CutPrefix(strings.TrimPrefix(line, "./"), n+":"); ok {
				msgs = append(msgs, b.file+":"+rest)
				break
			}
		}
	}
	return msgs
}
