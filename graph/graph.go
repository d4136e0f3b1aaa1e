// Package graph is the in-memory run graph: a recorded run's nodes linked
// into conversations, forks with their branches and joins, hand-offs, and the
// facts derived from them (slowest branch, durations, first node of each
// agent, tool counts, token totals). mermaid/ and findings/ read a *Run and
// nothing else; graph knows no SQL and no rendering.
package graph

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// Source is what a run graph loads from; *store.DB satisfies it.
type Source interface {
	LoadRun(ctx context.Context, id string) (*record.Run, error)
	ScanNodes(ctx context.Context, run *record.Run, fn func(*record.Node) error) error
}

// Run is a recorded run as a graph.
type Run struct {
	*record.Run

	// Nodes holds every node in sequence order.
	Nodes []*Node
	// Trunk is the root conversation.
	Trunk *Conversation
	// Conversations holds the trunk first, then every branch conversation in
	// the order its fork was recorded and its branch declared.
	Conversations []*Conversation
	// Forks holds every fork in sequence order.
	Forks []*Fork
	// Handoffs holds every handoff node in sequence order.
	Handoffs []*Node
	// Agents lists the agents that owned a node, in order of first appearance.
	Agents []string
	// Groups holds every parallel call group in the order of its llm node.
	Groups []*Group
	// ReadAt is when the run was read (set by the caller; zero = unknown).
	// A run still running has been going on until then.
	ReadAt time.Time

	first     map[string]*Node
	forksFrom map[*Conversation][]*Fork
	groupOf   map[*Node]*Group // by llm node
}

// ForksFrom returns the forks conversation c made, in sequence order.
func (g *Run) ForksFrom(c *Conversation) []*Fork {
	if g.forksFrom == nil { // a Run not made by Build
		var out []*Fork
		for _, f := range g.Forks {
			if f.Parent == c {
				out = append(out, f)
			}
		}
		return out
	}
	return g.forksFrom[c]
}

// Node is one recorded node with its place in the graph.
type Node struct {
	*record.Node
	// Conv is the conversation the node belongs to.
	Conv *Conversation
	// ForkOf is set on fork and join nodes: the fork they open or close.
	ForkOf *Fork
	// Group is set on the members of a parallel call group: the calls of
	// one response that ran at once.
	Group *Group
}

// Group is a parallel call group (DESIGN §18): the tool calls one model
// response made, on a stack that runs them at once (its profile fans out
// by parallel calls: Claude Code, Codex, Kimi, the Agents SDK, OTLP apps;
// not our runtime, whose calls run one at a time), when there are two or
// more. The nodes come from record.Node.CalledBy.
type Group struct {
	// LLM is the llm node whose response made the calls.
	LLM *Node
	// Members are the nodes the calls became (tool, fork and hand-off
	// nodes of LLM's conversation), in sequence order.
	Members []*Node
	// Calls is how many tool calls the members are: one each, but a fork
	// an importer made of delegation calls (record.Fork.Tool set) is one
	// call per branch.
	Calls int
}

// ID is the group's display id: p<seq> of its llm node.
func (gr *Group) ID() string { return fmt.Sprintf("p%d", gr.LLM.Seq) }

// Span is the group's wall time: from its first member's start to the
// last end among them (open members count to their start).
func (gr *Group) Span() time.Duration {
	var start, end time.Time
	for i, m := range gr.Members {
		e := m.Ended
		if e.IsZero() {
			e = m.Started
		}
		if i == 0 || m.Started.Before(start) {
			start = m.Started
		}
		if e.After(end) {
			end = e
		}
	}
	return end.Sub(start)
}

// CallCount is how many tool calls node n stands for as a member of a
// parallel call group: one, or for a fork an importer made of delegation
// calls (record.Fork.Tool set) one per branch.
func (n *Node) CallCount() int {
	if n.Kind == record.KindFork && n.Fork != nil && n.Fork.Tool != "" && len(n.Fork.Branches) > 0 {
		return len(n.Fork.Branches)
	}
	return 1
}

// ID is the node's display id, n<seq>.
func (n *Node) ID() string { return fmt.Sprintf("n%d", n.Seq) }

