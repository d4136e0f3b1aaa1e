// Package graphjson is the public JSON form of a run graph (`inspect graph
// --format json`, documented field by field in docs/graph-json.md): every
// node, fork, branch and arrow of the run, never collapsed, in a schema
// versioned by its schema field. Node and branch ids and the arrows are the
// chart's (package chart), so a script can match them with the Mermaid,
// DOT and SVG drawings. The package knows nothing of SQL or of audit rules.
package graphjson

import (
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Schema names the version of the JSON form written by Fprint.
// Fields are only ever added within a version; a change that removes or
// renames one gets a new version.
const Schema = "inspect.graph/v1"

// Graph is the JSON form of a run graph (`inspect graph --format json`),
// documented in docs/graph-json.md. It is never collapsed: every node and
// edge is present. Times are RFC 3339 in UTC with nanoseconds; durations are
// whole milliseconds. Request and response bodies are not included (`inspect
// show` prints them).
type Graph struct {
	Schema string `json:"schema"` // always Schema
	Run    Run    `json:"run"`
	Tokens Tokens `json:"tokens"`
	Tools  Tools  `json:"tools"`
	// Nodes are every node in sequence order.
	Nodes []Node `json:"nodes"`
	// Forks are every fork in sequence order with its branches.
	Forks []Fork `json:"forks"`
	// Groups are the parallel call groups in the order of their llm node:
	// the calls one response made that ran at once (graph.Group); omitted
	// when the run has none (our runtime's runs never have: their calls
	// run one at a time).
	Groups []Group `json:"groups,omitempty"`
	// Edges are the arrows of the chart in conversation order: each node to
	// the next of its conversation, a fork to each branch's first node, each
	// branch's last node to the join; the consecutive calls of a parallel
	// group each from the node before them and to the node after them.
	Edges []Edge `json:"edges"`
}

// Run is the run of a Graph.
type Run struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"` // running, ok, error, cancelled or interrupted
	Error     string   `json:"error"`
	Started   string   `json:"started"`
	Ended     *string  `json:"ended"` // null while the run is open
	ElapsedMS int64    `json:"elapsed_ms"`
	Tasks     []string `json:"tasks"`
	Project   string   `json:"project"`
	Models    []string `json:"models"`
	// Agents are the agents that owned a node, in order of first appearance.
	Agents []string `json:"agents"`
	// FirstAgent started the trunk; LastAgent held it at the end.
	FirstAgent string `json:"first_agent"`
	LastAgent  string `json:"last_agent"`
}

// Tokens are token totals over the run's llm nodes.
type Tokens struct {
	In  int64 `json:"in"`
	Out int64 `json:"out"`
	// Cached is null unless some call reported cached tokens.
	Cached *int64 `json:"cached"`
	Calls  int    `json:"calls"`
	// Weighted is the weighted tokens: uncached input, cache writes and
	// output in full, cache reads at 25% (record.Usage.Weighted).
	Weighted float64 `json:"weighted"`
}

// Tools counts the run's calls by name and where research happened.
type Tools struct {
	// ByName lists every called name (tools, fork, transfer_to_*), most
	// called first, then by name.
	ByName             []ToolCount `json:"by_name"`
	Total              int         `json:"total"` // tool nodes
	Research           int         `json:"research"`
	ResearchBeforeFork int         `json:"research_before_fork"`
	ResearchInBranches int         `json:"research_in_branches"`
	ResearchAfterFork  int         `json:"research_after_fork"`
}

