package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// proxyCommand starts loopguard-proxy, which lives in a module of its own
// (github.com/loopguard/loopguard/proxy) so that this module keeps to the
// standard library: it runs the loopguard-proxy found beside this
// executable or on PATH, with the same arguments.
var proxyCommand = &command{
	name:    "proxy",
	summary: "guard any agent: a reverse proxy in front of its model API (runs loopguard-proxy)",
	help: func(w io.Writer) {
		io.WriteString(w, proxyHelp)
	},
	run: runProxy,
}

const proxyHelp = `Usage: loopguard proxy -upstream URL [FLAGS]

Runs loopguard's reverse proxy in front of a model API (OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages), so that an agent in any
language is guarded by pointing its base URL at it. The proxy is the
program loopguard-proxy, from the module github.com/loopguard/loopguard/proxy
(kept apart so that this module depends on the standard library alone);
loopguard proxy runs the one beside this executable or on PATH with the
same arguments. Install it with

	go install github.com/loopguard/loopguard/proxy/cmd/loopguard-proxy@latest

or run it from a checkout with go run ./proxy/cmd/loopguard-proxy.
Run "loopguard-proxy -help" for its flags.
`

func runProxy(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	path, err := findProxy()
	if err != nil {
		fmt.Fprintf(stderr, "loopguard proxy: %v\n\n%s", err, proxyHelp)
		return exitUsage
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := startProxy(cmd); err != nil {
		fmt.Fprintf(stderr, "loopguard proxy: %v\n", err)
		return exitFailed
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); errors.As(err, &exit) {
		return exit.ExitCode()
	} else if err != nil {
		fmt.Fprintf(stderr, "loopguard proxy: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// findProxy looks for loopguard-proxy beside this executable, then on PATH.
func findProxy() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "loopguard-proxy")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("loopguard-proxy")
	if err != nil {
		return "", errors.New("loopguard-proxy is not installed (not beside this executable, not on PATH)")
	}
	return p, nil
}
