package graphjson_test

import (
	"bytes"
	"encoding/json"
	"testing"

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
