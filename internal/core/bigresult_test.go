package core_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// TestCheckAllocsFlatInResultSize: a Check whose call returned 1 or 4 MiB
// of text allocates no more than one whose call returned 1 KiB. Before,
// hashing the result allocated about twice its size in every Check (2.3 MB
// at 1 MiB), as package canonical let big buffers go.
func TestCheckAllocsFlatInResultSize(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	sizes := []int{1 << 10, 1 << 20, 4 << 20}
	if testing.Short() {
		sizes = sizes[:2]
	}
	// One P, so that canonical's pool hands back the encoder it was given,
	// and no collection, which would empty it.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var small float64
	for _, n := range sizes {
		g := defaultGuard(t)
		text := strings.Repeat(`line of output \"x\"\n`, n/20)
		steps := make([]guard.Step, 5)
		for i := range steps {
			args := fmt.Sprintf(`{"path":"src/f%d.go"}`, i)
			result := fmt.Sprintf(`{"content":[{"type":"text","text":"%s%d"}]}`, text, i)
			steps[i] = guard.Step{ToolCalls: []guard.ToolCall{{Name: "read", Args: json.RawMessage(args), Result: json.RawMessage(result)}}}
		}
		bytes := func() float64 {
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			testutil.Check(t, g, steps[0])
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for _, s := range steps[1:] {
				testutil.Check(t, g, s)
			}
			runtime.ReadMemStats(&m1)
			return float64(m1.TotalAlloc-m0.TotalAlloc) / float64(len(steps)-1)
		}()
		if n == sizes[0] {
			small = bytes
			continue
		}
		if bytes > small+1024 {
			t.Errorf("Check of a step whose result is %d bytes allocates %.0f bytes, want at most %.0f (as with a result of %d bytes, plus 1 KiB)",
				n, bytes, small+1024, sizes[0])
		}
	}
}
