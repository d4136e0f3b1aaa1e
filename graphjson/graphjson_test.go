package graphjson_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/graphjson"
	"github.com/inspect-dev/inspect/record"
)

// TestNew: the JSON of a run large enough that its chart collapses is never
// collapsed — every node in sequence order, every arrow of the full chart,
// each branch under the chart's id — and Fprint writes it as it decodes.
// (The goldens of the JSON are kept in mermaid/testdata beside the drawings
// of the same runs.)
func TestNew(t *testing.T) {
	var nodes []*record.Node
	if err := graphtest.Realistic(3000, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(graphtest.RealisticRun(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	j := graphjson.New(g)
	if j.Schema != graphjson.Schema || j.Run.ID != g.ID || len(j.Nodes) != len(g.Nodes) {
		t.Fatalf("schema %q, run %q, %d nodes (want %d)", j.Schema, j.Run.ID, len(j.Nodes), len(g.Nodes))
	}
	for i, n := range j.Nodes {
		if n.ID != g.Nodes[i].ID() || n.Seq != g.Nodes[i].Seq {
			t.Fatalf("node %d is %s, want %s", i, n.ID, g.Nodes[i].ID())
		}
	}
	full := chart.Lay(g, chart.Options{Full: true})
	want := full.Edges()
	if len(j.Edges) != len(want) {
		t.Fatalf("%d edges, want the full chart's %d", len(j.Edges), len(want))
	}
	for i, e := range j.Edges {
		if e.From != want[i].From || e.To != want[i].To {
			t.Fatalf("edge %d is %s→%s, want %s→%s", i, e.From, e.To, want[i].From, want[i].To)
		}
	}
	if collapsed := chart.Lay(g, chart.Options{MaxEdges: 500}); !collapsed.Collapsed() {
		t.Error("the run is too small to show that the JSON is not collapsed")
	}
	branches := 0
	for fi, f := range j.Forks {
		for bi, b := range f.Branch {
			if id := full.BranchID(g.Forks[fi].Branches[bi]); b.ID != id {
				t.Errorf("fork %s branch %s: id %s, want %s", f.Fork, b.Name, b.ID, id)
			}
			branches++
		}
	}
	if branches == 0 {
		t.Error("no branches")
	}

	var buf bytes.Buffer
	if err := graphjson.Fprint(&buf, g); err != nil {
		t.Fatal(err)
	}
	var back graphjson.Graph
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Nodes) != len(j.Nodes) || len(back.Edges) != len(j.Edges) || len(back.Forks) != len(j.Forks) {
		t.Errorf("Fprint's JSON decodes to %d nodes, %d edges, %d forks; New has %d, %d, %d",
			len(back.Nodes), len(back.Edges), len(back.Forks), len(j.Nodes), len(j.Edges), len(j.Forks))
	}
}

// TestGroups: an imported run's parallel call groups are listed with
// their response, branch, calls and members (the full list: the JSON is
// never collapsed), each member names its group and no other node does;
// a run of our runtime, whose calls run one at a time, has no "groups"
// key at all (its JSON is as it was before groups existed).
func TestGroups(t *testing.T) {
	t0 := graphtest.Start
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "main", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "go"},
		{Seq: 2, Kind: record.KindLLM, Agent: "main", Started: at(0), Ended: at(1), Status: record.StatusOK, LLM: &record.LLM{Calls: []string{"Read", "Read", "Read", "Read", "Read", "Read"}}},
	}
	for i := 0; i < 6; i++ {
		nodes = append(nodes, &record.Node{Seq: int64(3 + i), Kind: record.KindTool, Agent: "main", CalledBy: 2, Started: at(1), Ended: at(2 + i), Status: record.StatusOK,
			Tool: &record.Tool{Name: "Read", Args: "{}"}})
	}
	nodes = append(nodes,
		&record.Node{Seq: 9, Kind: record.KindLLM, Agent: "main", Started: at(8), Ended: at(9), Status: record.StatusOK, LLM: &record.LLM{}},
		&record.Node{Seq: 10, Kind: record.KindFinal, Agent: "main", Started: at(9), Ended: at(9), Status: record.StatusOK, Text: "done"})
	imported := &record.Run{ID: "r", Started: t0, Ended: at(9), Status: record.StatusOK, Source: record.Source{Format: "codex"}}
	g, err := graph.Build(imported, nodes)
	if err != nil {
		t.Fatal(err)
	}
	j := graphjson.New(g)
	if len(j.Groups) != 1 {
		t.Fatalf("%d groups, want 1", len(j.Groups))
	}
	gr := j.Groups[0]
	if gr.ID != "p2" || gr.LLM != "n2" || gr.Branch != "" || gr.Calls != 6 || len(gr.Members) != 6 || gr.Members[0] != "n3" || gr.Members[5] != "n8" || gr.SpanMS != 6000 {
		t.Errorf("group %+v", gr)
	}
	for _, n := range j.Nodes {
		if want := map[bool]string{true: "p2"}[n.Seq >= 3 && n.Seq <= 8]; n.Group != want {
			t.Errorf("%s: group %q, want %q", n.ID, n.Group, want)
		}
	}
	edges := map[string]bool{}
	for _, e := range j.Edges {
		edges[e.From+">"+e.To] = true
	}
	for _, m := range gr.Members {
		if !edges["n2>"+m] || !edges[m+">n9"] {
			t.Errorf("no arrows n2>%s and %s>n9", m, m)
		}
	}

	ours := *imported
	ours.Source = record.Source{}
	og, err := graph.Build(&ours, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := graphjson.Fprint(&buf, og); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(`"groups"`)) || bytes.Contains(buf.Bytes(), []byte(`"group"`)) {
		t.Error("our runtime's run has groups in its JSON")
	}
}
