package rules

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// oneBranchMaxCalls is fork.one-branch's threshold.
var oneBranchMaxCalls = &findings.Threshold[int]{Key: "one-branch-max-calls", Text: "most tool calls of a lone branch that is still too small to fork", Def: 2, Min: 0}

// oneBranchMinShare is the share of the run's tokens a one-branch
// agent-as-tool call must cost to be fork.one-branch: on a stack whose
// delegation is a sub-agent tool (Claude Code's Task, Codex's spawn_agent,
// an Agents SDK agent as a tool) one sub-agent for one job is the idiom.
var oneBranchMinShare = &findings.Threshold[float64]{Key: "one-branch-min-share", Text: "share of the run's tokens a one-branch sub-agent call must cost, on a stack that delegates with sub-agent tools, to be a finding", Def: 0.25, Min: 0}

// ForkOneBranch: a one-branch fork for a tiny job.
var ForkOneBranch = &findings.Rule{
	ID:       "fork.one-branch",
	Area:     findings.Delegation,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "delegation that cost more than it saved",
		Detect: "a fork with exactly one branch whose branch (with any branches it forked in turn) made at most {one-branch-max-calls} tool calls. " +
			"On a stack that delegates with a sub-agent tool rather than fork (Claude Code's Task, Codex's spawn_agent, an agent as a tool), " +
			"where one sub-agent for one job is the idiom, only when the branch (with its own branches) cost more than {one-branch-min-share} " +
			"of the run's tokens (in + out), and not when the turn's request asked for a sub-agent.",
		Price: "one conversation start: the input tokens of the branch's first request, sent under a new system prompt (an expected cache miss, not a measured one).",
		Fix:   "the forking agent's prompt: make a call or two in its own conversation; fork a single branch only for a long, noisy job with a short answer.",
		Next:  "the call made in the forking conversation, and no one-branch fork.",
	},
	Options: []findings.Option{oneBranchMaxCalls, oneBranchMinShare},
	Run:     run(runForkOneBranch),
	Expect:  expectWith(expectForkOneBranch),
}

// JoinRepeat: the parent repeats a branch's call after the join.
var JoinRepeat = &findings.Rule{
	ID:       "join.repeat",
	Area:     findings.Delegation,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "branch not told what to return",
		Detect: "after a join, the forking conversation makes a call (same tool, same arguments once normalised) that one of the joined branches already made. " +
			"A Read of a file the forking conversation then edits or writes (Edit, MultiEdit, Write, NotebookEdit) is not a repeat: Claude Code " +
			"refuses to change a file its agent has not read itself.",
		Price: "what the repeats added: their results' tokens (bytes/4), and the time of their tool calls plus that of the model steps that " +
			"made nothing but repeats; not the whole context those steps sent, which was there either way.",
		Fix:  "the forking agent's prompt: say what each branch must return, so the answer carries what the parent needs.",
		Next: "no repeated call after the join.",
	},
	Run:    run(runJoinRepeat),
	Expect: expectJoinRepeat,
}

// fork.uneven's thresholds.
var (
	unevenRatio  = &findings.Threshold[float64]{Key: "uneven-ratio", Text: "slowest branch ÷ median of its siblings", Def: 2, Min: 1}
	unevenMinGap = &findings.Threshold[time.Duration]{Key: "uneven-min-gap", Text: "how much longer than that median the slowest branch must take", Def: 5 * time.Second, Min: 0}
)

// ForkUneven: one branch far behind its siblings.
var ForkUneven = &findings.Rule{
	ID:       "fork.uneven",
	Area:     findings.Forking,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title:  "uneven division",
		Detect: "a fork of at least 2 branches whose slowest branch took at least {uneven-ratio}× the median of its siblings and at least {uneven-min-gap} longer than that median.",
		Price:  "elapsed time: the slowest branch's duration minus the second slowest's, the wait a better split would have saved.",
		Fix:    "the forking agent's prompt: split the slow part into several branches.",
		Next:   "branch durations close together.",
	},
	Options: []findings.Option{unevenRatio, unevenMinGap},
	Run:     run(runForkUneven),
	Expect:  expectWith(expectForkUneven),
}

