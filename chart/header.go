package chart

import (
	"fmt"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/stack"
)

// maxHeaderLines is how many joins (and tool names) the header of a
// collapsed chart lists.
const maxHeaderLines = 20

// header returns the header lines of DESIGN §7 (without the comment marker),
// and for an imported run that stopped, a line saying how in its source's
// terms after the agent line.
func header(lay *Layout, l *labeler) []string {
	v := lay.v
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

	if !g.Source.IsInspect() && g.Status.Stopped() {
		// an imported run's status in its source's terms ("interrupted: the
		// session file ends before this conversation finished")
		lines = append(lines, stack.Stopped(g.Source, g.Status)) // our own words, no untrusted text
	}

	t := g.Tokens()
	cached := "cached not reported"
	if t.CachedReported {
		cached = fmt.Sprintf("cached %d (reported)", t.Cached)
	}
	lines = append(lines, fmt.Sprintf("tokens in %d · out %d · %s · calls %d", t.In, t.Out, cached, t.Calls))
	if l.notes.Header != "" {
		lines = append(lines, l.esc(l.notes.Header))
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

	if line := lay.collapsed(); line != "" {
		lines = append(lines, line)
	}
	return lines
}
