package proxy

// The benchmarks of issue 25 ("Performance"): the proxy against a bare
// httputil.ReverseProxy in front of the same upstream, both called in this
// process through their ServeHTTP, the upstream an http.Handler called by
// an in-process http.RoundTripper (no sockets: loopback round trips on this
// 2-core machine vary more than the proxy's whole work). The reference is
// json.Valid over the same request body, measured in the same batches.
//
//	go test ./proxy -run '^$' -bench Proxy -benchmem -count 5

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
)

// benchCompletion is the upstream's fixed answer: one tool call, as in an
// agent's loop, so that the proxy preflights it.
var benchCompletion = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1767225600,"model":"gpt-bench",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_next","type":"function",` +
	`"function":{"name":"read_file","arguments":"{\"path\":\"src/next.go\"}"}}],"refusal":null,"annotations":[]},` +
	`"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12000,"completion_tokens":20,"total_tokens":12020},` +
	`"service_tier":"default","system_fingerprint":"fp_bench"}`)

// benchStream is the same answer streamed, with some text before the call:
// the text passes at once, the call's events are held until the end.
var benchStream = func() []byte {
	var b bytes.Buffer
	head := `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"gpt-bench","service_tier":"default","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":`
	for _, d := range []string{
		`{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]`,
		`{"content":"Reading "},"logprobs":null,"finish_reason":null}]`,
		`{"content":"the next "},"logprobs":null,"finish_reason":null}]`,
		`{"content":"file."},"logprobs":null,"finish_reason":null}]`,
		`{"tool_calls":[{"index":0,"id":"call_next","type":"function","function":{"name":"read_file","arguments":""}}]},"logprobs":null,"finish_reason":null}]`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"src/next.go\"}"}}]},"logprobs":null,"finish_reason":null}]`,
		`{},"logprobs":null,"finish_reason":"tool_calls"}]`,
	} {
		b.WriteString("data: " + head + d + "}\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}()

// benchUpstream answers at once: it reads the request's body, then writes
// the fixed completion, streamed when the request has the header
// X-Bench-Stream.
type benchUpstream struct{}

func (benchUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if r.Header.Get("X-Bench-Stream") != "" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		w.Write(benchStream)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(benchCompletion)))
	w.Write(benchCompletion)
}

// inProcess is a RoundTripper that calls a handler in this process.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if r.Body != nil {
		r.Body.Close()
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// sink is the client's side of a proxy: it counts what it gets and notes
// when the first byte came.
type sink struct {
	h      http.Header
	status int
	n      int
	first  clock
}

func (s *sink) Header() http.Header { return s.h }
func (s *sink) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *sink) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.first == (clock{}) && len(p) > 0 {
		s.first = now()
	}
	s.n += len(p)
	return len(p), nil
}
func (s *sink) Flush() {}

// benchConversation returns a Chat Completions request body of n messages
// (n ≥ 42): a system prompt, the task, and 20 tool steps (an assistant
// message with one call, the tool's result of 2 KB), with short exchanges
// of text (the assistant, then the user) spread between them. The last two
// messages are the last tool step: prime is the body without them, the
// request before it in the agent's loop.
func benchConversation(n int, stream bool) (prime, body []byte) {
	const toolSteps = 20
	if n < 2+2*toolSteps || (n-2-2*toolSteps)%2 != 0 {
		panic(fmt.Sprintf("benchConversation(%d): want 42 or more messages, an even number", n))
	}
	rng := rand.New(rand.NewPCG(uint64(n), 25))
	words := strings.Fields("the of a to in is for on that with file test func return error value package import string int go build run case when this from not all new call")
	text := func(size int) string {
		var b strings.Builder
		line := 0
		for b.Len() < size {
			w := words[rng.IntN(len(words))]
			switch rng.IntN(40) {
			case 0:
				w = `"` + w + `"`
			case 1:
				w += strconv.Itoa(rng.IntN(1000))
			}
			b.WriteString(w)
			line += len(w) + 1
			if line > 72 {
				b.WriteByte('\n')
				line = 0
			} else {
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	str := func(s string) string {
		q, _ := json.Marshal(s)
		return string(q)
	}
	msgs := []string{
		`{"role":"system","content":` + str("You are a coding agent. Use the tools to read and change files; answer when the tests pass.") + `}`,
		`{"role":"user","content":` + str("Fix the failing test in package store.") + `}`,
	}
	pairs := (n - 2 - 2*toolSteps) / 2
	done := 0
	for i := range toolSteps {
		// Spread the text exchanges evenly before the tool steps.
		for ; done < pairs*(i+1)/toolSteps; done++ {
			msgs = append(msgs,
				`{"role":"assistant","content":`+str(fmt.Sprintf("Note %d: %s", done, text(60+rng.IntN(60))))+`}`,
				`{"role":"user","content":`+str(fmt.Sprintf("Reply %d: %s", done, text(20+rng.IntN(40))))+`}`)
		}
		id := fmt.Sprintf("call_%02d", i)
		args := str(fmt.Sprintf(`{"path":"src/store/file%02d.go","offset":%d}`, i, 40*i))
		msgs = append(msgs,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"read_file","arguments":`+args+`}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":`+str(text(2048))+`}`)
	}
	wrap := func(m []string) []byte {
		s := `{"model":"gpt-bench","messages":[` + strings.Join(m, ",") + `],"temperature":0.2`
		if stream {
			s += `,"stream":true`
		}
		return []byte(s + `}`)
	}
	if len(msgs) != n {
		panic(fmt.Sprintf("benchConversation(%d): made %d messages", n, len(msgs)))
	}
	return wrap(msgs[:n-2]), wrap(msgs)
}

