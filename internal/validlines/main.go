// Command validlines reads every line of the files in the folders given, on
// one worker per processor as loopguard audit does, checks each with
// json.Valid, and prints the bytes, the lines and the time it took: the bare
// cost of reading and checking a corpus of step lines, which BENCHMARKS.md
// compares loopguard audit with.
//
//	go run ./internal/validlines /tmp/corpus
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var paths []string
	for _, dir := range os.Args[1:] {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "validlines:", err)
			os.Exit(2)
		}
	}
	start := time.Now()
	var size, lines, invalid atomic.Int64
	next := make(chan string)
	go func() {
		defer close(next)
		for _, p := range paths {
			next <- p
		}
	}()
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var long []byte // a line longer than the buffer
			for p := range next {
				f, err := os.Open(p)
				if err != nil {
					fmt.Fprintln(os.Stderr, "validlines:", err)
					os.Exit(2)
				}
				r := bufio.NewReaderSize(f, 16<<10) // as trace.Reader reads
				for {
					line, err := r.ReadSlice('\n')
					if errors.Is(err, bufio.ErrBufferFull) {
						long = append(long[:0], line...)
						for errors.Is(err, bufio.ErrBufferFull) {
							line, err = r.ReadSlice('\n')
							long = append(long, line...)
						}
						line = long
					}
					if len(line) > 0 {
						size.Add(int64(len(line)))
						lines.Add(1)
						if !json.Valid(line) {
							invalid.Add(1)
						}
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						fmt.Fprintln(os.Stderr, "validlines:", err)
						os.Exit(2)
					}
				}
				f.Close()
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	fmt.Printf("%d files, %d lines (%d invalid), %d bytes in %v: %.0f MB/s\n", len(paths), lines.Load(), invalid.Load(),
		size.Load(), d.Round(time.Millisecond), float64(size.Load())/d.Seconds()/1e6)
}
