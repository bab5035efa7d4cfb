package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// checkAll runs the tables' benchmarks n times, beside those of the
// baseline's code when it can be had, and fails if a figure regressed.
func checkAll(rn *runner, n int, basePath, baseCode string, w io.Writer) error {
	var base baselineFile
	data, err := os.ReadFile(basePath)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &base); err != nil {
			return fmt.Errorf("%s: %w", basePath, err)
		}
	case baseCode == "": // the file is needed to find the baseline's code
		return err
	}
	rev, err := baseCode, error(nil)
	if fi, ferr := os.Stat(baseCode); baseCode != "" && ferr == nil && fi.IsDir() {
		rn.add("base", baseCode, []string{"GOWORK=off"})
		fmt.Fprintf(w, "baseline: the code in %s, run in turn with the working tree's\n", baseCode)
	} else {
		if rev == "" {
			rev, err = baselineCommit(basePath)
		}
		if err == nil {
			root := filepath.Join(rn.dir, "base")
			if err = exportTree(rev, root); err == nil {
				// The baseline's code alone: no workspace, whose
				// other modules it does not need.
				rn.add("base", root, []string{"GOWORK=off"})
				fmt.Fprintf(w, "baseline: the code of %.12s, run in turn with the working tree's\n", rev)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(w, "baseline: the multiples that %s records (no baseline code: %v)\n", basePath, err)
	}
	for _, pkg := range rn.pkgs() {
		if err := rn.rounds(pkg, n); err != nil {
			return err
		}
	}
	failed := compare(rn, &base, io.Discard)
	for _, pkg := range rn.pkgs() {
		var names []string
		for _, f := range failed {
			if f.pkg == pkg {
				names = append(names, f.bench)
			}
		}
		if len(names) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: %s looked worse; measuring them and their references %d rounds more\n", pkg, strings.Join(names, ", "), retryRounds*n)
		if err := rn.roundsOf(pkg, rn.withReferences(pkg, names), retryRounds*n); err != nil {
			return err
		}
	}
	failed = compare(rn, &base, w)
	if len(failed) > 0 {
		var lines []string
		for _, f := range failed {
			lines = append(lines, f.pkg+" "+f.bench+": "+f.why)
		}
		return errors.New("figures regressed by more than 25% against the baseline (if that is meant, run go run ./internal/benchdoc -write and commit BENCHMARKS.md and the baseline with the change):\n\t" +
			strings.Join(lines, "\n\t"))
	}
	fmt.Fprintln(w, "ok: no figure regressed by more than 25%")
	return nil
}

// A failure is a figure that regressed.
type failure struct{ pkg, bench, why string }

// compare prints each figure of the working tree beside the baseline's and
// returns those that regressed. With the baseline's code, a figure is the
// lesser of two ratios of the working tree to the baseline's code: the
// median, over the rounds, of the working tree's multiple of the reference
// over the baseline code's in the same round, and the ratio of their best
// multiples (see variant.best); without, the median multiple over the one
// baseline.json records.
func compare(rn *runner, base *baselineFile, w io.Writer) []failure {
	var failed []failure
	head := rn.head()
	var code *variant
	if len(rn.variants) > 1 {
		code = rn.variants[1]
	}
	for _, t := range rn.ts {
		for _, rw := range t.rows {
			if rw.bench == t.reference(rw) {
				continue
			}
			hm, of := head.multiple(t, rw)
			hs := head.bench[t.pkg][rw.bench]
			allocs := math.Round(summarize(hs.allocs).center)
			var ratio, baseAllocs float64
			paired := ""
			if code != nil {
				bs := code.bench[t.pkg][rw.bench]
				if bs == nil {
					fmt.Fprintf(w, "%-16s %-24s new: not in the baseline's code\n", t.pkg, rw.bench)
					continue
				}
				// Two estimates, each with its own weakness under
				// load: the median of the rounds' ratios is pulled
				// up by a streak of slowed rounds of one tree, the
				// ratio of the best rounds by one lucky round of the
				// other (a loop that a collection happened to miss).
				// A figure is the lesser: a real slowdown raises both.
				hb, _ := head.best(t, rw)
				bb, bof := code.best(t, rw)
				bm, _ := code.multiple(t, rw)
				rs := make([]float64, min(len(hm), len(bm)))
				for i := range rs {
					rs[i] = hm[i] / bm[i]
				}
				if bof != of || hb == 0 || bb == 0 || len(rs) == 0 { // measured otherwise: compare the times
					hb, bb, rs = slices.Min(hs.time()), slices.Min(bs.time()), over(hs, bs)
				}
				median, best := summarize(rs).center, hb/bb
				ratio = min(median, best)
				paired = fmt.Sprintf("  (median of the rounds' ratios %.2f×, best rounds %.2f×)", median, best)
				baseAllocs = math.Round(summarize(bs.allocs).center)
			} else {
				want, ok := base.Figures[t.pkg][rw.bench]
				if !ok || want.Multiple == 0 || want.Of != of {
					fmt.Fprintf(w, "%-16s %-24s new: not in the baseline\n", t.pkg, rw.bench)
					continue
				}
				ratio = summarize(hm).center / want.Multiple
				baseAllocs = want.Allocs
			}
			verdict := judge(ratio, allocs, baseAllocs)
			fmt.Fprintf(w, "%-16s %-24s %5.2f× the baseline (of %s)  %7v allocs (baseline %v)  %s%s\n",
				t.pkg, rw.bench, ratio, of, allocs, baseAllocs, verdict, paired)
			if verdict != "ok" {
				failed = append(failed, failure{t.pkg, rw.bench, verdict})
			}
		}
	}
	return failed
}

// judge returns "ok" for a figure ratio times the baseline's (as multiples
// of the reference) that allocates allocs times per operation against
// baseAllocs, or else why it regressed: more than tolerance times slower, or
// more than tolerance times the allocations (rounded down, so that a
// baseline of 0 allows none and one of 4 allows 5).
func judge(ratio, allocs, baseAllocs float64) string {
	switch {
	case ratio > tolerance:
		return fmt.Sprintf("SLOWER: %.2f× the baseline", ratio)
	case allocs > math.Floor(baseAllocs*tolerance):
		return fmt.Sprintf("MORE ALLOCATIONS: %v, the baseline %v", allocs, baseAllocs)
	}
	return "ok"
}

// baselineCommit returns the commit that last changed the baseline file,
// whose code the tables describe. It is an error if the file has changes
// that are not committed, or if the history is shallow (the commit found
// would be the oldest one fetched, not the right one).
func baselineCommit(basePath string) (string, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	if shallow, err := git("rev-parse", "--is-shallow-repository"); err != nil {
		return "", fmt.Errorf("not a git checkout: %v", err)
	} else if shallow == "true" {
		return "", errors.New("the git history is shallow")
	}
	if st, err := git("status", "--porcelain", "--", basePath); err != nil || st != "" {
		return "", fmt.Errorf("%s has changes that are not committed", basePath)
	}
	rev, err := git("log", "-1", "--format=%H", "--", basePath)
	if err != nil || rev == "" {
		return "", fmt.Errorf("no commit wrote %s", basePath)
	}
	return rev, nil
}

// exportTree writes the files of a commit to dir.
func exportTree(rev, dir string) error {
	out, err := exec.Command("git", "archive", "--format=tar", rev).Output()
	if err != nil {
		return fmt.Errorf("git archive %s: %w", rev, err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("git archive: %q is outside the tree", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(name, data, os.FileMode(h.Mode)&0o777); err != nil {
				return err
			}
		}
	}
}
