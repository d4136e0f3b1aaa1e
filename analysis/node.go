package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/prefix"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// NodeView is one node of a run in full: what `inspect show` prints and
// the web's node page shows (each renders this struct). It is read from
// the node alone — never the whole run: NodeOptions.Branches reads the
// nodes from a fork to its join, Cache the call's window.
type NodeView struct {
	// Run is the run's record (its snapshot, source, times).
	Run *record.Run
	// Node is the node; a fork's ForkOf.Join is its join once closed.
	Node *graph.Node
	// Next is set when the run has a node after this one.
	Next bool
	// LLM is an llm node's call: nil for other kinds.
	LLM *CallView
	// Branches are, for a fork or join with NodeOptions.Branches, the
	// fork's branches from the run's graph (their tokens); nil when the
	// run could not be read.
	Branches []*graph.Branch
	// Asks are the questions put to the node, oldest first.
	Asks []Ask
	// Cache is an llm node's prompt-cache section; nil when not asked
	// for (NodeOptions.Cache). A caller holding the whole run's analysis
	// (the web pages) may set it from that instead.
	Cache *NodeCache
}

// CallView is an llm node's call: the request folded by system prompt,
// tools and messages (read through chat), the response and usage.
type CallView struct {
	// Choice says what the call chose: "answers", "calls a, b",
	// "waiting for the model", "no choice: the call ended failed".
	Choice string
	// Exact is set for a request stored byte for byte; else it is what an
	// importer reconstructed, lacking Lacks.
	Exact bool
	Lacks []string
	// Body is the stored request, nil when none was recorded; Request is
	// it read through chat, or RequestErr why it could not be.
	Body       []byte
	Request    *chat.Request
	RequestErr error
	// ResponseBody is the stored response, nil when none was; Response
	// is it read through chat (nil for a failed call: its body is shown as
	// received), or ResponseErr why it could not be.
	ResponseBody []byte
	Response     *chat.Response
	ResponseErr  error
	// Failed is set for a call that failed or was stopped: it chose
	// nothing, and its response is its error.
	Failed bool
}

// NodeCache is an llm node's prompt-cache prefix analysis.
type NodeCache struct {
	// Report is the analysis that holds the call: of the run up to the
	// node, or of the whole run; nil with Err.
	Report *cache.Report
	// Err says why the run could not be analysed.
	Err error
}

// Call is the node's call in the analysis, or nil.
func (c *NodeCache) Call(seq int64) *cache.Call {
	if c == nil || c.Report == nil {
		return nil
	}
	return c.Report.Call(seq)
}

// NodeOptions say what a node view reads beyond the node.
type NodeOptions struct {
	// Cache analyses the run up to an llm node for its prompt-cache
	// section, with Policy.CacheOptions (the earlier requests it could
	// reuse are there): `inspect show`.
	Cache bool
	// Branches reads the nodes from a fork to its join for a fork's or
	// join's branch tokens.
	Branches bool
}

// Node reads node seq of run ref in full. A node the run lacks is a
// *NoNodeError.
func (a *Analyzer) Node(ctx context.Context, ref string, seq int64, o NodeOptions) (*NodeView, error) {
	src, id, err := a.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	run, err := src.LoadRun(ctx, id)
	if err != nil {
		return nil, err
	}
	rn, err := src.Node(ctx, run, seq)
	if errors.Is(err, ErrNotFound) {
		return nil, noNode(ctx, src, id, seq)
	}
	if err != nil {
		return nil, err
	}
	v := &NodeView{Run: run, Node: &graph.Node{Node: rn}}
	if rn.Kind == record.KindFork {
		v.Node.ForkOf = &graph.Fork{Node: v.Node}
		join, err := src.JoinOf(ctx, run, seq)
		if err != nil {
			return nil, err
		}
		if join != nil {
			v.Node.ForkOf.Join = &graph.Node{Node: join, ForkOf: v.Node.ForkOf}
		}
	}
	if _, err := src.Node(ctx, run, seq+1); err == nil {
		v.Next = true
	}
	if rn.Kind == record.KindLLM {
		if v.LLM, err = callView(ctx, src, run, rn); err != nil {
			return nil, err
		}
		if o.Cache {
			v.Cache = nodeCache(ctx, src, run, rn, a.policy())
		}
	}
	if o.Branches && (rn.Kind == record.KindFork || rn.Kind == record.KindJoin) {
		var join *record.Node
		if v.Node.ForkOf != nil && v.Node.ForkOf.Join != nil {
			join = v.Node.ForkOf.Join.Node
		}
		v.Branches = builtBranches(ctx, src, run, rn, join)
	}
	if v.Asks, err = src.Asks(ctx, id, seq); err != nil {
		return nil, err
	}
	return v, nil
}

// callView reads llm node n's request and response.
func callView(ctx context.Context, src Source, run *record.Run, n *record.Node) (*CallView, error) {
	body, err := src.Request(ctx, run.ID, n.Seq)
	if err != nil {
		return nil, &nodeError{"rebuild the request of", n.Seq, err}
	}
	resp, err := src.Response(ctx, run.ID, n.Seq)
	if err != nil {
		return nil, &nodeError{"load the response of", n.Seq, err}
	}
	return ReadCall(run, n, body, resp), nil
}

