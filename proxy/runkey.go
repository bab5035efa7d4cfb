package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// runKey names the run of a request: the RunHeader, else the API's
// conversation (Request.Session), else its user (Request.User), else the
// conversation's beginning. The beginning is the API, the caller's
// credential (hashed: two API keys never share a run), the head (system
// prompt or instructions) and the items before the first model item: two
// conversations with the same credential that begin alike are one run.
// The second return value says where the name came from, for the log.
func runKey(r *http.Request, api wire.API, req *wire.Request) (key, from string) {
	if v := r.Header.Get(RunHeader); v != "" {
		return "run:" + clean(v), "header"
	}
	if req.Session != "" {
		return api.Name() + ":session:" + clean(req.Session), "session"
	}
	if req.User != "" {
		return api.Name() + ":user:" + clean(req.User), "user"
	}
	h := sha256.New()
	h.Write([]byte(api.Name()))
	h.Write([]byte{0})
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		h.Write([]byte(r.Header.Get(k)))
		h.Write([]byte{0})
	}
	h.Write(req.Head)
	h.Write([]byte{0})
	for _, it := range req.Items {
		if api.Assistant(it) {
			break
		}
		h.Write(it)
		h.Write([]byte{0})
	}
	return api.Name() + ":prefix:" + hex.EncodeToString(h.Sum(nil)[:16]), "prefix"
}

// clean returns s when it is a safe name (1 to 128 bytes of
// [A-Za-z0-9._:@/+=-]), else "h:" and a hash of it: a run name reaches
// store keys, logs and response headers.
func clean(s string) string {
	if len(s) <= 128 {
		ok := true
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
				c == '.' || c == '_' || c == ':' || c == '@' || c == '/' || c == '+' || c == '=' || c == '-') {
				ok = false
				break
			}
		}
		if ok {
			return s
		}
	}
	sum := sha256.Sum256([]byte(s))
	return "h:" + hex.EncodeToString(sum[:16])
}
