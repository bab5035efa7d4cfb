package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// samples are the measurements of one benchmark over the rounds.
type samples struct {
	wall, cpu, cpuRef, allocs, bytes, mbs []float64
}

// time returns the time samples: the CPU time if the benchmark reports it.
func (s *samples) time() []float64 {
	if len(s.cpu) == len(s.wall) && len(s.cpu) > 0 {
		return s.cpu
	}
	return s.wall
}

// speed returns the MB/s samples, of the CPU time if the benchmark reports
// it (go test gives them of the wall-clock time).
func (s *samples) speed() []float64 {
	if len(s.cpu) != len(s.mbs) || len(s.wall) != len(s.mbs) {
		return s.mbs
	}
	out := make([]float64, len(s.mbs))
	for i, v := range s.mbs {
		out[i] = v * s.wall[i] / s.cpu[i]
	}
	return out
}

// A variant is a tree of the code whose benchmarks are run: the working
// tree, or the baseline's commit.
type variant struct {
	name  string
	root  string   // the module's folder
	env   []string // added to the environment of go and of the tests
	bins  map[string]string
	bench map[string]map[string]*samples // by package, then benchmark
	cpu   string                         // the cpu: line of go test
}

// A runner runs the benchmarks of the tables' packages in rounds.
type runner struct {
	ts        []table
	benchtime string
	log       io.Writer
	dir       string // for the test binaries
	variants  []*variant
	load      string // the load average when the run began
}

func newRunner(ts []table, benchtime string, log io.Writer) (*runner, error) {
	dir, err := os.MkdirTemp("", "benchdoc")
	if err != nil {
		return nil, err
	}
	rn := &runner{ts: ts, benchtime: benchtime, log: log, dir: dir, load: loadAverage()}
	rn.add("head", ".", nil)
	return rn, nil
}

func (rn *runner) close() { os.RemoveAll(rn.dir) }

// add adds a variant whose module is at root.
func (rn *runner) add(name, root string, env []string) *variant {
	v := &variant{name: name, root: root, env: env, bins: map[string]string{}, bench: map[string]map[string]*samples{}}
	rn.variants = append(rn.variants, v)
	return v
}

// head returns the working tree's variant.
func (rn *runner) head() *variant { return rn.variants[0] }

// pkgs returns the packages of the tables, in order.
func (rn *runner) pkgs() []string {
	var pkgs []string
	for _, t := range rn.ts {
		if !slices.Contains(pkgs, t.pkg) {
			pkgs = append(pkgs, t.pkg)
		}
	}
	return pkgs
}