// ToolCount is how often one name was called.
type ToolCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Node is one node. Exactly the payload of its kind is set (llm, tool,
// handoff, fork, join); text holds a user message or a final answer.
type Node struct {
	ID      string `json:"id"` // n<seq>
	Seq     int64  `json:"seq"`
	Kind    string `json:"kind"`   // user, llm, tool, handoff, fork, join, final
	Branch  string `json:"branch"` // branch path: "" for the trunk, "eu", "eu/fr"
	ForkSeq int64  `json:"fork_seq"`
	Agent   string `json:"agent"`
	// Marked is true on the node the chart marks @agent: the first node
	// (other than a user message) its agent owns.
	Marked     bool         `json:"marked"`
	Depth      int          `json:"depth"`
	Started    string       `json:"started"`
	Ended      *string      `json:"ended"`
	DurationMS int64        `json:"duration_ms"`
	Status     string       `json:"status"`
	Error      string       `json:"error"`
	Text       string       `json:"text,omitempty"`
	LLM        *LLM         `json:"llm,omitempty"`
	Tool       *Tool        `json:"tool,omitempty"`
	Handoff    *Handoff     `json:"handoff,omitempty"`
	Fork       *ForkPayload `json:"fork,omitempty"`
	Join       *JoinPayload `json:"join,omitempty"`
	// Group is the id of the parallel call group the node is a call of
	// (p<seq>); omitted when it is in none.
	Group string `json:"group,omitempty"`
}

// Group is one parallel call group: the calls one model response made
// that the stack ran at once.
type Group struct {
	ID  string `json:"id"`  // p<seq>, seq of its llm node; the Mermaid subgraph and DOT cluster_p<seq>
	LLM string `json:"llm"` // the llm node whose response made the calls, n<seq>
	// Branch is the branch path of their conversation ("" for the trunk).
	Branch string `json:"branch"`
	// Calls is how many tool calls the group is: one per member, but a
	// fork made of delegation calls counts one per branch.
	Calls int `json:"calls"`
	// Members are the nodes the calls became, n<seq>, in sequence order.
	Members []string `json:"members"`
	// SpanMS is the group's wall time, first member's start to the last end.
	SpanMS int64 `json:"span_ms"`
}

// Tool is the payload of a tool node.
type Tool struct {
	Name     string `json:"name"` // as the model wrote it, even if unknown
	CallID   string `json:"call_id"`
	Args     string `json:"args"`   // JSON text as sent
	Result   string `json:"result"` // what the model got back
	Research bool   `json:"research"`
}

// Handoff is the payload of a handoff node.
type Handoff struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// LLM is the payload of an llm node.
type LLM struct {
	Model  string   `json:"model"`
	Calls  []string `json:"calls"` // empty: it answered
	In     int64    `json:"in"`
	Out    int64    `json:"out"`
	Cached *int64   `json:"cached"` // null unless reported
	// Weighted is the call's weighted tokens (record.Usage.Weighted).
	Weighted float64 `json:"weighted"`
	Content  string  `json:"content"`
}

// ForkPayload is the payload of a fork node.
type ForkPayload struct {
	Context  string       `json:"context"`
	Branches []ForkBranch `json:"branches"`
}

// ForkBranch is one branch as the fork declared it.
type ForkBranch struct {
	Name         string `json:"name"`
	Agent        string `json:"agent"`
	Instructions string `json:"instructions"`
}

// JoinPayload is the payload of a join node.
type JoinPayload struct {
	Fork     string       `json:"fork"` // n<seq> of the fork it closes
	Branches []JoinBranch `json:"branches"`
}

// JoinBranch is one branch's outcome as the join holds it.
type JoinBranch struct {
	Name       string `json:"name"`
	Agent      string `json:"agent"`
	Status     string `json:"status"`
	DurationMS int64  `json:"duration_ms"`
	Answer     string `json:"answer"`
}

// Fork is a fork with its branches as the graph derives them.
type Fork struct {
	Fork    string   `json:"fork"` // n<seq>
	Join    *string  `json:"join"` // n<seq>, null when the fork never joined
	Parent  string   `json:"parent"`
	Context string   `json:"context"`
	Slowest string   `json:"slowest"` // the slowest branch's name
	Branch  []Branch `json:"branches"`
}

// Branch is one branch of a fork.
type Branch struct {
	ID         string   `json:"id"`   // b<k>, the chart's subgraph id
	Name       string   `json:"name"` // as declared
	Path       string   `json:"path"` // its conversation's branch path
	Agent      string   `json:"agent"`
	Status     string   `json:"status"`
	DurationMS int64    `json:"duration_ms"`
	Slowest    bool     `json:"slowest"`
	Answer     string   `json:"answer"`
	Nodes      []string `json:"nodes"` // its conversation's own nodes, n<seq>
	// Tokens sums the llm nodes of the branch and of the branches forked
	// inside it (graph.Branch.Tokens), weighted tokens included.
	Tokens Tokens `json:"tokens"`
}

// Edge is one arrow.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// New builds the JSON form of g.
func New(g *graph.Run) *Graph {
	lay := chart.Lay(g, chart.Options{Full: true}) // the ids and arrows of the full chart
	out := &Graph{
		Schema: Schema,
		Run: Run{
			ID: g.ID, Status: string(g.Status), Error: g.Error, Started: jsonTime(g.Started), Ended: jsonTimePtr(g.Ended),
			ElapsedMS: g.Elapsed().Milliseconds(), Tasks: nonNil(g.Tasks), Project: g.Project.Name, Models: nonNil(g.Models),
			Agents: nonNil(g.Agents), FirstAgent: g.FirstAgent(), LastAgent: g.LastAgent(),
		},
		Nodes: make([]Node, 0, len(g.Nodes)),
		Forks: []Fork{},
		Edges: []Edge{},
	}
	out.Tokens = tokensJSON(g.Tokens())
	tc := g.ToolCounts()
	out.Tools = Tools{ByName: []ToolCount{}, Total: tc.Total, Research: tc.Research,
		ResearchBeforeFork: tc.ResearchBeforeFork, ResearchInBranches: tc.ResearchInBranches, ResearchAfterFork: tc.ResearchAfterFork}
	for _, c := range tc.ByName {
		out.Tools.ByName = append(out.Tools.ByName, ToolCount{c.Name, c.Count})
	}
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, nodeJSON(lay, n))
	}
	for _, f := range g.Forks {
		fj := Fork{Fork: f.Node.ID(), Parent: f.Parent.Path, Context: f.Context, Branch: []Branch{}}
		if f.Join != nil {
			id := f.Join.ID()
			fj.Join = &id
		}
		if f.Slowest != nil {
			fj.Slowest = f.Slowest.Name
		}
		for _, b := range f.Branches {
			bj := Branch{ID: lay.BranchID(b), Name: b.Name, Agent: b.Agent, Status: string(b.Status),
				DurationMS: b.Duration.Milliseconds(), Slowest: b.Slowest(), Answer: b.Answer, Nodes: []string{}, Tokens: tokensJSON(b.Tokens())}
			if b.Conv != nil {
				bj.Path = b.Conv.Path
				for _, n := range b.Conv.Nodes {
					bj.Nodes = append(bj.Nodes, n.ID())
				}
			}
			fj.Branch = append(fj.Branch, bj)
		}
		out.Forks = append(out.Forks, fj)
	}
	for _, gr := range g.Groups {
		gj := Group{ID: gr.ID(), LLM: gr.LLM.ID(), Branch: gr.LLM.Branch, Calls: gr.Calls, SpanMS: gr.Span().Milliseconds()}
		for _, m := range gr.Members {
			gj.Members = append(gj.Members, m.ID())
		}
		out.Groups = append(out.Groups, gj)
	}
	es := lay.Edges()
	out.Edges = make([]Edge, 0, len(es))
	for _, e := range es {
		out.Edges = append(out.Edges, Edge{e.From, e.To})
	}
	return out
}

