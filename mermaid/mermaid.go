// Package mermaid draws a recorded run (a *graph.Run) as a Mermaid flowchart
// in the format of DESIGN §7, as DOT for Graphviz, and as JSON.
//
// The three outputs share one walk of the run: the trunk's nodes in sequence
// order, each fork followed by one subgraph (DOT: cluster) per branch in
// declared order, nested for nested forks, and edges in conversation order.
// Ids are generated (n<seq> for nodes, b<k> for branches), never taken from
// names, and every piece of untrusted text goes through Escape, so no task,
// argument or name can break or reconfigure the chart. Output is byte-stable:
// nothing is printed in map order.
//
// A chart that would exceed GitHub's Mermaid limits (500 edges, 50,000
// characters) is collapsed step by step — consecutive repeated calls folded
// into one box ("read_file x12"), deep then large branches summarized, then
// the middle of long conversations elided — until it fits, and a %% line says
// what was collapsed. Config.Full turns collapsing off.
//
// The package knows nothing of SQL or of audit rules.
package mermaid

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// GitHub's Mermaid limits (Mermaid's defaults), which a collapsed chart stays under.
const (
	DefaultMaxEdges    = 500
	DefaultMaxTextSize = 50000
)

// Config controls how a run is drawn. The zero Config is the default:
// collapse large runs to fit GitHub's limits.
type Config struct {
	// Full turns collapsing off: every node is drawn, whatever the size
	// (`inspect graph --full`).
	Full bool
	// MaxEdges is the most edges a collapsed chart may have; 0 means
	// DefaultMaxEdges.
	MaxEdges int
	// MaxTextSize is the most characters (UTF-16 code units, as Mermaid
	// counts them) a collapsed chart may have; 0 means DefaultMaxTextSize.
	MaxTextSize int
	// Cache is the run's prompt-cache analysis (cache.Analyze): each llm
	// node's label shows its predicted reusable share and a %% cache line
	// sums the run. Nil leaves both out.
	Cache *cache.Report
	// Hooks gives every DOT node and cluster an id and classes, which
	// Graphviz copies onto the SVG group it draws, for a page that styles
	// or scripts the SVG: a node's box id="g-n7" class="kind-llm" (a
	// collapsed box "box-fold", "box-summary", "box-gap" or "box-group"),
	// plus "failed"; a branch's cluster id="g-b2" class="branch", plus
	// "failed", "slowest" and "critical" (on the run's critical path).
	Hooks bool
}

// Fprint writes run g as Mermaid flowchart text to w with the default
// Config. It returns the first write error.
func Fprint(w io.Writer, g *graph.Run) error {
	return (&Config{}).Fprint(w, g)
}

// Fprint writes run g as Mermaid flowchart text to w: the %% header lines of
// DESIGN §7, then the chart. It returns the first write error and writes
// nothing after it.
func (c *Config) Fprint(w io.Writer, g *graph.Run) error {
	v := c.choose(g, func(v *view) []byte {
		var buf bytes.Buffer
		printMermaid(&buf, v, c)
		return buf.Bytes()
	})
	_, err := w.Write(v.out)
	return err
}

// chosen is a view with its rendered output.
type chosen struct {
	v   *view
	out []byte
}

// choose renders g at the first collapsing level that fits the limits (or
// in full with c.Full), rendering only levels whose edge count fits.
func (c *Config) choose(g *graph.Run, render func(*view) []byte) chosen {
	full := newView(g)
	if c.Full {
		return chosen{full, render(full)}
	}
	maxEdges, maxText := c.limits()
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
	var out chosen
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
		out = chosen{v, render(v)}
		if last || textSize(out.out) <= maxText {
			break
		}
	}
	return out
}

func (c *Config) limits() (edges, text int) {
	edges, text = c.MaxEdges, c.MaxTextSize
	if edges <= 0 {
		edges = DefaultMaxEdges
	}
	if text <= 0 {
		text = DefaultMaxTextSize
	}
	return edges, text
}

// textSize counts b as Mermaid does: UTF-16 code units.
func textSize(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		b = b[size:]
	}
	return n
}

// maxHeaderLines is how many joins (and tool names) the header of a
// collapsed chart lists.
const maxHeaderLines = 20

