package chart_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

func realistic(t *testing.T, n int) *graph.Run {
	t.Helper()
	var nodes []*record.Node
	if err := graphtest.Realistic(n, func(nd *record.Node) error { nodes = append(nodes, nd); return nil }); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(graphtest.RealisticRun(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestLay_Limits: the zero Options never collapse (every node has a box of
// its own); an edge limit alone collapses a large run under it without a
// Size to measure by; Size is asked about the candidates and its answer
// decides; Full ignores the limits.
func TestLay_Limits(t *testing.T) {
	g := realistic(t, 3000)
	whole := chart.Lay(g, chart.Options{})
	if whole.Collapsed() {
		t.Fatal("the zero Options collapsed the run")
	}
	ch := whole.Chart(chart.Labels{})
	if ch.Collapsed != "" {
		t.Errorf("Collapsed = %q on a whole chart", ch.Collapsed)
	}
	boxes := 0
	ch.Walk(func(b *chart.Box, _ *chart.Branch) {
		boxes++
		if b.Collapsed() {
			t.Errorf("box %s (%s) in a whole chart", b.ID, b.Kind)
		}
	})
	if boxes != len(g.Nodes) {
		t.Errorf("%d boxes for %d nodes", boxes, len(g.Nodes))
	}

	small := chart.Lay(g, chart.Options{MaxEdges: 400})
	if n := len(small.Edges()); !small.Collapsed() || n > 400 {
		t.Errorf("MaxEdges 400: collapsed %v, %d edges", small.Collapsed(), n)
	}
	if got := small.Chart(chart.Labels{}).Collapsed; !strings.HasPrefix(got, "collapsed to stay under 400 edges: ") {
		t.Errorf("Collapsed = %q", got)
	}

	var asked []*chart.Layout
	sized := chart.Lay(g, chart.Options{MaxEdges: 100000, MaxTextSize: 10, Size: func(l *chart.Layout) int {
		asked = append(asked, l)
		return len(l.Edges()) // fits only a layout of at most 10 arrows: none does
	}})
	if len(asked) < 2 || asked[len(asked)-1] != sized {
		t.Errorf("Size asked %d times; the layout returned is not the last one measured", len(asked))
	}
	if got := sized.Chart(chart.Labels{}).Collapsed; !strings.HasPrefix(got, "collapsed to stay under 100000 edges and 10 characters: ") {
		t.Errorf("Collapsed = %q", got)
	}

	full := chart.Lay(g, chart.Options{Full: true, MaxEdges: 1, MaxTextSize: 1, Size: func(*chart.Layout) int {
		t.Error("Size asked with Full")
		return 0
	}})
	if full.Collapsed() || len(full.Edges()) != len(whole.Edges()) {
		t.Errorf("Full: collapsed %v, %d edges, want %d", full.Collapsed(), len(full.Edges()), len(whole.Edges()))
	}
}

// TestNotes: a caller's note follows an llm node's tokens and ends every
// other node's label, escaped by the Labels' Escape as untrusted text is;
// the header note is a line of its own after the tokens line; the zero
// Notes add nothing.
func TestNotes(t *testing.T) {
	g := realistic(t, 200)
	l := chart.Lay(g, chart.Options{})
	esc := func(s string) string { return strings.ReplaceAll(s, "!", "&excl;") }
	plain := l.Chart(chart.Labels{Escape: esc})
	noted := l.Chart(chart.Labels{Escape: esc, Notes: chart.Notes{
		Header: "cache line!",
		Node:   func(n *graph.Node) string { return "note " + n.ID() + "!" },
	}})
	kinds := map[record.Kind]int{}
	plainLabel := map[string]string{}
	plain.Walk(func(b *chart.Box, _ *chart.Branch) { plainLabel[b.ID] = b.Label })
	noted.Walk(func(b *chart.Box, _ *chart.Branch) {
		n := b.Node
		note := " · note " + n.ID() + "&excl;"
		before := plainLabel[b.ID]
		switch {
		case n.Kind == record.KindLLM:
			u := n.LLM.Usage
			tokens := " · in " + strconv.FormatInt(u.In, 10) + " out " + strconv.FormatInt(u.Out, 10)
			if want := strings.Replace(before, tokens, tokens+note, 1); !strings.Contains(before, tokens) || b.Label != want {
				t.Errorf("%s: label %q, want %q", b.ID, b.Label, want)
			}
		case b.Label != before+note:
			t.Errorf("%s: label %q, want %q", b.ID, b.Label, before+note)
		}
		if strings.Contains(before, " · note ") {
			t.Errorf("%s: a chart without notes says %q", b.ID, before)
		}
		kinds[n.Kind]++
	})
	if kinds[record.KindLLM] == 0 || kinds[record.KindTool] == 0 || kinds[record.KindFork] == 0 {
		t.Errorf("the run lacks llm, tool or fork boxes: %v", kinds)
	}
	ph, nh := plain.Header(), noted.Header()
	at := -1
	for i, h := range ph {
		if strings.HasPrefix(h, "tokens ") {
			at = i + 1
		}
	}
	var rest []string
	if at >= 0 && at < len(nh) {
		rest = append(append(rest, nh[:at]...), nh[at+1:]...)
	}
	if at < 0 || len(nh) != len(ph)+1 || nh[at] != "cache line&excl;" || strings.Join(rest, "\n") != strings.Join(ph, "\n") {
		t.Errorf("header with a note:\n%s\nwithout:\n%s", strings.Join(nh, "\n"), strings.Join(ph, "\n"))
	}
}

// TestIDs: the layout's branch ids are the chart's subgraph ids and its
// marked nodes are each agent's first node other than a user message.
func TestIDs(t *testing.T) {
	g := realistic(t, 300)
	l := chart.Lay(g, chart.Options{})
	l.Chart(chart.Labels{}).Walk(func(b *chart.Box, _ *chart.Branch) {
		for _, cb := range b.Branches {
			if id := l.BranchID(cb.Branch); id != cb.ID {
				t.Errorf("BranchID(%s) = %s, the chart says %s", cb.Branch.Name, id, cb.ID)
			}
		}
	})
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		want := n.Agent != "" && n.Kind != record.KindUser && !seen[n.Agent]
		if want {
			seen[n.Agent] = true
		}
		if l.Marked(n) != want {
			t.Errorf("Marked(%s) = %v, want %v", n.ID(), l.Marked(n), want)
		}
	}
	if len(seen) < 2 {
		t.Errorf("only %d agents marked", len(seen))
	}
}

// TestEdges_DetachedFork: the branches of a detached fork (background
// sub-agents: the parent went on while they ran) end at their join, which
// comes after the parent's own steps made meanwhile; those follow the fork
// itself, not the branches. The edge count the collapsing limits use is
// the same.
func TestEdges_DetachedFork(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 10, 0, s, 0, time.UTC) }
	fork := &record.Fork{Context: "none", Tool: "Agent", Detached: true,
		Branches: []record.ForkBranch{{Name: "a", Agent: "general-purpose"}, {Name: "b", Agent: "general-purpose"}}}
	join := &record.Join{ForkSeq: 3, Branches: []record.JoinBranch{{Name: "a", Status: record.StatusOK}, {Name: "b", Status: record.StatusOK}}}
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "main", Started: at(0), Text: "go"},
		{Seq: 2, Kind: record.KindLLM, Agent: "main", Started: at(1), LLM: &record.LLM{Calls: []string{"Agent", "Agent"}}},
		{Seq: 3, Kind: record.KindFork, Agent: "main", Started: at(2), Fork: fork},
		{Seq: 4, Kind: record.KindLLM, Branch: "a", ForkSeq: 3, Depth: 1, Agent: "general-purpose", Started: at(3), LLM: &record.LLM{}},
		{Seq: 5, Kind: record.KindFinal, Branch: "a", ForkSeq: 3, Depth: 1, Agent: "general-purpose", Started: at(9)},
		{Seq: 6, Kind: record.KindFinal, Branch: "b", ForkSeq: 3, Depth: 1, Agent: "general-purpose", Started: at(8)},
		{Seq: 7, Kind: record.KindLLM, Agent: "main", Started: at(3), LLM: &record.LLM{Calls: []string{"Read"}}},
		{Seq: 8, Kind: record.KindTool, Agent: "main", Started: at(4), Tool: &record.Tool{Name: "Read"}},
		{Seq: 9, Kind: record.KindJoin, Agent: "main", Started: at(9), Join: join},
		{Seq: 10, Kind: record.KindLLM, Agent: "main", Started: at(10), LLM: &record.LLM{}},
		{Seq: 11, Kind: record.KindFinal, Agent: "main", Started: at(11)},
	}
	g, err := graph.Build(&record.Run{ID: "r"}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	l := chart.Lay(g, chart.Options{})
	var got []string
	for _, e := range l.Edges() {
		got = append(got, e.From+">"+e.To)
	}
	want := "n1>n2 n2>n3 n3>n4 n4>n5 n3>n6 n5>n9 n6>n9 n3>n7 n7>n8 n8>n9 n9>n10 n10>n11"
	if strings.Join(got, " ") != want {
		t.Errorf("edges\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if chart.Lay(g, chart.Options{MaxEdges: len(got)}).Collapsed() || !chart.Lay(g, chart.Options{MaxEdges: len(got) - 1}).Collapsed() {
		t.Errorf("the collapsing limits do not count %d edges", len(got))
	}
}
