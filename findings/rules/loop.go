package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
)

// tool.failure-loop's thresholds.
var (
	failureLoopMin  = &findings.Threshold[int]{Key: "failure-loop-min", Text: "times the same call must fail in a conversation to be a loop", Def: 3, Min: 2}
	failureLoopTail = &findings.Threshold[int]{Key: "failure-loop-tail", Text: "last calls of a conversation that ran out of steps, most of which must have failed", Def: 5, Min: 1}
)

// ToolFailureLoop: the same failing call repeated, or a conversation that
// ran out of steps on failing calls.
var ToolFailureLoop = &findings.Rule{
	ID:       "tool.failure-loop",
	Area:     findings.Tools,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "failure loop",
		Detect: "in one conversation, the same call (same tool, same arguments once normalised) failing at least {failure-loop-min} times, " +
			"with no success of it in between; or a conversation that ran out of steps (its step, turn or token limit ended it) with more " +
			"than half of its last {failure-loop-tail} calls failing, two at least (a branch that did is this rule's, not branch.failed's). A call whose arguments are empty or redacted is never the same as another. " +
			"A conversation that ran out of steps is one finding, naming the call it repeated, if any.",
		Price: "the repeated calls' time and tokens: every failing call after the first of its kind (its tool time, and the model step that made it), " +
			"or, for a conversation that ran out of steps, the failing calls of its last stretch and the model steps that made them.",
		Fix: "what the tool says when it fails (its error should say what to change: the path that exists, the argument it wants), and the agent's " +
			"instructions (its prompt file, CLAUDE.md, AGENTS.md, its instructions in code): after a call fails twice the same way, change the call " +
			"or stop and answer with what it has.",
		Next: "no call failing {failure-loop-min} times in a conversation, and the conversation ending with an answer.",
	},
	Options: []findings.Option{failureLoopMin, failureLoopTail},
	Run:     run(runToolFailureLoop),
	Expect:  expectWith(expectToolFailureLoop),
}

// loopPromise: the agent and the tools of the loop.
type loopPromise struct {
	Agent string
	Tools []string
}

// ranOut reports whether conversation c ended on its step, turn or token
// limit: its last node, or its branch, is exhausted.
func ranOut(c *graph.Conversation) bool {
	if c.Branch != nil && c.Branch.Status == record.StatusExhausted {
		return true
	}
	last := lastNode(c)
	return last != nil && last.Status == record.StatusExhausted
}

// ranOutOnFailures reports whether conversation c, whose tool calls are
// calls, ran out of steps on failing calls: more than half of its last
// tail calls failed, and at least two did. One failure before the limit
// is the limit's doing (a budget of one turn), not a loop: that is
// branch.failed's, cause limit.
func ranOutOnFailures(c *graph.Conversation, calls []*graph.Node, tail int) bool {
	if !ranOut(c) {
		return false
	}
	last := calls
	if len(last) > tail {
		last = last[len(last)-tail:]
	}
	bad := 0
	for _, n := range last {
		if n.Failed() {
			bad++
		}
	}
	return bad >= 2 && 2*bad > len(last)
}

// failRun is one call failing again and again in a conversation.
type failRun struct {
	key   string
	calls []*graph.Node
}

// repeats lists the calls of c that failed at least min times with no
// success of the same call in between, in order of their first failure.
func (p *pass) repeats(c *graph.Conversation, min int) []*failRun {
	open := map[string]*failRun{}
	var out []*failRun
	for _, n := range c.Nodes {
		if !isCall(n) || !p.argsKnown(n) {
			continue
		}
		k := p.call(n).key
		if !n.Failed() {
			delete(open, k) // the call worked: what failed before was fixed
			continue
		}
		r := open[k]
		if r == nil {
			r = &failRun{key: k}
			open[k] = r
		}
		r.calls = append(r.calls, n)
		if len(r.calls) == min {
			out = append(out, r)
		}
	}
	return out
}

