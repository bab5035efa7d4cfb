package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestProxyRunsLoopguardProxyWithItsArguments(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake loopguard-proxy is a shell script")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"args: $*\"\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "loopguard-proxy"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var stdout, stderr bytes.Buffer
	code := run([]string{"proxy", "-upstream", "http://x"}, strings.NewReader(""), &stdout, &stderr)
	if code != 3 {
		t.Errorf("exit %d, want the proxy's 3; stderr: %s", code, stderr.String())
	}
	if got, want := stdout.String(), "args: -upstream http://x\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

func TestProxyWithoutLoopguardProxySaysHowToInstallIt(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"proxy"}, strings.NewReader(""), &stdout, &stderr); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), "go install github.com/loopguard/loopguard/proxy/cmd/loopguard-proxy@latest") {
		t.Errorf("stderr does not say how to install it:\n%s", stderr.String())
	}
}
