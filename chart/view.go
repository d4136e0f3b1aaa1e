package chart

import (
	"slices"
	"sort"
	"strconv"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// The view is the one walk every output shares: a run's conversations as
// lists of items, forks holding their branches, and — when collapsing — folds
// of repeated calls, branch summaries and gaps standing for many nodes.

type itemKind int

const (
	itemNode     itemKind = iota // one node
	itemFork                     // a fork node with its branches
	itemFold                     // consecutive repeated calls of one tool (llm and tool nodes)
	itemSummary                  // a whole branch (nested forks included) as one node
	itemGap                      // the elided middle of a long conversation
	itemGroup                    // the branches of a wide fork beyond the first few, as one node
	itemParallel                 // the calls of one response that ran at once, side by side (members)
	itemCalls                    // the calls of a parallel group past the first few, as one node
)

// item is one box of the chart.
type item struct {
	kind itemKind
	// node is the node shown (itemNode, itemFork) or the first node covered
	// (the others); the item's id is always node.ID().
	node *graph.Node
	// nodes are the nodes a fold, summary or gap covers, in sequence order.
	nodes []*graph.Node
	// inner are the items a gap stands for; its nodes are flattened from
	// them only when the gap is drawn (a gap may cover most of a huge run).
	inner []*item
	// size is the number of nodes a gap covers.
	size int
	// tool is the repeated tool's name (itemFold).
	tool string
	// branches are a fork's branches in declared order (itemFork).
	branches []*branchView
	// group holds the branches an itemGroup stands for, in declared order;
	// gid is its id (g<k>, k of its first branch): it may cover no node.
	group []*branchView
	gid   string
	// par is the parallel call group an itemParallel draws (its members,
	// in order, the last an itemCalls when the group is folded past the
	// first few) and an itemCalls folds a part of.
	par     *graph.Group
	members []*item
}

// id is the item's chart id: n<seq> of its node, a group's g<k>, or a
// parallel call group's p<seq> (of its llm node).
func (it *item) id() string {
	switch it.kind {
	case itemGroup:
		return it.gid
	case itemParallel:
		return it.par.ID()
	}
	return it.node.ID()
}

// branchView is one branch of a fork as the chart shows it.
type branchView struct {
	b     *graph.Branch
	k     int // the subgraph id is b<k>
	items []*item
	// summarized is set when the branch's content became one summary item.
	summarized bool
	// grouped is set on the one branchView that holds a wide fork's group
	// item (its b is the group's first branch; it is drawn without a
	// subgraph of its own).
	grouped bool
}

// view is a run prepared for printing.
type view struct {
	g     *graph.Run
	trunk []*item
	// marked holds the node each agent is marked on (@agent): its first
	// node that is not a user message.
	marked map[*graph.Node]bool
	// branchNo numbers every branch (b<k>) in the order of g.Conversations.
	branchNo map[*graph.Branch]int
	stats    collapseStats
	// maxCalls is Options.MaxCalls: the most members of a parallel group
	// drawn (0: all).
	maxCalls int
}

// collapseStats say what collapsing did, for the %% line.
type collapseStats struct {
	level      int
	folds      int // fold items
	folded     int // nodes inside folds
	summarized int // branches summarized
	gaps       int // gap items
	elided     int // nodes inside gaps
	groups     int // wide forks whose later branches became one group
	grouped    int // branches inside groups
	parallels  int // parallel call groups folded past their first few calls
	calls      int // calls inside those folds
}

func (s collapseStats) collapsed() bool {
	return s.folds+s.summarized+s.gaps+s.groups+s.parallels > 0
}

// plan is one level of collapsing.
type plan struct {
	fold bool
	// summarizeDepth summarizes every branch at this fork depth or deeper
	// (0: none).
	summarizeDepth int
	// summarizeOver summarizes every branch with more nodes than this
	// (0: none).
	summarizeOver int
	// gapHead and gapTail keep the first and last items of a long list and
	// replace the middle with one gap (0: none).
	gapHead, gapTail int
	// wideFork keeps the first this many branches of a fork with more
	// (and its slowest), and draws the others as one group node (0: none).
	wideFork int
}

// plans are the collapsing levels, tried in order until the chart fits.
var plans = []plan{
	{},
	{fold: true},
	{fold: true, summarizeDepth: 2, wideFork: 40},
	{fold: true, summarizeDepth: 2, summarizeOver: 40, wideFork: 24},
	{fold: true, summarizeDepth: 2, summarizeOver: 12, wideFork: 12},
	{fold: true, summarizeDepth: 1, wideFork: 8},
	{fold: true, summarizeDepth: 1, gapHead: 150, gapTail: 50, wideFork: 8},
	{fold: true, summarizeDepth: 1, gapHead: 60, gapTail: 30, wideFork: 6},
	{fold: true, summarizeDepth: 1, gapHead: 25, gapTail: 15, wideFork: 4},
	{fold: true, summarizeDepth: 1, gapHead: 10, gapTail: 5, wideFork: 4},
	{fold: true, summarizeDepth: 1, gapHead: 4, gapTail: 2, wideFork: 3},
}

// newView builds the uncollapsed view of g, its parallel call groups
// drawn up to maxCalls members each (0: all).
func newView(g *graph.Run, maxCalls int) *view {
	v := &view{g: g, marked: map[*graph.Node]bool{}, branchNo: map[*graph.Branch]int{}, maxCalls: maxCalls}
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Agent == "" || n.Kind == record.KindUser || seen[n.Agent] {
			continue
		}
		seen[n.Agent] = true
		v.marked[n] = true
	}
	for i, c := range g.Conversations {
		if c.Branch != nil {
			v.branchNo[c.Branch] = i
		}
	}
	v.trunk = v.items(g.Trunk)
	return v
}

