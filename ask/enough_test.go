package ask_test

import (
	"context"
	"errors"
	"testing"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// TestEnough_SameMessage: for every node of a realistic run that is not a
// model call, a part of the run around it that Enough accepts gives the
// message the whole run gives (the call that made it, the nearest llm
// nodes), so ask reads that part instead of the run; most parts of a few
// hundred nodes are enough.
func TestEnough_SameMessage(t *testing.T) {
	var nodes []*record.Node
	if err := graphtest.Realistic(3000, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		t.Fatal(err)
	}
	run := graphtest.RealisticRun()
	run.ID = "r1"
	whole, err := graph.Build(run, nodes)
	if err != nil {
		t.Fatal(err)
	}
	message := func(g *graph.Run, seq int64) string {
		_, err := ask.NewPlan(context.Background(), nil, g, seq, ask.Options{DryRun: true})
		var in *ask.InputError
		if !errors.As(err, &in) {
			t.Fatalf("n%d: %v, want the input error", seq, err)
		}
		return err.Error()
	}
	last := nodes[len(nodes)-1].Seq
	checked, enough := 0, 0
	for _, n := range nodes {
		if n.Kind == record.KindLLM {
			continue
		}
		want := message(whole, n.Seq)
		for _, span := range []int64{2, 8, 64, 256} {
			lo, hi := max(n.Seq-span, 0), min(n.Seq+span, last)
			part, err := graph.Build(run, nodes[lo:hi]) // seqs lo+1 … hi
			if err != nil {
				continue
			}
			checked++
			if !ask.Enough(part, n.Seq, lo, hi) {
				continue
			}
			enough++
			if got := message(part, n.Seq); got != want {
				t.Fatalf("n%d, nodes %d–%d: %s\nwhole run: %s", n.Seq, lo+1, hi, got, want)
			}
		}
	}
	if enough < checked/4 {
		t.Errorf("%d of %d parts enough", enough, checked)
	}
	t.Logf("%d of %d parts enough, each the whole run's message", enough, checked)
}
