// Command benchdoc runs the benchmarks that BENCHMARKS.md documents, and
// either rewrites the document's tables from them or checks that none of
// them got slower.
//
//	go run ./internal/benchdoc -write   # rewrite BENCHMARKS.md's tables and baseline.json
//	go run ./internal/benchdoc -check   # CI: fail if a figure regressed by more than 25%
//
// (.ci/bench runs it.) Each package's benchmarks are compiled once and run
// in rounds, each round one process that runs them all once. A figure is the
// median over the rounds, with the 95% confidence interval of the median as
// benchstat gives it. Times are CPU times where a benchmark reports them
// (cpu-ns/op, from package internal/benchcpu), wall-clock times otherwise:
// on a machine that other processes share, the CPU time varies much less.
// Each figure is also given as a multiple of a reference: work of the
// standard library only, measured in the same process (benchcpu's
// reference, measured just before and after the benchmark's loop, or the
// table's reference benchmark), which the machine's speed changes as much
// as ours but our changes never do.
//
// The check builds the code of the commit that last wrote baseline.json
// (the code the tables describe) beside the working tree's, runs both in
// alternate rounds, and fails if a figure of the working tree, as a multiple
// of the reference, is more than 25% above the same figure of the baseline's
// code measured in the same run, or if it allocates more than 25% more: a
// machine that gets slower or busier during the run slows both alike. The
// figure compared is the lesser of the median of the rounds' ratios and the
// ratio of the best rounds (each tree's least time over its reference's
// least time): on two busy cores each alone reached 1.25 to 1.33 for
// identical code, in six rounds, from different rounds, and the lesser
// stayed under 1.17; a real slowdown raises both. A figure that looks
// slower is measured again, alone with its reference, in twice as many
// rounds, before it fails. Without the baseline's commit (no git history), the check
// compares with the multiples that baseline.json records instead.
//
// A table of BENCHMARKS.md is the text between the lines
// "<!-- benchdoc:NAME -->" and "<!-- /benchdoc:NAME -->"; a table whose
// lines are not in the file is left out, and the text around the tables is
// never touched.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A table is one table of BENCHMARKS.md: benchmarks of one package.
type table struct {
	name  string // the marker's NAME
	pkg   string // the package, as go test takes it
	ref   string // the package's reference benchmark
	rows  []row
	intro string // a line above the table, if any
}

// A row is one benchmark of a table.
type row struct {
	bench string // the benchmark's name, without the GOMAXPROCS suffix
	label string // how the table names it (Markdown)
	vs    string // another benchmark of the table: a column gives the ratio to it
	note  string
	ref   string // the reference benchmark of this row, if not the table's
}

func r(bench, label, vs, note string) row { return row{bench: bench, label: label, vs: vs, note: note} }

// withRef returns rw measured against another reference benchmark.
func (rw row) withRef(ref string) row {
	rw.ref = ref
	return rw
}

// reference returns the reference benchmark of a row of t.
func (t table) reference(rw row) string {
	if rw.ref != "" {
		return rw.ref
	}
	return t.ref
}