// items turns a conversation into items, forks holding their branches,
// the consecutive members of a parallel call group side by side in one
// itemParallel.
func (v *view) items(c *graph.Conversation) []*item {
	out := make([]*item, 0, len(c.Nodes))
	for i := 0; i < len(c.Nodes); {
		n := c.Nodes[i]
		members, joins, next := v.run(c.Nodes, i)
		if len(members) < 2 {
			out = append(out, v.item(n))
			i++
			continue
		}
		par := &item{kind: itemParallel, node: n, par: n.Group}
		for _, m := range members {
			par.members = append(par.members, v.item(m))
		}
		if k := v.maxCalls; k > 0 && len(par.members) > k {
			// the first k-1 calls, then one box for the rest with their count
			rest := par.members[k-1:]
			fold := &item{kind: itemCalls, node: rest[0].node, par: n.Group}
			fold.nodes = flatten(rest, nil)
			v.stats.parallels++
			for _, m := range rest {
				v.stats.calls += m.node.CallCount()
			}
			par.members = append(par.members[:k-1:k-1], fold)
		}
		out = append(out, par)
		for _, jn := range joins {
			out = append(out, v.item(jn))
		}
		i = next
	}
	return out
}

// run returns the members of node nodes[i]'s parallel group that follow
// one another from i — past the join of a fork among them, when another
// member follows it (Claude Code's Task with another call: the call is
// recorded after the sub-agent's join) — those joins, to draw after the
// group, and the index after the last member.
func (v *view) run(nodes []*graph.Node, i int) (members, joins []*graph.Node, next int) {
	gr := nodes[i].Group
	members, next = nodes[i:i+1], i+1
	if gr == nil {
		return members, nil, next
	}
	var held []*graph.Node
	for j := i + 1; j < len(nodes); j++ {
		switch m := nodes[j]; {
		case m.Group == gr:
			members = append(members, m)
			joins, held = append(joins, held...), nil
			next = j + 1
		case m.Kind == record.KindJoin && m.ForkOf != nil && m.ForkOf.Node.Group == gr:
			held = append(held, m)
		default:
			return members, joins, next
		}
	}
	return members, joins, next
}

// item is node n's item, a fork's holding its branches.
func (v *view) item(n *graph.Node) *item {
	it := &item{kind: itemNode, node: n}
	if n.Kind == record.KindFork && n.ForkOf != nil {
		it.kind = itemFork
		for _, b := range n.ForkOf.Branches {
			bv := &branchView{b: b, k: v.branchNo[b]}
			if b.Conv != nil {
				bv.items = v.items(b.Conv)
			}
			it.branches = append(it.branches, bv)
		}
	}
	return it
}

