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

Version prints the version of the module loopguard was built from (a tag
such as v1.2.0 when it was installed with "go install ...@v1.2.0", or
"(devel)" for a build from a checkout), the VCS revision and time of a
checkout build (with "modified" when the checkout had uncommitted changes),
and the Go version.
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
// the module, the revision (if any) and the Go version.
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
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
		if modified {
			b.WriteString(", modified")
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