// Failed reports whether the node ended in a status other than ok.
func (n *Node) Failed() bool { return n.Status != record.StatusOK && n.Status != record.StatusRunning }

// Conversation is one message list: the trunk or one fork branch.
type Conversation struct {
	// Path is the branch path: "" for the trunk, "eu", "eu/fr".
	Path string
	// Depth is the fork depth: 0 for the trunk.
	Depth int
	// Branch is the fork branch this conversation runs; nil for the trunk.
	Branch *Branch
	// Nodes are the conversation's own nodes in sequence order (not those
	// of branches forked from it).
	Nodes []*Node
}

// Agents returns the agents that owned this conversation, in order.
func (c *Conversation) Agents() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		if n.Agent != "" && !seen[n.Agent] {
			seen[n.Agent] = true
			out = append(out, n.Agent)
		}
	}
	return out
}

// Fork is one fork call with its branches and join.
type Fork struct {
	// Node is the fork node.
	Node *Node
	// Join is the join node; nil while the fork is open (or if the run died).
	Join *Node
	// Parent is the conversation that forked.
	Parent *Conversation
	// Context is inherit, compact or none.
	Context string
	// Detached: the parent went on while the branches ran (background
	// sub-agents); its own nodes made meanwhile come between Node and
	// Join in its conversation, and what follows the fork there does not
	// wait for the branches.
	Detached bool
	// Branches are in declared order.
	Branches []*Branch
	// Slowest is the branch with the longest duration (the first declared on
	// a tie): one per fork whose branches all finished (ok, error or
	// exhausted). An open fork (Open: a branch still running, cancelled or
	// interrupted) has none: a stopped branch's time says when it was
	// stopped, not how long its work takes, so which branch the join would
	// have waited for is not known.
	Slowest *Branch
}

// Branch is one branch of a fork.
type Branch struct {
	Name         string
	Agent        string // the agent it started on
	Instructions string
	// Status is the branch's status from the join, or derived from its
	// nodes when the join is missing.
	Status record.Status
	// Duration is the branch's elapsed time, from Started.
	Duration time.Duration
	// Started is when the branch began: its fork's time, or later when
	// the join says so (an imported sub-agent that started after the call).
	Started time.Time
	// Answer is its final message or error, as the join holds it.
	Answer string
	Fork   *Fork
	Conv   *Conversation

	tokens *Tokens // Tokens, as Build sums it
}

// Finished reports whether the branch ran to its end: ok, error or
// exhausted, not still running, cancelled or interrupted.
func (b *Branch) Finished() bool {
	return b.Status == record.StatusOK || b.Status == record.StatusError || b.Status == record.StatusExhausted
}

// Open reports whether the fork never closed: no join was recorded, or a
// branch was cancelled or interrupted (the run was stopped while it ran).
// Its branches' times say when they were stopped.
func (f *Fork) Open() bool {
	if f.Join == nil {
		return true
	}
	for _, b := range f.Branches {
		if !b.Finished() {
			return true
		}
	}
	return false
}

// Slowest reports whether b is its fork's slowest branch.
func (b *Branch) Slowest() bool { return b.Fork != nil && b.Fork.Slowest == b }

// Load reads run id from src into a graph.
func Load(ctx context.Context, src Source, id string) (*Run, error) {
	r, err := src.LoadRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if rs, ok := src.(RangeSource); ok && runtime.GOMAXPROCS(0) > 1 {
		nodes, err := loadHalves(ctx, rs, r)
		if err != nil {
			return nil, err
		}
		return Build(r, nodes)
	}
	var nodes []*record.Node
	if err := src.ScanNodes(ctx, r, func(n *record.Node) error {
		nodes = append(nodes, n)
		return nil
	}); err != nil {
		return nil, err
	}
	return Build(r, nodes)
}

// RangeSource is a Source that reads a run's nodes by range of seq, which
// Load uses to read the two halves of a run at once.
type RangeSource interface {
	Source
	// LastSeq is the seq of run's last node (0: none).
	LastSeq(ctx context.Context, run *record.Run) (int64, error)
	// ScanNodesRange is ScanNodes of the nodes after seq from, up to and
	// including seq last.
	ScanNodesRange(ctx context.Context, run *record.Run, from, last int64, fn func(*record.Node) error) error
}