func runToolFailureLoop(p *pass) {
	min, tail := failureLoopMin.Get(p.Options), failureLoopTail.Get(p.Options)
	failing, convs := 0, 0
	for _, c := range p.Graph.Conversations {
		var calls []*graph.Node
		for _, n := range c.Nodes {
			if isCall(n) {
				calls = append(calls, n)
				if n.Failed() {
					failing++
				}
			}
		}
		if len(calls) == 0 {
			continue
		}
		convs++
		reps := p.repeats(c, min)
		if ranOutOnFailures(c, calls, tail) {
			p.Report(p.ranOutFinding(c, calls, reps))
			continue
		}
		for _, r := range reps {
			p.Report(p.repeatFinding(c, r))
		}
	}
	if failing == 0 {
		p.NotApplicable("no tool call failed in this run")
		return
	}
	p.Clear("%s in %s examined", plural(failing, "failing call", "failing calls"), plural(convs, "conversation", "conversations"))
}

// loopPrice is what calls cost: their tool time and the model steps that
// made them (a step charged once).
func loopPrice(calls []*graph.Node) findings.Price {
	var price findings.Price
	var d time.Duration
	seen := map[*graph.Node]bool{}
	for _, n := range calls {
		price.Calls++
		d += n.Duration()
		if s := llmStepOf(n); s != nil && !seen[s] {
			seen[s] = true
			d += s.Duration()
			addUsage(&price, s)
		}
	}
	price.ElapsedMS = d.Milliseconds()
	return price
}

// errorOf is what a failing call returned, short.
func errorOf(n *graph.Node) string {
	text := toolError(n)
	if n.Tool != nil && len(n.Tool.Result) > len(text) && strings.HasPrefix(n.Tool.Result, strings.TrimSpace(text)) {
		text = n.Tool.Result // the error's first line, and what follows it ("Exit code 1", then npm's message)
	}
	return truncate(strings.Join(strings.Fields(text), " "), 100)
}

func (p *pass) repeatFinding(c *graph.Conversation, r *failRun) findings.Finding {
	first := r.calls[0]
	agent := first.Agent
	what := first.Tool.Name + " " + p.call(first).summary
	price := loopPrice(r.calls[1:])
	price.Basis = fmt.Sprintf("%s after the first failure: %s of tools and model steps, %d tokens in, %d out",
		plural(len(r.calls)-1, "repeat", "repeats"), graph.FormatDuration(price.Elapsed()), price.TokensIn, price.TokensOut)
	o := p.Owner(agent, "fail", "error", "retry", first.Tool.Name)
	return findings.Finding{
		Agent: agent,
		Message: fmt.Sprintf("%s in %s failed %d times with the same arguments (%s), each time with %q",
			what, where(c), len(r.calls), strings.Join(ids(r.calls...), ", "), errorOf(first)),
		Nodes:   ids(r.calls...),
		Fix:     p.loopFix(o, []string{first.Tool.Name}, errorOf(first), "change a call that failed, or stop and answer with what it has, rather than repeat it"),
		Next:    fmt.Sprintf("%s not failing %d times in %s", what, failureLoopMin.Def, where(c)),
		Price:   price,
		Cause:   findings.CauseTool,
		Shape:   fmt.Sprintf("%s repeated %s in %s", agent, first.Tool.Name, convShape(c)),
		Promise: loopPromise{Agent: agent, Tools: []string{first.Tool.Name}},
	}
}

func (p *pass) ranOutFinding(c *graph.Conversation, calls []*graph.Node, reps []*failRun) findings.Finding {
	// the last stretch of failures: from the first failure after the
	// conversation's last successful call
	start := 0
	for i, n := range calls {
		if !n.Failed() {
			start = i + 1
		}
	}
	stretch := calls[start:]
	var failed []*graph.Node
	for _, n := range calls {
		if n.Failed() {
			failed = append(failed, n)
		}
	}
	if len(stretch) == 0 { // the last call worked, the ones before failed
		stretch = failed
	}
	agent := stretch[0].Agent
	var tools []string
	for _, n := range stretch {
		tools = append(tools, n.Tool.Name)
	}
	tools = uniq(tools)
	price := loopPrice(stretch)
	price.Basis = fmt.Sprintf("%s failing before the limit: %s of tools and model steps, %d tokens in, %d out",
		plural(len(stretch), "call", "calls"), graph.FormatDuration(price.Elapsed()), price.TokensIn, price.TokensOut)
	why := ""
	if last := lastNode(c); last != nil && last.Error != "" {
		why = ": " + truncate(last.Error, 80)
	} else if c.Branch != nil {
		if w := branchWhy(c.Branch).why; w != "" {
			why = ": " + truncate(w, 80)
		}
	}
	msg := fmt.Sprintf("%s ran out of steps%s; %d of its %s failed, the last %d in a row (%s, from %s to %s), the first with %q",
		where(c), why, len(failed), plural(len(calls), "call", "calls"), len(stretch), strings.Join(tools, ", "),
		stretch[0].ID(), stretch[len(stretch)-1].ID(), errorOf(stretch[0]))
	if len(reps) > 0 {
		r := reps[0]
		msg += fmt.Sprintf("; %s %s failed %d times with the same arguments", r.calls[0].Tool.Name, p.call(r.calls[0]).summary, len(r.calls))
	}
	o := p.Owner(agent, "fail", "error", "retry", tools[0])
	nodes := append([]*graph.Node{}, stretch...)
	if last := lastNode(c); last != nil {
		nodes = append(nodes, last)
	}
	return findings.Finding{
		Agent:   agent,
		Message: msg,
		Nodes:   ids(nodes...),
		Fix:     p.loopFix(o, tools, errorOf(stretch[0]), "stop after two failures of the same kind and answer with what it has (or say what it could not find), rather than spend its steps on them"),
		Next:    fmt.Sprintf("%s ending with an answer, and no call failing %d times", where(c), failureLoopMin.Def),
		Price:   price,
		Cause:   findings.CauseLimit,
		Shape:   fmt.Sprintf("%s ran out on failing %s in %s", agent, strings.Join(tools, ","), convShape(c)),
		Promise: loopPromise{Agent: agent, Tools: tools},
	}
}

