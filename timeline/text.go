package timeline

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/record"
)

// Options are how Fprint draws a timeline.
type Options struct {
	// Width is the line width in columns; 0 means 80.
	Width int
	// Color writes ANSI colours (a terminal that wants them); without it
	// the output is plain text, for pipes and files.
	Color bool
}

// The cells of a text timeline.
const (
	cellModel     = '█'
	cellTool      = '▓'
	cellCollapsed = '░'
	cellWait      = '─'
	cellIdle      = '·'
	cellFork      = '┬'
	cellJoin      = '┴'
	cellHandoff   = '»'
	cellFailed    = '×'
)

// cell priorities: a higher one wins a column two spans share.
const (
	prNone = iota
	prIdle
	prWait
	prCollapsed
	prTool
	prModel
	prFailed
	prMark
)

// ANSI styles of the coloured output.
const (
	sgrReset    = "\x1b[0m"
	sgrDim      = "\x1b[2m"
	sgrBold     = "\x1b[1m"
	sgrRed      = "\x1b[31m"
	sgrYellow   = "\x1b[33m"
	sgrMagenta  = "\x1b[35m"
	sgrCyan     = "\x1b[36m"
	sgrCritical = "\x1b[1;33m"
)

type cell struct {
	r     rune
	pr    int
	style string
}

// Fprint draws t as text: a header (the run, its critical path, what was
// collapsed), a time axis, one row per lane — the critical path marked
// "*", each lane indented by its fork depth with its agents, its bars in
// time and its duration (and "slowest", and its status when not ok) —
// and a legend of the cells used. Every name passes the terminal
// sanitizer, so an escape sequence in a branch or agent name is shown,
// never run, in plain and coloured output alike. It returns the first
// write error.
func Fprint(w io.Writer, t *Timeline, o Options) error {
	width := o.Width
	if width <= 0 {
		width = 80
	}
	width = max(width, MinWidth)
	bw := bufio.NewWriter(w)
	p := &printer{w: bw, color: o.Color}

	g := t.Run
	p.line(fmt.Sprintf("run %s · %s · %s · %s", clean(g.ID), clean(string(g.Status)),
		graph.FormatDuration(t.End.Sub(t.Start)), plural(len(g.Conversations), "conversation", "conversations")))
	if len(t.Critical) > 0 {
		names := make([]string, len(t.Critical))
		for i, c := range t.Critical {
			names[i] = clean(c)
		}
		p.line("critical path (*): " + truncate(strings.Join(names, " → "), width-19))
	}
	if t.Collapsed != "" {
		p.line(truncate(t.Collapsed, width))
	}
	p.line("")

	labels := make([]string, len(t.Lanes))
	suffixes := make([]string, len(t.Lanes))
	labelW, suffixW := 0, 0
	for i, l := range t.Lanes {
		labels[i] = laneLabel(l)
		suffixes[i] = laneSuffix(l)
		labelW = max(labelW, runewidth.StringWidth(labels[i]))
		suffixW = max(suffixW, runewidth.StringWidth(suffixes[i]))
	}
	labelW = min(labelW, max(14, width/3))
	suffixW = min(suffixW, 26)
	barW := max(width-labelW-suffixW-4, 10)

	ax := t.Axis(float64(barW))
	at := ax.X
	first := func(x time.Time) int { return clamp(int(at(x)), barW) }
	last := func(x time.Time) int {
		f := at(x)
		c := int(f)
		if float64(c) == f && c > 0 {
			c-- // an end on a column boundary belongs to the column before
		}
		return clamp(c, barW)
	}

	p.line(strings.Repeat(" ", labelW+2) + axisRow(ax, barW))
	used := map[rune]bool{}
	failedAs := map[string]bool{} // what the × cells mean, by their lanes' status
	for i, l := range t.Lanes {
		row := make([]cell, barW)
		put := func(c0, c1 int, r rune, pr int, style string) {
			for c := c0; c <= c1 && c < barW; c++ {
				if pr > row[c].pr {
					row[c] = cell{r, pr, style}
				}
			}
		}
		if !l.Start.IsZero() {
			put(first(l.Start), max(first(l.Start), last(l.End)), cellIdle, prIdle, sgrDim)
		}
		barStyle := sgrCyan
		if l.Critical {
			barStyle = sgrCritical
		}
		for _, b := range l.Bars {
			c0 := first(b.Start)
			c1 := max(c0, last(b.End))
			switch {
			case b.Kind == BarWait:
				put(c0, c1, cellWait, prWait, sgrDim)
			case b.Failed && b.Kind != BarCollapsed: // a collapsed bar holding a failure stays collapsed
				put(c0, c1, cellFailed, prFailed, sgrRed)
				failedAs[failedWord(l.Status)] = true
			case b.Kind == BarCollapsed:
				put(c0, c1, cellCollapsed, prCollapsed, barStyle)
			case b.Kind == BarTool:
				put(c0, c1, cellTool, prTool, barStyle)
			default:
				put(c0, c1, cellModel, prModel, barStyle)
			}
		}
		for _, m := range l.Marks {
			r := map[MarkKind]rune{MarkFork: cellFork, MarkJoin: cellJoin, MarkHandoff: cellHandoff}[m.Kind]
			c := first(m.At)
			put(c, c, r, prMark, sgrMagenta)
		}
		var b strings.Builder
		lab := truncate(labels[i], labelW)
		labStyle := ""
		if l.Critical {
			labStyle = sgrBold
		}
		b.WriteString(p.style(labStyle, lab))
		b.WriteString(strings.Repeat(" ", labelW-runewidth.StringWidth(lab)))
		b.WriteString(" │")
		for j := 0; j < len(row); {
			k := j
			for k < len(row) && row[k].style == row[j].style {
				k++
			}
			var run strings.Builder
			for _, c := range row[j:k] {
				if c.r == 0 {
					run.WriteByte(' ')
					continue
				}
				run.WriteRune(c.r)
				used[c.r] = true
			}
			b.WriteString(p.style(row[j].style, run.String()))
			j = k
		}
		b.WriteString("│ ")
		suf := truncate(suffixes[i], suffixW)
		sufStyle := ""
		switch {
		case l.Status.Failed():
			sufStyle = sgrRed
		case l.Slowest:
			sufStyle = sgrYellow
		}
		b.WriteString(p.style(sufStyle, suf))
		p.line(strings.TrimRight(b.String(), " "))
	}

	p.line("")
	var legend []string
	for _, e := range []struct {
		r    rune
		text string
	}{{cellModel, "model call"}, {cellTool, "tool"}, {cellCollapsed, "collapsed"}, {cellWait, "waiting for branches"},
		{cellFork, "fork"}, {cellJoin, "join"}, {cellHandoff, "hand-off"}, {cellFailed, failedLegend(failedAs)}} {
		if used[e.r] {
			legend = append(legend, string(e.r)+" "+e.text)
		}
	}
	if len(ax.Gaps()) > 0 {
		legend = append(legend, "≈ time elided (drawn narrow)")
	}
	legend = append(legend, "* critical path")
	p.wrap(legend, width)
	if err := bw.Flush(); err != nil {
		return err
	}
	return p.err
}

