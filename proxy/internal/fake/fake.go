// Package fake is a scripted model server for the proxy's tests: it
// speaks OpenAI Chat Completions (POST /v1/chat/completions), OpenAI
// Responses (POST /v1/responses) and Anthropic Messages (POST /v1/messages),
// JSON and server-sent events, and answers each request with the next
// reply of its script.
package fake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// A Call is a tool call of a scripted reply.
type Call struct {
	// ID is the call's id; empty means one made from the request's
	// number and the call's index.
	ID string
	// Name is the tool's name.
	Name string
	// Args is the arguments' JSON text.
	Args string
}

// A Reply is one scripted answer.
type Reply struct {
	// Text is the model's text (may be empty).
	Text string
	// Calls are the tool calls it asks for.
	Calls []Call
	// InputTokens and OutputTokens are the usage it reports.
	InputTokens, OutputTokens int

	// Status, when not zero, answers with this HTTP status and Body
	// (as given, JSON or not) instead of a model turn.
	Status int
	// Body is the body of a Status answer.
	Body string

	// DropAfter, when above zero, breaks a streamed answer off (the
	// connection is closed without its end) after that many events.
	DropAfter int
	// Gap is a pause before each streamed event after the first.
	Gap time.Duration
}

// A Script chooses the reply to the n-th request (from 0) of the server,
// for api ("chat", "responses", "messages") and the request's body.
type Script func(api string, n int, body []byte) Reply

// Loop is a script whose model always asks for the same call.
func Loop(name, args string) Script {
	return func(string, int, []byte) Reply {
		return Reply{Calls: []Call{{Name: name, Args: args}}, InputTokens: 10, OutputTokens: 5}
	}
}

// A Request is a request the server received.
type Request struct {
	API    string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a running fake model server.
type Server struct {
	*httptest.Server
	script Script

	mu   sync.Mutex
	reqs []Request
}

// New starts a server that answers by script.
func New(script Script) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many requests the server received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var api string
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		api = "chat"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		api = "responses"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		api = "messages"
	default:
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, Request{API: api, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()

	rep := s.script(api, n, body)
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"invalid JSON body","type":"invalid_request_error"}}`)
		return
	}
	for i := range rep.Calls {
		if rep.Calls[i].ID == "" {
			rep.Calls[i].ID = callID(api, n, i)
		}
	}
	var events [][]byte
	var whole []byte
	switch api {
	case "chat":
		whole, events = chat(req.Model, n, rep, req.Stream)
	case "responses":
		whole, events = responses(req.Model, n, rep, req.Stream)
	case "messages":
		whole, events = messages(req.Model, n, rep, req.Stream)
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write(whole)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for i, ev := range events {
		if rep.DropAfter > 0 && i == rep.DropAfter {
			// Break the stream off: hijack and close the connection.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		if i > 0 && rep.Gap > 0 {
			time.Sleep(rep.Gap)
		}
		w.Write(ev)
		if f != nil {
			f.Flush()
		}
	}
}

func callID(api string, n, i int) string {
	prefix := map[string]string{"chat": "call_", "responses": "call_", "messages": "toolu_"}[api]
	return prefix + itoa(n) + "_" + itoa(i)
}

func itoa(n int) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(n)
	return strings.TrimSpace(b.String())
}

// sse writes one event with an optional name.
func sse(name string, v any) []byte {
	data, _ := json.Marshal(v)
	var b []byte
	if name != "" {
		b = append(b, "event: "+name+"\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