// ForkOverlap: siblings made the same call.
var ForkOverlap = &findings.Rule{
	ID:       "fork.overlap",
	Area:     findings.Forking,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "overlapping branches",
		Detect: "two sibling branches make a call with the same tool and the same arguments once normalised. Siblings given the same " +
			"inputs by design are not overlap: those with the same instructions (asked to compete or to check each other), and a call on " +
			"a path both branches' instructions name, or that the instructions of two or more of the fork's branches name (its common " +
			"input: the change every reviewer is handed, read by a sibling too), or in the folder of one (reviewers split by aspect, each " +
			"given the same files).",
		Price: "the duplicate calls (every copy after the first, in declared branch order): their time and the tokens of the model steps that made them.",
		Fix:   "the forking agent's prompt: divide the work by subject, so no two branches read the same thing.",
		Next:  "disjoint subjects: no call made by two branches.",
	},
	Run:    run(runForkOverlap),
	Expect: expectForkOverlap,
}

// fork.inherit-uncached's thresholds.
var (
	inheritMinBranches = &findings.Threshold[int]{Key: "inherit-min-branches", Text: "branches on another agent that make an inherit fork costly", Def: 2, Min: 1}
	inheritMinTokens   = &findings.Threshold[int64]{Key: "inherit-min-tokens", Text: "inherited history, in tokens, that makes it costly", Def: 4000, Min: 0}
)

// ForkInheritUncached: a wide inherit fork to another agent.
var ForkInheritUncached = &findings.Rule{
	ID:       "fork.inherit-uncached",
	Area:     findings.Forking,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "inherited history paid uncached",
		Detect: "a fork with context inherit, at least {inherit-min-branches} branches on an agent other than the forking one, and an inherited " +
			"history of at least {inherit-min-tokens} tokens. A different system prompt comes first, so a prompt cache cannot serve the history.",
		Price: "branches on another agent × inherited tokens (the forking call's input plus output). This is the expected miss from " +
			"the request's structure; cached tokens are quoted as measured only when the provider reported them.",
		Fix:  "the forking agent's prompt: fork with context compact or none when the branches run another agent.",
		Next: "fork (compact context) or fork (none context).",
	},
	Options: []findings.Option{inheritMinBranches, inheritMinTokens},
	Run:     run(runForkInheritUncached),
	Expect:  expectForkInheritUncached,
}

// noForks closes a fork rule that has nothing to look at: no fork in the
// run, or only open ones (Pass.Forks).
func noForks(p *pass) bool {
	if len(p.Graph.Forks) == 0 {
		p.NotApplicable("no fork in this run")
		return true
	}
	if len(p.Forks()) == 0 {
		p.NotApplicable("%s: %s", findings.OpenReason(p.Graph), plural(len(p.Graph.Forks), "open fork", "open forks"))
		return true
	}
	return false
}

// ownCalls lists the calls agent made in g outside the branches of its own
// forks: the work it did in its own conversation.
func ownCalls(g *graph.Run, agent string) []*graph.Node {
	var out []*graph.Node
	for _, n := range g.Nodes {
		if isCall(n) && n.Agent == agent && !inOwnBranch(n.Conv, agent) {
			out = append(out, n)
		}
	}
	return out
}

// inOwnBranch reports whether c is a branch (however deep) of a fork agent made.
func inOwnBranch(c *graph.Conversation, agent string) bool {
	for ; c != nil && c.Branch != nil && c.Branch.Fork != nil; c = c.Branch.Fork.Parent {
		if forkingAgent(c.Branch.Fork) == agent {
			return true
		}
	}
	return false
}

// subtreeCalls lists the calls of conversation c and of every branch forked
// from it, however deep.
func subtreeCalls(g *graph.Run, c *graph.Conversation) []*graph.Node {
	out := convCalls(c)
	for _, f := range g.ForksFrom(c) {
		for _, b := range f.Branches {
			out = append(out, subtreeCalls(g, b.Conv)...)
		}
	}
	return out
}

func firstNode(c *graph.Conversation) *graph.Node {
	if c == nil || len(c.Nodes) == 0 {
		return nil
	}
	return c.Nodes[0]
}

