package hook_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/hook"
	"github.com/loopguard/loopguard/snapshot"
)

// request is a fake SDK's request: the run it names.
type request struct{ run string }

func byRun(_ context.Context, r request) (string, error) {
	if r.run == "" {
		return "", errors.New("no run")
	}
	return "run:" + r.run, nil
}

func TestKeyed(t *testing.T) {
	ctx := context.Background()
	var reported []string
	k, err := hook.NewKeyed(hook.KeyedOptions[request]{
		OnError: func(key string, err error) { reported = append(reported, key+": "+err.Error()) },
	}, byRun)
	if err != nil {
		t.Fatal(err)
	}
	call := guard.ToolCall{Name: "search", Args: "x"}
	serve := func(r request) string {
		g, err := k.Guard(ctx, r)
		res, err := hook.Serve(ctx, g, err, call, func() (string, error) { return "found", nil }, answer, refuse)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var got []string
	for _, run := range []string{"a", "b", "a", "", "a"} {
		got = append(got, serve(request{run}))
	}
	want := []string{"found", "found", "found", refuse(hook.NoKeyText), "refused"}
	if strings.HasPrefix(got[4], "ERROR: That call was not run: it would have been the 3rd call") {
		got[4] = "refused" // the third call of run a, wherever b's and the unkeyed one came
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{": no run"}, reported); diff != "" {
		t.Errorf("OnError (-want +got):\n%s", diff)
	}
	s, err := k.Runs().Guard("run:a").Summary(ctx)
	if err != nil || s.Steps != 3 || s.ToolCalls != 2 {
		t.Errorf("run a: %d steps, %d calls, %v; want 3 (two calls and a refusal), 2", s.Steps, s.ToolCalls, err)
	}
}

func TestKeyedServerDefaultsHaveNoStepLimit(t *testing.T) {
	k, err := hook.NewKeyed(hook.KeyedOptions[request]{}, byRun)
	if err != nil {
		t.Fatal(err)
	}
	g := k.Runs().Guard("run:a")
	for i := range 160 {
		if _, err := g.Check(context.Background(), guard.Step{ToolCalls: []guard.ToolCall{{Name: "n", Args: i}}}); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := g.Summary(context.Background()); err != nil || s.FirstStop != nil {
		t.Errorf("after 160 steps: first stop %v, %v; want none", s.FirstStop, err)
	}
}

// downStore always fails.
type downStore struct{}

var errDown = errors.New("store down")

func (downStore) Load(context.Context, string, snapshot.Version) ([]byte, snapshot.Version, error) {
	return nil, 0, errDown
}

func (downStore) Save(context.Context, string, snapshot.Version, snapshot.Version, []byte, time.Duration) error {
	return errDown
}

func TestKeyedReportsStoreErrorsToBoth(t *testing.T) {
	// KeyedOptions.OnError and Runs.OnError are both told of a store error.
	var mine, theirs int
	k, err := hook.NewKeyed(hook.KeyedOptions[request]{
		Store: downStore{},
		Runs:  snapshot.Options{OnError: func(string, error) { theirs++ }},
		OnError: func(_ string, err error) {
			if errors.Is(err, errDown) {
				mine++
			}
		},
	}, byRun)
	if err != nil {
		t.Fatal(err)
	}
	g, err := k.Guard(context.Background(), request{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Preflight(context.Background(), guard.ToolCall{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if mine == 0 || mine != theirs {
		t.Errorf("OnError told %d times, Runs.OnError %d; want the same, above 0", mine, theirs)
	}
}

func TestNewKeyedErrors(t *testing.T) {
	if _, err := hook.NewKeyed(hook.KeyedOptions[request]{}, nil); !errors.Is(err, guard.ErrInvalidOption) {
		t.Errorf("no key: %v, want ErrInvalidOption", err)
	}
	_, err := hook.NewKeyed(hook.KeyedOptions[request]{Runs: snapshot.Options{TTL: -1}}, byRun)
	if !errors.Is(err, guard.ErrInvalidOption) {
		t.Errorf("negative TTL: %v, want ErrInvalidOption", err)
	}
}
