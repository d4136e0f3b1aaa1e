package findings

import (
	"fmt"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/money"
	"github.com/inspect-dev/inspect/record"
)

// priceFinding returns f's price in money at the rates of the model that
// spent it: the model most of its evidence model calls used, else the one
// its agent used most, else the run's only model. Nil when the price has
// no tokens (time alone is not money), no model is known, or the table
// does not price it.
func priceFinding(f *Finding, run *graph.Run, t *money.Table) *money.Spend {
	if t == nil || f.Price.TokensIn+f.Price.TokensOut == 0 {
		return nil
	}
	model := findingModel(f, run)
	if model == "" {
		return nil
	}
	s, ok := money.PriceTokens(t, model, money.Tokens{In: f.Price.TokensIn, Out: f.Price.TokensOut,
		Cached: f.Price.CachedTokens, CachedReported: f.Price.CachedReported})
	if !ok {
		return nil
	}
	return &s
}

func findingModel(f *Finding, run *graph.Run) string {
	count := map[string]int{}
	var order []string
	tally := func(n *graph.Node) {
		if n == nil || n.Kind != record.KindLLM || n.LLM == nil || n.LLM.Model == "" {
			return
		}
		if count[n.LLM.Model] == 0 {
			order = append(order, n.LLM.Model)
		}
		count[n.LLM.Model]++
	}
	for _, id := range f.Nodes {
		var seq int64
		if _, err := fmt.Sscanf(id, "n%d", &seq); err == nil {
			tally(run.Node(seq))
		}
	}
	if len(order) == 0 {
		for _, n := range run.Nodes {
			if n.Agent == f.Agent {
				tally(n)
			}
		}
	}
	if len(order) == 0 && len(run.Models) == 1 {
		return run.Models[0]
	}
	best := ""
	for _, m := range order {
		if best == "" || count[m] > count[best] {
			best = m
		}
	}
	return best
}