// tables are the documented benchmarks.
var tables = []table{
	{
		name: "guard", pkg: "./internal/core", ref: "Reference",
		intro: "Default detectors. The *Reference* row, `json.Unmarshal` of a typical step into `any` (standard library only), is there for scale.",
		rows: []row{
			r("Reference", "*Reference*: `json.Unmarshal` of a typical step", "", "for scale"),
			r("Check", "`Check`, one call (150-byte args, 300-byte result), steady state", "", "target ≤ 1.5 µs, ≤ 3 allocs"),
			r("Preflight", "`Preflight`, one call", "", ""),
			r("Snapshot/steps=10", "`Snapshot` after 10 big steps", "", ""),
			r("Snapshot/steps=1000", "`Snapshot` after 1,000 big steps", "", ""),
			r("Snapshot/steps=6000", "`Snapshot` after 6,000 big steps", "", ""),
			r("Restore/steps=10", "`Restore` after 10 big steps (with `detector.Defaults()`)", "", ""),
			r("Restore/steps=1000", "`Restore` after 1,000 big steps", "", ""),
			r("Restore/steps=6000", "`Restore` after 6,000 big steps", "", "target ≤ 0.5 ms, ≤ 130 allocs"),
		},
	},
	{
		name: "pair", pkg: "./internal/core", ref: "Reference",
		intro: "One call judged before it runs and recorded after it, through each door, against a bare `Check` of the same step (`BenchmarkPair`).",
		rows: []row{
			r("Pair/typical/Check", "typical: `Check` of the step", "", "the reference of the pairs"),
			r("Pair/typical/TurnRun", "typical: `Begin`, `Run`, `End`", "Pair/typical/Check", "target ≤ 1.15×"),
			r("Pair/typical/TurnByID", "typical: `Begin`, `Preflight` by ID, `SetResult`, `End`", "Pair/typical/Check", "target ≤ 1.15×"),
			r("Pair/typical/CheckCall", "typical: `Check` of the call alone", "", "the reference of `StartCall`"),
			r("Pair/typical/StartCall", "typical: `StartCall`, `Finish`", "Pair/typical/CheckCall", "target ≤ 1.15×"),
			r("Pair/big/Check", "big: `Check` of the step", "", "the reference of the pairs"),
			r("Pair/big/TurnRun", "big: `Begin`, `Run`, `End`", "Pair/big/Check", "target ≤ 1.15×"),
			r("Pair/big/TurnByID", "big: `Begin`, `Preflight` by ID, `SetResult`, `End`", "Pair/big/Check", "target ≤ 1.15×"),
			r("Pair/big/CheckCall", "big: `Check` of the call alone", "", "the reference of `StartCall`"),
			r("Pair/big/StartCall", "big: `StartCall`, `Finish`", "Pair/big/CheckCall", "target ≤ 1.15×"),
			r("TurnPreflight4", "`Begin`, `Preflight` of 4 calls by ID, 4 `SetResult`, `End`", "Pair/typical/Check", ""),
		},
	},
	{
		name: "audit", pkg: "./cmd/loopguard", ref: "ValidLines",
		intro: "200 runs of 50 generated steps (16 MB), audited in the process; *Reference* is `json.Valid` of each of their lines.",
		rows: []row{
			r("ValidLines", "*Reference*: `json.Valid` of every line", "", "the yardstick"),
			r("Audit", "`loopguard audit --format json` of the 200 runs", "ValidLines", "CPU time of all workers"),
		},
	},
	{
		// Package canonical is measured against its own Unmarshal
		// benchmarks: json.Unmarshal of the same bytes (the Args ones
		// for the small inputs). Its section of BENCHMARKS.md is written
		// by hand until the markers are added; the check covers it.
		name: "canonical", pkg: "./canonical", ref: "UnmarshalArgs",
		intro: "*Unmarshal* is `json.Unmarshal` of the same bytes into `any` (standard library only): the reference of the row of the same input.",
		rows: []row{
			r("HashJSONArgs", "`HashJSON` Args (166 B)", "", "target ≤ 400 ns, 0 allocs"),
			r("HashJSONDoc", "`HashJSON` Doc (9.9 KB)", "", "aim 1 GB/s").withRef("UnmarshalDoc"),
			r("HashJSONChat", "`HashJSON` Chat (9.6 KB)", "", "aim 1 GB/s").withRef("UnmarshalChat"),
			r("UnmarshalArgs", "*Unmarshal* Args", "", "a reference"),
			r("UnmarshalDoc", "*Unmarshal* Doc", "", "a reference").withRef("UnmarshalDoc"),
			r("UnmarshalChat", "*Unmarshal* Chat", "", "a reference").withRef("UnmarshalChat"),
			r("HashMapArgs", "`Hash` of the decoded Args", "HashJSONArgs", ""),
			r("HashMapDoc", "`Hash` of the decoded Doc", "HashJSONDoc", "").withRef("UnmarshalDoc"),
			r("HashMapChat", "`Hash` of the decoded Chat", "HashJSONChat", "").withRef("UnmarshalChat"),
			r("HashStruct", "`Hash` of a struct (6 fields, Args)", "", ""),
			r("HashString300", "`Hash` of a 300-byte string", "", ""),
			r("HashRawMessage", "`Hash` of a json.RawMessage (Args)", "", ""),
			r("TransformArgs", "`Transform` Args", "", ""),
		},
	},
}

// Settings of the two modes.
const (
	writeRounds, writeBenchtime = 10, "300ms"
	checkRounds, checkBenchtime = 6, "60ms" // under 3 minutes on 2 busy cores
	// tolerance is how much slower than in the baseline, relative to the
	// reference, a figure may be in the check.
	tolerance = 1.25
	// retryRounds: a figure that looks worse is measured again, alone
	// with its reference, in retryRounds times as many rounds.
	retryRounds = 2
)

func main() {
	write := flag.Bool("write", false, "run the benchmarks at length and rewrite BENCHMARKS.md's tables and the baseline")
	check := flag.Bool("check", false, "run the benchmarks briefly and compare them with the baseline")
	rounds := flag.Int("rounds", 0, "rounds to run (default 10 for -write, 6 for -check)")
	benchtime := flag.String("benchtime", "", "go test -benchtime of each benchmark in each round (default 300ms for -write, 60ms for -check)")
	only := flag.String("tables", "", "comma-separated tables to run (default all)")
	doc := flag.String("doc", "BENCHMARKS.md", "the document to rewrite")
	baseline := flag.String("baseline", filepath.Join("internal", "benchdoc", "baseline.json"), "the baseline file")
	baseCode := flag.String("base", "", "for -check: the baseline's code, a commit or a folder (default the commit that last wrote the baseline file)")
	samplesOut := flag.String("samples", "", "write every round's measurements, of each tree, to this JSON file")
	flag.Parse()
	if *write == *check {
		fmt.Fprintln(os.Stderr, "benchdoc: give -write or -check")
		os.Exit(2)
	}
	n, bt := checkRounds, checkBenchtime
	if *write {
		n, bt = writeRounds, writeBenchtime
	}
	if *rounds > 0 {
		n = *rounds
	}
	if *benchtime != "" {
		bt = *benchtime
	}
	var ts []table
	for _, t := range tables {
		if *only == "" || slices.Contains(strings.Split(*only, ","), t.name) {
			ts = append(ts, t)
		}
	}
	rn, err := newRunner(ts, bt, os.Stderr)
	if err == nil {
		if *write {
			err = writeAll(rn, n, *doc, *baseline)
		} else {
			err = checkAll(rn, n, *baseline, *baseCode, os.Stdout)
		}
		if *samplesOut != "" {
			err = errors.Join(err, rn.writeSamples(*samplesOut))
		}
		rn.close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}
