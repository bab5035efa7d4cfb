package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// replay is a fake OpenAI API that answers each request with the next
// recorded response of a run, and keeps the request bodies.
type replay struct {
	t         *testing.T
	path      string // the endpoint the run calls, such as "/chat/completions"
	mu        sync.Mutex
	responses []json.RawMessage
	requests  []string
}

// newReplay serves the responses recorded in testdata/file and returns a
// client of the real SDK pointed at it.
func newReplay(t *testing.T, file, path string) (*replay, sdk.Client) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	r := &replay{t: t, path: path}
	if err := json.Unmarshal(data, &r.responses); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	client := sdk.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0),
	)
	return r, client
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.Path != "/v1"+r.path {
		r.t.Errorf("unexpected request %s %s", req.Method, req.URL.Path)
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	r.requests = append(r.requests, string(body))
	if len(r.requests) > len(r.responses) {
		r.t.Errorf("request %d: the recorded run has only %d responses", len(r.requests), len(r.responses))
		http.Error(w, `{"error":{"message":"no more responses","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(r.responses[len(r.requests)-1])
}

// request returns the body of the i-th request (0-based).
func (r *replay) request(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.requests) {
		return ""
	}
	return r.requests[i]
}

// count returns the number of requests served.
func (r *replay) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

// forecast is the tool of the recorded runs; it counts its runs.
type forecast struct {
	mu   sync.Mutex
	runs int
}

func (f *forecast) run(args string) (string, error) {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	var in struct{ City, Unit string }
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", err
	}
	switch strings.ToLower(in.City) {
	case "paris":
		return "18 °C, sunny", nil
	case "oslo":
		return "4 °C, rain", nil
	}
	return "", io.ErrUnexpectedEOF
}

func (f *forecast) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}
