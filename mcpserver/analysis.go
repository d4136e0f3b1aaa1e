package mcpserver

import (
	"context"
	"errors"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graphjson"
	"github.com/inspect-dev/inspect/record"
)

// Analysis is the Backend of inspect mcp: every tool's one call goes to
// package analysis, which opens the run and makes the analysis the tool
// renders. What analysis does not do (filtering the list of runs,
// storing an ask, the node's text) the caller gives as functions.
type Analysis struct {
	// Analyzer opens the runs of the database inspect mcp was started
	// on, and of the files it allowed, under the team's policy; the
	// lenient one (a policy file with problems read as every default)
	// for the tools that only show a run.
	Analyzer *analysis.Analyzer
	// Policy is the policy for an audit and a diff, the thresholds of set
	// winning over the policy file's: a new Policy on each call, or the
	// error of a policy file with problems.
	Policy func(set []Threshold) (*analysis.Policy, error)
	// List lists the runs of the default database that q keeps.
	List func(ctx context.Context, q RunQuery) (*RunList, error)
	// NodeText renders a node view as `inspect show` prints it.
	NodeText func(v *analysis.NodeView) string
	// StoreAsk keeps an ask of node seq of run (of the default
	// database) with the run.
	StoreAsk func(ctx context.Context, run string, seq int64, a *ask.Asked) error
}

var _ Backend = (*Analysis)(nil)

// Runs lists runs through List.
func (a *Analysis) Runs(ctx context.Context, q RunQuery) (*RunList, error) { return a.List(ctx, q) }

// Graph opens the run with the brief cache analysis its labels show.
func (a *Analysis) Graph(ctx context.Context, ref RunRef) (*Graph, error) {
	r, err := a.Analyzer.Open(ctx, ref.String(), analysis.LoadBrief)
	if err != nil {
		return nil, err
	}
	out := &Graph{Run: r.Graph}
	if out.Cache, err = r.BriefCache(ctx); err != nil {
		out.Cache = nil
		out.Notes = append(out.Notes, "note: the prompt-cache analysis failed ("+err.Error()+"); the graph is drawn without it")
	}
	return out, nil
}

// under is the Analyzer with the audit policy, set winning.
func (a *Analysis) under(set []Threshold) (*analysis.Analyzer, error) {
	p, err := a.Policy(set)
	if err != nil {
		return nil, err
	}
	an := *a.Analyzer
	an.Policy = p
	return &an, nil
}

// Audit opens the run and audits it under the policy, set winning.
func (a *Analysis) Audit(ctx context.Context, ref RunRef, set []Threshold) (*findings.Report, error) {
	an, err := a.under(set)
	if err != nil {
		return nil, err
	}
	r, err := an.Open(ctx, ref.String(), analysis.LoadBrief)
	if err != nil {
		return nil, err
	}
	return r.Audit(ctx, nil)
}

// Node opens the run and gives node seq's view, rendered, and the node
// as the graph JSON of the same graph has it.
func (a *Analysis) Node(ctx context.Context, ref RunRef, seq int64) (*Node, error) {
	r, err := a.Analyzer.Open(ctx, ref.String(), analysis.LoadGraph)
	if err != nil {
		return nil, err
	}
	v, err := r.Node(ctx, seq, analysis.NodeOptions{Cache: true, Branches: true})
	if err != nil {
		return nil, err
	}
	out := &Node{Text: a.NodeText(v)}
	if c := v.LLM; c != nil {
		out.Request, out.Response, out.Exact, out.Lacks = c.Body, c.ResponseBody, c.Exact, c.Lacks
	}
	for _, j := range graphjson.New(r.Graph).Nodes {
		if j.Seq == seq {
			out.JSON = &j
			break
		}
	}
	return out, nil
}

// Diff opens both runs and compares them, each audited under the policy.
func (a *Analysis) Diff(ctx context.Context, base, new RunRef) (*diff.Report, error) {
	an, err := a.under(nil)
	if err != nil {
		return nil, err
	}
	b, err := an.Open(ctx, base.String(), analysis.LoadBrief)
	if err != nil {
		return nil, err
	}
	n, err := an.Open(ctx, new.String(), analysis.LoadBrief)
	if err != nil {
		return nil, err
	}
	return analysis.Diff(ctx, &diff.Config{}, b, n)
}

// Options are the audit policy's thresholds and rules.
func (a *Analysis) Options(context.Context) (*findings.Options, error) {
	p, err := a.Policy(nil)
	if err != nil {
		return nil, err
	}
	return p.Options, nil
}

// AskTarget reads the node asked about: a model call alone, any other
// node with its run (the ask's error names the nearest model calls).
func (a *Analysis) AskTarget(ctx context.Context, ref RunRef, seq int64) (*AskTarget, error) {
	if ref.DB != "" {
		return nil, errors.New("internal error: an ask of a run of another database")
	}
	src, _, err := a.Analyzer.Resolve(ctx, ref.String())
	if err != nil {
		return nil, err
	}
	v, err := a.Analyzer.Node(ctx, ref.String(), seq, analysis.NodeOptions{})
	if err != nil {
		return nil, err
	}
	var g *graph.Run
	if v.Node.Kind == record.KindLLM {
		g, err = graph.Build(v.Run, []*record.Node{v.Node.Node})
	} else {
		var r *analysis.Run
		if r, err = a.Analyzer.Open(ctx, v.Run.ID, analysis.LoadGraph); err == nil {
			g = r.Graph
		}
	}
	if err != nil {
		return nil, err
	}
	id := g.ID
	return &AskTarget{Run: g, Recording: src, Store: func(ctx context.Context, asked *ask.Asked) error {
		return a.StoreAsk(ctx, id, seq, asked)
	}}, nil
}