// loadHalves reads the nodes of run r in two halves at once, the second
// from seq mid on (and any node added since the last was looked up).
func loadHalves(ctx context.Context, src RangeSource, r *record.Run) ([]*record.Node, error) {
	last, err := src.LastSeq(ctx, r)
	if err != nil {
		return nil, err
	}
	mid := last / 2
	if mid < 1 {
		var nodes []*record.Node
		err := src.ScanNodes(ctx, r, func(n *record.Node) error {
			nodes = append(nodes, n)
			return nil
		})
		return nodes, err
	}
	var first, second []*record.Node
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		firstErr = src.ScanNodesRange(ctx, r, math.MinInt64, mid, func(n *record.Node) error {
			first = append(first, n)
			return nil
		})
	}()
	err = src.ScanNodesRange(ctx, r, mid, 0, func(n *record.Node) error {
		second = append(second, n)
		return nil
	})
	<-done
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return nil, err
	}
	return append(first, second...), nil
}

type convKey struct {
	fork   int64
	branch string
}

// Build links nodes (in any order) of run r into a graph. Tests build runs
// in memory with it.
func Build(r *record.Run, nodes []*record.Node) (*Run, error) {
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Seq < nodes[j].Seq })
	g := &Run{
		Run:       r,
		Nodes:     make([]*Node, len(nodes)),
		first:     map[string]*Node{},
		forksFrom: map[*Conversation][]*Fork{},
	}
	all := make([]Node, len(nodes)) // one allocation for every node
	g.Trunk = &Conversation{}
	g.Conversations = []*Conversation{g.Trunk}
	convs := map[convKey]*Conversation{{}: g.Trunk}
	forks := map[int64]*Fork{}
	// most nodes follow one of the same agent and conversation: those
	// need no lookup
	var prev *record.Node
	var c *Conversation
	for i, sn := range nodes {
		n := &all[i]
		n.Node = sn
		g.Nodes[i] = n
		if prev != nil && prev.Seq == sn.Seq { // sorted: a second node of a seq is next to the first
			return nil, fmt.Errorf("run %s: two nodes numbered n%d", r.ID, sn.Seq)
		}
		if sn.Agent != "" && (prev == nil || prev.Agent != sn.Agent) {
			if _, ok := g.first[sn.Agent]; !ok {
				g.first[sn.Agent] = n
				g.Agents = append(g.Agents, sn.Agent)
			}
		}
		key := convKey{sn.ForkSeq, sn.Branch}
		if prev == nil || prev.ForkSeq != key.fork || prev.Branch != key.branch {
			c = convs[key]
		}
		prev = sn
		if c == nil {
			c = &Conversation{Path: sn.Branch, Depth: sn.Depth}
			convs[key] = c
			if f := forks[sn.ForkSeq]; f != nil {
				for _, b := range f.Branches {
					if b.Conv == nil && branchPath(f, b) == sn.Branch {
						b.Conv, c.Branch = c, b
						break
					}
				}
			}
		}
		n.Conv = c
		c.Nodes = append(c.Nodes, n)
		switch sn.Kind {
		case record.KindFork:
			f := &Fork{Node: n, Parent: c}
			if sn.Fork != nil {
				f.Context, f.Detached = sn.Fork.Context, sn.Fork.Detached
				for _, fb := range sn.Fork.Branches {
					f.Branches = append(f.Branches, &Branch{Name: fb.Name, Agent: fb.Agent, Instructions: fb.Instructions, Fork: f, Status: record.StatusRunning, Started: sn.Started})
				}
			}
			n.ForkOf = f
			forks[sn.Seq] = f
			g.Forks = append(g.Forks, f)
			g.forksFrom[c] = append(g.forksFrom[c], f)
		case record.KindJoin:
			if sn.Join != nil {
				if f := forks[sn.Join.ForkSeq]; f != nil {
					f.Join, n.ForkOf = n, f
					for i, jb := range sn.Join.Branches {
						if i < len(f.Branches) {
							b := f.Branches[i]
							b.Status, b.Duration, b.Answer = jb.Status, jb.Duration, jb.Answer
							if !jb.Started.IsZero() {
								b.Started = jb.Started
							}
						}
					}
				}
			}
		case record.KindHandoff:
			g.Handoffs = append(g.Handoffs, n)
		case record.KindUser, record.KindLLM, record.KindTool, record.KindFinal:
		default:
			panic(fmt.Sprintf("internal error: unhandled node kind %v", sn.Kind))
		}
	}
	g.groups()
	// The last moment the run recorded: an open branch ran at least until then.
	var last time.Time
	for _, n := range nodes {
		if n.Ended.After(last) {
			last = n.Ended
		}
		if n.Started.After(last) {
			last = n.Started
		}
	}
	// Conversations in fork order, branches in declared order.
	for _, f := range g.Forks {
		for _, b := range f.Branches {
			if b.Conv == nil { // a branch that recorded nothing
				b.Conv = &Conversation{Path: branchPath(f, b), Depth: f.Node.Depth + 1, Branch: b}
			}
			if f.Join == nil {
				b.Status, b.Duration = openBranchState(r, b.Conv, f.Node.Ended, last)
			}
			g.Conversations = append(g.Conversations, b.Conv)
		}
		if f.Open() {
			continue
		}
		for _, b := range f.Branches {
			if f.Slowest == nil || b.Duration > f.Slowest.Duration {
				f.Slowest = b
			}
		}
	}
	// Each branch's tokens with those of the branches below it, in one
	// pass: a later fork is never above an earlier one, so going back from
	// the last fork sums every branch below a branch before it.
	for i := len(g.Forks) - 1; i >= 0; i-- {
		for _, b := range g.Forks[i].Branches {
			t := SumTokens(b.Conv.Nodes)
			for _, sub := range g.forksFrom[b.Conv] {
				for _, sb := range sub.Branches {
					if sb.tokens != nil {
						t.add(*sb.tokens)
					}
				}
			}
			b.tokens = &t
		}
	}
	return g, nil
}