func runForkOneBranch(p *pass) {
	if noForks(p) {
		return
	}
	single, idiom, requested, unknown := 0, 0, 0, 0
	asTool := !p.Profile.Has(stack.Fork) // the stack delegates with a sub-agent tool
	tok := p.Graph.Tokens()
	runTokens := tok.In + tok.Out
	for _, f := range p.Forks() {
		if len(f.Branches) != 1 {
			continue
		}
		single++
		b := f.Branches[0]
		calls := subtreeCalls(p.Graph, b.Conv)
		if len(calls) > oneBranchMaxCalls.Get(p.Options) {
			continue
		}
		share := 0.0
		if bt := b.Tokens(); runTokens > 0 {
			share = float64(bt.In+bt.Out) / float64(runTokens)
		}
		if asTool && share <= oneBranchMinShare.Get(p.Options) {
			idiom++
			continue // one sub-agent for one job, cheap next to the run: the stack's idiom
		}
		if asTool {
			yes, recorded := p.delegationAsked(f)
			if yes {
				requested++
				continue // the user asked for the sub-agent: the agent did as told
			}
			if !recorded {
				unknown++
				continue // no prompt recorded: whether the user asked for it cannot be told
			}
		}
		first := firstLLM(b.Conv, 0)
		price := findings.Price{ConversationStarts: 1}
		if first != nil && first.LLM != nil {
			price.TokensIn = first.LLM.Usage.In
			price.LLMCalls = 1
			if first.LLM.Usage.CachedReported {
				price.CachedReported, price.CachedTokens = true, first.LLM.Usage.Cached
			}
			price.Basis = fmt.Sprintf("the branch's first request (%s) sent %d tokens in under a new system prompt: one conversation start", first.ID(), first.LLM.Usage.In)
		} else {
			price.Basis = "the branch recorded no model call"
		}
		var names, tools []string
		for _, c := range calls {
			names = append(names, c.Tool.Name+" "+p.call(c).summary)
			tools = append(tools, c.Tool.Name)
		}
		did := "no tool call"
		if len(names) > 0 {
			did = strings.Join(names, ", ")
		}
		made := " made"
		for _, c := range calls {
			if c.Conv != b.Conv {
				made = ", with the branches it forked, made"
				break
			}
		}
		agent := forkingAgent(f)
		msg := fmt.Sprintf("the fork at %s sent one branch, %q on %s, which%s %s (%s)", f.Node.ID(), b.Name, b.Agent, made, plural(len(calls), "tool call", "tool calls"), did)
		if asTool {
			msg += fmt.Sprintf(", and cost %.0f%% of the run's tokens", 100*share)
		}
		p.Report(findings.Finding{
			Agent:   agent,
			Message: msg,
			Nodes:   ids(f.Node, first, f.Join),
			Fix: p.Owner(agent, "fork", "branch", "sub-agent", "task").Fix(p.words("make one or two calls itself and to fork a single branch only for a long job with a short answer",
				"make one or two calls itself and to start a sub-agent only for a long, noisy job with a short answer")),
			Next:    fmt.Sprintf("%s done by %s in %s, and no one-branch fork", did, agent, where(f.Parent)),
			Price:   price,
			Shape:   fmt.Sprintf("one branch on %s, %d calls", b.Agent, len(calls)),
			Promise: oneBranchPromise{Tools: uniq(tools)},
		})
	}
	switch {
	case single == 0:
		p.Clear("%s, none with a single branch", plural(len(p.Forks()), "fork", "forks"))
	default:
		d := fmt.Sprintf("%s with a single branch examined", plural(single, "fork", "forks"))
		if idiom > 0 {
			d += fmt.Sprintf("; %d cost at most %.0f%% of the run's tokens: one sub-agent for one job, %s's idiom",
				idiom, 100*oneBranchMinShare.Get(p.Options), p.Profile.Name)
		}
		if requested > 0 {
			d += fmt.Sprintf("; %d the request asked for", requested)
		}
		if unknown > 0 {
			d += fmt.Sprintf("; %d not judged: the recording keeps no prompt to tell whether the user asked for the sub-agent", unknown)
			if p.Profile == stack.ClaudeCode {
				d += " (Claude Code's traces keep it with OTEL_LOG_USER_PROMPTS=1)"
			}
		}
		p.Clear("%s", d)
	}
}

// delegationAsked reports whether the request of the turn fork f was made
// in, or of a turn an ancestor branch was started from, asked for a
// sub-agent: "have a sub-agent that has its own sub-agent read a.txt"
// asks for the nested one too.
// recorded says whether any request of that chain was recorded at all
// (a trace that keeps no prompt cannot tell).
func (p *pass) delegationAsked(f *graph.Fork) (yes, recorded bool) {
	c, seq := f.Parent, f.Node.Seq
	for c != nil {
		req := p.turnRequest(c, seq)
		recorded = recorded || strings.TrimSpace(req) != ""
		if asked(req, delegationWords) != "" {
			return true, true
		}
		b := c.Branch
		if b == nil || b.Fork == nil {
			return false, recorded
		}
		c, seq = b.Fork.Parent, b.Fork.Node.Seq
	}
	return false, recorded
}