// header returns the header lines of DESIGN §7 (without the comment marker).
func header(v *view, l *labeler, c *Config) []string {
	g := v.g
	var lines []string
	agents := "none"
	if len(g.Agents) > 0 {
		agents = l.names(g.Agents)
	}
	lines = append(lines, fmt.Sprintf("run %s · %s · %s · agents %s", l.name(g.ID), l.name(string(g.Status)), graph.FormatDuration(g.Elapsed()), agents))

	trunkHandoff := false
	for _, h := range g.Handoffs {
		if h.Conv == g.Trunk {
			trunkHandoff = true
			break
		}
	}
	switch first, last := g.FirstAgent(), g.LastAgent(); {
	case trunkHandoff:
		lines = append(lines, fmt.Sprintf("agent %s · started as %s", l.name(last), l.name(first)))
	case first != "":
		lines = append(lines, "agent "+l.name(first))
	}

	t := g.Tokens()
	cached := "cached not reported"
	if t.CachedReported {
		cached = fmt.Sprintf("cached %d (reported)", t.Cached)
	}
	lines = append(lines, fmt.Sprintf("tokens in %d · out %d · %s · calls %d", t.In, t.Out, cached, t.Calls))
	if c.Cache != nil {
		lines = append(lines, "cache "+report.Header(c.Cache))
	}

	lines = append(lines, "branches")
	if len(g.Forks) == 0 {
		lines = append(lines, "  none")
	}
	// One line per join in join order; forks that never joined last.
	forks := append([]*graph.Fork(nil), g.Forks...)
	sort.SliceStable(forks, func(i, j int) bool {
		a, b := forks[i].Join, forks[j].Join
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		default:
			return a.Seq < b.Seq
		}
	})
	for i, f := range forks {
		if v.stats.level > 0 && i == maxHeaderLines {
			lines = append(lines, fmt.Sprintf("  … %d more forks (--full lists them)", len(forks)-i))
			break
		}
		var parts []string
		rest := map[string]int{} // a collapsed chart lists the first few, the slowest and counts
		more := 0
		for i, b := range f.Branches {
			if v.stats.level > 0 && i >= maxListed && !b.Slowest() {
				rest[string(b.Status)]++
				more++
				continue
			}
			p := fmt.Sprintf("%s=%s %s", l.name(b.Name), l.name(string(b.Status)), graph.FormatDuration(b.Duration))
			if b.Slowest() {
				p += " slowest"
			}
			parts = append(parts, p)
		}
		if more > 0 {
			parts = append(parts, fmt.Sprintf("… %d more (%s)", more, l.statusCounts(rest)))
		}
		if f.Join != nil {
			lines = append(lines, fmt.Sprintf("  %s waited for %s", f.Join.ID(), strings.Join(parts, ", ")))
		} else {
			lines = append(lines, fmt.Sprintf("  %s forked, no join: %s", f.Node.ID(), strings.Join(parts, ", ")))
		}
	}

	tc := g.ToolCounts()
	parts := []string{fmt.Sprintf("fork x%d", len(g.Forks))}
	for i, n := range tc.ByName {
		if v.stats.level > 0 && i == maxHeaderLines {
			parts = append(parts, fmt.Sprintf("… %d more names", len(tc.ByName)-i))
			break
		}
		if n.Name != "fork" {
			parts = append(parts, fmt.Sprintf("%s x%d", l.name(n.Name), n.Count))
		}
	}
	parts = append(parts, fmt.Sprintf("research: %d before fork, %d in branches, %d after",
		tc.ResearchBeforeFork, tc.ResearchInBranches, tc.ResearchAfterFork))
	lines = append(lines, "tools", "  "+strings.Join(parts, " · "))

	if line := collapsedLine(v.stats, c); line != "" {
		lines = append(lines, line)
	}
	return lines
}

// collapsedLine says what collapsing did, or "" when nothing was collapsed.
func collapsedLine(s collapseStats, c *Config) string {
	if !s.collapsed() {
		return ""
	}
	maxEdges, maxText := c.limits()
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
	return fmt.Sprintf("collapsed to stay under %d edges and %d characters: %s; --full draws every node",
		maxEdges, maxText, strings.Join(what, ", "))
}

// mermaid class definitions, printed when used.
const (
	classError     = "classDef error fill:#fde8e8,stroke:#c0392b,color:#7b1d1d"
	classSlowest   = "classDef slowest stroke:#d4820a,stroke-width:3px"
	classCollapsed = "classDef collapsed stroke-dasharray:5 3"
)

// mwriter is a bufio.Writer that remembers its first error.
type mwriter struct{ *bufio.Writer }

func (w mwriter) line(indent int, s string) {
	for range indent {
		w.WriteString("  ")
	}
	w.WriteString(s)
	w.WriteByte('\n')
}

func printMermaid(out io.Writer, v *view, c *Config) error {
	w := mwriter{bufio.NewWriter(out)}
	l := &labeler{v: v, esc: Escape, cache: c.Cache}
	for _, h := range header(v, l, c) {
		w.line(0, "%% "+h)
	}
	w.line(0, "flowchart TD")
	var errs, slow, collapsed []string
	var body func(items []*item, indent int)
	body = func(items []*item, indent int) {
		for _, it := range items {
			id := it.id()
			w.line(indent, id+`["`+l.label(it)+`"]`)
			if failed(it) {
				errs = append(errs, id)
			}
			if it.kind == itemFold || it.kind == itemSummary || it.kind == itemGap || it.kind == itemGroup {
				collapsed = append(collapsed, id)
			}
			for _, bv := range it.branches {
				if bv.grouped { // the group node stands alone, no subgraph
					body(bv.items, indent)
					continue
				}
				bid := fmt.Sprintf("b%d", bv.k)
				w.line(indent, "subgraph "+bid+`["`+l.branchTitle(bv)+`"]`)
				body(bv.items, indent+1)
				w.line(indent, "end")
				if bv.b.Status != record.StatusOK && bv.b.Status != record.StatusRunning {
					errs = append(errs, bid)
				}
				if bv.b.Slowest() {
					slow = append(slow, bid)
				}
			}
		}
	}
	body(v.trunk, 1)
	for _, e := range v.edges() {
		w.line(1, e.from.id()+" --> "+e.to.id())
	}
	for _, cl := range []struct {
		def string
		ids []string
	}{{classError, errs}, {classSlowest, slow}, {classCollapsed, collapsed}} {
		if len(cl.ids) == 0 {
			continue
		}
		name := strings.Fields(cl.def)[1]
		w.line(1, cl.def)
		w.line(1, "class "+strings.Join(cl.ids, ",")+" "+name)
	}
	return w.Flush()
}