// groups finds the run's parallel call groups: on a stack that runs a
// response's calls at once, the tool, fork and hand-off nodes that name
// the same llm node of their own conversation (CalledBy), when they are
// two or more calls. A CalledBy that names no earlier llm node of the
// conversation is ignored.
func (g *Run) groups() {
	if !stack.For(g.Source).Has(stack.ParallelCalls) {
		return
	}
	for _, n := range g.Nodes {
		switch n.Kind {
		case record.KindTool, record.KindFork, record.KindHandoff:
		default:
			continue
		}
		llm := g.Node(n.CalledBy)
		if n.CalledBy == 0 || llm == nil || llm.Kind != record.KindLLM || llm.Conv != n.Conv || llm.Seq >= n.Seq {
			continue
		}
		gr := g.groupOf[llm]
		if gr == nil {
			if g.groupOf == nil {
				g.groupOf = map[*Node]*Group{}
			}
			gr = &Group{LLM: llm}
			g.groupOf[llm] = gr
			g.Groups = append(g.Groups, gr)
		}
		gr.Members = append(gr.Members, n)
		gr.Calls += n.CallCount()
	}
	sort.Slice(g.Groups, func(i, j int) bool { return g.Groups[i].LLM.Seq < g.Groups[j].LLM.Seq })
	kept := g.Groups[:0]
	for _, gr := range g.Groups {
		if gr.Calls < 2 {
			delete(g.groupOf, gr.LLM)
			continue
		}
		for _, m := range gr.Members {
			m.Group = gr
		}
		kept = append(kept, gr)
	}
	clear(g.Groups[len(kept):])
	g.Groups = kept
}

// GroupOf returns the parallel call group llm node n's response made, or
// nil (one call or none, or a stack that runs calls one at a time).
func (g *Run) GroupOf(n *Node) *Group { return g.groupOf[n] }

// branchPath is the path of branch b of fork f: the parent's path, a slash,
// the branch's name (record.BranchPath).
func branchPath(f *Fork, b *Branch) string {
	if f.Parent == nil {
		return b.Name
	}
	return record.BranchPath(f.Parent.Path, f.Node.Seq, b.Name)
}

