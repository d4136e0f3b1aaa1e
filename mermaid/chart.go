package mermaid

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Chart is a run as the chart draws it: the boxes of the collapsed view
// (the same view Fprint and FprintDOT choose, so a page that draws the SVG
// and a timeline beside it shows the same boxes), in conversation order,
// each fork holding its branches, and for every box the nodes it stands
// for. Labels are plain text: whoever writes them escapes them for its
// output (html/template, the terminal sanitizer).
type Chart struct {
	// Run is the run drawn.
	Run *graph.Run
	// Trunk holds the trunk's boxes in order.
	Trunk []*Box
	// Collapsed says what collapsing did, as the chart's %% line does
	// ("collapsed to stay under …; --full draws every node"); "" when the
	// whole run is drawn.
	Collapsed string

	once  sync.Once
	boxOf map[int64]*Box
}

// BoxKind is what a box of the chart stands for.
type BoxKind int

// The box kinds.
const (
	BoxNode    BoxKind = iota // one node
	BoxFork                   // a fork node; Branches holds its branches
	BoxFold                   // consecutive repeated calls of one tool ("read_file x12")
	BoxSummary                // a whole branch (nested forks included) as one box
	BoxGap                    // the elided middle of a long conversation
	BoxGroup                  // the branches of a wide fork beyond the first few
)

// String is the kind's name: node, fork, fold, summary, gap, group.
func (k BoxKind) String() string {
	switch k {
	case BoxNode:
		return "node"
	case BoxFork:
		return "fork"
	case BoxFold:
		return "fold"
	case BoxSummary:
		return "summary"
	case BoxGap:
		return "gap"
	case BoxGroup:
		return "group"
	}
	return "box" + strconv.Itoa(int(k))
}

// Box is one box of the chart.
type Box struct {
	// ID is the box's chart id: n<seq> of its node (the first it covers),
	// or g<k> for a group.
	ID   string
	Kind BoxKind
	// Label is the box's text as the chart shows it, unescaped.
	Label string
	// Node is the node shown (BoxNode, BoxFork) or the first node covered;
	// nil for a group of branches that recorded nothing.
	Node *graph.Node
	// Tool is the repeated tool of a fold.
	Tool string
	// Failed is set when the box is drawn in the error style.
	Failed bool
	// Branches are a fork's branches in declared order (BoxFork).
	Branches []*ChartBranch

	it *item
}

// Nodes returns the nodes the box stands for, in sequence order (the node
// itself for BoxNode and BoxFork, without its branches).
func (b *Box) Nodes() []*graph.Node {
	if b.Kind == BoxNode || b.Kind == BoxFork {
		return []*graph.Node{b.Node}
	}
	return b.it.covered()
}

// Collapsed reports whether the box stands for more than one node.
func (b *Box) Collapsed() bool { return b.Kind != BoxNode && b.Kind != BoxFork }

// ChartBranch is one branch of a fork as the chart shows it.
type ChartBranch struct {
	// ID is the branch's subgraph id, b<k> (k numbers the run's
	// conversations, the trunk being 0).
	ID string
	// Branch is the branch (for a group: its first branch).
	Branch *graph.Branch
	// Title is the subgraph's title ("branch eu @researcher · ok · 8.1s").
	Title string
	// Boxes are the branch's boxes in order.
	Boxes []*Box
	// Summarized is set when the whole branch is one BoxSummary.
	Summarized bool
	// Group lists the branches a BoxGroup stands for, in declared order;
	// set on the one ChartBranch that holds a wide fork's group (Boxes is
	// then that single box, drawn without a subgraph of its own).
	Group []*graph.Branch
}

// Chart returns run g as the chart draws it with c: collapsed exactly as
// Fprint and FprintDOT collapse it. A Chart is safe for concurrent use.
func (c *Config) Chart(g *graph.Run) *Chart {
	ch := c.choose(g, func(v *view) []byte {
		var buf bytes.Buffer
		printMermaid(&buf, v, c)
		return buf.Bytes()
	})
	l := &labeler{v: ch.v, esc: func(s string) string { return s }}
	out := &Chart{Run: g, Collapsed: collapsedLine(ch.v.stats, c)}
	out.Trunk = chartBoxes(ch.v.trunk, l)
	return out
}

func chartBoxes(items []*item, l *labeler) []*Box {
	out := make([]*Box, 0, len(items))
	for _, it := range items {
		b := &Box{ID: it.id(), Kind: boxKinds[it.kind], Label: l.label(it), Node: it.node, Tool: it.tool, Failed: failed(it), it: it}
		it.covered() // a gap's nodes, flattened now: a Chart is only read after this

		for _, bv := range it.branches {
			cb := &ChartBranch{ID: "b" + strconv.Itoa(bv.k), Branch: bv.b, Summarized: bv.summarized, Boxes: chartBoxes(bv.items, l)}
			if bv.grouped {
				for _, g := range bv.items[0].group {
					cb.Group = append(cb.Group, g.b)
				}
			} else {
				cb.Title = l.branchTitle(bv)
			}
			b.Branches = append(b.Branches, cb)
		}
		out = append(out, b)
	}
	return out
}

// boxKinds maps the view's item kinds to the exported box kinds.
var boxKinds = [...]BoxKind{itemNode: BoxNode, itemFork: BoxFork, itemFold: BoxFold, itemSummary: BoxSummary, itemGap: BoxGap, itemGroup: BoxGroup}

// BoxOf returns the box that shows node seq (the fold, summary, gap or
// group it is inside when it has no box of its own), or nil for a node the
// run does not have. It is safe for concurrent use.
func (ch *Chart) BoxOf(seq int64) *Box {
	ch.once.Do(func() {
		ch.boxOf = make(map[int64]*Box, len(ch.Run.Nodes))
		var walk func(boxes []*Box)
		walk = func(boxes []*Box) {
			for _, b := range boxes {
				for _, n := range b.Nodes() {
					ch.boxOf[n.Seq] = b
				}
				for _, cb := range b.Branches {
					walk(cb.Boxes)
				}
			}
		}
		walk(ch.Trunk)
	})
	return ch.boxOf[seq]
}

// Walk calls fn for every box of the chart in conversation order: a fork's
// box before its branches' boxes. branch is the branch the box is in (nil
// in the trunk).
func (ch *Chart) Walk(fn func(b *Box, branch *ChartBranch)) {
	var walk func(boxes []*Box, in *ChartBranch)
	walk = func(boxes []*Box, in *ChartBranch) {
		for _, b := range boxes {
			fn(b, in)
			for _, cb := range b.Branches {
				walk(cb.Boxes, cb)
			}
		}
	}
	walk(ch.Trunk, nil)
}

// kindClass is the class a node of kind k carries in hooked DOT.
func kindClass(k record.Kind) string { return "kind-" + string(k) }
