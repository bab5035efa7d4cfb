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

// Every worker of an agent platform builds the same Runs; any of them can
// record any step of any run.
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
	runs, err := snapshot.New(store, cfg, snapshot.Options{TTL: 24 * time.Hour, Timeout: 200 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}

	v, err := runs.Check(ctx, "run-42", guard.Step{Text: "looking it up"})
	if err != nil {
		log.Print(err) // the store failed; v follows the policy (fail open by default)
	}
	if v.Stop {
		log.Print(guard.Explain(v))
	}
}
