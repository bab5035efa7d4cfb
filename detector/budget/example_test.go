package budget_test

import (
	"context"
	"fmt"

	"github.com/loopguard/loopguard/detector/budget"
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/rule"
)

func Example() {
	r, err := budget.New(budget.Options{
		MaxSteps:       20,
		MaxTotalTokens: budget.Limit{Value: 10_000},
		MaxCostUSD:     budget.Limit{Value: 0.50, WarnAt: 0.5},
		WarnAt:         0.8,
	})
	if err != nil {
		panic(err)
	}
	// A guard in memory never returns an error from Check or Preflight.
	g, err := guard.New(guard.Config{Rules: []rule.Rule{r}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	v, _ := g.Check(ctx, guard.Step{Usage: guard.Usage{InputTokens: 6000, OutputTokens: 2500, CostUSD: 0.25}})
	for _, w := range v.Warnings {
		fmt.Println(w.Code, w.Detail)
	}

	v, _ = g.Check(ctx, guard.Step{Usage: guard.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: 0.05}})
	fmt.Println(v.Code, v.Evidence)

	// The budget is spent: the next call is refused before it runs.
	d, _ := g.Preflight(ctx, guard.ToolCall{Name: "search"})
	fmt.Println(d.Allow)
	// Output:
	// BUDGET_WARNING totalTokens is at 8500 of its limit 10000 (85%)
	// BUDGET_WARNING costUsd is at 0.25 of its limit 0.5 (50%)
	// BUDGET_TOTAL_TOKENS {totalTokens 10000 10000}
	// false
}
