// Package mermaid writes a run's chart (package chart) as a Mermaid
// flowchart in the format of DESIGN §7 and as DOT for Graphviz;
// mermaid/render turns the DOT into SVG and PNG.
//
// Both outputs draw the same layout: the trunk's boxes, each fork followed
// by one subgraph (DOT: cluster) per branch in declared order, nested for
// nested forks, the calls of a parallel call group side by side in a
// subgraph (DOT: a cluster of one rank) of their own, each an arrow from
// the response that made them and one to what follows, and the arrows in
// conversation order. Every piece of
// untrusted text goes through Escape (DOT: dotQuote), so no task, argument
// or name can break or reconfigure the chart. Output is byte-stable.
//
// A chart that would exceed GitHub's Mermaid limits (500 edges, 50,000
// characters) is collapsed step by step (chart.Lay, measured by the
// Mermaid text) until it fits, and a %% line says what was collapsed; DOT
// and Config.Chart collapse the same way. Config.Full turns collapsing off.
//
// The package knows nothing of SQL, of audit rules or of the analyses whose
// notes (Config.Notes) its labels carry.
package mermaid

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// GitHub's Mermaid limits (Mermaid's defaults), which a collapsed chart stays under.
const (
	DefaultMaxEdges    = 500
	DefaultMaxTextSize = 50000
)

// MaxCalls is the most calls of a parallel call group drawn side by side
// (chart.Options.MaxCalls): a larger group draws its first four and one box
// for the rest, with their count, unless Config.Full.
const MaxCalls = 5

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
	// Notes annotate the labels with what the caller knows beyond the
	// graph: cache/report.Notes gives each llm node's predicted reusable
	// share and a %% cache line that sums the run. The zero Notes add
	// nothing.
	Notes chart.Notes
	// Hooks gives every DOT node and cluster an id and classes, which
	// Graphviz copies onto the SVG group it draws, for a page that styles
	// or scripts the SVG: a node's box id="g-n7" class="kind-llm" (a
	// collapsed box "box-fold", "box-summary", "box-gap", "box-group" or
	// "box-calls"), plus "failed"; a branch's cluster id="g-b2"
	// class="branch", plus "failed", "slowest" and "critical" (on the run's
	// critical path); a parallel call group's cluster id="g-p7"
	// class="parallel".
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
	_, out := c.layout(g)
	_, err := w.Write(out)
	return err
}

// Chart returns run g as the chart draws it with c: collapsed exactly as
// Fprint and FprintDOT collapse it, its labels plain text without the
// notes (whoever writes them escapes them for its output: html/template,
// the terminal sanitizer). A Chart is safe for concurrent use.
func (c *Config) Chart(g *graph.Run) *chart.Chart {
	l, _ := c.layout(g)
	return l.Chart(chart.Labels{})
}

// layout lays g out collapsed to fit c's limits (or in full with c.Full),
// measured by its Mermaid text, and returns the layout with that text.
func (c *Config) layout(g *graph.Run) (*chart.Layout, []byte) {
	maxEdges, maxText := c.limits()
	var measured *chart.Layout
	var text []byte
	l := chart.Lay(g, chart.Options{Full: c.Full, MaxEdges: maxEdges, MaxTextSize: maxText, MaxCalls: MaxCalls,
		Size: func(l *chart.Layout) int {
			measured, text = l, c.mermaid(l)
			return textSize(text)
		}})
	if l != measured {
		text = c.mermaid(l)
	}
	return l, text
}

// mermaid renders l as Mermaid text.
func (c *Config) mermaid(l *chart.Layout) []byte {
	var buf bytes.Buffer
	printMermaid(&buf, l.Chart(chart.Labels{Escape: Escape, Notes: c.Notes}))
	return buf.Bytes()
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

func printMermaid(out io.Writer, ch *chart.Chart) error {
	w := mwriter{bufio.NewWriter(out)}
	for _, h := range ch.Header() {
		w.line(0, "%% "+h)
	}
	w.line(0, "flowchart TD")
	var errs, slow, collapsed []string
	node := func(b *chart.Box, indent int) {
		w.line(indent, b.ID+`["`+b.Label+`"]`)
		if b.Failed {
			errs = append(errs, b.ID)
		}
		if b.Collapsed() {
			collapsed = append(collapsed, b.ID)
		}
	}
	var body func(boxes []*chart.Box, indent int)
	var branches func(b *chart.Box, indent int)
	body = func(boxes []*chart.Box, indent int) {
		for _, b := range boxes {
			if b.Kind == chart.BoxParallel {
				// the calls side by side in a subgraph of their own; a
				// fork among them has its branches after it
				w.line(indent, "subgraph "+b.ID+`["`+b.Label+`"]`)
				for _, m := range b.Members {
					node(m, indent+1)
				}
				w.line(indent, "end")
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
			if cb.Group != nil { // the group node stands alone, no subgraph
				body(cb.Boxes, indent)
				continue
			}
			w.line(indent, "subgraph "+cb.ID+`["`+cb.Title+`"]`)
			body(cb.Boxes, indent+1)
			w.line(indent, "end")
			if cb.Branch.Status != record.StatusOK && cb.Branch.Status != record.StatusRunning {
				errs = append(errs, cb.ID)
			}
			if cb.Branch.Slowest() {
				slow = append(slow, cb.ID)
			}
		}
	}
	body(ch.Trunk, 1)
	for _, e := range ch.Edges() {
		w.line(1, e.From+" --> "+e.To)
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