// benchProxies returns a bare reverse proxy and loopguard's, in front of
// the same in-process upstream.
func benchProxies(tb testing.TB, o Options) (bare *httputil.ReverseProxy, lg *Proxy) {
	tb.Helper()
	u, _ := url.Parse("http://upstream.invalid")
	tr := inProcess{benchUpstream{}}
	bare = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport: tr,
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	o.Upstream, o.Transport = u, tr
	if o.Config.Rules == nil {
		o.Config = guard.Config{Rules: detector.Defaults()}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	lg, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	return bare, lg
}

// benchRequest makes the request of run for body.
func benchRequest(run string, body []byte, stream bool) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://proxy.invalid/v1/chat/completions", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer sk-bench")
	r.Header.Set(RunHeader, run)
	if stream {
		r.Header.Set("X-Bench-Stream", "1")
	}
	return r
}

// serveOne sends r through h and returns the sink.
func serveOne(h http.Handler, r *http.Request) *sink {
	s := &sink{h: make(http.Header)}
	h.ServeHTTP(s, r)
	return s
}

var measured = pprof.Labels("phase", "measured")

func BenchmarkProxy(b *testing.B) {
	for _, n := range []int{50, 200} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) { benchProxy(b, n, false) })
	}
	b.Run("stream/messages=50", func(b *testing.B) { benchProxy(b, 50, true) })
}

