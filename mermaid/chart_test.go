package mermaid

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// chartIDs lists every box and branch id of a chart in walk order.
func chartIDs(ch *chart.Chart) (boxes, branches []string) {
	ch.Walk(func(b *chart.Box, in *chart.Branch) {
		boxes = append(boxes, b.ID)
		for _, cb := range b.Branches {
			if cb.Group == nil {
				branches = append(branches, cb.ID)
			}
		}
	})
	return boxes, branches
}

var (
	boxLine     = regexp.MustCompile(`(?m)^\s*([ngb]\d+)\["`)
	subgraphRow = regexp.MustCompile(`(?m)^\s*subgraph (b\d+)\[`)
)

// checkChart: the chart has exactly the boxes and subgraphs the Mermaid
// text draws, every node of the run has exactly one box, and the
// collapsed line is the chart's %% line.
func checkChart(t *testing.T, name string, g *graph.Run) {
	t.Helper()
	var out bytes.Buffer
	if err := Fprint(&out, g); err != nil {
		t.Fatal(err)
	}
	ch := (&Config{}).Chart(g)
	boxes, branches := chartIDs(ch)
	var drawn, subs []string
	for _, m := range boxLine.FindAllStringSubmatch(out.String(), -1) {
		if !strings.HasPrefix(m[1], "b") {
			drawn = append(drawn, m[1])
		}
	}
	for _, m := range subgraphRow.FindAllStringSubmatch(out.String(), -1) {
		subs = append(subs, m[1])
	}
	if strings.Join(boxes, " ") != strings.Join(drawn, " ") {
		t.Errorf("%s: chart boxes\n%v\nwant the drawn boxes\n%v", name, boxes, drawn)
	}
	if strings.Join(branches, " ") != strings.Join(subs, " ") {
		t.Errorf("%s: chart branches %v, want the subgraphs %v", name, branches, subs)
	}
	seen := map[int64]string{}
	ch.Walk(func(b *chart.Box, _ *chart.Branch) {
		for _, n := range b.Nodes() {
			if prev, dup := seen[n.Seq]; dup {
				t.Errorf("%s: %s is in box %s and %s", name, n.ID(), prev, b.ID)
			}
			seen[n.Seq] = b.ID
		}
	})
	for _, n := range g.Nodes {
		if seen[n.Seq] == "" {
			t.Errorf("%s: %s is in no box", name, n.ID())
		} else if b := ch.BoxOf(n.Seq); b == nil || b.ID != seen[n.Seq] {
			t.Errorf("%s: BoxOf(%d) = %v, want box %s", name, n.Seq, b, seen[n.Seq])
		}
	}
	wantLine := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "%% collapsed to stay under") {
			wantLine = strings.TrimPrefix(l, "%% ")
		}
	}
	if ch.Collapsed != wantLine {
		t.Errorf("%s: Collapsed = %q, want %q", name, ch.Collapsed, wantLine)
	}
}

func TestChart_Fixtures(t *testing.T) {
	for _, r := range fixtureRuns(t) {
		checkChart(t, r.name, r.g)
		if ch := (&Config{}).Chart(r.g); ch.Collapsed != "" {
			t.Errorf("%s: a small fixture was collapsed: %s", r.name, ch.Collapsed)
		}
	}
}

// TestChart_Collapsed: a wide fork and a long realistic run collapse, and
// their charts still hold every node once, in the boxes drawn.
func TestChart_Collapsed(t *testing.T) {
	checkChart(t, "wide 300", wideRun(t, 300))
	var nodes []*record.Node
	if err := graphtest.Realistic(5000, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(graphtest.RealisticRun(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	checkChart(t, "realistic 5000", g)
	ch := (&Config{}).Chart(g)
	if ch.Collapsed == "" {
		t.Fatal("a 5,000-node run was not collapsed")
	}
	kinds := map[chart.BoxKind]int{}
	ch.Walk(func(b *chart.Box, _ *chart.Branch) { kinds[b.Kind]++ })
	if kinds[chart.BoxGap] == 0 && kinds[chart.BoxSummary] == 0 {
		t.Errorf("no gap or summary box in a collapsed 5,000-node run: %v", kinds)
	}
}

// TestDOT_Hooks: with Config.Hooks every box and cluster has an id and
// classes; without it DOT is unchanged (the goldens pin that).
func TestDOT_Hooks(t *testing.T) {
	var g *graph.Run
	for _, r := range fixtureRuns(t) {
		if r.name == "failing-branch" {
			g = r.g
		}
	}
	if g == nil {
		t.Skip("no failing-branch fixture")
	}
	var plain, hooked bytes.Buffer
	if err := FprintDOT(&plain, g); err != nil {
		t.Fatal(err)
	}
	if err := (&Config{Hooks: true}).FprintDOT(&hooked, g); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "class=") {
		t.Error("plain DOT carries classes")
	}
	h := hooked.String()
	for _, want := range []string{`id="g-n1", class="kind-user"`, `class="kind-llm"`, `class="kind-fork"`, `class="kind-join"`, `class="branch failed`, `slowest critical"`} {
		if !strings.Contains(h, want) {
			t.Errorf("hooked DOT lacks %s:\n%s", want, h)
		}
	}
}
