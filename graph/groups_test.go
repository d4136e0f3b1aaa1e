package graph_test

import (
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// groupNodes is a run whose responses make several calls: n2's three in
// the trunk, n8's two delegations (one fork of two branches), n10's two in
// branch a; n6 makes one; n17 names an llm node of another conversation.
func groupNodes() []*record.Node {
	at := func(s float64) time.Time { return graphtest.Start.Add(time.Duration(s * float64(time.Second))) }
	n := func(seq int64, kind record.Kind, calledBy int64, start, end float64) *record.Node {
		nd := &record.Node{Seq: seq, Kind: kind, Agent: "main", Started: at(start), Ended: at(end), Status: record.StatusOK, CalledBy: calledBy}
		switch kind {
		case record.KindLLM:
			nd.LLM = &record.LLM{Model: "m"}
		case record.KindTool:
			nd.Tool = &record.Tool{Name: "Read", Args: "{}"}
		}
		return nd
	}
	branch := func(nd *record.Node, name string) *record.Node {
		nd.Branch, nd.ForkSeq, nd.Depth, nd.Agent = name, 9, 1, "helper"
		return nd
	}
	fork := n(9, record.KindFork, 8, 9, 9)
	fork.Fork = &record.Fork{Context: "none", Tool: "Task", Branches: []record.ForkBranch{{Name: "a", Agent: "helper"}, {Name: "b", Agent: "helper"}}}
	join := n(16, record.KindJoin, 0, 20, 20)
	join.Join = &record.Join{ForkSeq: 9, Branches: []record.JoinBranch{{Name: "a", Status: record.StatusOK}, {Name: "b", Status: record.StatusOK}}}
	return []*record.Node{
		n(1, record.KindUser, 0, 0, 0),
		n(2, record.KindLLM, 0, 0, 1),
		n(3, record.KindTool, 2, 1, 3),
		n(4, record.KindTool, 2, 1, 5),
		n(5, record.KindTool, 2, 1.5, 2),
		n(6, record.KindLLM, 0, 5, 6),
		n(7, record.KindTool, 6, 6, 7),
		n(8, record.KindLLM, 0, 7, 9),
		fork,
		branch(n(10, record.KindLLM, 0, 9, 10), "a"),
		branch(n(11, record.KindTool, 10, 10, 12), "a"),
		branch(n(12, record.KindTool, 10, 10, 11), "a"),
		branch(n(13, record.KindFinal, 0, 12, 12), "a"),
		branch(n(14, record.KindLLM, 0, 9, 19), "b"),
		branch(n(15, record.KindFinal, 0, 20, 20), "b"),
		join,
		n(17, record.KindTool, 14, 20, 21), // names n14, of branch b: not a call of the trunk's
		n(18, record.KindFinal, 0, 21, 21),
	}
}

// TestGroups: on a stack that runs a response's calls at once (Claude
// Code), the calls that name one llm node of their conversation are one
// group — a fork of delegation calls counting one call per branch — and a
// single call is none; a CalledBy naming another conversation's node is
// ignored. Our runtime runs them one at a time: the same nodes make no
// group.
func TestGroups(t *testing.T) {
	r := run()
	r.Source = record.Source{Format: "claude-code"}
	g, err := graph.Build(r, groupNodes())
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		id      string
		members []int64
		calls   int
		span    time.Duration
	}
	wants := []want{{"p2", []int64{3, 4, 5}, 3, 4 * time.Second}, {"p8", []int64{9}, 2, 0}, {"p10", []int64{11, 12}, 2, 2 * time.Second}}
	if len(g.Groups) != len(wants) {
		t.Fatalf("%d groups, want %d", len(g.Groups), len(wants))
	}
	for i, w := range wants {
		gr := g.Groups[i]
		var members []int64
		for _, m := range gr.Members {
			members = append(members, m.Seq)
			if m.Group != gr {
				t.Errorf("%s: member %s does not point back at it", w.id, m.ID())
			}
		}
		if gr.ID() != w.id || !equalSeqs(members, w.members) || gr.Calls != w.calls || gr.Span() != w.span {
			t.Errorf("group %d = %s members %v calls %d span %s; want %s %v %d %s", i, gr.ID(), members, gr.Calls, gr.Span(), w.id, w.members, w.calls, w.span)
		}
		if g.GroupOf(gr.LLM) != gr {
			t.Errorf("GroupOf(%s) is not %s", gr.LLM.ID(), w.id)
		}
	}
	for _, seq := range []int64{1, 2, 6, 7, 8, 10, 13, 14, 16, 17, 18} {
		if gr := g.Node(seq).Group; gr != nil {
			t.Errorf("n%d is in group %s, want none", seq, gr.ID())
		}
	}
	if g.GroupOf(g.Node(6)) != nil || g.GroupOf(g.Node(14)) != nil {
		t.Error("a response of one call (n6) or whose call is in another conversation (n14) has a group")
	}

	ours, err := graph.Build(run(), groupNodes())
	if err != nil {
		t.Fatal(err)
	}
	if len(ours.Groups) != 0 || ours.Node(3).Group != nil {
		t.Errorf("our runtime's run has %d groups; its calls run one at a time", len(ours.Groups))
	}
}

func equalSeqs(a, b []int64) bool {
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