func tokensJSON(t graph.Tokens) Tokens {
	j := Tokens{In: t.In, Out: t.Out, Calls: t.Calls, Weighted: t.Weighted}
	if t.CachedReported {
		c := t.Cached
		j.Cached = &c
	}
	return j
}

// Fprint writes the JSON form of g (see Graph), indented, to w.
func Fprint(w io.Writer, g *graph.Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(New(g))
}

func nodeJSON(lay *chart.Layout, n *graph.Node) Node {
	j := Node{ID: n.ID(), Seq: n.Seq, Kind: string(n.Kind), Branch: n.Branch, ForkSeq: n.ForkSeq, Agent: n.Agent,
		Marked: lay.Marked(n), Depth: n.Depth, Started: jsonTime(n.Started), Ended: jsonTimePtr(n.Ended),
		DurationMS: n.Duration().Milliseconds(), Status: string(n.Status), Error: n.Error, Text: n.Text}
	if n.Group != nil {
		j.Group = n.Group.ID()
	}
	switch n.Kind {
	case record.KindLLM:
		if l := n.LLM; l != nil {
			j.LLM = &LLM{Model: l.Model, Calls: nonNil(l.Calls), In: l.Usage.In, Out: l.Usage.Out, Weighted: l.Usage.Weighted(), Content: l.Content}
			if l.Usage.CachedReported {
				c := l.Usage.Cached
				j.LLM.Cached = &c
			}
		}
	case record.KindTool:
		if t := n.Tool; t != nil {
			j.Tool = &Tool{Name: t.Name, CallID: t.CallID, Args: t.Args, Result: t.Result, Research: t.Research}
		}
	case record.KindHandoff:
		if h := n.Handoff; h != nil {
			j.Handoff = &Handoff{From: h.From, To: h.To, Reason: h.Reason}
		}
	case record.KindFork:
		if f := n.Fork; f != nil {
			j.Fork = &ForkPayload{Context: f.Context, Branches: []ForkBranch{}}
			for _, b := range f.Branches {
				j.Fork.Branches = append(j.Fork.Branches, ForkBranch{b.Name, b.Agent, b.Instructions})
			}
		}
	case record.KindJoin:
		if jn := n.Join; jn != nil {
			j.Join = &JoinPayload{Fork: "n" + itoa64(jn.ForkSeq), Branches: []JoinBranch{}}
			for _, b := range jn.Branches {
				j.Join.Branches = append(j.Join.Branches, JoinBranch{b.Name, b.Agent, string(b.Status), b.Duration.Milliseconds(), b.Answer})
			}
		}
	case record.KindUser, record.KindFinal:
	default:
		panic("internal error: unhandled node kind " + string(n.Kind))
	}
	return j
}

func jsonTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func jsonTimePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := jsonTime(t)
	return &s
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