// benchProxy measures, in batches, the request that adds the last step of
// a conversation of n messages: each run is primed (untimed) with the
// request before it, so that the measured request's history holds one new
// step after the run's cursor, as in an agent's loop. In each batch the
// bare proxy, loopguard's and json.Valid of the body take their turns (the
// first two in alternate order from batch to batch). ns/op, B/op and
// allocs/op are loopguard's per request; the other figures are reported as
// metrics. With stream, the response is streamed, and the time to the
// first byte the client gets is reported too.
func benchProxy(b *testing.B, n int, stream bool) {
	// Times are taken twice: by the wall clock, and as the CPU time of this
	// goroutine's thread (locked to it), which other processes on the
	// machine do not change; GC assists count, background GC work not.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bare, lg := benchProxies(b, Options{})
	prime, body := benchConversation(n, stream)
	const batch = 16
	var bareT, lgT, validT, bareFirst, lgFirst clock
	var bareAllocs, bareBytes uint64
	var ms runtime.MemStats
	runs := 0
	b.ReportAllocs()
	b.StopTimer()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(batch, b.N-done)
		lgReqs := make([]*http.Request, k)
		bareReqs := make([]*http.Request, k)
		for i := range k {
			run := "bench-" + strconv.Itoa(runs)
			runs++
			if s := serveOne(lg, benchRequest(run, prime, stream)); s.status != http.StatusOK {
				b.Fatalf("priming: status %d", s.status)
			}
			serveOne(bare, benchRequest(run, prime, stream))
			lgReqs[i] = benchRequest(run, body, stream)
			bareReqs[i] = benchRequest(run, body, stream)
		}
		lgSinks := make([]*sink, k)
		bareSinks := make([]*sink, k)
		for i := range k {
			lgSinks[i] = &sink{h: make(http.Header)}
			bareSinks[i] = &sink{h: make(http.Header)}
		}
		measureBare := func() {
			runtime.ReadMemStats(&ms)
			a0, by0 := ms.Mallocs, ms.TotalAlloc
			t0 := now()
			for i, r := range bareReqs {
				start := now()
				bare.ServeHTTP(bareSinks[i], r)
				bareFirst.add(bareSinks[i].first.sub(start))
			}
			bareT.add(now().sub(t0))
			runtime.ReadMemStats(&ms)
			bareAllocs += ms.Mallocs - a0
			bareBytes += ms.TotalAlloc - by0
		}
		measureLG := func() {
			b.StartTimer()
			// The label lets a CPU profile keep these requests alone
			// (go tool pprof -tagfocus phase=measured).
			pprof.Do(context.Background(), measured, func(context.Context) {
				t0 := now()
				for i, r := range lgReqs {
					start := now()
					lg.ServeHTTP(lgSinks[i], r)
					lgFirst.add(lgSinks[i].first.sub(start))
				}
				lgT.add(now().sub(t0))
			})
			b.StopTimer()
		}
		if (done/batch)%2 == 0 {
			measureBare()
			measureLG()
		} else {
			measureLG()
			measureBare()
		}
		t0 := now()
		for range k {
			if !json.Valid(body) {
				b.Fatal("the body is not valid JSON")
			}
		}
		validT.add(now().sub(t0))
		for i := range k {
			if s := lgSinks[i]; s.status != http.StatusOK || s.h.Get(VerdictHeader) != "continue" || s.h.Get(StepsHeader) != "1" {
				b.Fatalf("loopguard: status %d, verdict %q, steps %q: want 200, continue, 1", s.status, s.h.Get(VerdictHeader), s.h.Get(StepsHeader))
			}
			if s := bareSinks[i]; s.status != http.StatusOK || s.n != lgSinks[i].n {
				b.Fatalf("bare: status %d, %d bytes; loopguard %d bytes", s.status, s.n, lgSinks[i].n)
			}
		}
		done += k
	}
	N := float64(b.N)
	b.ReportMetric(lgT.cpu/N, "lg-cpu-ns/req")
	b.ReportMetric(bareT.cpu/N, "bare-cpu-ns/req")
	b.ReportMetric((lgT.cpu-bareT.cpu)/N, "added-cpu-ns/req")
	b.ReportMetric(validT.cpu/N, "valid-cpu-ns/req")
	b.ReportMetric((lgT.cpu-bareT.cpu)/validT.cpu, "added/valid")
	b.ReportMetric((lgT.wall-bareT.wall)/N, "added-ns/req")
	b.ReportMetric((lgT.wall-bareT.wall)/validT.wall, "wall-added/valid")
	b.ReportMetric(float64(bareAllocs)/N, "bare-allocs/req")
	b.ReportMetric(float64(bareBytes)/N, "bare-B/req")
	b.ReportMetric(float64(len(body)), "body-B")
	if stream {
		b.ReportMetric(bareFirst.cpu/N, "bare-first-cpu-ns")
		b.ReportMetric(lgFirst.cpu/N, "lg-first-cpu-ns")
		b.ReportMetric((lgFirst.cpu-bareFirst.cpu)/N, "first-added-cpu-ns")
		b.ReportMetric((lgFirst.wall-bareFirst.wall)/N, "first-added-ns")
	}
}

// A clock reading: the wall clock and this thread's CPU time, in ns.
type clock struct{ wall, cpu float64 }

func now() clock {
	// clock_gettime(CLOCK_THREAD_CPUTIME_ID) counts to the nanosecond;
	// getrusage(RUSAGE_THREAD) only at the scheduler's ticks.
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return clock{wall: float64(time.Now().UnixNano()), cpu: float64(ts.Nano())}
}

