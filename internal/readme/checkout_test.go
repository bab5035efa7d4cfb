package readme

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckoutRecipes follows each recipe of docs/checkout.md as a user
// would: in a new module outside the checkout, with the document's program
// as its main.go and $LOOPGUARD naming the checkout, it runs the recipe's
// sh block with bash and compares what it prints with the block after it.
func TestCheckoutRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the MCP SDK twice, outside the build cache's usual paths")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("SKIPPED: no bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "checkout.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(t, string(doc))
	var program string
	for _, b := range blocks {
		if b.lang == "go" {
			program = b.text
		}
	}
	if program == "" {
		t.Fatal("docs/checkout.md shows no program")
	}
	// The environment of a user's module: no workspace but the one the
	// recipe makes.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	env = append(env, "LOOPGUARD="+root)
	recipes := 0
	for i, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		recipes++
		if i+1 == len(blocks) || blocks[i+1].lang != "" {
			t.Errorf("docs/checkout.md:%d: the recipe is not followed by what it prints", b.line)
			continue
		}
		dir := t.TempDir()
		mod := filepath.Join(dir, "myagent")
		if err := os.Mkdir(mod, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(program), 0o644); err != nil {
			t.Fatal(err)
		}
		run := func(dir string, args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir, cmd.Env = dir, env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				return string(out) + stderr.String(), err
			}
			return string(out), nil
		}
		if out, err := run(mod, "go", "mod", "init", "example.com/myagent"); err != nil {
			t.Fatalf("go mod init: %v\n%s", err, out)
		}
		out, err := run(dir, bash, "-e", "-u", "-c", b.text)
		if err != nil {
			if os.Getenv("CI") != "true" && (strings.Contains(out, "dial tcp") || strings.Contains(out, "no such host")) {
				t.Skipf("SKIPPED: the recipe needs modules from the network: %v\n%s", err, out)
			}
			t.Errorf("docs/checkout.md:%d: the recipe fails: %v\n%s", b.line, err, out)
			continue
		}
		if want := blocks[i+1].text; out != want {
			t.Errorf("docs/checkout.md:%d: the recipe prints:\n%s\nthe document says:\n%s", b.line, out, want)
		}
	}
	if recipes < 2 {
		t.Errorf("docs/checkout.md has %d recipes, want the go.work one and the replace one", recipes)
	}
}
