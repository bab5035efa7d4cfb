package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

var versionCommand = &command{
	name:    "version",
	summary: "print the module version and VCS revision loopguard was built from",
	help:    versionHelp,
	run:     runVersion,
}

const versionUsage = `Usage: loopguard version

Version prints the version of the module loopguard was built from, the VCS
revision of a build in a checkout, and the Go version.

Installed with "go install ...@v1.2.0", the version is v1.2.0. Built in a
git checkout ("go install ./cmd/loopguard" or "go build"), Go 1.24 and later
take the version from the repository: the commit's tag, or else a
pseudo-version (v0.0.0-20260102030405-abcdef123456: the commit's time and
revision), with "+dirty" when the checkout has uncommitted changes; a line
"built from a git checkout at revision ..." follows. "(devel)" means that
the build recorded no VCS information: "go run", -buildvcs=false, a source
archive, or a linked git worktree, which the go command does not recognise.
`

func runVersion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("version")
	pos, code, ok := parseArgs("version", fs, versionHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, "version", "version takes no arguments")
	}
	info, _ := debug.ReadBuildInfo()
	io.WriteString(stdout, versionText(info))
	return exitOK
}

// versionText describes a build: "loopguard VERSION" on the first line, then
// the module, the checkout's revision (for a build that recorded one) and
// the Go version.
func versionText(info *debug.BuildInfo) string {
	if info == nil {
		return "loopguard (unknown version: built without module support)\n"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "loopguard %s\n", version)
	if info.Main.Path != "" {
		fmt.Fprintf(&b, "module %s\n", info.Main.Path)
	}
	var vcs, rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs":
			vcs = s.Value
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if vcs == "" {
			vcs = "VCS"
		}
		fmt.Fprintf(&b, "built from a %s checkout at revision %s", vcs, rev)
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
		if modified {
			b.WriteString(", with uncommitted changes")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s\n", info.GoVersion)
	return b.String()
}

// versionHelp writes the help of the version command.
func versionHelp(w io.Writer) {
	io.WriteString(w, versionUsage)
}