func (c clock) sub(d clock) clock { return clock{c.wall - d.wall, c.cpu - d.cpu} }
func (c *clock) add(d clock)      { c.wall += d.wall; c.cpu += d.cpu }

// The proxy holds at most MaxRuns runs in memory: the least recently used
// is forgotten first.
func TestRunsInMemoryStayAtMaxRuns(t *testing.T) {
	const max = 50
	_, lg := benchProxies(t, Options{MaxRuns: max})
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"Read f.go."},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"f.go\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"package f"}]}`)
	for i := range 3 * max {
		if s := serveOne(lg, benchRequest("run-"+strconv.Itoa(i), body, false)); s.status != http.StatusOK {
			t.Fatalf("run %d: status %d", i, s.status)
		}
		want := min(i+1, max)
		if got := lg.mem.Len(); got != want {
			t.Fatalf("after %d runs: %d runs held, want %d", i+1, got, want)
		}
	}
	// The oldest run was forgotten: its history is read again, whole.
	if s := serveOne(lg, benchRequest("run-0", body, false)); s.h.Get(StepsHeader) == "0" {
		t.Errorf("run-0, forgotten, read no steps: it was still held")
	}
	if s := serveOne(lg, benchRequest("run-149", body, false)); s.h.Get(StepsHeader) != "0" {
		t.Errorf("run-149, held, read %s steps again, want 0", s.h.Get(StepsHeader))
	}
}

// One run's memory does not grow with its requests: the heap that the
// proxy keeps after 4n requests of one run is within a generous slack of
// what it keeps after n, and so is the run's state in the store. The run
// is an agent whose history is a window of its last steps (as a framework
// that compacts sends it), so that each request costs the same; every step
// calls a tool with new arguments, and the step limit is off.
func TestOneRunsMemoryDoesNotGrowWithItsRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 6,000 requests")
	}
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": false}`))
	if err != nil {
		t.Fatal(err)
	}
	_, lg := benchProxies(t, Options{Config: cfg})
	step := func(i int) string {
		id := "call_" + strconv.Itoa(i)
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"f` + strconv.Itoa(i) + `.go\"}"}}]},` +
			`{"role":"tool","tool_call_id":"` + id + `","content":"package f` + strconv.Itoa(i) + ` // ` + strings.Repeat("x", i%97) + `"}`
	}
	next := 0
	send := func(n int) {
		for range n {
			body := `{"model":"m","messages":[{"role":"system","content":"You read files."},{"role":"user","content":"Read them all."},` +
				step(next) + `,` + step(next+1) + `]}`
			next++
			s := serveOne(lg, benchRequest("one-run", []byte(body), false))
			if s.status != http.StatusOK || s.h.Get(VerdictHeader) != "continue" {
				t.Fatalf("request %d: status %d, verdict %q %s", next, s.status, s.h.Get(VerdictHeader), s.h.Get(CodeHeader))
			}
		}
	}
	retained := func() (heap uint64, stored int) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		lg.mem.mu.Lock()
		for _, el := range lg.mem.runs {
			for _, e := range el.Value.(*memRun).slots {
				if e != nil {
					stored += len(e.data)
				}
			}
		}
		lg.mem.mu.Unlock()
		return ms.HeapAlloc, stored
	}
	const n = 1100 // past the no-progress window of 1,024 outcomes
	send(n)
	heap1, stored1 := retained()
	send(3 * n)
	heap4, stored4 := retained()
	t.Logf("after %d requests: heap %d B, stored %d B; after %d: heap %d B, stored %d B", n, heap1, stored1, 4*n, heap4, stored4)
	if float64(stored4) > 1.1*float64(stored1) {
		t.Errorf("the run's stored state grew from %d to %d bytes between %d and %d requests", stored1, stored4, n, 4*n)
	}
	// 3n more steps that each kept as little as 64 bytes would add 288 KB.
	if heap4 > heap1+256<<10 {
		t.Errorf("the heap grew from %d to %d bytes between %d and %d requests of one run", heap1, heap4, n, 4*n)
	}
}
