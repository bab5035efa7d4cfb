package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector/repeat"
	"github.com/loopguard/loopguard/guard"
)

// TestTimelineWindows feeds timelines runs of n steps with a fault stop at
// step stop (or none, -1) and checks what they keep: every step of a run of
// up to maxDrawnSteps; of a longer one at most maxDrawnSteps, in order, with
// the first headSteps, the beforeStop steps up to and including the stop,
// the afterStop after it and the last one, and gaps that count the others.
func TestTimelineWindows(t *testing.T) {
	fault := &guard.Verdict{Stop: true, Reason: repeat.ReasonRepeatedToolCall, Code: "REPEATED_TOOL_CALL"}
	type run struct{ n, stop int }
	var runs []run
	for _, n := range []int{1, 2, maxDrawnSteps - 1, maxDrawnSteps, maxDrawnSteps + 1, 2 * maxDrawnSteps, 100_000} {
		for _, stop := range []int{-1, 0, 1, headSteps - 1, headSteps, beforeStop - 1, beforeStop, beforeStop + headSteps,
			maxDrawnSteps - 1, maxDrawnSteps, n/2 - 1, n / 2, n - afterStop - 1, n - afterStop, n - 2, n - 1} {
			if stop < n {
				runs = append(runs, run{n, stop})
			}
		}
	}
	for _, r := range runs {
		tl := &timeline{}
		for i := range r.n {
			m := stepMark{index: i, line: i + 1, judged: r.stop < 0 || i <= r.stop}
			if i == r.stop {
				m.stop = fault
			}
			tl.keep(m)
			if k := tl.kept(); k > maxDrawnSteps {
				t.Fatalf("%+v: %d steps kept after step %d", r, k, i)
			}
		}
		var drawn []int
		counted := 0
		for _, c := range tl.columns() {
			if c.step == nil {
				if c.gap <= 0 {
					t.Errorf("%+v: a gap of %d steps", r, c.gap)
				}
				counted += c.gap
				continue
			}
			if len(drawn) > 0 && c.step.index <= drawn[len(drawn)-1] {
				t.Errorf("%+v: step %d after step %d", r, c.step.index, drawn[len(drawn)-1])
			}
			drawn = append(drawn, c.step.index)
			counted++
		}
		if counted != r.n || tl.total != r.n {
			t.Errorf("%+v: %d steps drawn or counted in gaps, %d read; want %d", r, counted, tl.total, r.n)
		}
		want := min(r.n, maxDrawnSteps)
		if len(drawn) != want {
			t.Errorf("%+v: %d steps drawn, want %d", r, len(drawn), want)
		}
		has := map[int]bool{}
		for _, i := range drawn {
			has[i] = true
		}
		must := func(from, to int, what string) { // [from, to)
			for i := max(from, 0); i < min(to, r.n); i++ {
				if !has[i] {
					t.Errorf("%+v: step %d (%s) is not drawn", r, i, what)
					return
				}
			}
		}
		must(0, headSteps, "the first")
		must(r.n-1, r.n, "the last")
		if r.stop >= 0 {
			must(r.stop-beforeStop+1, r.stop+1, "before the stop")
			must(r.stop+1, r.stop+1+afterStop, "after the stop")
		}
	}
}

// TestHTMLPageBounds checks the page's bounds at their edges: of runs of
// maxDrawnSteps steps, the first that would take the page past maxPageSteps
// gets no timeline; of maxPageRuns+1 runs, the last is left out of the page.
// The page says both.
func TestHTMLPageBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("2,001 runs")
	}
	page := func(dir string) (*element, string) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "page.html")
		if res := runCmd(t, "", "audit", "--fail-on", "never", "--html", p, dir); res.code != exitOK {
			t.Fatalf("exit %d: %.500s", res.code, res.stderr)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		root := parsePage(t, data)
		return root, root.text()
	}
	// Runs of maxDrawnSteps steps, one more than the page draws in all.
	dir := t.TempDir()
	long := strings.Repeat(`{"text": "a"}`+"\n", maxDrawnSteps)
	n := maxPageSteps/maxDrawnSteps + 1
	for i := range n {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("run-%03d.jsonl", i)), []byte(long), 0o644)
	}
	root, text := page(dir)
	sections := root.find(byClass("section", "run"))
	if len(sections) != n {
		t.Fatalf("%d sections, want %d", len(sections), n)
	}
	for i, s := range sections {
		hits := len(s.find(byClass("rect", "hit")))
		if want := maxDrawnSteps; i == n-1 && hits != 0 || i < n-1 && hits != want {
			t.Errorf("run %d: %d steps drawn", i, hits)
		}
	}
	if want := fmt.Sprintf("1 run is drawn without a timeline: the page draws at most %d steps in all.", maxPageSteps); !strings.Contains(text, want) {
		t.Errorf("the page does not say %q", want)
	}

	// One run more than the page holds.
	dir = t.TempDir()
	for i := range maxPageRuns + 1 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("run-%04d.jsonl", i)), []byte(`{"text": "a"}`+"\n"), 0o644)
	}
	root, text = page(dir)
	if rows, sections := len(root.find(func(e *element) bool { return e.Name == "tr" && len(e.Children) > 0 && e.Children[0].Name == "td" })),
		len(root.find(byClass("section", "run"))); rows != maxPageRuns || sections != maxPageRuns {
		t.Errorf("%d rows, %d sections; want %d", rows, sections, maxPageRuns)
	}
	for _, want := range []string{
		fmt.Sprintf("loopguard audit: %d runs", maxPageRuns+1),
		fmt.Sprintf("1 run after the first %d is not on this page", maxPageRuns),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