// delegationWords are how a request asks for a sub-agent.
var delegationWords = []string{"sub-agent", "subagent", "sub agent", "fork yourself"}

// oneBranchPromise: the branch's calls made by the forking agent itself.
type oneBranchPromise struct {
	Tools []string // the tools the branch called, sorted, once each
}

// expectForkOneBranch: no one-branch fork from the agent, and the agent
// itself calls the tools the branch called.
func expectForkOneBranch(p oneBranchPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	forks := forksBy(next, f.Agent)
	for _, fk := range forks {
		if len(fk.Branches) == 1 {
			return verdict(false, "the fork at %s from %s still has one branch", fk.Node.ID(), f.Agent)
		}
	}
	if len(p.Tools) > 0 && callsOf(ownCalls(next, f.Agent), p.Tools) == 0 {
		return verdict(false, "no one-branch fork from %s, but %s made no %s call of its own either", f.Agent, f.Agent, strings.Join(p.Tools, ", "))
	}
	return verdict(true, "no one-branch fork from %s (%s in the new run)", f.Agent, plural(len(forks), "fork", "forks"))
}

// joinWindow returns the nodes of fork f's parent conversation in the
// window of DESIGN §8's join.repeat: after the join, up to the parent's
// next fork or the end of the turn, whichever comes first.
func joinWindow(f *graph.Fork) []*graph.Node {
	if f.Join == nil || f.Parent == nil {
		return nil
	}
	nodes := f.Parent.Nodes
	i := sort.Search(len(nodes), func(i int) bool { return nodes[i].Seq > f.Join.Seq })
	j := i
	for j < len(nodes) && nodes[j].Kind != record.KindUser && nodes[j].Kind != record.KindFork {
		j++
	}
	return nodes[i:j]
}

// repeat is a call of the parent in a join's window and the branch call
// it repeats.
type repeat struct{ call, orig *graph.Node }

// joinRepeats lists the calls in f's join window that a joined branch
// (with its own branches) already made, in order, each with the first
// branch call it repeats.
func (p *pass) joinRepeats(f *graph.Fork) []repeat {
	window := joinWindow(f)
	if len(window) == 0 {
		return nil
	}
	made := map[string]*graph.Node{}
	for _, b := range f.Branches {
		for _, n := range subtreeCalls(p.Graph, b.Conv) {
			if k := p.call(n).key; made[k] == nil {
				made[k] = n
			}
		}
	}
	var out []repeat
	for i, n := range window {
		if isCall(n) && p.argsKnown(n) { // empty or redacted arguments repeat nothing known
			if o := made[p.call(n).key]; o != nil && !p.readBeforeEdit(n, window[i+1:]) {
				out = append(out, repeat{n, o})
			}
		}
	}
	return out
}

// editTools are Claude Code's tools that change a file, each of which
// refuses a file its agent has not read itself first.
var editTools = []string{"Edit", "MultiEdit", "Write", "NotebookEdit"}

// readBeforeEdit reports whether call n is a Read that a later call of
// the same conversation (among after) needs: an Edit or Write of the same
// file. Claude Code refuses to change a file its agent has not read, so
// the parent reading again what a branch read is the stack's rule, not a
// branch that forgot to return it.
func (p *pass) readBeforeEdit(n *graph.Node, after []*graph.Node) bool {
	if n.Tool.Name != "Read" && n.Tool.Name != "NotebookRead" {
		return false
	}
	file := editPath(p.call(n))
	if file == "" {
		return false
	}
	for _, m := range after {
		if isCall(m) && contains(editTools, m.Tool.Name) && editPath(p.call(m)) == file {
			return true
		}
	}
	return false
}

// editPath is the file a Read, Edit or Write call names, cleaned.
func editPath(a *callArgs) string {
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if v := strings.TrimSpace(a.fields[k]); v != "" {
			return path.Clean(v)
		}
	}
	return ""
}

