package graph_test

import (
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// TestWeighted: weighted tokens (uncached input, cache writes and output
// in full, cache reads at 25%) per call from what was reported, per branch
// with the branches forked inside it, and over the run; figures by hand.
func TestWeighted(t *testing.T) {
	// in 1000 of which 600 read and 100 written: 300 + 100 + out 50 + 600/4 = 600.
	u := record.Usage{In: 1000, Out: 50, Cached: 600, CachedReported: true, CacheWrite: 100, CacheWriteReported: true}
	if got := u.Weighted(); got != 600 {
		t.Errorf("Weighted = %v, want 600", got)
	}
	// Unreported reads and writes count as none: 1000 + 50.
	if got := (record.Usage{In: 1000, Out: 50, Cached: 600, CacheWrite: 100}).Weighted(); got != 1050 {
		t.Errorf("Weighted unreported = %v, want 1050", got)
	}
	// Reported counts above the input leave no uncached input, never a negative one: 0 + 10 + 0 + 3/4.
	if got := record.WeightedTokens(5, 3, 10, 0); got != 10.75 {
		t.Errorf("WeightedTokens(5, 3, 10, 0) = %v, want 10.75", got)
	}

	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	llm := func(seq int64, branch string, forkSeq int64, depth int, u record.Usage) *record.Node {
		return &record.Node{Seq: seq, Kind: record.KindLLM, Branch: branch, ForkSeq: forkSeq, Depth: depth, Agent: "a",
			Started: at(int(seq)), Ended: at(int(seq) + 1), Status: record.StatusOK, LLM: &record.LLM{Usage: u}}
	}
	fork := func(seq int64, branch string, forkSeq int64, depth int, names ...string) *record.Node {
		f := &record.Fork{Context: "none"}
		for _, n := range names {
			f.Branches = append(f.Branches, record.ForkBranch{Name: n, Agent: "a"})
		}
		return &record.Node{Seq: seq, Kind: record.KindFork, Branch: branch, ForkSeq: forkSeq, Depth: depth, Agent: "a",
			Started: at(int(seq)), Ended: at(int(seq)), Status: record.StatusOK, Fork: f}
	}
	cached := func(in, out, reads int64) record.Usage {
		return record.Usage{In: in, Out: out, Cached: reads, CachedReported: true}
	}
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "a", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "go"},
		llm(2, "", 0, 0, cached(2000, 100, 1600)), // 400 + 100 + 400 = 900
		fork(3, "", 0, 0, "x", "y"),
		llm(4, "x", 3, 1, cached(800, 40, 400)), // 400 + 40 + 100 = 540
		fork(5, "x", 3, 1, "p"),
		llm(6, "x/p", 5, 2, record.Usage{In: 300, Out: 20}), // 320, unreported cache
		llm(7, "y", 3, 1, u),                                // 600
	}
	g, err := graph.Build(run(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	x, y := g.Forks[0].Branches[0], g.Forks[0].Branches[1]
	// x holds its own call and that of its nested branch p.
	if tok := x.Tokens(); tok.Weighted != 540+320 || tok.Calls != 2 || tok.In != 1100 || tok.Cached != 400 || !tok.CachedReported {
		t.Errorf("x.Tokens = %+v, want weighted 860 over 2 calls", tok)
	}
	if tok := y.Tokens(); tok.Weighted != 600 || tok.Calls != 1 {
		t.Errorf("y.Tokens = %+v, want weighted 600", tok)
	}
	if tok := g.Forks[1].Branches[0].Tokens(); tok.Weighted != 320 || tok.CachedReported {
		t.Errorf("p.Tokens = %+v, want weighted 320", tok)
	}
	if tok := g.Tokens(); tok.Weighted != 900+540+320+600 {
		t.Errorf("run Tokens.Weighted = %v, want 2360", tok.Weighted)
	}
	// A branch that recorded nothing costs nothing.
	empty, err := graph.Build(run(), nodes[:3])
	if err != nil {
		t.Fatal(err)
	}
	if tok := empty.Forks[0].Branches[0].Tokens(); tok != (graph.Tokens{}) {
		t.Errorf("empty branch Tokens = %+v", tok)
	}
}
