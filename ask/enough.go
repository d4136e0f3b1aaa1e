package ask

import (
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Enough reports whether g, a part of a run (its nodes after seq lo up
// to hi, around seq: analysis.Analyzer.Part), holds all that the message about
// node seq names when it is not a model call, as the whole run would: the
// model call that made it, in its conversation, and the three llm nodes
// nearest to it with none outside the part as near. A command asking of
// such a node reads that part, not the whole run, unless this says no.
func Enough(g *graph.Run, seq, lo, hi int64) bool {
	n := g.Node(seq)
	if n == nil || n.Kind == record.KindLLM {
		return n != nil
	}
	if made(n) == nil {
		return false
	}
	reach := min(seq-lo-1, hi-seq) // every llm node this near is in g
	near := 0
	for _, c := range g.Nodes {
		if c.Kind == record.KindLLM && abs(c.Seq-seq) <= reach {
			near++
		}
	}
	return near >= 3
}

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}