// apply returns a copy of v collapsed further by p. Applying the plans in
// order to the previous result gives the same view as applying each to the
// full view, for less work: every level works on a smaller view.
func (v *view) apply(level int, p plan) *view {
	c := *v
	c.stats.level = level
	c.trunk = c.collapse(v.trunk, p, 0)
	return &c
}

// covered returns the nodes a fold, summary or gap stands for, or those
// a parallel group's members are (a fork member without its branches).
func (it *item) covered() []*graph.Node {
	if it.nodes == nil {
		switch it.kind {
		case itemGap:
			it.nodes = flatten(it.inner, nil)
		case itemParallel:
			for _, m := range it.members {
				if m.kind == itemCalls {
					it.nodes = append(it.nodes, m.nodes...)
				} else {
					it.nodes = append(it.nodes, m.node)
				}
			}
		}
	}
	return it.nodes
}

func (v *view) collapse(items []*item, p plan, depth int) []*item {
	out := make([]*item, 0, len(items))
	for _, it := range items {
		switch it.kind {
		case itemFork:
			out = append(out, v.collapseFork(it, p, depth))
		case itemParallel:
			par := *it
			par.members = make([]*item, len(it.members))
			for i, m := range it.members {
				if m.kind == itemFork {
					m = v.collapseFork(m, p, depth)
				}
				par.members[i] = m
			}
			out = append(out, &par)
		default:
			out = append(out, it)
		}
	}
	if p.fold {
		out = v.fold(out)
	}
	if p.gapHead > 0 && len(out) > p.gapHead+p.gapTail+1 {
		mid := out[p.gapHead : len(out)-p.gapTail]
		gap := &item{kind: itemGap, node: firstNode(mid), inner: mid, size: countNodes(mid)}
		v.stats.gaps++
		v.stats.elided += gap.size
		out = append(append(append([]*item{}, out[:p.gapHead]...), gap), out[len(out)-p.gapTail:]...)
	}
	return out
}

// collapseFork returns a copy of fork item it with its branches collapsed
// by p (summarized, grouped, or collapsed inside), at fork depth depth.
func (v *view) collapseFork(it *item, p plan, depth int) *item {
	f := *it
	f.branches = make([]*branchView, len(it.branches))
	for i, bv := range it.branches {
		nb := *bv
		d := depth + 1
		switch {
		case bv.summarized, bv.grouped:
		case len(bv.items) > 0 && ((p.summarizeDepth > 0 && d >= p.summarizeDepth) ||
			(p.summarizeOver > 0 && countNodes(bv.items) > p.summarizeOver)):
			nodes := flatten(bv.items, nil)
			nb.items = []*item{{kind: itemSummary, node: nodes[0], nodes: nodes}}
			nb.summarized = true
			v.stats.summarized++
		default:
			nb.items = v.collapse(bv.items, p, d)
		}
		f.branches[i] = &nb
	}
	if p.wideFork > 0 {
		f.branches = v.group(f.branches, p.wideFork)
	}
	return &f
}

// group keeps the first keep branches of a wide fork and its slowest, in
// declared order, and puts every other branch into one group item, drawn
// as a single node with their statuses (DESIGN §7). A fork already grouped
// at a wider level is regrouped from all its branches.
func (v *view) group(bvs []*branchView, keep int) []*branchView {
	var all []*branchView
	for _, bv := range bvs {
		if bv.grouped {
			all = append(all, bv.items[0].group...)
		} else {
			all = append(all, bv)
		}
	}
	if len(all) <= keep+1 {
		return bvs
	}
	out := make([]*branchView, 0, keep+2)
	var rest []*branchView
	for i, bv := range all {
		if i < keep || bv.b.Slowest() {
			out = append(out, bv)
		} else {
			rest = append(rest, bv)
		}
	}
	if len(rest) == 0 {
		return out
	}
	var nodes []*graph.Node
	for _, bv := range rest {
		nodes = flatten(bv.items, nodes)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Seq < nodes[j].Seq })
	g := &item{kind: itemGroup, nodes: nodes, group: rest, gid: "g" + strconv.Itoa(rest[0].k)}
	if len(nodes) > 0 {
		g.node = nodes[0]
	}
	prev := 0 // branches already in a group at a wider level
	for _, bv := range bvs {
		if bv.grouped {
			prev = len(bv.items[0].group)
		}
	}
	if prev == 0 {
		v.stats.groups++
	}
	v.stats.grouped += len(rest) - prev
	return append(out, &branchView{b: rest[0].b, k: rest[0].k, items: []*item{g}, grouped: true})
}