// MinWidth is the narrowest width Fprint draws at (a narrower Options.Width
// is drawn at MinWidth): the lane names, an axis and the durations.
const MinWidth = 40

type printer struct {
	w     *bufio.Writer
	color bool
	err   error
}

func (p *printer) line(s string) {
	if p.err != nil {
		return
	}
	if _, err := p.w.WriteString(s + "\n"); err != nil {
		p.err = err
	}
}

// wrap prints items joined by two spaces, in lines of at most width.
func (p *printer) wrap(items []string, width int) {
	cur := ""
	for _, it := range items {
		if cur != "" && runewidth.StringWidth(cur)+2+runewidth.StringWidth(it) > width {
			p.line(cur)
			cur = ""
		}
		if cur != "" {
			cur += "  "
		}
		cur += it
	}
	if cur != "" {
		p.line(cur)
	}
}

func (p *printer) style(sgr, s string) string {
	if !p.color || sgr == "" || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

// laneLabel is "* trunk @analyst→writer", "    fr @researcher": the
// critical mark, the fork depth as indent, the name and its agents.
func laneLabel(l *Lane) string {
	mark := "  "
	if l.Critical {
		mark = "* "
	}
	s := mark + strings.Repeat("  ", l.Depth) + clean(l.Name)
	if len(l.Agents) > 0 {
		agents := make([]string, len(l.Agents))
		for i, a := range l.Agents {
			agents[i] = clean(a)
		}
		s += " @" + strings.Join(agents, "→")
	}
	return s
}

// laneSuffix is the lane's duration, "slowest", and its status when not ok.
func laneSuffix(l *Lane) string {
	if l.Branches > 0 {
		return l.Statuses
	}
	parts := []string{graph.FormatDuration(l.Duration())}
	if l.Slowest {
		parts = append(parts, "slowest")
	}
	if l.Status != "" && l.Status != "ok" {
		parts = append(parts, clean(string(l.Status)))
	}
	return strings.Join(parts, " ")
}

// axisRow is the axis as text barW columns wide: its ticks' times where
// they do not touch each other (the end first: it is the one a reader
// needs), and ≈ over each stretch drawn narrow.
func axisRow(ax *Axis, barW int) string {
	row := []rune(strings.Repeat(" ", barW+1))
	taken := make([]bool, len(row))
	for _, g := range ax.Gaps() {
		for c := int(g.X0); c <= int(g.X1) && c < barW; c++ {
			row[c], taken[c] = '≈', true
		}
	}
	place := func(col int, s string) {
		rs := []rune(s)
		col = min(col, len(row)-len(rs))
		if col < 0 {
			return
		}
		for c := max(col-1, 0); c < min(col+len(rs)+1, len(row)); c++ {
			if taken[c] {
				return
			}
		}
		copy(row[col:], rs)
		for c := col; c < col+len(rs); c++ {
			taken[c] = true
		}
	}
	ticks := ax.Ticks()
	if len(ticks) > 0 {
		last := ticks[len(ticks)-1]
		place(len(row), last.Label)
		for _, t := range ticks[:len(ticks)-1] {
			place(int(t.X), t.Label)
		}
	}
	return strings.TrimRight(string(row), " ")
}

// clean is untrusted text for one line of a terminal: sanitized, with
// whitespace runs as one space.
func clean(s string) string { return termsafe.String(strings.Join(strings.Fields(s), " ")) }

// truncate shortens s to at most w columns, with an ellipsis.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if runewidth.StringWidth(s) <= w {
		return s
	}
	return runewidth.Truncate(s, w, "…")
}

func clamp(c, n int) int {
	if c < 0 {
		return 0
	}
	if c >= n {
		return n - 1
	}
	return c
}

// failedWord is what a × cell in a lane of status st means: the lane was
// cancelled or interrupted, or (error, exhausted, or a failed call in a
// lane that went on) it failed.
func failedWord(st record.Status) string {
	switch st {
	case record.StatusCancelled, record.StatusInterrupted:
		return string(st)
	}
	return "failed"
}

// failedLegend is the legend's text for ×: the words of failedWord the
// drawing used, in a fixed order.
func failedLegend(as map[string]bool) string {
	var words []string
	for _, w := range []string{"failed", "cancelled", "interrupted"} {
		if as[w] {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return "failed"
	}
	return strings.Join(words, " or ")
}