// repeatPrice prices calls repeated after a join by what they added: each
// call's tool time and its result (bytes/4 tokens, the context it added),
// plus the model time of the steps that made only repeats. The rest of
// the context those steps sent is not the repeat's cost: it was there
// either way.
func repeatPrice(calls []*graph.Node) (findings.Price, time.Duration, int64) {
	var price findings.Price
	var d time.Duration
	var added int64
	repeated := map[*graph.Node]bool{}
	for _, n := range calls {
		repeated[n] = true
	}
	stepDone := map[int64]bool{}
	for _, n := range calls {
		price.Calls++
		d += n.Duration()
		added += int64(len(n.Tool.Result) / 4)
		s := llmStepOf(n)
		if s == nil || stepDone[s.Seq] {
			continue
		}
		stepDone[s.Seq] = true
		only := true
		nodes := s.Conv.Nodes
		for i := sort.Search(len(nodes), func(i int) bool { return nodes[i].Seq > s.Seq }); i < len(nodes) && nodes[i].Kind != record.KindLLM; i++ {
			if isCall(nodes[i]) && !repeated[nodes[i]] {
				only = false
				break
			}
		}
		if only {
			d += s.Duration()
		}
	}
	price.TokensIn = added
	price.ElapsedMS = d.Milliseconds()
	return price, d, added
}

func runJoinRepeat(p *pass) {
	if noForks(p) {
		return
	}
	joins := 0
	for _, f := range p.Forks() {
		if f.Join == nil {
			continue
		}
		joins++
		rs := p.joinRepeats(f)
		if len(rs) == 0 {
			continue
		}
		var repeats, evidence []*graph.Node
		var names []string
		for _, r := range rs {
			repeats = append(repeats, r.call)
			evidence = append(evidence, r.call, r.orig)
			names = append(names, r.call.Tool.Name+" "+p.call(r.call).summary)
		}
		price, d, added := repeatPrice(repeats)
		price.Basis = fmt.Sprintf("%s repeated after the join: %s of tools (and of model steps that made only repeats); their results added %d tokens (bytes/4) to the context", plural(len(repeats), "call", "calls"), graph.FormatDuration(d), added)
		agent := forkingAgent(f)
		var tools []string
		for _, n := range repeats {
			tools = append(tools, n.Tool.Name)
		}
		p.Report(findings.Finding{
			Agent:   agent,
			Message: fmt.Sprintf("after the join at %s, %s repeated %s that a branch had already made (%s)", f.Join.ID(), agent, plural(len(repeats), "call", "calls"), strings.Join(names, ", ")),
			Nodes:   ids(append([]*graph.Node{f.Join}, evidence...)...),
			Fix: p.Owner(agent, "return", "fork", "branch", "sub-agent").Fix(p.words("write into each branch's instructions what it must return (the figures or text it read), so the join answers it",
				"write into each sub-agent's prompt what it must return (the figures or text it read), so its answer carries them")),
			Next:  "no call after the join that a branch already made",
			Price: price,
			Shape: fmt.Sprintf("%s after join", strings.Join(uniq(tools), ",")),
		})
	}
	p.Clear("%s examined", plural(joins, "join", "joins"))
}

// expectJoinRepeat: no call in the window of a join of the agent's forks
// repeats a call a joined branch made.
func expectJoinRepeat(f findings.Finding, next *graph.Run) findings.Verdict {
	p := laterPass(next)
	forks := forksBy(next, f.Agent)
	for _, fk := range forks {
		if rs := p.joinRepeats(fk); len(rs) > 0 {
			return verdict(false, "%s after the join at %s repeats a call a branch made", rs[0].call.ID(), fk.Join.ID())
		}
	}
	return verdict(true, "no call after a join repeats a branch's call (%s from %s examined)", plural(len(forks), "fork", "forks"), f.Agent)
}

