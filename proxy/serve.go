package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/wire"
	"github.com/loopguard/loopguard/snapshot"
)

// apiOf returns the wire format of an API name, or nil.
func apiOf(name string) wire.API {
	switch name {
	case "chat":
		return wire.Chat{}
	case "responses":
		return wire.Responses{}
	case "messages":
		return wire.Messages{}
	}
	return nil
}

// An exchange is one judged request on its way through the proxy.
type exchange struct {
	api    wire.API
	req    wire.Request
	key    string
	policy Policy
	start  time.Time
	// stop is the run's stop as the request found or made it.
	stop *stopped
	// steps is the number of new steps the request held.
	steps int
	// unjudged says why the request passed unjudged ("" when judged).
	unjudged string
}

type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

func (p *Proxy) reverse() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.upstream)
			pr.Out.Header.Del(RunHeader)
			pr.Out.Header.Del(PolicyHeader)
			if x := exchangeOf(pr.In.Context()); x != nil && x.unjudged == "" {
				// The response must be read: let the transport ask for
				// and undo its own compression.
				pr.Out.Header.Del("Accept-Encoding")
			}
		},
		Transport:      p.transport,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	api := apiOf(apiPath(r.Method, r.URL.Path))
	if api == nil {
		p.metrics.request("other", "passthrough")
		p.rp.ServeHTTP(w, r)
		return
	}
	x := &exchange{api: api, start: time.Now(), policy: p.policy}
	if v := r.Header.Get(PolicyHeader); v != "" {
		if pol, err := ParsePolicy(v); err == nil {
			x.policy = pol
		} else {
			p.log.Warn("loopguard proxy: ignored a bad policy header", "value", strconv.Quote(v))
		}
	}
	body, whole, err := readUpTo(r.Body, p.maxBody)
	if err != nil {
		// The client broke off its own request: there is no one to answer.
		p.metrics.request(api.Name(), "client-error")
		return
	}
	if !whole {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		p.passUnjudged(w, r, x, "too-large")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	x.req, err = api.ParseRequest(body)
	if err != nil {
		p.passUnjudged(w, r, x, "unreadable")
		return
	}
	var from string
	x.key, from = runKey(r, api, &x.req)
	ctx := r.Context()
	if err := p.judge(ctx, x); err != nil {
		p.log.Warn("loopguard proxy: the run could not be judged", "run", x.key, "api", api.Name(), "err", err)
		p.passUnjudged(w, r, x, "store")
		return
	}
	p.metrics.request(api.Name(), "judged")
	if x.stop != nil {
		p.log.Info("loopguard proxy: the run is stopped", "run", x.key, "from", from, "api", api.Name(),
			"policy", x.policy.String(), "code", x.stop.Code, "rule", x.stop.Detector)
		h := w.Header()
		h.Set(RunHeader, x.key)
		h.Set(StepsHeader, strconv.Itoa(x.steps))
		switch x.policy {
		case End:
			setStopHeaders(h, x.stop, "stop")
			p.metrics.stop(api.Name(), x.policy, x.stop.Code)
			body := api.Final(&x.req, x.stop.Feedback, x.req.Stream)
			if x.req.Stream {
				h.Set("Content-Type", "text/event-stream")
				h.Set("Cache-Control", "no-cache")
			} else {
				h.Set("Content-Type", "application/json")
				h.Set("Content-Length", strconv.Itoa(len(body)))
			}
			w.WriteHeader(http.StatusOK)
			w.Write(body)
			return
		case Error:
			setStopHeaders(h, x.stop, "stop")
			p.metrics.stop(api.Name(), x.policy, x.stop.Code)
			writeError(w, api, x.stop)
			return
		}
		// Observe: on to the upstream; modifyResponse writes the headers.
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, exchangeKey{}, x)))
}

func setStopHeaders(h http.Header, s *stopped, verdict string) {
	h.Set(VerdictHeader, verdict)
	h.Set(CodeHeader, s.Code)
	if s.Detector != "" {
		h.Set(RuleHeader, s.Detector)
	}
	if s.Feedback != "" {
		h.Set(FeedbackHeader, headerText(s.Feedback))
	}
}

// headerText makes s fit in a header value: printable ASCII only, others
// replaced by spaces, at most 512 bytes.
func headerText(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	if len(b) > 512 {
		b = b[:512]
	}
	return string(b)
}

func writeError(w http.ResponseWriter, api wire.API, s *stopped) {
	body := api.Error(http.StatusUnprocessableEntity, s.Code, s.Feedback)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Should-Retry", "false")
	w.WriteHeader(http.StatusUnprocessableEntity)
	w.Write(body)
}

func (p *Proxy) passUnjudged(w http.ResponseWriter, r *http.Request, x *exchange, why string) {
	x.unjudged = why // modifyResponse writes the headers
	p.metrics.request(x.api.Name(), "unjudged-"+why)
	p.log.Info("loopguard proxy: passed unjudged", "api", x.api.Name(), "why", why)
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x)))
}

type readCloser struct {
	io.Reader
	io.Closer
}

// readUpTo reads r up to max bytes: whole reports that it ended within
// them. When it did not, body holds what was read (max+1 bytes at most).
func readUpTo(r io.Reader, max int64) (body []byte, whole bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	return body, int64(len(body)) <= max, nil
}