// ReadCall is the view of llm node n of run (nil: no run to say what a
// reconstructed request lacks) with its stored request and response
// bodies (nil: none recorded), read through chat.
func ReadCall(run *record.Run, n *record.Node, body, resp []byte) *CallView {
	v := &CallView{Exact: true, Failed: n.Status.Failed() || n.Status.Stopped()}
	if l := n.LLM; l != nil {
		v.Exact = l.Exact()
		switch {
		case n.Status == record.StatusRunning:
			v.Choice = "waiting for the model"
		case v.Failed:
			// a call that failed chose nothing: it did not answer
			v.Choice = "no choice: the call ended " + string(n.Status)
		case len(l.Calls) > 0:
			v.Choice = "calls " + strings.Join(l.Calls, ", ")
		default:
			v.Choice = "answers"
		}
	}
	if !v.Exact && run != nil {
		v.Lacks = run.Options.RequestsLack
	}
	v.Body = body
	if len(body) > 0 {
		v.Request, v.RequestErr = chat.ReadRequest(body, "")
	}
	v.ResponseBody = resp
	if len(resp) > 0 && !v.Failed {
		v.Response, v.ResponseErr = chat.ReadResponse(resp, "")
	}
	return v
}

// nodeError is a node's body that could not be read: "rebuild the
// request of n3: …".
type nodeError struct {
	what string
	seq  int64
	err  error
}

func (e *nodeError) Error() string {
	return fmt.Sprintf("%s n%d: %v", e.what, e.seq, e.err)
}
func (e *nodeError) Unwrap() error { return e.err }

// nodeCache analyses llm node n of run for its prompt-cache section. It
// reads the run only from where n's neighbourhood in time starts
// (Source.CallWindow: the earlier calls that ended within the cache
// lifetime before n started, the call before n in its conversation, the
// forks their conversations hang from) up to n: the same analysis of n as
// the whole run's, in time independent of how many nodes came before.
func nodeCache(ctx context.Context, src Source, run *record.Run, n *record.Node, p *Policy) *NodeCache {
	o := p.CacheOptions()
	o.Seqs = []int64{n.Seq}
	from := int64(math.MinInt64) // a start unknown, or no lifetime: every earlier call may serve
	if life := o.Lifetime; !n.Started.IsZero() && life >= 0 {
		if life == 0 {
			life = prefix.DefaultLifetime
		}
		lo, err := src.CallWindow(ctx, run, n, n.Started.Add(-life))
		if err != nil {
			return &NodeCache{Err: err}
		}
		from = lo - 1
	}
	var nodes []*record.Node
	if err := src.ScanNodesRange(ctx, run, from, n.Seq, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		return &NodeCache{Err: err}
	}
	g, err := graph.Build(run, nodes)
	if err != nil {
		return &NodeCache{Err: err}
	}
	rep, err := cache.Analyze(ctx, g, src, o)
	if err != nil {
		return &NodeCache{Err: err}
	}
	return &NodeCache{Report: rep}
}

// builtBranches are the branches of the fork that fork or join node n
// opens or closes (join: the fork's join, when n is the fork), built from
// the nodes from the fork to its join — to the run's end while it is
// open — not the whole run; from the whole run when that part does not
// hold the fork whole (a join that names another fork than the one its
// conversation's graph closes); nil when they cannot be read.
func builtBranches(ctx context.Context, src Source, run *record.Run, n, join *record.Node) []*graph.Branch {
	fork, last := n.Seq, int64(0)
	switch {
	case n.Kind == record.KindJoin && n.Join != nil:
		fork, last = n.Join.ForkSeq, n.Seq
	case join != nil && join.Branch == n.Branch:
		last = join.Seq
	}
	g := builtFrom(ctx, src, run, fork-1, last)
	var f *graph.Fork
	if g != nil {
		if gn := g.Node(n.Seq); gn != nil {
			f = gn.ForkOf
		}
	}
	whole := f != nil && f.Node.Seq == fork && f.Node.Branch == n.Branch
	if whole && last > 0 {
		whole = f.Join != nil && f.Join.Seq == last
	}
	if !whole {
		if g = builtFrom(ctx, src, run, 0, 0); g == nil {
			return nil
		}
		if gn := g.Node(n.Seq); gn != nil {
			f = gn.ForkOf
		}
	}
	if f == nil {
		return nil
	}
	return f.Branches
}

// builtFrom is the graph of run's nodes after from up to last (0: the
// end), or nil when they cannot be read.
func builtFrom(ctx context.Context, src Source, run *record.Run, from, last int64) *graph.Run {
	var nodes []*record.Node
	if err := src.ScanNodesRange(ctx, run, from, last, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		return nil
	}
	g, err := graph.Build(run, nodes)
	if err != nil {
		return nil
	}
	return g
}

// Node is node seq of the opened run in full: Analyzer.Node's view, read
// from the run's graph (the node with its depth and branch, its fork's
// branches) and its stored request, response, asks and cache section.
// For a front end that draws the node from the same graph beside it
// (inspect mcp's show_node gives the node as the graph JSON has it). A
// node the run lacks is a *NoNodeError.
func (r *Run) Node(ctx context.Context, seq int64, o NodeOptions) (*NodeView, error) {
	g := r.Graph
	n := g.Node(seq)
	if n == nil {
		return nil, r.MissingNode(ctx, seq)
	}
	v := &NodeView{Run: g.Run, Node: n, Next: seq < g.Nodes[len(g.Nodes)-1].Seq}
	var err error
	if n.Kind == record.KindLLM {
		if v.LLM, err = callView(ctx, r.src, g.Run, n.Node); err != nil {
			return nil, err
		}
		if o.Cache {
			v.Cache = nodeCache(ctx, r.src, g.Run, n.Node, r.policy)
		}
	}
	if o.Branches && (n.Kind == record.KindFork || n.Kind == record.KindJoin) && n.ForkOf != nil {
		v.Branches = n.ForkOf.Branches
	}
	if v.Asks, err = r.src.Asks(ctx, g.ID, seq); err != nil {
		return nil, err
	}
	return v, nil
}
