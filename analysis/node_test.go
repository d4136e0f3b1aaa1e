package analysis_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
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

// counting is a Source that counts the nodes its scans read.
type counting struct {
	*storesrc.Source
	read int
}

func (c *counting) ScanNodesRange(ctx context.Context, r *record.Run, from, last int64, fn func(*record.Node) error) error {
	return c.Source.ScanNodesRange(ctx, r, from, last, func(n *record.Node) error { c.read++; return fn(n) })
}

func (c *counting) ScanNodesTo(ctx context.Context, r *record.Run, last int64, fn func(*record.Node) error) error {
	return c.Source.ScanNodesTo(ctx, r, last, func(n *record.Node) error { c.read++; return fn(n) })
}

func (c *counting) ScanNodes(ctx context.Context, r *record.Run, fn func(*record.Node) error) error {
	return c.Source.ScanNodes(ctx, r, func(n *record.Node) error { c.read++; return fn(n) })
}

// TestNode_CacheReadsItsWindow: the prompt-cache section of one model call
// (inspect show) reads the run only from where the call's neighbourhood in
// time starts — the calls that ended within the cache lifetime before it,
// the call before it in its conversation, their forks — not every earlier
// node (DESIGN §12: show of one node of a 1M-node run ≤ 50 ms; before, it
// read the whole run up to the node), and says of every call what the whole
// run's analysis says of it.
func TestNode_CacheReadsItsWindow(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const size = 4000
	id, err := graphtest.RecordRealistic(ctx, db, size)
	if err != nil {
		t.Fatal(err)
	}
	src := &counting{Source: storesrc.New(db)}
	a := analysis.New(src, nil)
	r, err := a.Open(ctx, id, analysis.LoadCache)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := r.Cache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seqOf := func(n *graph.Node) int64 {
		if n == nil {
			return 0
		}
		return n.Seq
	}
	compared, most := 0, 0
	for i, want := range whole.Calls {
		if i%4 != 0 && i < len(whole.Calls)-20 { // every fourth call, and the last ones
			continue
		}
		src.read = 0
		v, err := a.Node(ctx, id, want.Node.Seq, analysis.NodeOptions{Cache: true})
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, src.read)
		if v.Cache == nil || v.Cache.Err != nil {
			t.Fatalf("n%d: no cache section: %+v", want.Node.Seq, v.Cache)
		}
		got := v.Cache.Call(want.Node.Seq)
		if got == nil {
			t.Fatalf("n%d: the section lacks the call", want.Node.Seq)
		}
		compared++
		if got.Analyzed != want.Analyzed || got.Reusable != want.Reusable || got.Tokens != want.Tokens || got.Bytes != want.Bytes ||
			seqOf(got.Match) != seqOf(want.Match) || got.Since != want.Since || seqOf(got.Previous) != seqOf(want.Previous) ||
			got.Break.Where != want.Break.Where || got.Break.Cause != want.Break.Cause || got.Break.Why != want.Break.Why || got.Break.What != want.Break.What ||
			(got.Mismatch == nil) != (want.Mismatch == nil) || (got.Unstable == nil) != (want.Unstable == nil) {
			t.Errorf("n%d: alone %+v\nwhole run %+v", want.Node.Seq, got, want)
		}
		if got.Unstable != nil && (got.Unstable.Lost != want.Unstable.Lost || got.Unstable.Break.Why != want.Unstable.Break.Why) {
			t.Errorf("n%d: unstable %+v, whole run %+v", want.Node.Seq, got.Unstable, want.Unstable)
		}
	}
	if compared < size/40 {
		t.Fatalf("compared %d calls of %d nodes", compared, size)
	}
	// the realistic shape's calls last about a second: a 5-minute lifetime
	// reaches a few hundred nodes back, never the whole run
	if most > size/4 {
		t.Errorf("one call's section read %d of the run's %d nodes", most, size)
	}
	t.Logf("%d calls compared; one call's section read at most %d of %d nodes", compared, most, size)
}

// TestNode_BranchesReadTheFork: the node view of a fork or a join (inspect
// show, the web's node page) reads the nodes from the fork to its join for
// its branches' tokens, not the whole run — before, every one read all
// 4,000 nodes (7–10 s for a late fork of a 1M-node run) — and its branches
// are the whole run's graph's.
func TestNode_BranchesReadTheFork(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const size = 4000
	id, err := graphtest.RecordRealistic(ctx, db, size)
	if err != nil {
		t.Fatal(err)
	}
	src := &counting{Source: storesrc.New(db)}
	a := analysis.New(src, nil)
	r, err := a.Open(ctx, id, analysis.LoadGraph)
	if err != nil {
		t.Fatal(err)
	}
	seen, most := 0, 0
	for _, n := range r.Graph.Nodes {
		if n.ForkOf == nil {
			continue
		}
		src.read = 0
		v, err := a.Node(ctx, id, n.Seq, analysis.NodeOptions{Branches: true})
		if err != nil {
			t.Fatal(err)
		}
		seen++
		span := n.ForkOf.Node.Seq
		if j := n.ForkOf.Join; j != nil {
			span = j.Seq - span + 1
		} else {
			span = r.Graph.Nodes[len(r.Graph.Nodes)-1].Seq - span + 1
		}
		if src.read > int(span) {
			t.Errorf("n%d (%s): read %d nodes; its fork spans %d", n.Seq, n.Kind, src.read, span)
		}
		most = max(most, src.read)
		want := n.ForkOf.Branches
		if len(v.Branches) != len(want) {
			t.Fatalf("n%d: %d branches, want %d", n.Seq, len(v.Branches), len(want))
		}
		for i := range want {
			if v.Branches[i].Name != want[i].Name || v.Branches[i].Tokens() != want[i].Tokens() || v.Branches[i].Status != want[i].Status {
				t.Errorf("n%d: branch %s %+v, want %s %+v", n.Seq, v.Branches[i].Name, v.Branches[i].Tokens(), want[i].Name, want[i].Tokens())
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d forks and joins", seen)
	}
	if most > size/10 {
		t.Errorf("a fork's or join's view read %d of the run's %d nodes", most, size)
	}
	t.Logf("%d forks and joins: each read at most %d of %d nodes", seen, most, size)
}
