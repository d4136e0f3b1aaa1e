package mermaid

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// FprintDOT writes run g as Graphviz DOT to w with the default Config.
func FprintDOT(w io.Writer, g *graph.Run) error {
	return (&Config{}).FprintDOT(w, g)
}

// FprintDOT writes run g as Graphviz DOT to w: the same walk, labels and
// collapsing as the Mermaid chart (the limits are Mermaid's, so both show the
// same boxes), branches as clusters, the header as comments and as the
// graph's title. It returns the first write error. Graphviz (e.g.
// goccy/go-graphviz) turns the DOT into SVG or PNG.
func (c *Config) FprintDOT(w io.Writer, g *graph.Run) error {
	// Collapse on the Mermaid rendering's size, so both formats agree.
	l, _ := c.layout(g)
	var buf bytes.Buffer
	printDOT(&buf, l.Chart(chart.Labels{Notes: c.Notes}), c)
	_, err := w.Write(buf.Bytes())
	return err
}

// dotQuote quotes s as a DOT string: backslashes and quotes escaped (so no
// \N, \G or \l escape of Graphviz is ever formed), & as &amp; (Graphviz
// decodes HTML entities in labels: "x&#1;y" would put a raw 0x01 in the SVG,
// and "&lt;" would show as "<"), newlines as \n, other control characters
// dropped.
func dotQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '&':
			b.WriteString("&amp;")
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// dotComment makes s safe on a // comment line (one line, no controls).
func dotComment(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// DOT styles.
const (
	dotFont      = "Helvetica"
	colorBorder  = "#5b6770"
	colorError   = "#c0392b"
	fillError    = "#fde8e8"
	colorSlowest = "#d4820a"
	textError    = "#7b1d1d"
)

// kindClass is the class a node of kind k carries in hooked DOT.
func kindClass(k record.Kind) string { return "kind-" + string(k) }

// nodeStyle is the DOT attributes of a box, after its label.
func nodeStyle(b *chart.Box) string {
	shape, fill := "box", "#ffffff"
	style := "rounded,filled"
	if !b.Collapsed() {
		switch b.Node.Kind {
		case record.KindUser:
			fill = "#e3f2fd"
		case record.KindLLM:
			fill = "#ffffff"
		case record.KindTool:
			fill = "#f1f3f4"
		case record.KindFork:
			shape, style, fill = "invtrapezium", "filled", "#ede7f6"
		case record.KindJoin:
			shape, style, fill = "trapezium", "filled", "#ede7f6"
		case record.KindHandoff:
			shape, style, fill = "cds", "filled", "#fff8e1"
		case record.KindFinal:
			fill = "#e8f5e9"
		default:
			panic(fmt.Sprintf("internal error: unhandled node kind %v", b.Node.Kind))
		}
	} else {
		style = "rounded,filled,dashed"
		fill = "#fafafa"
	}
	color, pen, text := colorBorder, "1", "#000000"
	if b.Failed {
		color, fill, pen, text = colorError, fillError, "2", textError
	}
	return fmt.Sprintf("shape=%s, style=%q, fillcolor=%q, color=%q, penwidth=%s, fontcolor=%q", shape, style, fill, color, pen, text)
}

// nodeHooks is the id and class attributes of a box with Config.Hooks.
func nodeHooks(c *Config, b *chart.Box) string {
	if !c.Hooks {
		return ""
	}
	class := "box-" + b.Kind.String()
	if !b.Collapsed() {
		class = kindClass(b.Node.Kind)
	}
	if b.Failed {
		class += " failed"
	}
	return fmt.Sprintf(", id=%s, class=%q", dotQuote("g-"+b.ID), class)
}

// parallelHooks is the id and class attributes of a parallel group's
// cluster with Config.Hooks: id="g-p<seq>" class="parallel".
func parallelHooks(c *Config, b *chart.Box) string {
	if !c.Hooks {
		return ""
	}
	return fmt.Sprintf(", id=%s, class=\"parallel\"", dotQuote("g-"+b.ID))
}

// clusterHooks is the id and class attributes of a branch's cluster with
// Config.Hooks.
func clusterHooks(c *Config, cb *chart.Branch, critical map[*graph.Conversation]bool) string {
	if !c.Hooks {
		return ""
	}
	b := cb.Branch
	class := "branch"
	if b.Status != record.StatusOK && b.Status != record.StatusRunning {
		class += " failed"
	}
	if b.Slowest() {
		class += " slowest"
	}
	if critical[b.Conv] {
		class += " critical"
	}
	return fmt.Sprintf(", id=\"g-%s\", class=%q", cb.ID, class)
}

func printDOT(out io.Writer, ch *chart.Chart, c *Config) error {
	w := mwriter{bufio.NewWriter(out)}
	head := ch.Header()
	for _, h := range head {
		w.line(0, "// "+dotComment(h))
	}
	w.line(0, "digraph run {")
	title := []string{head[0]}
	if len(head) > 1 && strings.HasPrefix(head[1], "agent ") {
		title = append(title, head[1])
	}
	for _, h := range head {
		if strings.HasPrefix(h, "tokens ") {
			title = append(title, h)
		}
	}
	// Title lines end in \l: left-justified.
	for i, t := range title {
		title[i] = strings.TrimSuffix(strings.TrimPrefix(dotQuote(t), `"`), `"`)
	}
	w.line(1, fmt.Sprintf("graph [label=\"%s\\l\", labelloc=t, labeljust=l, fontname=%q, fontsize=14, rankdir=TB, ordering=out, nodesep=0.3, ranksep=0.35];",
		strings.Join(title, `\l`), dotFont))
	w.line(1, fmt.Sprintf("node [fontname=%q, fontsize=11, margin=\"0.15,0.06\"];", dotFont))
	w.line(1, fmt.Sprintf("edge [color=%q, arrowsize=0.7];", colorBorder))
	critical := map[*graph.Conversation]bool{}
	if c.Hooks {
		for _, cv := range ch.Run.CriticalPath() {
			critical[cv] = true
		}
	}
	node := func(b *chart.Box, indent int) {
		w.line(indent, fmt.Sprintf("%s [label=%s, %s%s];", b.ID, dotQuote(b.Label), nodeStyle(b), nodeHooks(c, b)))
	}
	var body func(boxes []*chart.Box, indent int)
	var branches func(b *chart.Box, indent int)
	body = func(boxes []*chart.Box, indent int) {
		for _, b := range boxes {
			if b.Kind == chart.BoxParallel {
				// the calls side by side: one cluster, one rank; a fork
				// among them has its branches' clusters after it
				w.line(indent, fmt.Sprintf("subgraph cluster_%s {", b.ID))
				w.line(indent+1, fmt.Sprintf("graph [label=%s, labeljust=l, fontsize=10, style=\"rounded,dashed\", color=%q, penwidth=1, fontcolor=%q%s];",
					dotQuote(b.Label), colorBorder, colorBorder, parallelHooks(c, b)))
				ids := make([]string, len(b.Members))
				for i, m := range b.Members {
					node(m, indent+1)
					ids[i] = m.ID
				}
				w.line(indent+1, "{ rank=same; "+strings.Join(ids, "; ")+"; }")
				w.line(indent, "}")
				for _, m := range b.Members {
					branches(m, indent)
				}
				continue
			}
			node(b, indent)
			branches(b, indent)
		}
	}
	branches = func(b *chart.Box, indent int) {
		for _, cb := range b.Branches {
			if cb.Group != nil { // the group node stands alone, no cluster
				body(cb.Boxes, indent)
				continue
			}
			w.line(indent, fmt.Sprintf("subgraph cluster_%s {", cb.ID))
			color, fill, pen, style, text := colorBorder, "#f7f9fb", "1", "rounded,filled", "#000000"
			switch br := cb.Branch; {
			case br.Status != record.StatusOK && br.Status != record.StatusRunning:
				color, fill, pen, text = colorError, "#fff5f5", "2", textError
			case br.Slowest():
				color, pen = colorSlowest, "3"
			}
			if cb.Branch.Slowest() && color == colorError {
				style = "rounded,filled,bold"
			}
			w.line(indent+1, fmt.Sprintf("graph [label=%s, labeljust=l, fontsize=12, style=%q, color=%q, fillcolor=%q, penwidth=%s, fontcolor=%q%s];",
				dotQuote(cb.Title), style, color, fill, pen, text, clusterHooks(c, cb, critical)))
			if len(cb.Boxes) == 0 {
				// Graphviz drops an empty cluster; keep the branch visible.
				w.line(indent+1, fmt.Sprintf("%s_empty [label=\"no nodes recorded\", shape=plaintext];", cb.ID))
			}
			body(cb.Boxes, indent+1)
			w.line(indent, "}")
		}
	}
	body(ch.Trunk, 1)
	for _, e := range ch.Edges() {
		w.line(1, e.From+" -> "+e.To+";")
	}
	w.line(0, "}")
	return w.Flush()
}