// minFold is the fewest tool calls a fold replaces.
const minFold = 3

// fold replaces runs of consecutive calls of one tool — tool nodes of that
// name and the llm nodes that only call it — with one item.
func (v *view) fold(items []*item) []*item {
	out := make([]*item, 0, len(items))
	for i := 0; i < len(items); {
		name, ok := repeatable(items[i])
		if !ok {
			out = append(out, items[i])
			i++
			continue
		}
		j, tools := i, 0
		for j < len(items) {
			nm, ok := repeatable(items[j])
			if !ok || nm != name {
				break
			}
			switch it := items[j]; {
			case it.kind == itemParallel:
				tools += len(it.covered())
			case it.node.Kind == record.KindTool:
				tools++
			}
			j++
		}
		if tools < minFold {
			out = append(out, items[i:j]...)
			i = j
			continue
		}
		nodes := make([]*graph.Node, 0, j-i)
		for _, it := range items[i:j] {
			if it.kind == itemParallel {
				nodes = append(nodes, it.covered()...)
			} else {
				nodes = append(nodes, it.node)
			}
		}
		out = append(out, &item{kind: itemFold, node: nodes[0], nodes: nodes, tool: name})
		v.stats.folds++
		v.stats.folded += len(nodes)
		i = j
	}
	return out
}

// repeatable reports the tool an item repeats: a tool node's name, the
// one name every call of an llm node makes, or the one tool every member
// of a parallel group calls.
func repeatable(it *item) (string, bool) {
	if it.kind == itemParallel {
		name := ""
		for _, n := range it.covered() {
			if n.Kind != record.KindTool || n.Tool == nil || (name != "" && n.Tool.Name != name) {
				return "", false
			}
			name = n.Tool.Name
		}
		return name, name != ""
	}
	if it.kind != itemNode {
		return "", false
	}
	n := it.node
	switch n.Kind {
	case record.KindTool:
		if n.Tool != nil {
			return n.Tool.Name, true
		}
	case record.KindLLM:
		if n.LLM == nil || len(n.LLM.Calls) == 0 {
			return "", false
		}
		for _, c := range n.LLM.Calls {
			if c != n.LLM.Calls[0] {
				return "", false
			}
		}
		return n.LLM.Calls[0], true
	}
	return "", false
}

// flatten appends every node the items cover (branches included) in sequence order.
func flatten(items []*item, out []*graph.Node) []*graph.Node {
	start := len(out)
	out = flattenRec(items, out)
	tail := out[start:]
	sort.Slice(tail, func(i, j int) bool { return tail[i].Seq < tail[j].Seq })
	return out
}

func flattenRec(items []*item, out []*graph.Node) []*graph.Node {
	for _, it := range items {
		switch it.kind {
		case itemNode:
			out = append(out, it.node)
		case itemFork:
			out = append(out, it.node)
			for _, bv := range it.branches {
				out = flattenRec(bv.items, out)
			}
		case itemFold, itemSummary, itemGroup, itemCalls:
			out = append(out, it.nodes...)
		case itemGap:
			out = flattenRec(it.inner, out)
		case itemParallel:
			out = flattenRec(it.members, out)
		default:
			panic("internal error: unhandled item kind " + strconv.Itoa(int(it.kind)))
		}
	}
	return out
}

func countNodes(items []*item) int {
	n := 0
	for _, it := range items {
		switch it.kind {
		case itemNode:
			n++
		case itemFork:
			n++
			for _, bv := range it.branches {
				n += countNodes(bv.items)
			}
		case itemGap:
			n += it.size
		case itemParallel:
			n += countNodes(it.members)
		default:
			n += len(it.nodes)
		}
	}
	return n
}

// firstNode is the node with the lowest sequence number among items.
func firstNode(items []*item) *graph.Node {
	var first *graph.Node
	for _, it := range items {
		if n := it.node; n != nil && (first == nil || n.Seq < first.Seq) {
			first = n
		}
	}
	return first
}

// edge is one arrow of the chart, between item ids.
type edge struct{ from, to *item }

