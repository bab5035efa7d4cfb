package main

import (
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkAuditHTML audits the real runs of testdata/traces in the
// process, without and with --html: the cost of drawing the runs (a probe
// detector, a Guard.Summary after each step, and the page).
func BenchmarkAuditHTML(b *testing.B) {
	page := filepath.Join(b.TempDir(), "report.html")
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"table", []string{"audit", "--fail-on", "never", traces}},
		{"html", []string{"audit", "--fail-on", "never", "--html", page, traces}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code := run(bc.args, nil, io.Discard, io.Discard); code != exitOK {
					b.Fatalf("exit status %d", code)
				}
			}
		})
	}
}