// openBranchState derives a branch's status and duration when no join
// recorded them (the run was killed or is still going). A branch that did not
// end ran from its fork at least until the run's last recorded moment.
func openBranchState(r *record.Run, c *Conversation, forked, last time.Time) (record.Status, time.Duration) {
	open := r.Status
	if open == record.StatusOK { // a finished run whose fork never joined
		open = record.StatusError
	}
	if len(c.Nodes) == 0 {
		return open, last.Sub(forked)
	}
	final := c.Nodes[len(c.Nodes)-1]
	if final.Kind == record.KindFinal && !final.Ended.IsZero() {
		return final.Status, final.Ended.Sub(forked)
	}
	return open, last.Sub(forked)
}

// Node returns node n<seq>, or nil.
func (g *Run) Node(seq int64) *Node {
	if len(g.Nodes) == 0 {
		return nil
	}
	// a run's nodes are numbered one after another (the usual case): the
	// node at its offset from the first; else a binary search of the
	// nodes, which are in seq order
	if i := seq - g.Nodes[0].Seq; i >= 0 && i < int64(len(g.Nodes)) && g.Nodes[i].Seq == seq {
		return g.Nodes[i]
	}
	i, ok := slices.BinarySearchFunc(g.Nodes, seq, func(n *Node, seq int64) int { return cmp.Compare(n.Seq, seq) })
	if !ok {
		return nil
	}
	return g.Nodes[i]
}

// FirstOwned returns the first node owned by agent, or nil.
func (g *Run) FirstOwned(agent string) *Node { return g.first[agent] }

// IsFirstOwned reports whether n is the first node its agent owns (the node
// Mermaid marks @agent).
func (g *Run) IsFirstOwned(n *Node) bool { return n.Agent != "" && g.first[n.Agent] == n }

// Elapsed is the run's wall time: ended − started; while the run is open,
// up to its last node's end, or — for a run still running — up to ReadAt
// when that is later (the run is live: its elapsed time grows).
func (g *Run) Elapsed() time.Duration {
	if !g.Ended.IsZero() {
		return g.Ended.Sub(g.Started)
	}
	var last time.Time
	for _, n := range g.Nodes {
		if n.Ended.After(last) {
			last = n.Ended
		}
	}
	if g.Status == record.StatusRunning && g.ReadAt.After(last) {
		last = g.ReadAt
	}
	if last.IsZero() {
		return 0
	}
	return last.Sub(g.Started)
}

// FirstAgent is the agent of the run's first node; LastAgent the agent that
// held the trunk at its end. They differ when a trunk hand-off happened.
func (g *Run) FirstAgent() string {
	if len(g.Agents) == 0 {
		return ""
	}
	return g.Trunk.firstAgent()
}

func (c *Conversation) firstAgent() string {
	for _, n := range c.Nodes {
		if n.Agent != "" {
			return n.Agent
		}
	}
	return ""
}

// LastAgent is the agent that held the trunk last.
func (g *Run) LastAgent() string {
	t := g.Trunk.Nodes
	for i := len(t) - 1; i >= 0; i-- {
		if t[i].Kind == record.KindHandoff && t[i].Handoff != nil {
			return t[i].Handoff.To
		}
		if t[i].Agent != "" {
			return t[i].Agent
		}
	}
	return ""
}

// Tokens are token totals over a run's llm nodes.
type Tokens struct {
	In, Out int64
	// Cached sums the cached tokens the provider reported; CachedReported
	// is false when no call reported any (then Cached means nothing).
	Cached         int64
	CachedReported bool
	// Weighted sums the calls' weighted tokens (record.Usage.Weighted:
	// uncached input, cache writes and output in full, cache reads at 25%).
	Weighted float64
	Calls    int // llm calls
}

// Tokens sums usage over every llm node.
func (g *Run) Tokens() Tokens {
	return SumTokens(g.Nodes)
}

// SumTokens sums usage over the llm nodes among nodes.
func SumTokens(nodes []*Node) Tokens {
	var t Tokens
	for _, n := range nodes {
		if n.Kind != record.KindLLM || n.LLM == nil {
			continue
		}
		t.Calls++
		t.In += n.LLM.Usage.In
		t.Out += n.LLM.Usage.Out
		if n.LLM.Usage.CachedReported {
			t.Cached += n.LLM.Usage.Cached
			t.CachedReported = true
		}
		t.Weighted += n.LLM.Usage.Weighted()
	}
	return t
}