// edges walks the view in conversation order: each item to the next, a fork
// to the first item of each branch, the last item of each branch to what
// follows the fork — or, for a detached fork (the parent went on while
// its branches ran), to the item showing its join, the fork itself leading
// to what follows it; a parallel group's members each from what precedes
// the group and to what follows it.
func (v *view) edges() []edge {
	var out []edge
	v.walkEdges(v.trunk, &out)
	return out
}

func (v *view) walkEdges(items []*item, out *[]edge) {
	for i, it := range items {
		v.branchEdges(it, items[i+1:], out)
		if i+1 < len(items) {
			for _, from := range exits(it) {
				for _, to := range entries(items[i+1]) {
					*out = append(*out, edge{from, to})
				}
			}
		}
	}
}

// branchEdges appends the arrows of the forks item it is or holds: into
// each branch, within it, and for a detached fork from its branches' ends
// to its join among rest (the items after it).
func (v *view) branchEdges(it *item, rest []*item, out *[]edge) {
	switch it.kind {
	case itemFork:
		for _, bv := range it.branches {
			if len(bv.items) > 0 {
				for _, to := range entries(bv.items[0]) {
					*out = append(*out, edge{it, to})
				}
				v.walkEdges(bv.items, out)
			}
		}
		if detached(it) {
			if j := joinItem(rest, it.node.ForkOf); j != nil {
				for _, from := range branchExits(it) {
					*out = append(*out, edge{from, j})
				}
			}
		}
	case itemParallel:
		for _, m := range it.members {
			v.branchEdges(m, rest, out)
		}
	}
}

// entries are the items an arrow into it ends at: the item itself, or a
// parallel group's members.
func entries(it *item) []*item {
	if it.kind == itemParallel {
		return it.members
	}
	return []*item{it}
}

// exits are the items an arrow to whatever follows it starts from: an
// item itself, for a fork the last item of each branch (the fork itself
// for a branch that recorded nothing), a detached fork itself, for a
// parallel group the exits of each member.
func exits(it *item) []*item {
	switch {
	case it.kind == itemParallel:
		var out []*item
		for _, m := range it.members {
			out = append(out, exits(m)...)
		}
		return out
	case it.kind != itemFork || len(it.branches) == 0 || detached(it):
		return []*item{it}
	}
	return branchExits(it)
}

// branchExits are the last items of a fork's branches (the fork itself
// for a branch that recorded nothing, when not detached).
func branchExits(it *item) []*item {
	var out []*item
	for _, bv := range it.branches {
		if len(bv.items) == 0 {
			if !detached(it) {
				out = append(out, it)
			}
			continue
		}
		out = append(out, exits(bv.items[len(bv.items)-1])...)
	}
	return out
}

// detached reports whether a fork item's fork is detached.
func detached(it *item) bool {
	return it.kind == itemFork && it.node.ForkOf != nil && it.node.ForkOf.Detached
}

// joinItem is the item among items that shows fork f's join: the join
// node, or the fold or gap covering it; nil when none does (an open fork).
func joinItem(items []*item, f *graph.Fork) *item {
	if f.Join == nil {
		return nil
	}
	for _, it := range items {
		switch it.kind {
		case itemNode:
			if it.node == f.Join {
				return it
			}
		case itemFold, itemGap:
			if slices.Contains(it.covered(), f.Join) {
				return it
			}
		}
	}
	return nil
}

// countEdges counts edges without building them.
func countEdges(items []*item) int {
	n := 0
	for i, it := range items {
		n += countBranchEdges(it, items[i+1:])
		if i+1 < len(items) {
			n += len(exits(it)) * len(entries(items[i+1]))
		}
	}
	return n
}

// countBranchEdges counts the arrows branchEdges appends.
func countBranchEdges(it *item, rest []*item) int {
	n := 0
	switch it.kind {
	case itemFork:
		for _, bv := range it.branches {
			if len(bv.items) > 0 {
				n += len(entries(bv.items[0])) + countEdges(bv.items)
			}
		}
		if detached(it) && joinItem(rest, it.node.ForkOf) != nil {
			n += len(branchExits(it))
		}
	case itemParallel:
		for _, m := range it.members {
			n += countBranchEdges(m, rest)
		}
	}
	return n
}