// names returns the benchmarks of pkg that the tables name, references
// included.
func (rn *runner) names(pkg string) []string {
	var names []string
	for _, t := range rn.ts {
		if t.pkg == pkg {
			for _, rw := range t.rows {
				names = append(names, rw.bench, t.reference(rw))
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// rounds runs the benchmarks of pkg n more times in every variant, the
// variants in turn, in an order that alternates from round to round.
func (rn *runner) rounds(pkg string, n int) error {
	return rn.roundsOf(pkg, rn.names(pkg), n)
}

// withReferences returns the benchmarks names of pkg with their references.
func (rn *runner) withReferences(pkg string, names []string) []string {
	out := slices.Clone(names)
	for _, t := range rn.ts {
		for _, rw := range t.rows {
			if t.pkg == pkg && slices.Contains(names, rw.bench) {
				out = append(out, t.reference(rw))
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// roundsOf is rounds of the benchmarks names of pkg only.
func (rn *runner) roundsOf(pkg string, names []string, n int) error {
	for i := range n {
		order := slices.Clone(rn.variants)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			fmt.Fprintf(rn.log, "benchdoc: %s (%s), round %d of %d\n", pkg, v.name, i+1, n)
			if err := rn.round(v, pkg, names); err != nil {
				return err
			}
		}
	}
	return nil
}

// round runs the benchmarks of pkg once in variant v. A benchmark that the
// baseline's code does not have is left out of its results.
func (rn *runner) round(v *variant, pkg string, names []string) error {
	bin, ok := v.bins[pkg]
	if !ok {
		bin = filepath.Join(rn.dir, v.name+"-"+strings.NewReplacer("/", "_", ".", "_").Replace(pkg)+".test")
		build := exec.Command("go", "test", "-c", "-o", bin, pkg)
		build.Dir, build.Env, build.Stderr = v.root, append(os.Environ(), v.env...), rn.log
		if err := build.Run(); err != nil {
			return fmt.Errorf("%s: go test -c %s: %w", v.name, pkg, err)
		}
		v.bins[pkg] = bin
	}
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", benchPattern(names), "-test.benchmem",
		"-test.benchtime", rn.benchtime, "-test.count", "1")
	cmd.Dir, cmd.Env, cmd.Stderr = filepath.Join(v.root, pkgDir(pkg)), append(os.Environ(), v.env...), rn.log
	out, err := cmd.Output()
	if err != nil {
		rn.log.Write(out)
		return fmt.Errorf("%s: %s: %w", v.name, pkg, err)
	}
	round, cpu, err := parse(out)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", v.name, pkg, err)
	}
	if cpu != "" {
		v.cpu = cpu
	}
	got := v.bench[pkg]
	if got == nil {
		got = map[string]*samples{}
		v.bench[pkg] = got
	}
	for _, name := range names {
		m, ok := round[name]
		if !ok {
			if v == rn.head() {
				return fmt.Errorf("%s: no result for Benchmark%s", pkg, name)
			}
			continue
		}
		s := got[name]
		if s == nil {
			s = &samples{}
			got[name] = s
		}
		s.wall = append(s.wall, m["ns/op"])
		s.allocs = append(s.allocs, m["allocs/op"])
		s.bytes = append(s.bytes, m["B/op"])
		if v, ok := m["cpu-ns/op"]; ok {
			s.cpu = append(s.cpu, v)
		}
		if v, ok := m["cpu/ref"]; ok {
			s.cpuRef = append(s.cpuRef, v)
		}
		if v, ok := m["MB/s"]; ok {
			s.mbs = append(s.mbs, v)
		}
	}
	return nil
}

// writeSamples writes every round's measurements to path as JSON: by tree,
// package and benchmark, each measure's values in the order of the rounds.
func (rn *runner) writeSamples(path string) error {
	out := map[string]map[string]map[string]map[string][]float64{}
	for _, v := range rn.variants {
		pkgs := map[string]map[string]map[string][]float64{}
		for pkg, got := range v.bench {
			benches := map[string]map[string][]float64{}
			for name, s := range got {
				benches[name] = map[string][]float64{"ns/op": s.wall, "cpu-ns/op": s.cpu, "cpu/ref": s.cpuRef, "allocs/op": s.allocs, "B/op": s.bytes}
			}
			pkgs[pkg] = benches
		}
		out[v.name] = pkgs
	}
	data, err := json.MarshalIndent(out, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// multiple returns, round by round, a benchmark's time as a multiple of its
// reference, and what the reference is: benchcpu's reference work if the
// benchmark measured it, or else the row's reference benchmark, run in the
// same process.
func (v *variant) multiple(t table, rw row) ([]float64, string) {
	got := v.bench[t.pkg]
	s := got[rw.bench]
	if s == nil {
		return nil, ""
	}
	if len(s.cpuRef) == len(s.wall) && len(s.cpuRef) > 0 {
		return s.cpuRef, "benchcpu.Reference"
	}
	ref := got[t.reference(rw)]
	if ref == nil {
		return nil, ""
	}
	return over(s, ref), t.reference(rw)
}

// best returns a benchmark's best multiple of its reference over the
// rounds, and what the reference is (as multiple does): its least time over
// the least time of the reference (benchcpu's reference work, measured
// around the benchmark's loop, or the row's reference benchmark). Other
// processes only ever slow a round down, by as much as 30% on two busy
// cores, and unevenly from one moment to the next; the least of several
// rounds is the figure they disturbed least, for our code and for the
// reference alike. Comparing the least times, rather than the rounds'
// multiples, keeps a round whose reference alone was slowed from looking
// fast. It returns 0 when the rounds have no time.
func (v *variant) best(t table, rw row) (float64, string) {
	s := v.bench[t.pkg][rw.bench]
	if s == nil || len(s.time()) == 0 {
		return 0, ""
	}
	if len(s.cpuRef) == len(s.wall) && len(s.cpuRef) > 0 {
		if len(s.cpu) != len(s.cpuRef) {
			return slices.Min(s.cpuRef), "benchcpu.Reference"
		}
		refs := make([]float64, len(s.cpu))
		for i, c := range s.cpu {
			refs[i] = c / s.cpuRef[i] // the reference's CPU time in that round
		}
		return slices.Min(s.cpu) / slices.Min(refs), "benchcpu.Reference"
	}
	ref := v.bench[t.pkg][t.reference(rw)]
	if ref == nil {
		return 0, ""
	}
	st, ot := s.time(), ref.time()
	if (len(s.cpu) > 0) != (len(ref.cpu) > 0) {
		st, ot = s.wall, ref.wall
	}
	if len(st) == 0 || len(ot) == 0 {
		return 0, ""
	}
	return slices.Min(st) / slices.Min(ot), t.reference(rw)
}

// over returns, round by round, the time of s over the time of o: both CPU
// times if both have them, both wall-clock times otherwise.
func over(s, o *samples) []float64 {
	st, ot := s.time(), o.time()
	if len(st) != len(ot) {
		st, ot = s.wall, o.wall
	}
	out := make([]float64, min(len(st), len(ot)))
	for i := range out {
		out[i] = st[i] / ot[i]
	}
	return out
}

// benchPattern returns a -test.bench pattern that matches the top-level
// benchmarks of those named, which run all their sub-benchmarks. (A pattern
// of several levels would match a benchmark without sub-benchmarks only
// partly, and go test would not print its result.)
func benchPattern(names []string) string {
	var tops []string
	for _, n := range names {
		top, _, _ := strings.Cut(n, "/")
		if top = regexp.QuoteMeta(top); !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	return "^Benchmark(" + strings.Join(tops, "|") + ")$"
}

// pkgDir is the folder of a package given as ./path.
func pkgDir(pkg string) string { return filepath.FromSlash(strings.TrimPrefix(pkg, "./")) }

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parse reads go test -bench output: each benchmark's metrics by unit, and
// the cpu: line.
func parse(out []byte) (map[string]map[string]float64, string, error) {
	got := map[string]map[string]float64{}
	cpu := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, "cpu: "); ok {
			cpu = strings.TrimSpace(c)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		if len(fields)%2 != 0 {
			return nil, "", fmt.Errorf("cannot read %q", line)
		}
		metrics := map[string]float64{}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, "", fmt.Errorf("cannot read %q: %v", line, err)
			}
			metrics[fields[i+1]] = v
		}
		got[m[1]] = metrics
	}
	return got, cpu, sc.Err()
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