func lastNode(c *graph.Conversation) *graph.Node {
	if c == nil || len(c.Nodes) == 0 {
		return nil
	}
	return c.Nodes[len(c.Nodes)-1]
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// uneven applies fork.uneven's test to f with the thresholds in o: the
// slowest branch at least uneven-ratio × the median of its siblings and at
// least uneven-min-gap longer. second is the second slowest duration.
func uneven(f *graph.Fork, ratio float64, gap time.Duration) (slowest, second, med time.Duration, ok bool) {
	if len(f.Branches) < 2 || f.Slowest == nil {
		return 0, 0, 0, false
	}
	var others []time.Duration
	for _, b := range f.Branches {
		if b == f.Slowest {
			continue
		}
		others = append(others, b.Duration)
		second = max(second, b.Duration)
	}
	med = median(others)
	slowest = f.Slowest.Duration
	return slowest, second, med, float64(slowest) >= ratio*float64(med) && slowest-med >= gap
}

func runForkUneven(p *pass) {
	if noForks(p) {
		return
	}
	ratio, gap := unevenRatio.Get(p.Options), unevenMinGap.Get(p.Options)
	examined := 0
	for _, f := range p.Forks() {
		if len(f.Branches) < 2 || f.Slowest == nil {
			continue
		}
		examined++
		slow, second, med, ok := uneven(f, ratio, gap)
		if !ok {
			continue
		}
		price := findings.Price{ElapsedMS: (slow - second).Milliseconds(),
			Basis: fmt.Sprintf("slowest %s − second slowest %s = %s", graph.FormatDuration(slow), graph.FormatDuration(second), graph.FormatDuration(slow-second))}
		agent := forkingAgent(f)
		p.Report(findings.Finding{
			Agent: agent,
			Message: fmt.Sprintf("branch %q of the fork at %s took %s, %.1f× the median of its siblings (%s); the join waited for it",
				f.Slowest.Name, f.Node.ID(), graph.FormatDuration(slow), float64(slow)/float64(max(med, time.Millisecond)), graph.FormatDuration(med)),
			Nodes: ids(f.Node, firstNode(f.Slowest.Conv), f.Join),
			Fix: p.Owner(agent, "fork", "branch", "sub-agent").Fix(fmt.Sprintf(p.words("split work like %q's into several branches of similar size",
				"split work like %q's among several sub-agents of similar size, started in one response"), f.Slowest.Name)),
			Next:    fmt.Sprintf("branch durations close together (the slowest under %.0f× the median)", ratio),
			Price:   price,
			Shape:   fmt.Sprintf("slowest on %s of %d", f.Slowest.Agent, len(f.Branches)),
			Promise: unevenPromise{Ratio: ratio, Gap: gap},
		})
	}
	clearMultiBranch(p, examined)
}

// unevenPromise: forks with close branch durations, by the thresholds the
// finding was found with.
type unevenPromise struct {
	Ratio float64
	Gap   time.Duration
}

// expectForkUneven: the agent forks two or more branches and no such fork
// is uneven by the thresholds that found the finding.
func expectForkUneven(p unevenPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	checked := 0
	for _, fk := range forksBy(next, f.Agent) {
		if len(fk.Branches) < 2 {
			continue
		}
		checked++
		if slowest, _, med, ok := uneven(fk, p.Ratio, p.Gap); ok {
			return verdict(false, "the fork at %s: slowest branch %s against a median of %s", fk.Node.ID(), graph.FormatDuration(slowest), graph.FormatDuration(med))
		}
	}
	if checked == 0 {
		return verdict(false, "no fork from %s with 2 or more branches in the new run", f.Agent)
	}
	return verdict(true, "branch durations close together in %s from %s", plural(checked, "fork", "forks"), f.Agent)
}

// overlapCall is a call a branch made that an earlier sibling had made.
type overlapCall struct {
	call, first *graph.Node // the copy, and the sibling's call it copies
	owner, by   *graph.Branch
}

// overlaps lists the calls of f's branches (each branch's calls once) that
// an earlier sibling, in declared order, already made.
func (p *pass) overlaps(f *graph.Fork) []overlapCall {
	seen := map[string]*graph.Branch{}
	firstCall := map[string]*graph.Node{}
	named := map[*graph.Branch]map[string]bool{} // the paths each branch's instructions name
	times := map[string]int{}                    // how many branches' instructions name a path
	for _, b := range f.Branches {
		named[b] = map[string]bool{}
		for _, t := range pathTokens(b.Instructions) {
			if !named[b][t] {
				times[t]++
			}
			named[b][t] = true
		}
	}
	// The fork's common input: a file the instructions of two or more
	// branches name (the change under review, handed to each reviewer).
	// Any branch reading it reads what the fork was about, not a
	// sibling's share of the work.
	common := map[string]bool{}
	for t, k := range times {
		if k >= 2 && strings.Contains(t, "/") {
			common[t] = true
		}
	}
	var out []overlapCall
	for _, b := range f.Branches {
		mine := map[string]bool{}
		for _, n := range convCalls(b.Conv) {
			if !p.argsKnown(n) {
				continue // empty or redacted arguments: nothing says it was the same call
			}
			k := p.call(n).key
			if mine[k] {
				continue // a branch repeating itself is not an overlap
			}
			mine[k] = true
			if owner, ok := seen[k]; ok && owner != b {
				if !sameInputs(p.call(n), owner, b, named, common) {
					out = append(out, overlapCall{call: n, first: firstCall[k], owner: owner, by: b})
				}
				continue
			}
			seen[k], firstCall[k] = b, n
		}
	}
	return out
}

// sameInputs reports whether two siblings making call a is the fork's
// design, not overlapping work: they were given the same instructions
// (asked to compete, or to check each other), or the file the call reads
// is named in the instructions of both, or is the fork's common input
// (named in the instructions of two or more of its branches), or lies in
// the folder of a file both were given or of a common input (reviewers
// split by aspect, each given the same change). Only work no two prompts
// assigned is overlap.
func sameInputs(a *callArgs, x, y *graph.Branch, named map[*graph.Branch]map[string]bool, common map[string]bool) bool {
	if strings.TrimSpace(x.Instructions) != "" && strings.TrimSpace(x.Instructions) == strings.TrimSpace(y.Instructions) {
		return true
	}
	var shared []string // the paths both prompts name, and the common inputs
	for q := range named[x] {
		if named[y][q] && strings.Contains(q, "/") {
			shared = append(shared, q)
		}
	}
	for q := range common {
		shared = append(shared, q)
	}
	for _, q := range callPaths(a) {
		if named[x][q] && named[y][q] || common[q] {
			return true
		}
		for _, s := range shared {
			if dir := path.Dir(s); dir != "." && dir != "/" && (q == dir || inFolder(q, dir)) {
				return true // beside the files both were given: the same code, read for each one's aspect
			}
		}
	}
	return false
}

func runForkOverlap(p *pass) {
	if noForks(p) {
		return
	}
	examined := 0
	for _, f := range p.Forks() {
		if len(f.Branches) < 2 {
			continue
		}
		examined++
		ov := p.overlaps(f)
		if len(ov) == 0 {
			continue
		}
		var dups, evidence []*graph.Node
		var names, tools []string
		pairs := map[string]bool{}
		for _, o := range ov {
			n := o.call
			dups = append(dups, n)
			evidence = append(evidence, o.first, n)
			names = append(names, fmt.Sprintf("%s %s in %q and %q", n.Tool.Name, p.call(n).summary, o.owner.Name, o.by.Name))
			tools = append(tools, n.Tool.Name)
			pairs[o.owner.Agent+"+"+o.by.Agent] = true
		}
		price, d := callsPrice(dups)
		price.Basis = fmt.Sprintf("%s made twice: the copies' model steps and tools took %s and %d tokens in, %d out", plural(len(dups), "call", "calls"), graph.FormatDuration(d), price.TokensIn, price.TokensOut)
		agent := forkingAgent(f)
		var pairList []string
		for k := range pairs {
			pairList = append(pairList, k)
		}
		p.Report(findings.Finding{
			Agent:   agent,
			Message: fmt.Sprintf("branches of the fork at %s made the same %s: %s", f.Node.ID(), plural(len(dups), "call", "calls"), strings.Join(names, "; ")),
			Nodes:   ids(append([]*graph.Node{f.Node}, evidence...)...),
			Fix: p.Owner(agent, "fork", "branch", "sub-agent").Fix(p.words("divide the work by subject, naming in each branch's instructions the files or items only it covers",
				"divide the work by subject, naming in each sub-agent's prompt the files or items only it covers")),
			Next:  "disjoint subjects: no call made by two branches",
			Price: price,
			Shape: fmt.Sprintf("%s shared by %s", strings.Join(uniq(tools), ","), strings.Join(uniq(pairList), ",")),
		})
	}
	clearMultiBranch(p, examined)
}

// expectForkOverlap: no fork from the agent has two branches making the
// same call.
func expectForkOverlap(f findings.Finding, next *graph.Run) findings.Verdict {
	p := laterPass(next)
	forks := forksBy(next, f.Agent)
	for _, fk := range forks {
		if ov := p.overlaps(fk); len(ov) > 0 {
			return verdict(false, "branches %q and %q of the fork at %s both made %s", ov[0].owner.Name, ov[0].by.Name, fk.Node.ID(), p.call(ov[0].call).key)
		}
	}
	return verdict(true, "no call made by two sibling branches (%s from %s examined)", plural(len(forks), "fork", "forks"), f.Agent)
}

func runForkInheritUncached(p *pass) {
	if noForks(p) {
		return
	}
	inherit := 0
	for _, f := range p.Forks() {
		if f.Context != "inherit" && f.Context != "" {
			continue
		}
		inherit++
		agent := forkingAgent(f)
		var other []*graph.Branch
		for _, b := range f.Branches {
			if b.Agent != agent {
				other = append(other, b)
			}
		}
		caller := llmBefore(f.Node)
		if len(other) < inheritMinBranches.Get(p.Options) || caller == nil || caller.LLM == nil {
			continue
		}
		inherited := caller.LLM.Usage.In + caller.LLM.Usage.Out
		if inherited < inheritMinTokens.Get(p.Options) {
			continue
		}
		price := findings.Price{TokensIn: int64(len(other)) * inherited, ConversationStarts: len(other),
			Basis: fmt.Sprintf("%d branches on another agent × %d inherited tokens (%s: %d in + %d out) = %d tokens sent without a cacheable prefix (expected from the request's structure, not measured)",
				len(other), inherited, caller.ID(), caller.LLM.Usage.In, caller.LLM.Usage.Out, int64(len(other))*inherited)}
		nodes := []*graph.Node{caller, f.Node}
		for _, b := range other {
			if n := firstLLM(b.Conv, 0); n != nil {
				nodes = append(nodes, n)
				addCached(&price, n)
			}
		}
		if price.CachedReported {
			price.Basis += fmt.Sprintf("; the provider reported %d cached tokens on the branches' first calls", price.CachedTokens)
		}
		var names []string
		for _, b := range other {
			names = append(names, fmt.Sprintf("%s on %s", b.Name, b.Agent))
		}
		p.Report(findings.Finding{
			Agent:   agent,
			Message: fmt.Sprintf("the fork at %s used context inherit for %d branches on another agent (%s) with %d tokens of history; each branch starts with a different system prompt, so that history cannot come from a prompt cache", f.Node.ID(), len(other), strings.Join(names, ", "), inherited),
			Nodes:   ids(nodes...),
			Fix:     p.Owner(agent, "context", "fork").Fix("fork with context compact (or none, writing the paths into the instructions) when the branches run another agent"),
			Next:    "fork (compact context) or fork (none context)",
			Price:   price,
			Shape:   fmt.Sprintf("inherit to %s", strings.Join(uniq(branchAgents(other)), ",")),
		})
	}
	if inherit == 0 {
		p.NotApplicable("no fork with context inherit")
		return
	}
	p.Clear("%s with context inherit examined", plural(inherit, "fork", "forks"))
}

// expectForkInheritUncached: every fork from the agent with a branch on
// another agent uses context compact or none.
func expectForkInheritUncached(f findings.Finding, next *graph.Run) findings.Verdict {
	checked := 0
	for _, fk := range forksBy(next, f.Agent) {
		other := false
		for _, b := range fk.Branches {
			other = other || b.Agent != f.Agent
		}
		if !other {
			continue
		}
		checked++
		if fk.Context != "compact" && fk.Context != "none" {
			return verdict(false, "the fork at %s to another agent still uses context %s", fk.Node.ID(), orDash(fk.Context))
		}
	}
	if checked == 0 {
		return verdict(false, "no fork from %s to another agent in the new run", f.Agent)
	}
	return verdict(true, "%s from %s to another agent, all with context compact or none", plural(checked, "fork", "forks"), f.Agent)
}

func branchAgents(bs []*graph.Branch) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Agent)
	}
	return out
}

// llmBefore is the llm node that made a fork or hand-off node.
func llmBefore(n *graph.Node) *graph.Node { return llmStepOf(n) }

// callsPrice prices calls made in vain: each call's tool time plus, once per
// model step that asked for them, that step's time and tokens.
func callsPrice(calls []*graph.Node) (findings.Price, time.Duration) {
	var price findings.Price
	var d time.Duration
	steps := map[int64]bool{}
	for _, n := range calls {
		price.Calls++
		d += n.Duration()
		if s := llmStepOf(n); s != nil && !steps[s.Seq] {
			steps[s.Seq] = true
			d += s.Duration()
			addUsage(&price, s)
		}
	}
	price.ElapsedMS = d.Milliseconds()
	return price, d
}

// clearMultiBranch closes a rule that looks only at forks of two or more
// branches: not applicable without one, else clear with the count.
func clearMultiBranch(p *pass, examined int) {
	if examined == 0 {
		p.NotApplicable("no fork with 2 or more branches")
		return
	}
	p.Clear("%s with 2 or more branches examined", plural(examined, "fork", "forks"))
}
