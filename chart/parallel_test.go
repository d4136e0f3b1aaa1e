package chart

import (
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// parallelRun is a Claude Code run whose first response reads seven files
// at once, whose second makes two calls at once (one of them a Task whose
// sub-agent reads two files at once), and whose third answers.
func parallelRun(t *testing.T) *graph.Run {
	t.Helper()
	t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var nodes []*record.Node
	add := func(n *record.Node) *record.Node {
		n.Seq = int64(len(nodes) + 1)
		if n.Agent == "" {
			n.Agent = "main"
		}
		n.Status = record.StatusOK
		nodes = append(nodes, n)
		return n
	}
	llm := func(start, end float64, calls ...string) *record.Node {
		return add(&record.Node{Kind: record.KindLLM, Started: at(start), Ended: at(end), LLM: &record.LLM{Model: "m", Calls: calls}})
	}
	tool := func(by *record.Node, name, path string, start, end float64) *record.Node {
		return add(&record.Node{Kind: record.KindTool, CalledBy: by.Seq, Started: at(start), Ended: at(end),
			Tool: &record.Tool{Name: name, Args: `{"file_path":"/home/USER/projects/app/` + path + `"}`}})
	}
	add(&record.Node{Kind: record.KindUser, Started: at(0), Ended: at(0), Text: "look"})
	r1 := llm(0, 1, "Read", "Read", "Read", "Read", "Read", "Read", "Read")
	for i, p := range []string{"a.go", "b.go", "c.go", "d.go", "e.go", "f.go", "g.go"} {
		tool(r1, "Read", "internal/"+p, 1, 2+float64(i)/10)
	}
	r2 := llm(3, 4, "Grep", "Task")
	tool(r2, "Grep", "x", 4, 5)
	fork := add(&record.Node{Kind: record.KindFork, CalledBy: r2.Seq, Started: at(4), Ended: at(4),
		Fork: &record.Fork{Context: "none", Tool: "Task", Branches: []record.ForkBranch{{Name: "look", Agent: "Explore"}}}})
	sub := func(n *record.Node) *record.Node {
		n.Branch, n.ForkSeq, n.Depth, n.Agent = "look", fork.Seq, 1, "Explore"
		return n
	}
	s1 := sub(llm(4, 5, "Read", "Read"))
	sub(tool(s1, "Read", "h.go", 5, 6))
	sub(tool(s1, "Read", "i.go", 5, 7))
	sub(llm(7, 8))
	sub(add(&record.Node{Kind: record.KindFinal, Started: at(8), Ended: at(8), Text: "done"}))
	add(&record.Node{Kind: record.KindJoin, Started: at(8), Ended: at(8), Join: &record.Join{ForkSeq: fork.Seq,
		Branches: []record.JoinBranch{{Name: "look", Agent: "Explore", Status: record.StatusOK, Duration: 4 * time.Second}}}})
	llm(8, 9)
	add(&record.Node{Kind: record.KindFinal, Started: at(9), Ended: at(9), Text: "all read"})
	g, err := graph.Build(&record.Run{ID: "r", Started: t0, Ended: at(9), Status: record.StatusOK, Source: record.Source{Format: "claude-code"}}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 3 {
		t.Fatalf("%d groups, want 3", len(g.Groups))
	}
	return g
}

func edgeList(es []Edge) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.From + ">" + e.To + " ")
	}
	return strings.TrimSpace(b.String())
}

