package analysis_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/store"
)

// TestRun_Node: the node view of an opened run is Analyzer.Node's, read
// from the run's graph: the same node, neighbours, call, branches and
// asks, its node the graph's own; a node the run lacks is the same
// NoNodeError.
func TestRun_Node(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	id, err := graphtest.Record(ctx, db, graphtest.Synthetic(40))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddAsk(ctx, &store.Ask{RunID: id, NodeSeq: 2, Mode: "question", Question: "why?", Answer: "because", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	a := analysis.New(storesrc.New(db), nil)
	r, err := a.Open(ctx, id, analysis.LoadGraph)
	if err != nil {
		t.Fatal(err)
	}
	o := analysis.NodeOptions{Branches: true}
	forks := 0
	for _, n := range r.Graph.Nodes {
		want, err := a.Node(ctx, id, n.Seq, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Node(ctx, n.Seq, o)
		if err != nil {
			t.Fatal(err)
		}
		if got.Node != n || got.Run != r.Graph.Run {
			t.Errorf("n%d: the view's node is not the graph's", n.Seq)
		}
		if got.Node.Kind != want.Node.Kind || got.Next != want.Next || len(got.Asks) != len(want.Asks) || (got.LLM == nil) != (want.LLM == nil) {
			t.Errorf("n%d: view %+v, want %+v", n.Seq, got, want)
		}
		if got.LLM != nil && (got.LLM.Choice != want.LLM.Choice || string(got.LLM.Body) != string(want.LLM.Body)) {
			t.Errorf("n%d: call %+v, want %+v", n.Seq, got.LLM, want.LLM)
		}
		if len(got.Branches) != len(want.Branches) {
			t.Errorf("n%d: %d branches, want %d", n.Seq, len(got.Branches), len(want.Branches))
		}
		for i := range want.Branches {
			if got.Branches[i].Name != want.Branches[i].Name || got.Branches[i].Tokens() != want.Branches[i].Tokens() {
				t.Errorf("n%d: branch %d %s, want %s", n.Seq, i, got.Branches[i].Name, want.Branches[i].Name)
			}
		}
		if len(want.Branches) > 0 {
			forks++
		}
	}
	if forks == 0 {
		t.Fatal("the run has no fork: the branches were not compared")
	}
	last := r.Graph.Nodes[len(r.Graph.Nodes)-1].Seq
	_, wantErr := a.Node(ctx, id, last+5, o)
	_, gotErr := r.Node(ctx, last+5, o)
	var nn *analysis.NoNodeError
	if !errors.As(gotErr, &nn) || gotErr.Error() != wantErr.Error() {
		t.Errorf("missing node: %v, want %v", gotErr, wantErr)
	}
}