// loopFix is tool.failure-loop's fix: the tool's error text when the tool
// is the user's (a command tool of agents.yaml, an MCP server's, a function
// tool of an SDK app), and the agent's instructions, in the stack's terms.
func (p *pass) loopFix(o findings.Owner, tools []string, errText, change string) findings.Fix {
	var own []string
	for _, t := range tools {
		if p.userTool(t) {
			own = append(own, t)
		}
	}
	if len(own) == 0 {
		// the stack's own tool (read_file, Read, Bash, shell): its error
		// is not the user's to word
		return findings.Fix{Location: o.Location, Text: o.Tell(change) + fmt.Sprintf(" (%s answered %q)", strings.Join(tools, ", "), errText)}
	}
	return findings.Fix{Location: o.Location, Text: fmt.Sprintf("Make %s's error say what to change when it fails like this (it returned %q); and %s",
		strings.Join(own, ", "), errText, o.Clause("to "+change))}
}

// userTool reports whether tool name is the user's to change: a command
// tool of our runtime's agents.yaml, an MCP server's tool, or a function
// tool of an app whose agents are built in code.
func (p *pass) userTool(name string) bool {
	switch {
	case ours(p):
		return !snapshot.IsBuiltinTool(name)
	case p.Profile.InstructionsInCode:
		return true
	}
	return strings.HasPrefix(name, "mcp__") || strings.HasPrefix(name, "mcp_")
}

// expectToolFailureLoop: the agent calls those tools in the later run, no
// call of theirs fails failure-loop-min times in a conversation, and no
// conversation of the agent runs out of steps.
func expectToolFailureLoop(pr loopPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	lp := laterPass(next)
	used := 0
	for _, n := range next.Nodes {
		if isCall(n) && n.Agent == pr.Agent && contains(pr.Tools, n.Tool.Name) {
			used++
		}
	}
	if used == 0 {
		return verdict(false, "%s made no %s call in the new run", pr.Agent, strings.Join(pr.Tools, " or "))
	}
	for _, c := range next.Conversations {
		for _, r := range lp.repeats(c, failureLoopMin.Def) {
			if r.calls[0].Agent == pr.Agent {
				return verdict(false, "%s %s failed %d times in %s (%s)", r.calls[0].Tool.Name, lp.call(r.calls[0]).summary, len(r.calls), where(c), strings.Join(ids(r.calls...), ", "))
			}
		}
		if ranOut(c) && firstAgentOf(c) == pr.Agent {
			return verdict(false, "%s ran out of steps again", where(c))
		}
	}
	return verdict(true, "%s made %s of %s, none failing %d times, and no conversation of it ran out of steps", pr.Agent, plural(used, "call", "calls"), strings.Join(pr.Tools, ", "), failureLoopMin.Def)
}

// firstAgentOf is the agent of conversation c's first model call.
func firstAgentOf(c *graph.Conversation) string {
	for _, n := range c.Nodes {
		if n.Kind == record.KindLLM {
			return n.Agent
		}
	}
	return ""
}
