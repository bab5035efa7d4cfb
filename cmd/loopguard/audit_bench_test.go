package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/internal/benchcpu"
)

var (
	corpusDir  = flag.String("corpus", "", "write a corpus of runs of 50 steps to this folder (see BENCHMARKS.md)")
	corpusRuns = flag.Int("corpus-runs", 10000, "how many runs -corpus writes (10,000 make 803 MB)")
)

// writeCorpus writes runs files of steps step lines each to dir: agents that
// search, read and write with varied arguments and results of a few hundred
// bytes, about one run in ten of which gets stuck repeating a call. It is
// deterministic.
func writeCorpus(dir string, runs, steps int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("agent loop guard search read write file test build error value config result module " +
		"package function request response token budget repeat cycle step tool call")
	sentence := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	type call struct {
		Name   string         `json:"name"`
		Args   map[string]any `json:"args"`
		Result string         `json:"result"`
		Error  any            `json:"error"`
	}
	type step struct {
		Text         string         `json:"text"`
		ToolCalls    []call         `json:"toolCalls"`
		FinishReason string         `json:"finishReason"`
		Usage        map[string]int `json:"usage"`
	}
	tools := []string{"search", "read_file", "write_file", "run_tests"}
	for r := range runs {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("run-%05d.jsonl", r)))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		stuckAt := steps + 1
		if r%10 == 0 {
			stuckAt = 10 + rng.IntN(steps-10)
		}
		var stuck []call
		for s := range steps {
			st := step{Text: sentence(20 + rng.IntN(40)), FinishReason: "tool-calls",
				Usage: map[string]int{"inputTokens": 1000 + 50*s, "outputTokens": 50 + rng.IntN(200)}}
			if s >= stuckAt {
				if stuck == nil {
					stuck = []call{{Name: "search", Args: map[string]any{"query": sentence(5)}, Result: sentence(40)}}
				}
				st.ToolCalls = stuck
			} else {
				for range 1 + rng.IntN(2) {
					st.ToolCalls = append(st.ToolCalls, call{
						Name:   tools[rng.IntN(len(tools))],
						Args:   map[string]any{"path": fmt.Sprintf("src/%s/%d.go", sentence(1), rng.IntN(1000)), "query": sentence(4), "limit": rng.IntN(50)},
						Result: sentence(60 + rng.IntN(120)),
					})
				}
			}
			if err := enc.Encode(st); err != nil {
				return err
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// TestWriteCorpus writes the benchmark corpus when -corpus is given:
//
//	go test ./cmd/loopguard -run TestWriteCorpus -corpus /tmp/corpus
//	go build -o /tmp/loopguard ./cmd/loopguard
//	time /tmp/loopguard audit /tmp/corpus > /dev/null
func TestWriteCorpus(t *testing.T) {
	if *corpusDir == "" {
		t.Skip("no -corpus folder given")
	}
	if err := os.MkdirAll(*corpusDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeCorpus(*corpusDir, *corpusRuns, 50); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAudit audits a corpus of 200 runs of 50 steps in the process; the
// figure per run, times 10,000, approximates the full corpus. The CPU time
// (cpu-ns/op) is that of all the workers.
func BenchmarkAudit(b *testing.B) {
	dir := b.TempDir()
	const runs = 200
	if err := writeCorpus(dir, runs, 50); err != nil {
		b.Fatal(err)
	}
	cpu := benchcpu.Start(b)
	for b.Loop() {
		if code := run([]string{"audit", "--format", "json", "--fail-on", "never", dir}, nil, io.Discard, io.Discard); code != exitOK {
			b.Fatalf("exit status %d", code)
		}
	}
	cpu.Stop()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/runs/1e3, "µs/run")
}

// BenchmarkValidLines is the yardstick of BenchmarkAudit: json.Valid of every
// line of the same corpus, read file by file, in one goroutine. It is work
// of the standard library only.
func BenchmarkValidLines(b *testing.B) {
	dir := b.TempDir()
	const runs = 200
	if err := writeCorpus(dir, runs, 50); err != nil {
		b.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) != runs {
		b.Fatalf("%d files, %v", len(paths), err)
	}
	var size int64
	cpu := benchcpu.Start(b)
	for b.Loop() {
		size = 0
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			size += int64(len(data))
			for line := range bytes.Lines(data) {
				if !json.Valid(line) {
					b.Fatalf("%s: invalid line", p)
				}
			}
		}
	}
	cpu.Stop()
	b.SetBytes(size)
}
