package redis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loopguard/loopguard/detector"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/snapshot"
	lgredis "github.com/loopguard/loopguard/stores/redis"
)

// Every worker of an agent platform builds the same Runs; the guard of a run
// on any of them can record any step of the run.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	store, err := lgredis.New(client, lgredis.Options{Prefix: "myagents:"})
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := detector.FromJSON([]byte(`{"maxSteps": 200}`))
	if err != nil {
		log.Fatal(err)
	}
	runs, err := snapshot.New(store, cfg, snapshot.Options{TTL: 24 * time.Hour, Timeout: 200 * time.Millisecond,
		// The store failed; the guard answered by the policy (fail open by
		// default).
		OnError: func(key string, err error) { log.Print(err) }})
	if err != nil {
		log.Fatal(err)
	}

	v, err := runs.Guard("run-42").Check(ctx, guard.Step{Text: "looking it up"})
	if err != nil {
		log.Fatal(err) // ctx ended: nothing was done
	}
	if v.Stop {
		log.Print(guard.Explain(v))
	}
}
