// Package chart lays a recorded run (a *graph.Run) out as the boxes of its
// chart (DESIGN §7): the trunk's nodes in sequence order, each fork holding
// one branch per declared branch, nested for nested forks, and the arrows in
// conversation order. It is the one walk that mermaid's Mermaid text and
// DOT, timeline's lanes, the web's run page and the graph JSON's edges
// share, so all of them show the same boxes.
//
// A large run is collapsed step by step — consecutive repeated calls folded
// into one box ("read_file x12"), deep then large branches summarized, the
// branches of a wide fork beyond the first few grouped, then the middle of
// long conversations elided — until it fits the limits the caller gives
// (Options: an edge count, and the size of the output it draws); Options.Full
// turns collapsing off.
//
// Labels say each box in plain text, or through the caller's escaping
// function (Labels.Escape) for an output language that needs it. What a
// caller knows beyond the graph (the prompt cache's reusable share of each
// call, say) reaches the labels as Notes: the package itself knows only the
// graph. Ids are generated (n<seq> for nodes, b<k> for branches, g<k> for a
// group), never taken from names, and nothing is ordered by a map, so labels
// are byte-stable. The package knows nothing of SQL or of audit rules.
package chart

import (
	"strconv"
	"sync"

	"github.com/inspect-dev/inspect/graph"
)

// Chart is a Layout with its labels: the boxes of the collapsed view, in
// conversation order, each fork holding its branches, and for every box the
// nodes it stands for. A Chart is safe for concurrent use.
type Chart struct {
	// Run is the run drawn.
	Run *graph.Run
	// Trunk holds the trunk's boxes in order.
	Trunk []*Box
	// Collapsed says what collapsing did, as the chart's header line does
	// ("collapsed to stay under …; --full draws every node"); "" when the
	// whole run is drawn.
	Collapsed string

	layout *Layout
	l      *labeler
	once   sync.Once
	boxOf  map[int64]*Box
}

// BoxKind is what a box of the chart stands for.
type BoxKind int

// The box kinds.
const (
	BoxNode     BoxKind = iota // one node
	BoxFork                    // a fork node; Branches holds its branches
	BoxFold                    // consecutive repeated calls of one tool ("read_file x12")
	BoxSummary                 // a whole branch (nested forks included) as one box
	BoxGap                     // the elided middle of a long conversation
	BoxGroup                   // the branches of a wide fork beyond the first few
	BoxParallel                // the calls of one response that ran at once; Members holds them
	BoxCalls                   // the calls of a parallel group past the first few
)

// String is the kind's name: node, fork, fold, summary, gap, group,
// parallel, calls.
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
	case BoxParallel:
		return "parallel"
	case BoxCalls:
		return "calls"
	}
	return "box" + strconv.Itoa(int(k))
}

// Box is one box of the chart.
type Box struct {
	// ID is the box's chart id: n<seq> of its node (the first it covers),
	// g<k> for a group, or p<seq> (of the llm node) for a parallel group.
	ID   string
	Kind BoxKind
	// Label is the box's text, written with the chart's Labels.
	Label string
	// Node is the node shown (BoxNode, BoxFork) or the first node covered;
	// nil for a group of branches that recorded nothing.
	Node *graph.Node
	// Tool is the repeated tool of a fold.
	Tool string
	// Failed is set when the box is drawn in the error style.
	Failed bool
	// Branches are a fork's branches in declared order (BoxFork).
	Branches []*Branch
	// Members are a parallel group's calls (BoxParallel), drawn side by
	// side from the box before it to the box after it: one box each, the
	// last a BoxCalls when the group is folded past its first few.
	Members []*Box
	// Group is the parallel call group a BoxParallel or a BoxCalls shows
	// (a part of).
	Group *graph.Group

	it *item
}

// Nodes returns the nodes the box stands for, in sequence order (the node
// itself for BoxNode and BoxFork, without its branches; a BoxParallel's
// members' nodes).
func (b *Box) Nodes() []*graph.Node {
	if b.Kind == BoxNode || b.Kind == BoxFork {
		return []*graph.Node{b.Node}
	}
	return b.it.covered()
}

