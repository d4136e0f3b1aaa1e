package analysis

import (
	"context"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Part is the graph of the nodes of run ref after seq from up to and
// including last: a part of a long run read by index, for what needs only
// the nodes near one (the message about a node that is not a model call).
// A node whose fork or conversation start is outside the part hangs from
// what the part holds.
func (a *Analyzer) Part(ctx context.Context, ref string, from, last int64) (*graph.Run, error) {
	src, id, err := a.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	run, err := src.LoadRun(ctx, id)
	if err != nil {
		return nil, err
	}
	var nodes []*record.Node
	if err := src.ScanNodesRange(ctx, run, from, last, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		return nil, err
	}
	g, err := graph.Build(run, nodes)
	if err != nil {
		return nil, err
	}
	g.ReadAt = a.now()
	return g, nil
}
