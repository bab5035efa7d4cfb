package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGoBlocks builds the Go blocks that belong to the core: those that
// import no adapter and no store.
func TestGoBlocks(t *testing.T) { Test(t) }

// fencedBlocks returns the fenced blocks of a Markdown text.
func fencedBlocks(t *testing.T, text string) []fenced {
	t.Helper()
	fs, err := fences(text)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// goBlocks returns the ```go blocks of a Markdown text, the content of file.
func goBlocks(t *testing.T, file, text string) []block {
	t.Helper()
	bs, err := parseGoBlocks(file, text)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// TestEveryBlockIsBuilt checks that each module that owns a Go block of
// README.md or docs/*.md calls Test from a test in its root directory, so
// that no block goes unbuilt, and that the core, whose test builds no SDK,
// owns only blocks that import none and links the core's packages they
// import.
func TestEveryBlockIsBuilt(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	all, err := blocks(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 8 {
		t.Fatalf("only %d Go blocks in README.md and docs/*.md", len(all))
	}
	mods, err := modules(root)
	if err != nil {
		t.Fatal(err)
	}
	deps, err := parser.ParseFile(token.NewFileSet(), "deps_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, imp := range deps.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		linked[p] = true
	}
	owners := map[string][]string{}
	for _, b := range all {
		own, err := owner(b, mods)
		if err != nil {
			t.Errorf("%s: %v", b.name(), err)
			continue
		}
		owners[own] = append(owners[own], b.name())
		if own == "." {
			sdk, core := foreignImports(t, b)
			if len(sdk) > 0 {
				t.Errorf("%s: the core's test would build it, with %s", b.name(), strings.Join(sdk, ", "))
			}
			for _, p := range core {
				if !linked[p] {
					t.Errorf("%s imports %s, which deps_test.go does not: go test's cache would not see it change", b.name(), p)
				}
			}
		}
	}
	for _, own := range slices.Sorted(maps.Keys(owners)) {
		names := owners[own]
		if own == "." {
			continue
		}
		if !callsTest(t, filepath.Join(root, filepath.FromSlash(own))) {
			t.Errorf("no test in %s calls readme.Test, so nothing builds its Go blocks %s", own, strings.Join(names, ", "))
		}
	}
	// The framework adapters' blocks are built in their own modules.
	for _, own := range []string{"adapters/openai", "adapters/mcp", "stores/redis"} {
		if len(owners[own]) == 0 {
			t.Errorf("no Go block belongs to %s; owners: %v", own, owners)
		}
	}
}

// foreignImports returns the imports of a block that are neither in the
// standard library nor in the core module, then those in the core module.
func foreignImports(t *testing.T, b block) (foreign, core []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), b.file, b.padded(), parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		first, _, _ := strings.Cut(p, "/")
		switch {
		case p == corePath || strings.HasPrefix(p, corePath+"/"):
			core = append(core, p)
		case strings.Contains(first, "."):
			foreign = append(foreign, p)
		}
	}
	return foreign, core
}

// callsTest says whether a _test.go file of dir calls this package's Test.
func callsTest(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		local := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == corePath+"/internal/readme" {
				local = "readme"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Test" {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == local {
						found = true
					}
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

func TestOwner(t *testing.T) {
	mods := map[string]string{
		"github.com/loopguard/loopguard":                   ".",
		"github.com/loopguard/loopguard/adapters/mcp":      "adapters/mcp",
		"github.com/loopguard/loopguard/adapters/mcpgo":    "adapters/mcpgo",
		"github.com/loopguard/loopguard/stores/redis":      "stores/redis",
		"github.com/loopguard/loopguard/stores/redisx":     "stores/redisx",
		"github.com/loopguard/loopguard/examples/durable":  "examples/durable",
		"github.com/loopguard/loopguard/adapters/openai":   "adapters/openai",
		"github.com/loopguard/loopguard/adapters/openai/x": "adapters/openai/x",
	}
	tests := []struct {
		name    string
		imports []string
		want    string // "" for an error
	}{
		{"the standard library only", []string{"fmt"}, "."},
		{"the core", []string{"fmt", "github.com/loopguard/loopguard/guard", "github.com/loopguard/loopguard/detector/finish"}, "."},
		{"the core's internal packages", []string{"github.com/loopguard/loopguard/internal/spell"}, "."},
		{"an SDK without its adapter", []string{"github.com/redis/go-redis/v9"}, "."},
		{"a store", []string{"github.com/redis/go-redis/v9", "github.com/loopguard/loopguard/stores/redis"}, "stores/redis"},
		{"an adapter and a store", []string{"github.com/loopguard/loopguard/stores/redis", "github.com/loopguard/loopguard/adapters/mcp"}, "adapters/mcp"},
		{"an adapter's package", []string{"github.com/loopguard/loopguard/adapters/mcp/sub"}, "adapters/mcp"},
		{"a longer module path is no package of a shorter one", []string{"github.com/loopguard/loopguard/adapters/mcpgo"}, "adapters/mcpgo"},
		{"a nested module", []string{"github.com/loopguard/loopguard/adapters/openai/x/y"}, "adapters/openai/x"},
		{"one adapter, twice", []string{"github.com/loopguard/loopguard/adapters/mcp", "github.com/loopguard/loopguard/adapters/mcp/sub"}, "adapters/mcp"},
		{"another module", []string{"github.com/loopguard/loopguard/examples/durable/x"}, "examples/durable"},
		{"two adapters", []string{"github.com/loopguard/loopguard/adapters/mcp", "github.com/loopguard/loopguard/adapters/mcpgo"}, ""},
		{"two stores", []string{"github.com/loopguard/loopguard/stores/redis", "github.com/loopguard/loopguard/stores/redisx"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var code strings.Builder
			code.WriteString("package main\n\nimport (\n")
			for _, imp := range tt.imports {
				code.WriteString("\t_ " + strconv.Quote(imp) + "\n")
			}
			code.WriteString(")\n\nfunc main() {}\n")
			got, err := owner(block{file: "README.md", line: 1, code: code.String()}, mods)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("owner = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("owner = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
	if _, err := owner(block{file: "README.md", line: 1, code: "fmt.Println()\n"}, mods); err == nil || !strings.Contains(err.Error(), "not a Go file") {
		t.Errorf("owner of a fragment: %v, want not a Go file", err)
	}
}

func TestBlocks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# x\n\n```go\npackage main\n```\n\n```\nnot go\n```\n")
	write("docs/b.md", "```go\npackage b\n\nfunc main() {}\n```\n")
	write("docs/a.md", "text\n  ```go\npackage a\n  ```\n")
	write("docs/c.txt", "```go\npackage c\n```\n")
	write("docs/sub/d.md", "```go\npackage d\n```\n")
	write("OTHER.md", "```go\npackage other\n```\n")
	got, err := blocks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{file: "README.md", line: 4, code: "package main\n"},
		{file: "docs/a.md", line: 3, code: "package a\n"},
		{file: "docs/b.md", line: 2, code: "package b\n\nfunc main() {}\n"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(block{})); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}

	write("docs/e.md", "ok\n\n```go\npackage e\n")
	if _, err := blocks(root); err == nil || err.Error() != "docs/e.md: line 3: a block that does not end" {
		t.Errorf("blocks with an unended block: %v", err)
	}
}

func TestBlockMessages(t *testing.T) {
	b := block{file: "docs/manual.md", line: 40}
	out := strings.Join([]string{
		"# github.com/loopguard/loopguard/adapters/mcp/internal/readmeblocks/7",
		"internal/readmeblocks/7/main.go:3:2: undefined: x",
		"./internal/readmeblocks/7/main.go:1: other",
		"/tmp/7/block.go:10:5: declared and not used: y",
		"elsewhere/main.go:2:1: not the block",
		"",
	}, "\n")
	got := blockMessages(out, b, []string{"/tmp/7/block.go", "/m/internal/readmeblocks/7/main.go", "internal/readmeblocks/7/main.go"})
	want := []string{
		"docs/manual.md:3:2: undefined: x",
		"docs/manual.md:1: other",
		"docs/manual.md:10:5: declared and not used: y",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blockMessages (-want +got):\n%s", diff)
	}
}

func TestModules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := modules(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, dir := range map[string]string{
		corePath:                      ".",
		corePath + "/adapters/mcp":    "adapters/mcp",
		corePath + "/adapters/genkit": "adapters/genkit",
		corePath + "/stores/redis":    "stores/redis",
	} {
		if mods[path] != dir {
			t.Errorf("modules[%s] = %q, want %q", path, mods[path], dir)
		}
	}
	work, err := workspace(root)
	if err != nil {
		t.Fatal(err)
	}
	if !work["."] || !work["adapters/mcp"] || work["adapters/genkit"] {
		t.Errorf("workspace = %v, want . and adapters/mcp, not adapters/genkit", slices.Sorted(maps.Keys(work)))
	}
}

func TestLibrary(t *testing.T) {
	tests := []struct {
		name, code, want string // want "" for an error
	}{
		{"a program", "// A comment.\npackage main\n\nfunc main() {}\n", "// A comment.\npackage readme\n\nfunc main() {}\n"},
		{"a package main clause with a comment", "package main // x\nfunc main() {}\n", "package readme // x\nfunc main() {}\n"},
		{"a library", "package lib\n\nfunc F() {}\n", "package lib\n\nfunc F() {}\n"},
		{"a program without main", "package main\n\nfunc Main() {}\n", ""},
		{"a method main is no func main", "package main\n\ntype T int\n\nfunc (T) main() {}\n", ""},
		{"not Go", "x := 1\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := library(block{file: "README.md", line: 3, code: tt.code})
			if tt.want != "" {
				tt.want = "\n\n" + tt.want
			}
			if tt.want == "" {
				if err == nil {
					t.Fatalf("library = %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("library (-want +got):\n%s", diff)
			}
		})
	}
}