// TestParallel_Full: in full, each group's calls are one BoxParallel p<seq>
// after their response, holding every call (a fork among them with its
// branches), with an arrow from the response to each and from each to what
// follows; Walk passes the calls and not their frame, and every node has
// a box of its own.
func TestParallel_Full(t *testing.T) {
	g := parallelRun(t)
	l := Lay(g, Options{Full: true, MaxCalls: 5})
	ch := l.Chart(Labels{})
	var top []string
	for _, b := range ch.Trunk {
		top = append(top, b.ID+":"+b.Kind.String())
	}
	if got := strings.Join(top, " "); got != "n1:node n2:node p2:parallel n10:node p10:parallel n18:node n19:node n20:node" {
		t.Fatalf("trunk boxes: %s", got)
	}
	p2 := ch.Trunk[2]
	if len(p2.Members) != 7 || p2.Group != g.Groups[0] || p2.Label != "7 calls at once · 1.6s" {
		t.Errorf("p2: %d members, group %v, label %q", len(p2.Members), p2.Group, p2.Label)
	}
	p10 := ch.Trunk[4]
	if len(p10.Members) != 2 || p10.Members[1].Kind != BoxFork || len(p10.Members[1].Branches) != 1 || p10.Label != "2 calls at once · 1.0s" {
		t.Errorf("p10: %+v", p10)
	}
	if inner := p10.Members[1].Branches[0].Boxes; len(inner) != 4 || inner[1].Kind != BoxParallel || inner[1].ID != "p13" {
		t.Errorf("the branch's boxes: %d, the second %v", len(inner), inner)
	}
	want := "n1>n2 n2>n3 n2>n4 n2>n5 n2>n6 n2>n7 n2>n8 n2>n9 n3>n10 n4>n10 n5>n10 n6>n10 n7>n10 n8>n10 n9>n10 " +
		"n10>n11 n10>n12 " + // the response to its two calls, then into the fork's branch
		"n12>n13 n13>n14 n13>n15 n14>n16 n15>n16 n16>n17 " +
		"n11>n18 n17>n18 n18>n19 n19>n20" // the grep and the branch's end to the join, which the answer follows
	if got := edgeList(l.Edges()); got != want {
		t.Errorf("edges\n got %s\nwant %s", got, want)
	}
	if l.Collapsed() || ch.Collapsed != "" {
		t.Errorf("a full layout collapsed: %q", ch.Collapsed)
	}
	walked := 0
	ch.Walk(func(b *Box, _ *Branch) {
		walked++
		if b.Kind == BoxParallel {
			t.Errorf("Walk passed the frame %s", b.ID)
		}
	})
	if walked != len(g.Nodes) {
		t.Errorf("Walk passed %d boxes for %d nodes", walked, len(g.Nodes))
	}
	for _, n := range g.Nodes {
		if b := ch.BoxOf(n.Seq); b == nil || b.ID != n.ID() {
			t.Errorf("BoxOf(%s) = %v", n.ID(), b)
		}
	}
}

// TestParallel_MaxCalls: past MaxCalls a group draws its first MaxCalls-1
// calls and one BoxCalls for the rest with their count, the arrows go to
// and from that box, BoxOf finds its nodes in it, and the header says
// what was folded though the run fits every limit.
func TestParallel_MaxCalls(t *testing.T) {
	g := parallelRun(t)
	l := Lay(g, Options{MaxCalls: 5, MaxEdges: 500})
	ch := l.Chart(Labels{})
	p2 := ch.Trunk[2]
	var ids []string
	for _, m := range p2.Members {
		ids = append(ids, m.ID+":"+m.Kind.String())
	}
	if got := strings.Join(ids, " "); got != "n3:node n4:node n5:node n6:node n7:calls" {
		t.Fatalf("p2 draws %s", got)
	}
	more := p2.Members[4]
	if more.Label != "… 3 more calls · Read x3 · n7..n9" || !more.Collapsed() || more.Group != g.Groups[0] {
		t.Errorf("the rest: %q collapsed %v", more.Label, more.Collapsed())
	}
	for _, seq := range []int64{7, 8, 9} {
		if ch.BoxOf(seq) != more {
			t.Errorf("BoxOf(n%d) is not the box of the rest", seq)
		}
	}
	if got := edgeList(l.Edges()); !strings.HasPrefix(got, "n1>n2 n2>n3 n2>n4 n2>n5 n2>n6 n2>n7 n3>n10 n4>n10 n5>n10 n6>n10 n7>n10 ") {
		t.Errorf("edges %s", got)
	}
	if want := "3 calls of 1 parallel group past the first 4 drawn as one node each; --full draws every node"; ch.Collapsed != want || !l.Collapsed() {
		t.Errorf("Collapsed = %q, want %q", ch.Collapsed, want)
	}
	if zero := Lay(g, Options{}); zero.Collapsed() || len(zero.Chart(Labels{}).Trunk[2].Members) != 7 {
		t.Error("the zero Options folded a group")
	}
}

// TestParallel_EveryLevel: at every collapsing level the arrows counted
// while collapsing are the arrows drawn, and every node is shown by a box.
func TestParallel_EveryLevel(t *testing.T) {
	g := parallelRun(t)
	full := newView(g, 5)
	for level, p := range plans {
		v := full
		if level > 0 {
			v = full.apply(level, p)
		}
		if n, es := countEdges(v.trunk), len(v.edges()); n != es {
			t.Errorf("level %d: %d arrows counted, %d drawn", level, n, es)
		}
		ch := (&Layout{v: v}).Chart(Labels{})
		for _, n := range g.Nodes {
			if ch.BoxOf(n.Seq) == nil {
				t.Errorf("level %d: %s has no box", level, n.ID())
			}
		}
		if got := countNodes(v.trunk); got != len(g.Nodes) {
			t.Errorf("level %d: %d nodes counted, want %d", level, got, len(g.Nodes))
		}
	}
	// folding: the response that only reads and its seven reads are one fold
	folded := full.apply(1, plans[1])
	if it := folded.trunk[1]; it.kind != itemFold || it.tool != "Read" || len(it.nodes) != 8 {
		t.Errorf("level 1 folds %v %q over %d nodes, want the reads n2..n9", it.kind, it.tool, len(it.nodes))
	}
}
