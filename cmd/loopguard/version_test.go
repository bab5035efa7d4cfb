package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVersionOfACheckout builds a program in a git repository, as
// "go install ./cmd/loopguard" builds loopguard in a checkout, and checks
// what versionText makes of the build information the go command stamps in
// it: a pseudo-version and the revision for a commit, "+dirty" and
// "with uncommitted changes" for a changed checkout, the tag for a tagged
// commit, and "(devel)" when nothing was recorded (go run, -buildvcs=false,
// a linked worktree). The program prints its build information and nothing
// else, so that the test builds in a second: loopguard's main package reads
// the same debug.ReadBuildInfo.
func TestVersionOfACheckout(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is needed for this test")
		}
		t.Skip("SKIPPED: no git")
	}
	repo := filepath.Join(t.TempDir(), "loopguard")
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module github.com/loopguard/loopguard\n\ngo 1.25\n")
	const main = `package main

import (
	"fmt"
	"runtime/debug"
)

func main() {
	if info, ok := debug.ReadBuildInfo(); ok {
		fmt.Print(info.String())
	}
}
`
	write("cmd/loopguard/main.go", main)
	// The environment of a user's checkout: no workspace, no module
	// proxy needed, stamping as the go command does by default, and none
	// of this machine's git configuration (signing, hooks). The go command
	// keeps the version it found for a revision in the module cache (a tag
	// added later is not seen): the test gives it a module cache of its
	// own, which also keeps its made-up revisions out of the user's.
	env := append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-buildvcs=auto -modcacherw",
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"),
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	bin := filepath.Join(t.TempDir(), "loopguard")
	sh := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, append(env, "GOBIN="+filepath.Dir(bin))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	sh(repo, "git", "init", "-q", "-b", "main")
	sh(repo, "git", "add", "-A")
	sh(repo, "git", "commit", "-q", "-m", "first")
	rev := strings.TrimSpace(sh(repo, "git", "rev-parse", "HEAD"))

	// version builds the program in dir with the go command's args and
	// returns versionText of what it stamped.
	version := func(dir string, args ...string) string {
		t.Helper()
		var out string
		switch args[0] {
		case "run":
			out = sh(dir, append([]string{"go"}, args...)...)
		case "install": // into GOBIN, the folder of bin
			sh(dir, append(append([]string{"go"}, args...), "./cmd/loopguard")...)
			out = sh(dir, bin)
		default:
			sh(dir, append(append([]string{"go"}, args...), "-o", bin, "./cmd/loopguard")...)
			out = sh(dir, bin)
		}
		info, err := debug.ParseBuildInfo(out)
		if err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		// ParseBuildInfo leaves out the Go version that String writes first.
		first, _, _ := strings.Cut(out, "\n")
		if v, ok := strings.CutPrefix(first, "go\t"); ok && info.GoVersion == "" {
			info.GoVersion = v
		}
		if info.GoVersion == "" {
			t.Fatalf("no Go version in the build information:\n%s", out)
		}
		return strings.ReplaceAll(versionText(info), info.GoVersion, "GOVERSION")
	}
	const module = "module github.com/loopguard/loopguard\n"
	at := "built from a git checkout at revision " + rev + " (2026-01-02T03:04:05Z)"
	pseudo := "v0.0.0-20260102030405-" + rev[:12]
	got, want := map[string]string{}, map[string]string{}

	got["a commit"] = version(repo, "build")
	want["a commit"] = "loopguard " + pseudo + "\n" + module + at + "\nGOVERSION\n"

	got["go install"] = version(repo, "install")
	want["go install"] = want["a commit"]

	got["go run"] = version(repo, "run", "./cmd/loopguard")
	want["go run"] = "loopguard (devel)\n" + module + "GOVERSION\n"

	got["-buildvcs=false"] = version(repo, "build", "-buildvcs=false")
	want["-buildvcs=false"] = "loopguard (devel)\n" + module + "GOVERSION\n"

	write("cmd/loopguard/main.go", main+"\n// A change not committed.\n")
	got["uncommitted changes"] = version(repo, "build")
	want["uncommitted changes"] = "loopguard " + pseudo + "+dirty\n" + module + at + ", with uncommitted changes\nGOVERSION\n"
	write("cmd/loopguard/main.go", main)

	// A release: a commit of its own, tagged. (The go command keeps the
	// version it found for a revision in the module cache: a tag put on a
	// commit already built is not seen until the cache forgets it.)
	write("README", "v1.2.0\n")
	sh(repo, "git", "add", "-A")
	sh(repo, "git", "commit", "-q", "-m", "release")
	sh(repo, "git", "tag", "v1.2.0")
	rev = strings.TrimSpace(sh(repo, "git", "rev-parse", "HEAD"))
	at = "built from a git checkout at revision " + rev + " (2026-01-02T03:04:05Z)"
	got["a tagged commit"] = version(repo, "build")
	want["a tagged commit"] = "loopguard v1.2.0\n" + module + at + "\nGOVERSION\n"

	write("README", "v1.2.0, and more\n")
	sh(repo, "git", "commit", "-q", "-a", "-m", "after the release")
	rev = strings.TrimSpace(sh(repo, "git", "rev-parse", "HEAD"))
	at = "built from a git checkout at revision " + rev + " (2026-01-02T03:04:05Z)"
	got["a commit after a tag"] = version(repo, "build")
	want["a commit after a tag"] = "loopguard v1.2.1-0.20260102030405-" + rev[:12] + "\n" + module + at + "\nGOVERSION\n"

	worktree := filepath.Join(filepath.Dir(repo), "worktree")
	sh(repo, "git", "worktree", "add", "-q", worktree)
	got["a linked worktree"] = version(worktree, "build")
	want["a linked worktree"] = "loopguard (devel)\n" + module + "GOVERSION\n"

	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loopguard version of a build (-want +got):\n%s", diff)
	}
}