// judge reads the new items of x's history and checks their steps; it
// sets x.stop when the run is stopped. Its error is the store's.
func (p *Proxy) judge(ctx context.Context, x *exchange) error {
	from, cur, err := p.claim(ctx, x)
	if err != nil {
		return err
	}
	tail := x.req.Items[from:]
	x.stop = cur.Stop
	if len(tail) == 0 {
		return nil
	}
	if x.req.Stateful && len(cur.Pending) > 0 {
		// The upstream holds the history: the calls these outputs answer
		// are those of the response before, which the cursor kept.
		tail = append(pendingItems(cur.Pending), tail...)
	}
	steps, err := stepsOf(x.api, tail)
	if err != nil {
		// A history the proxy cannot read as steps is the upstream's to
		// refuse; the run goes on unjudged for this request.
		p.log.Info("loopguard proxy: history not read", "run", x.key, "err", err)
		return nil
	}
	g := p.runs.Guard(x.key)
	if x.stop != nil && humanIn(x.api, tail) && p.recovery == Resume {
		if err := g.Reset(ctx); err != nil {
			return err
		}
		if err := p.setStop(ctx, x.key, nil); err != nil {
			return err
		}
		p.log.Info("loopguard proxy: a new message after a stop: the run goes on as a new segment", "run", x.key)
		x.stop = nil
	}
	for _, s := range steps {
		if cur.Stop != nil && len(s.ToolCalls) == 0 && s.Text == cur.Stop.Feedback {
			continue // the proxy's own answer to the stop, sent back
		}
		if x.stop != nil && x.policy != Observe {
			break
		}
		v, err := g.Check(ctx, s)
		if err != nil {
			return err
		}
		x.steps++
		p.metrics.verdict(x.api.Name(), v)
		p.steps.write(x.key, s, v)
		if x.stop == nil && guard.IsFault(v) {
			st := stopOf(v)
			x.stop = st
			if err := p.setStop(ctx, x.key, st); err != nil {
				return err
			}
		}
	}
	return nil
}

func stopOf(v guard.Verdict) *stopped {
	fb := v.Feedback
	if fb == "" {
		fb = "The run was stopped: " + v.Code + "."
	}
	return &stopped{Code: v.Code, Reason: string(v.Reason), Detector: v.Detector, Feedback: fb}
}

// claim moves the run's cursor past x's history and returns where the new
// items start and the cursor as it was.
func (p *Proxy) claim(ctx context.Context, x *exchange) (int, cursor, error) {
	for attempt := 0; ; attempt++ {
		cur, v, err := loadCursor(ctx, p.store, x.key)
		if err != nil {
			return 0, cursor{}, err
		}
		from, next := advance(x.api, cur, x.req.Items)
		if next.N == cur.N && next.Hash == cur.Hash && next.Last == cur.Last {
			return from, cur, nil
		}
		err = p.saveCursor(ctx, x.key, v, next)
		if errors.Is(err, snapshot.ErrConflict) && attempt < 16 {
			continue
		}
		return from, cur, err
	}
}

func (p *Proxy) saveCursor(ctx context.Context, key string, v snapshot.Version, c cursor) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ttl := p.ttl(c.Stop != nil)
	return p.store.Save(ctx, key+cursorSuffix, v, v+1, data, ttl)
}

// setStop records the run's stop (nil: the run goes on) in its cursor.
func (p *Proxy) setStop(ctx context.Context, key string, s *stopped) error {
	return p.update(ctx, key, func(c *cursor) { c.Stop = s })
}

// update changes the run's cursor with fn, with compare-and-set.
func (p *Proxy) update(ctx context.Context, key string, fn func(*cursor)) error {
	for attempt := 0; ; attempt++ {
		cur, v, err := loadCursor(ctx, p.store, key)
		if err != nil {
			return err
		}
		fn(&cur)
		err = p.saveCursor(ctx, key, v, cur)
		if errors.Is(err, snapshot.ErrConflict) && attempt < 16 {
			continue
		}
		return err
	}
}

func (p *Proxy) ttl(stopped bool) time.Duration {
	if stopped && p.finishedTTL > 0 {
		return p.finishedTTL
	}
	return p.runTTL
}

// humanIn reports whether items hold a person's message: a user message
// that is not only tool results.
func humanIn(api wire.API, items [][]byte) bool {
	for _, it := range items {
		var m struct {
			Role    string          `json:"role"`
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(it, &m) != nil || m.Role != "user" {
			continue
		}
		if m.Type != "" && m.Type != "message" {
			continue
		}
		if api.Name() != "messages" {
			return true
		}
		// Anthropic sends tool results as user messages.
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			return true // a string
		}
		for _, b := range blocks {
			if b.Type != "tool_result" {
				return true
			}
		}
	}
	return false
}

// upstreamError answers a request whose upstream could not be reached.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	x := exchangeOf(r.Context())
	p.log.Warn("loopguard proxy: upstream unreachable", "err", err)
	if x == nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	p.metrics.request(x.api.Name(), "upstream-error")
	body := x.api.Error(http.StatusBadGateway, "upstream_unreachable", "loopguard proxy: the upstream could not be reached")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	w.Write(body)
}
