package proxy_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	lgredis "github.com/loopguard/loopguard/stores/redis"
	"github.com/loopguard/loopguard/stores/redis/redistest"
)

// TestTwoReplicasShareRunsThroughRedis runs an agent whose requests go to
// two proxies in turn, both on one real redis-server: the run is one run,
// its steps counted once, and the third identical call is refused
// whichever replica serves it.
func TestTwoReplicasShareRunsThroughRedis(t *testing.T) {
	srv := redistest.Start(t, false)
	up := fake.New(fake.Loop("search", `{"q":"x"}`))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	var replicas []*httptest.Server
	for range 2 {
		store, err := lgredis.New(srv.Client(nil), lgredis.Options{Prefix: "proxy-replicas:"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := proxy.New(proxy.Options{
			Upstream: u, Config: guard.Config{Rules: detector.Defaults()}, Store: store,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		s := httptest.NewServer(p)
		t.Cleanup(s.Close)
		replicas = append(replicas, s)
	}
	var got []string
	for n := range 3 {
		resp, _ := post(t, replicas[n%2].URL, history(n), nil)
		got = append(got, resp.Header.Get(proxy.VerdictHeader))
		if n == 1 {
			// A retry of the same request on the other replica reads no
			// new step.
			resp, _ := post(t, replicas[0].URL, history(n), nil)
			if s := resp.Header.Get(proxy.StepsHeader); s != "0" {
				t.Errorf("a retried request on the other replica read %s new steps, want 0", s)
			}
		}
	}
	if want := []string{"continue", "continue", "refused"}; !equal(got, want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
