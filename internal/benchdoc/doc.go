package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
)

// render returns the Markdown table of t, from the working tree's results.
func render(rn *runner, t table, rounds int) string {
	v := rn.head()
	got := v.bench[t.pkg]
	var b strings.Builder
	if t.intro != "" {
		b.WriteString(t.intro + "\n\n")
	}
	var refs []string
	for _, rw := range t.rows {
		if _, of := v.multiple(t, rw); !slices.Contains(refs, of) {
			refs = append(refs, of)
		}
	}
	for i, of := range refs {
		if of == "benchcpu.Reference" {
			refs[i] = "`json.Valid` of a 600-byte step (benchcpu's reference, measured just before and after the loop)"
		} else {
			refs[i] = "`Benchmark" + of + "` in the same process"
		}
	}
	fmt.Fprintf(&b, "Median of %d rounds of `-benchtime %s`, ± the 95%% confidence interval of the median; "+
		"*× ref.* is the time over that of %s; speeds (MB/s) are of the CPU time where there is one. %s, %s/%s, %s, load average %s.\n\n",
		rounds, rn.benchtime, strings.Join(refs, ", or "), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		orDash(v.cpu), orDash(rn.load))
	b.WriteString("| benchmark | CPU time | wall time | × ref. | ratio | allocs | bytes | notes |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, rw := range t.rows {
		s := got[rw.bench]
		cpu := "–"
		if len(s.cpu) > 0 {
			c := summarize(s.cpu)
			cpu = duration(c.center) + " " + c.pm()
		}
		w := summarize(s.wall)
		m, _ := v.multiple(t, rw)
		mult := summarize(m)
		vs := ""
		if rw.vs != "" {
			r := summarize(over(s, got[rw.vs]))
			vs = fmt.Sprintf("%.2f× %s %s", r.center, shortName(rw.vs), r.pm())
		}
		note := rw.note
		if len(s.mbs) > 0 {
			note = strings.TrimPrefix(note+"; "+sig3(summarize(s.speed()).center)+" MB/s", "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s %s | %s | %s | %s | %s |\n", rw.label, cpu, duration(w.center), w.pm(),
			sig3(mult.center), mult.pm(), vs, count(s.allocs), count(s.bytes), note)
	}
	return b.String()
}

// shortName is the last part of a benchmark's name.
func shortName(name string) string {
	return name[strings.LastIndex(name, "/")+1:]
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// A figure is what the baseline records of a benchmark.
type figure struct {
	Multiple float64 `json:"multiple"` // the median multiple of the reference
	Of       string  `json:"of"`       // the reference
	Allocs   float64 `json:"allocs"`   // the median allocations per operation
}

// A baselineFile records the figures of the last -write, by package and
// benchmark. The commit that last changed it is the baseline's code.
type baselineFile struct {
	Note    string                       `json:"note"`
	Go      string                       `json:"go"`
	CPU     string                       `json:"cpu"`
	Figures map[string]map[string]figure `json:"figures"`
}

// writeAll runs the tables' benchmarks n times and rewrites their tables in
// the document and their figures in the baseline.
func writeAll(rn *runner, n int, docPath, basePath string) error {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	base := baselineFile{Figures: map[string]map[string]figure{}}
	if old, err := os.ReadFile(basePath); err == nil {
		if err := json.Unmarshal(old, &base); err != nil {
			return fmt.Errorf("%s: %w", basePath, err)
		}
	}
	for _, pkg := range rn.pkgs() {
		if err := rn.rounds(pkg, n); err != nil {
			return err
		}
	}
	v := rn.head()
	base.Note = "Written by go run ./internal/benchdoc -write, with the tables of BENCHMARKS.md: each benchmark's median multiple of its reference, and its allocations. The code of the commit that last changed this file is the baseline of go run ./internal/benchdoc -check."
	base.Go, base.CPU = runtime.Version(), v.cpu
	for _, t := range rn.ts {
		figs := base.Figures[t.pkg]
		if figs == nil {
			figs = map[string]figure{}
			base.Figures[t.pkg] = figs
		}
		for _, rw := range t.rows {
			m, of := v.multiple(t, rw)
			figs[rw.bench] = figure{Multiple: round3(summarize(m).center), Of: of,
				Allocs: math.Round(summarize(v.bench[t.pkg][rw.bench].allocs).center)}
		}
		var found bool
		doc, found = replaceBlock(doc, t.name, render(rn, t, n))
		if !found {
			fmt.Fprintf(rn.log, "benchdoc: %s has no table %q (no <!-- benchdoc:%s --> line): only its figures are recorded\n", docPath, t.name, t.name)
		}
	}
	out, err := json.MarshalIndent(base, "", "\t")
	if err != nil {
		return err
	}
	if err := os.WriteFile(basePath, append(out, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(docPath, doc, 0o644)
}

// round3 rounds to three significant digits.
func round3(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, 3-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// replaceBlock replaces the text between the marker lines of a table.
func replaceBlock(doc []byte, name, body string) ([]byte, bool) {
	begin := []byte("<!-- benchdoc:" + name + " -->\n")
	end := []byte("<!-- /benchdoc:" + name + " -->")
	i := bytes.Index(doc, begin)
	if i < 0 {
		return doc, false
	}
	j := bytes.Index(doc[i:], end)
	if j < 0 {
		return doc, false
	}
	j += i
	out := slices.Clone(doc[:i+len(begin)])
	out = append(out, body...)
	return append(out, doc[j:]...), true
}