// add adds u's totals to t.
func (t *Tokens) add(u Tokens) {
	t.In += u.In
	t.Out += u.Out
	t.Cached += u.Cached
	t.CachedReported = t.CachedReported || u.CachedReported
	t.Weighted += u.Weighted
	t.Calls += u.Calls
}

// Tokens sums usage over the branch's llm nodes and those of the branches
// forked inside it, at any depth: what the delegation cost. A branch that
// recorded nothing has none. Build sums every branch's at once (linear in
// the run's nodes, however deep its forks nest).
func (b *Branch) Tokens() Tokens {
	if b.tokens != nil {
		return *b.tokens
	}
	var nodes []*Node
	var walk func(c *Conversation)
	walk = func(c *Conversation) {
		for _, n := range c.Nodes {
			nodes = append(nodes, n)
			if n.Kind == record.KindFork && n.ForkOf != nil && n.ForkOf.Node == n {
				for _, sub := range n.ForkOf.Branches {
					if sub.Conv != nil {
						walk(sub.Conv)
					}
				}
			}
		}
	}
	if b.Conv != nil {
		walk(b.Conv)
	}
	return SumTokens(nodes)
}

// ToolCount is how often one tool was called.
type ToolCount struct {
	Name  string
	Count int
}

// ToolCounts are a run's tool calls by name and where research happened.
type ToolCounts struct {
	// ByName lists every called name (tools, fork, transfer_to_*) with its
	// count, most called first, then by name.
	ByName []ToolCount
	// Total is the number of tool nodes (fork and hand-off nodes excluded).
	Total int
	// Research calls split by position: in the trunk before its first fork,
	// inside any branch, and in the trunk after its first fork.
	Research, ResearchBeforeFork, ResearchInBranches, ResearchAfterFork int
	// Other counts non-research tool calls.
	Other int
}

// ToolCounts counts tool calls, forks and hand-offs of the run.
func (g *Run) ToolCounts() ToolCounts {
	var tc ToolCounts
	counts := map[string]int{}
	var firstFork int64 = -1
	for _, f := range g.Forks {
		if f.Parent == g.Trunk {
			firstFork = f.Node.Seq
			break
		}
	}
	for _, n := range g.Nodes {
		switch n.Kind {
		case record.KindTool:
			name := ""
			if n.Tool != nil {
				name = n.Tool.Name
			}
			counts[name]++
			tc.Total++
			if n.Tool == nil || !n.Tool.Research {
				tc.Other++
				continue
			}
			tc.Research++
			switch {
			case n.Conv != g.Trunk:
				tc.ResearchInBranches++
			case firstFork >= 0 && n.Seq > firstFork:
				tc.ResearchAfterFork++
			default:
				tc.ResearchBeforeFork++
			}
		case record.KindFork:
			counts["fork"]++
		case record.KindHandoff:
			if n.Handoff != nil {
				counts["transfer_to_"+n.Handoff.To]++
			}
		}
	}
	for name, c := range counts {
		tc.ByName = append(tc.ByName, ToolCount{name, c})
	}
	sort.Slice(tc.ByName, func(i, j int) bool {
		a, b := tc.ByName[i], tc.ByName[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Name < b.Name
	})
	return tc
}

// CriticalPath returns the conversations the run's end waited on, in the
// order of Conversations: the trunk, and at each fork of a conversation on
// the path its slowest branch (the one its join waited for longest),
// recursively. Their nodes are the run's critical path: making any other
// branch faster would not end the run sooner.
func (g *Run) CriticalPath() []*Conversation {
	on := map[*Conversation]bool{g.Trunk: true}
	// Forks are in sequence order, and a branch's forks come after the
	// fork that opened it, so one pass sees each parent before its branches.
	for _, f := range g.Forks {
		if on[f.Parent] && f.Slowest != nil && f.Slowest.Conv != nil {
			on[f.Slowest.Conv] = true
		}
	}
	out := make([]*Conversation, 0, len(on))
	for _, c := range g.Conversations {
		if on[c] {
			out = append(out, c)
		}
	}
	return out
}
