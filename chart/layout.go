package chart

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/inspect-dev/inspect/graph"
)

// Options say how far a run is collapsed. The zero Options never collapse.
type Options struct {
	// Full turns collapsing off: every node is drawn, whatever the size.
	Full bool
	// MaxCalls is the most calls of a parallel call group (graph.Group)
	// drawn side by side: a larger group shows its first MaxCalls-1 calls
	// and one box for the rest, with their count. 0 draws every call; so
	// does Full.
	MaxCalls int
	// MaxEdges is the most arrows a collapsed layout may have; 0 sets no
	// limit.
	MaxEdges int
	// MaxTextSize is the most a collapsed layout may measure by Size; 0
	// sets no limit.
	MaxTextSize int
	// Size measures a candidate layout as the output the caller draws
	// from it (mermaid: the UTF-16 code units of its Mermaid text). With
	// MaxTextSize set and Full not, it is called on the candidates whose
	// arrows fit MaxEdges, from the least collapsed, until one fits or the
	// most collapsed is measured: the last layout measured is the one Lay
	// returns. Nil: only the arrows count.
	Size func(*Layout) int
}

// Labels say how a chart's labels are written.
type Labels struct {
	// Escape makes untrusted text (tasks, arguments, names, reasons,
	// notes) safe for the output language; nil writes it as it is.
	Escape func(string) string
	// Notes are the caller's annotations.
	Notes Notes
}

// Notes annotate a chart's labels with what the caller knows beyond the
// graph (cmd/inspect passes the prompt-cache analysis: cache/report.Notes).
// Notes are untrusted text, escaped as names are. The zero Notes add nothing.
type Notes struct {
	// Header is a header line of its own after the tokens line ("cache
	// reads …"); "" adds none.
	Header string
	// Node returns the note on node n's box ("reuse 82%"): shown after an
	// llm node's tokens, at the end of any other node's label; "" adds
	// none. It is called only for boxes that show one node. Nil adds none.
	Node func(n *graph.Node) string
}

// Layout is a run laid out as its chart's boxes, collapsed or not, without
// labels (Chart writes them).
type Layout struct {
	v *view
	o Options
}

// Lay lays g out: in full with o.Full, else collapsed to the first level
// whose arrows and size fit o's limits (the most collapsed level when none
// does).
func Lay(g *graph.Run, o Options) *Layout {
	lay := func(v *view) *Layout { return &Layout{v: v, o: o} }
	if o.Full {
		return lay(newView(g, 0))
	}
	full := newView(g, max(o.MaxCalls, 0))
	maxEdges, maxText := o.MaxEdges, o.MaxTextSize
	if maxEdges <= 0 {
		maxEdges = int(^uint(0) >> 1)
	}
	// The most a plan without gaps can collapse: if that does not fit,
	// no level before it does, so a huge run goes straight to the gaps.
	firstGap := 0
	for firstGap < len(plans) && plans[firstGap].gapHead == 0 {
		firstGap++
	}
	start := 0
	var most *view
	if countEdges(full.trunk) > maxEdges && firstGap > 1 {
		most = full.apply(firstGap-1, plans[firstGap-1])
		if countEdges(most.trunk) > maxEdges {
			start = firstGap
		}
	}
	var out *Layout
	base := full // the last level without gaps: the next levels build on it
	if start > 0 {
		base = most
	}
	for level := start; level < len(plans); level++ {
		p := plans[level]
		v := full
		if level > 0 {
			v = base.apply(level, p)
		}
		if p.gapHead == 0 {
			base = v
		}
		last := level == len(plans)-1
		if countEdges(v.trunk) > maxEdges && !last {
			continue
		}
		out = lay(v)
		fits := true
		if o.Size != nil && maxText > 0 {
			fits = o.Size(out) <= maxText
		}
		if last || fits {
			break
		}
	}
	return out
}

// Collapsed reports whether collapsing left any node without a box of its
// own.
func (l *Layout) Collapsed() bool { return l.v.stats.collapsed() }

// Marked reports whether node n is the one its agent is marked on (@agent):
// the first node of that agent that is not a user message.
func (l *Layout) Marked(n *graph.Node) bool { return l.v.marked[n] }

// BranchID is branch b's subgraph id, b<k>: k numbers the run's
// conversations in the order of graph.Run.Conversations, the trunk being 0.
func (l *Layout) BranchID(b *graph.Branch) string { return "b" + strconv.Itoa(l.v.branchNo[b]) }

// Edge is one arrow, between box ids.
type Edge struct{ From, To string }

// Edges returns the layout's arrows in conversation order: each box to the
// next, a fork to the first box of each branch, the last box of each branch
// to what follows the fork — for a detached fork (background sub-agents),
// to its join, what follows the fork coming from the fork itself.
func (l *Layout) Edges() []Edge {
	es := l.v.edges()
	out := make([]Edge, len(es))
	for i, e := range es {
		out[i] = Edge{e.from.id(), e.to.id()}
	}
	return out
}

// collapsed says what collapsing did, or "" when nothing was collapsed.
func (l *Layout) collapsed() string {
	s := l.v.stats
	if !s.collapsed() {
		return ""
	}
	var limits []string
	if l.o.MaxEdges > 0 {
		limits = append(limits, fmt.Sprintf("%d edges", l.o.MaxEdges))
	}
	if l.o.MaxTextSize > 0 {
		limits = append(limits, fmt.Sprintf("%d characters", l.o.MaxTextSize))
	}
	var what []string
	if s.folds > 0 {
		what = append(what, fmt.Sprintf("%d runs of repeated calls folded (%d nodes)", s.folds, s.folded))
	}
	if s.summarized > 0 {
		what = append(what, fmt.Sprintf("%d branches summarized", s.summarized))
	}
	if s.gaps > 0 {
		what = append(what, fmt.Sprintf("%d nodes elided in %d gaps", s.elided, s.gaps))
	}
	if s.groups > 0 {
		what = append(what, fmt.Sprintf("%d branches of %d wide forks drawn as one node each", s.grouped, s.groups))
	}
	calls := ""
	if s.parallels > 0 {
		groups := "1 parallel group"
		if s.parallels > 1 {
			groups = fmt.Sprintf("%d parallel groups", s.parallels)
		}
		calls = fmt.Sprintf("%d calls of %s past the first %d drawn as one node each", s.calls, groups, l.o.MaxCalls-1)
	}
	if len(what) == 0 { // only the parallel groups, which fold whatever the size
		return calls + "; --full draws every node"
	}
	if calls != "" {
		what = append(what, calls)
	}
	return fmt.Sprintf("collapsed to stay under %s: %s; --full draws every node",
		strings.Join(limits, " and "), strings.Join(what, ", "))
}
