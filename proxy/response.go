package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// maxEvent bounds one server-sent event; a longer one ends the judging of
// its stream (the rest passes as it comes).
const maxEvent = 4 << 20

// modifyResponse judges the response of an exchange: the tool calls it
// asks for are preflighted; under End a refused call is removed and the
// feedback added, under Error the response becomes an error.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	x := exchangeOf(resp.Request.Context())
	if x == nil {
		return nil
	}
	p.metrics.upstream(x.api.Name(), time.Since(x.start))
	h := resp.Header
	if x.unjudged != "" {
		h.Set(UnjudgedHeader, x.unjudged)
		h.Set(VerdictHeader, "unjudged")
		return nil
	}
	h.Set(RunHeader, x.key)
	h.Set(StepsHeader, strconv.Itoa(x.steps))
	if x.stop != nil {
		setStopHeaders(h, x.stop, "stop") // observe
	} else {
		h.Set(VerdictHeader, "continue")
	}
	if resp.StatusCode != http.StatusOK {
		return nil // the upstream's own answer, as it sent it
	}
	ct := h.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		resp.Body = &streamBody{p: p, x: x, ctx: resp.Request.Context(), up: resp.Body,
			events: wire.NewEvents(resp.Body, maxEvent), st: x.api.NewStream(&x.req)}
		return nil
	}
	if !strings.Contains(ct, "json") {
		return nil
	}
	body, whole, err := readUpTo(resp.Body, p.maxBody)
	if err != nil {
		return err
	}
	if !whole {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		h.Set(UnjudgedHeader, "response-too-large")
		return nil
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	out, err := x.api.ParseResponse(body)
	if err != nil {
		h.Set(UnjudgedHeader, "response-unreadable")
		return nil
	}
	refused, d := p.decide(resp.Request.Context(), x, out)
	if len(refused) == 0 {
		return nil
	}
	st := &stopped{Code: d.Code, Reason: string(d.Reason), Detector: d.Detector, Feedback: d.Feedback}
	if x.stop == nil {
		setStopHeaders(h, st, "refused")
	}
	switch x.policy {
	case End:
		nb, err := x.api.Rewrite(body, refused, d.Feedback)
		if err != nil {
			p.log.Warn("loopguard proxy: a response could not be rewritten", "run", x.key, "err", err)
			return nil
		}
		setBody(resp, nb)
	case Error:
		nb := x.api.Error(http.StatusUnprocessableEntity, st.Code, st.Feedback)
		resp.StatusCode = http.StatusUnprocessableEntity
		resp.Status = "422 Unprocessable Entity"
		h.Set("Content-Type", "application/json")
		h.Set("X-Should-Retry", "false")
		setBody(resp, nb)
	}
	return nil
}

func setBody(resp *http.Response, b []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
}

// decide preflights the calls of a response, one after the other (each
// with the ones allowed before it, as one step), and returns the indexes
// of the refused ones and the first refusal. Unless the policy is
// Observe, the refused calls are recorded (guard.Step.Refused), since
// they will not run: a model that keeps asking for them is stopped.
func (p *Proxy) decide(ctx context.Context, x *exchange, out wire.Output) ([]int, guard.Decision) {
	if x.api.Name() == "responses" && (len(out.Calls) > 0 || x.req.Stateful) {
		// A next request may name this response (previous_response_id)
		// and hold only the outputs of its calls.
		pending := pendingOf(out.Calls)
		if err := p.update(ctx, x.key, func(c *cursor) { c.Pending = pending }); err != nil {
			p.log.Warn("loopguard proxy: store", "run", x.key, "err", err)
		}
	}
	if len(out.Calls) == 0 {
		return nil, guard.Decision{Allow: true}
	}
	g := p.runs.Guard(x.key)
	var allowed, refusedCalls []guard.ToolCall
	var refused []int
	first := guard.Decision{Allow: true}
	for i, c := range out.Calls {
		calls := append(allowed[:len(allowed):len(allowed)], c)
		d, err := g.Preflight(ctx, calls...)
		if err != nil {
			p.log.Warn("loopguard proxy: preflight failed", "run", x.key, "err", err)
			allowed = append(allowed, c)
			continue
		}
		if d.Allow {
			allowed = append(allowed, c)
			continue
		}
		if first.Allow {
			first = d
		}
		refused = append(refused, i)
		refusedCalls = append(refusedCalls, c)
	}
	if len(refused) == 0 {
		return nil, first
	}
	p.metrics.refusal(x.api.Name(), first.Code)
	p.log.Info("loopguard proxy: refused a tool call", "run", x.key, "api", x.api.Name(),
		"policy", x.policy.String(), "code", first.Code, "rule", first.Detector, "calls", len(refused))
	if x.policy != Observe {
		s := guard.Step{Refused: refusedCalls}
		v, err := g.Check(ctx, s)
		if err == nil {
			p.metrics.verdict(x.api.Name(), v)
			p.steps.write(x.key, s, v)
			if guard.IsFault(v) {
				if err := p.setStop(ctx, x.key, stopOf(v)); err != nil {
					p.log.Warn("loopguard proxy: store", "run", x.key, "err", err)
				}
			}
		}
	}
	return refused, first
}

// streamBody is the body of a streamed response on its way to the client:
// it gives the client each event as the Stream lets it through, and at the
// end of the upstream's stream judges the calls it held.
type streamBody struct {
	p      *Proxy
	x      *exchange
	ctx    context.Context
	up     io.ReadCloser
	events *wire.Events
	st     wire.Stream

	pending []byte
	err     error // returned once pending is sent
}

func (b *streamBody) Read(out []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		ev, err := b.events.Next()
		if len(ev) > 0 {
			b.pending = append(b.pending[:0], b.st.Event(ev)...)
		}
		if err == nil {
			continue
		}
		if err == io.EOF {
			b.pending = append(b.pending, b.end()...)
			b.err = io.EOF
			continue
		}
		// The upstream broke off (or an event was too long): what was
		// held goes out as it came, then the stream breaks as the
		// upstream's did.
		b.pending = append(b.pending, b.st.End(nil, "")...)
		b.err = err
	}
	n := copy(out, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// end judges the complete stream's calls.
func (b *streamBody) end() []byte {
	refused, d := b.p.decide(b.ctx, b.x, b.st.Output())
	if len(refused) == 0 {
		return b.st.End(nil, "")
	}
	switch b.x.policy {
	case End:
		return b.st.End(refused, d.Feedback)
	case Error:
		return b.st.Fail(d.Code, d.Feedback)
	}
	return b.st.End(nil, "")
}

func (b *streamBody) Close() error { return b.up.Close() }