// Collapsed reports whether the box stands for more than one node (a
// BoxParallel holds boxes instead: it is not collapsed, its BoxCalls is).
func (b *Box) Collapsed() bool {
	return b.Kind != BoxNode && b.Kind != BoxFork && b.Kind != BoxParallel
}

// Branch is one branch of a fork as the chart shows it.
type Branch struct {
	// ID is the branch's subgraph id, b<k> (k numbers the run's
	// conversations, the trunk being 0).
	ID string
	// Branch is the branch (for a group: its first branch).
	Branch *graph.Branch
	// Title is the subgraph's title ("branch eu @researcher · ok · 8.1s"),
	// written with the chart's Labels; "" for a group.
	Title string
	// Boxes are the branch's boxes in order.
	Boxes []*Box
	// Summarized is set when the whole branch is one BoxSummary.
	Summarized bool
	// Group lists the branches a BoxGroup stands for, in declared order;
	// set on the one Branch that holds a wide fork's group (Boxes is then
	// that single box, drawn without a subgraph of its own).
	Group []*graph.Branch
}

// Chart returns the layout with its labels written with ls.
func (l *Layout) Chart(ls Labels) *Chart {
	lb := newLabeler(l.v, ls)
	out := &Chart{Run: l.v.g, Collapsed: l.collapsed(), layout: l, l: lb}
	out.Trunk = chartBoxes(l.v.trunk, lb)
	return out
}

func chartBoxes(items []*item, l *labeler) []*Box {
	out := make([]*Box, 0, len(items))
	for _, it := range items {
		b := &Box{ID: it.id(), Kind: boxKinds[it.kind], Label: l.label(it), Node: it.node, Tool: it.tool, Failed: failed(it), Group: it.par, it: it}
		it.covered() // a gap's nodes, flattened now: a Chart is only read after this
		if it.kind == itemParallel {
			b.Members = chartBoxes(it.members, l)
		}

		for _, bv := range it.branches {
			cb := &Branch{ID: "b" + strconv.Itoa(bv.k), Branch: bv.b, Summarized: bv.summarized, Boxes: chartBoxes(bv.items, l)}
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
var boxKinds = [...]BoxKind{itemNode: BoxNode, itemFork: BoxFork, itemFold: BoxFold, itemSummary: BoxSummary, itemGap: BoxGap, itemGroup: BoxGroup,
	itemParallel: BoxParallel, itemCalls: BoxCalls}

// Header returns the chart's header lines (DESIGN §7, without a comment
// marker), written with the chart's Labels: the run, its agent, tokens, the
// notes' header line, the branches of every fork, the tools and, when
// collapsed, what collapsing did.
func (ch *Chart) Header() []string { return header(ch.layout, ch.l) }

// Edges returns the chart's arrows, as Layout.Edges does.
func (ch *Chart) Edges() []Edge { return ch.layout.Edges() }

// BoxOf returns the box that shows node seq (the fold, summary, gap or
// group it is inside when it has no box of its own), or nil for a node the
// run does not have. It is safe for concurrent use.
func (ch *Chart) BoxOf(seq int64) *Box {
	ch.once.Do(func() {
		ch.boxOf = make(map[int64]*Box, len(ch.Run.Nodes))
		var walk func(boxes []*Box)
		walk = func(boxes []*Box) {
			for _, b := range boxes {
				if b.Kind == BoxParallel {
					walk(b.Members)
					continue
				}
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
// box before its branches' boxes, a parallel group's members in its place
// (the BoxParallel itself is not passed: it is their frame). branch is the
// branch the box is in (nil in the trunk).
func (ch *Chart) Walk(fn func(b *Box, branch *Branch)) {
	var walk func(boxes []*Box, in *Branch)
	walk = func(boxes []*Box, in *Branch) {
		for _, b := range boxes {
			if b.Kind == BoxParallel {
				walk(b.Members, in)
				continue
			}
			fn(b, in)
			for _, cb := range b.Branches {
				walk(cb.Boxes, cb)
			}
		}
	}
	walk(ch.Trunk, nil)
}
