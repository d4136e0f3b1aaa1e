// Package timeline lays a recorded run out in time (DESIGN §16): one lane
// per conversation, branches of a fork side by side under it, each lane
// holding the bars of its model calls and tools, the waits on its forks and
// markers for forks, joins and hand-offs, with each fork's slowest branch
// and the run's critical path (graph.Run.CriticalPath) marked.
//
// The lanes are those of the run's chart (a chart.Chart, as
// mermaid.Config.Chart collapses it): a large run collapses exactly as its
// Mermaid view does — repeated calls as one bar, a summarized branch as one
// bar, the branches of a wide fork as one group lane, the elided middle of
// a long conversation as one bar — so a 100,000-node run has a few hundred
// bars. Fprint draws a Timeline as text
// for a terminal; package web draws it as SVG. The package knows no SQL.
package timeline

import (
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Timeline is a run in time.
type Timeline struct {
	// Run is the run laid out.
	Run *graph.Run
	// Start and End bound every lane: the run's start and its end (for a
	// run still open, its last recorded moment).
	Start, End time.Time
	// Lanes are the trunk first, then every branch shown, depth first: each
	// fork's branches in declared order, each followed by its own forks'
	// branches.
	Lanes []*Lane
	// Critical lists the titles of the lanes on the critical path, in
	// order ("trunk", "risks", …).
	Critical []string
	// Collapsed says what collapsing did (the chart's line), or "".
	Collapsed string
}

// Lane is one conversation (or a group of branches) in time.
type Lane struct {
	// ID is "trunk", the branch's chart id b<k>, or the group's g<k>.
	ID string
	// Title is "trunk", the branch path ("eu/fr"), or for a group
	// "N more branches".
	Title string
	// Name is the last part of the branch path ("fr"), "trunk", or the
	// group's title.
	Name string
	// Depth is the fork depth: 0 for the trunk.
	Depth int
	// Parent is the lane of the conversation that forked this one; nil
	// for the trunk.
	Parent *Lane
	// Agents are the agents that held the conversation, in order.
	Agents []string
	// Status is the branch's status (the run's for the trunk).
	Status record.Status
	// Statuses counts a group's branches by status ("ok 290, error 5").
	Statuses string
	// Branches is the number of branches a group lane stands for; 0 otherwise.
	Branches int
	// Slowest is set on the slowest branch of its fork; Critical on a lane
	// the run's end waited on.
	Slowest, Critical bool
	// Summarized is set when the branch is one collapsed bar.
	Summarized bool
	// Start and End are the lane's first and last recorded moments.
	Start, End time.Time
	// Bars are in time order (the order of the chart's boxes).
	Bars []Bar
	// Marks are forks, joins and hand-offs, in time order.
	Marks []Mark
}

// Duration is End − Start.
func (l *Lane) Duration() time.Duration { return l.End.Sub(l.Start) }

// BarKind is what a bar stands for.
type BarKind int

// The bar kinds.
const (
	BarModel     BarKind = iota // one model call (an llm node)
	BarTool                     // one tool call
	BarCollapsed                // several nodes as one box of the chart: a fold, summary, gap or group
	BarWait                     // the conversation waiting for a fork's branches, fork to join
)

// String is the kind's name: model, tool, collapsed, wait.
func (k BarKind) String() string {
	return [...]string{"model", "tool", "collapsed", "wait"}[k]
}

// Bar is one span of a lane.
type Bar struct {
	Kind BarKind
	// Box is the chart id of the box the bar draws (n<seq> or g<k>): the
	// same id the graph's SVG carries, so a page can mark both.
	Box string
	// Start and End are the span.
	Start, End time.Time
	// Label is the box's text as the chart shows it (unescaped).
	Label string
	// Failed is set when the box is drawn in the error style.
	Failed bool
	// Nodes counts the nodes the bar stands for.
	Nodes int
	// Gap is set on a BarCollapsed that is the elided middle of a long
	// conversation (the chart's gap box); Axis draws a long one narrow.
	Gap bool
	// Group is the id (p<seq>) of the parallel call group the bar is a
	// call of, "" for none; Slot is its place among the group's Slots
	// calls drawn, from 0, so a drawing stacks calls that overlap in time.
	Group       string
	Slot, Slots int
}

// MarkKind is what a marker stands for.
type MarkKind int

// The marker kinds.
const (
	MarkFork    MarkKind = iota // the conversation forked
	MarkJoin                    // the fork's branches came back
	MarkHandoff                 // the conversation changed hands
)

// String is the kind's name: fork, join, handoff.
func (k MarkKind) String() string {
	return [...]string{"fork", "join", "handoff"}[k]
}

// Mark is an instant of a lane.
type Mark struct {
	Kind MarkKind
	At   time.Time
	// Box is the chart id of the node (n<seq>).
	Box string
	// Label is the box's text (unescaped).
	Label string
}

// Build lays out the run of chart ch (collapsed as the chart is).
func Build(ch *chart.Chart) *Timeline {
	g := ch.Run
	t := &Timeline{Run: g, Start: g.Started, Collapsed: ch.Collapsed}
	t.End = g.Started.Add(g.Elapsed())
	critical := map[*graph.Conversation]bool{}
	for _, c := range g.CriticalPath() {
		critical[c] = true
	}
	b := &builder{t: t, g: g, critical: critical}
	trunk := &Lane{ID: "trunk", Title: "trunk", Name: "trunk", Status: g.Status, Critical: true, Agents: g.Trunk.Agents()}
	b.lane(trunk, ch.Trunk)
	for _, l := range t.Lanes {
		if l.Critical {
			t.Critical = append(t.Critical, l.Title)
		}
		if l.End.After(t.End) {
			t.End = l.End
		}
	}
	return t
}

type builder struct {
	t        *Timeline
	g        *graph.Run
	critical map[*graph.Conversation]bool
}

// end is when n ended: for a node still open, the run's last moment.
func (b *builder) end(n *graph.Node) time.Time {
	if !n.Ended.IsZero() {
		return n.Ended
	}
	if last := b.g.Started.Add(b.g.Elapsed()); last.After(n.Started) {
		return last
	}
	return n.Started
}

// lane adds l with the bars of boxes, then the lanes of their forks'
// branches, depth first.
func (b *builder) lane(l *Lane, boxes []*chart.Box) {
	b.t.Lanes = append(b.t.Lanes, l)
	var forks []*chart.Box
	for _, box := range boxes {
		if box.Kind == chart.BoxParallel {
			// each call at its own time, in a slot of its own
			for i, m := range box.Members {
				b.box(l, m, &forks, Bar{Group: box.ID, Slot: i, Slots: len(box.Members)})
			}
			continue
		}
		b.box(l, box, &forks, Bar{})
	}
	for _, fb := range forks {
		for _, cb := range fb.Branches {
			bl := b.branchLane(cb)
			bl.Parent = l
			b.lane(bl, cb.Boxes)
		}
	}
}

// box adds box's bar or mark to l (a bar starting as bar, which carries
// its group), and a fork's box to forks.
func (b *builder) box(l *Lane, box *chart.Box, forks *[]*chart.Box, bar Bar) {
	nodes := box.Nodes()
	if len(nodes) == 0 {
		return
	}
	first := nodes[0]
	start, end := first.Started, b.end(first)
	for _, n := range nodes[1:] {
		if n.Started.Before(start) {
			start = n.Started
		}
		if e := b.end(n); e.After(end) {
			end = e
		}
	}
	b.span(l, start, end)
	bar.Box, bar.Start, bar.End, bar.Label, bar.Failed, bar.Nodes = box.ID, start, end, box.Label, box.Failed, len(nodes)
	switch {
	case box.Collapsed():
		bar.Kind, bar.Gap = BarCollapsed, box.Kind == chart.BoxGap
		l.Bars = append(l.Bars, bar)
	case first.Kind == record.KindLLM:
		bar.Kind = BarModel
		l.Bars = append(l.Bars, bar)
	case first.Kind == record.KindTool:
		bar.Kind = BarTool
		l.Bars = append(l.Bars, bar)
	case first.Kind == record.KindFork:
		l.Marks = append(l.Marks, Mark{Kind: MarkFork, At: start, Box: box.ID, Label: box.Label})
		if f := first.ForkOf; f != nil && f.Join != nil && f.Join.Started.After(end) {
			l.Bars = append(l.Bars, Bar{Kind: BarWait, Box: box.ID, Start: end, End: f.Join.Started,
				Label: "waiting for the branches of " + box.ID, Nodes: 1})
		}
		*forks = append(*forks, box)
	case first.Kind == record.KindJoin:
		l.Marks = append(l.Marks, Mark{Kind: MarkJoin, At: start, Box: box.ID, Label: box.Label})
	case first.Kind == record.KindHandoff:
		l.Marks = append(l.Marks, Mark{Kind: MarkHandoff, At: start, Box: box.ID, Label: box.Label})
	}
}

// span widens l to cover start..end.
func (b *builder) span(l *Lane, start, end time.Time) {
	if l.Start.IsZero() || start.Before(l.Start) {
		l.Start = start
	}
	if end.After(l.End) {
		l.End = end
	}
}

func (b *builder) branchLane(cb *chart.Branch) *Lane {
	if cb.Group != nil {
		counts := map[record.Status]int{}
		l := &Lane{ID: cb.Boxes[0].ID, Depth: depthOf(cb.Branch), Branches: len(cb.Group), Status: record.StatusOK}
		for _, br := range cb.Group {
			counts[br.Status]++
			if br.Status.Failed() {
				l.Status = br.Status
			}
		}
		l.Title = plural(len(cb.Group), "more branch", "more branches")
		l.Name = l.Title
		var parts []string
		for _, st := range record.Statuses {
			if counts[st] > 0 {
				parts = append(parts, string(st)+" "+strconv.Itoa(counts[st]))
			}
		}
		l.Statuses = strings.Join(parts, ", ")
		return l
	}
	br := cb.Branch
	l := &Lane{ID: cb.ID, Depth: depthOf(br), Status: br.Status, Slowest: br.Slowest(), Summarized: cb.Summarized}
	if br.Conv != nil {
		l.Title, l.Agents, l.Critical = br.Conv.Path, br.Conv.Agents(), b.critical[br.Conv]
	}
	if l.Title == "" {
		l.Title = br.Name
	}
	if len(l.Agents) == 0 && br.Agent != "" {
		l.Agents = []string{br.Agent}
	}
	l.Name = br.Name
	if br.Fork != nil && br.Fork.Node != nil {
		// a branch starts when its fork does, even before its first node
		b.span(l, br.Fork.Node.Started, br.Fork.Node.Started)
	}
	return l
}

func depthOf(br *graph.Branch) int {
	if br.Conv != nil && br.Conv.Depth > 0 {
		return br.Conv.Depth
	}
	if br.Fork != nil && br.Fork.Node != nil {
		return br.Fork.Node.Depth + 1
	}
	return 1
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
