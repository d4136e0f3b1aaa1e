package rules

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
)

// HandoffEarly: A handed off before doing its part, then got it back.
var HandoffEarly = &findings.Rule{
	ID:       "handoff.early",
	Area:     findings.Handoffs,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "early hand-off",
		Detect: "agent A hands the conversation to B while A has made no tool call since the turn began, and later in the " +
			"same turn A gets the conversation back and makes calls: its own part was not done when it left.",
		Price: "B's work until A is back: B's tool calls, the tokens of every model call in between, and the time from the hand-off to A's return.",
		Fix:   "the outgoing agent's prompt: do its own part first, then hand off.",
		Next:  "A's own calls, then the hand-off.",
	},
	Run:    run(runHandoffEarly),
	Expect: expectWith(expectHandoffEarly),
}

// HandoffLoop: A→B, B→A, A→B in one turn.
var HandoffLoop = &findings.Rule{
	ID:       "handoff.loop",
	Area:     findings.Handoffs,
	Severity: findings.Error,
	Doc: findings.Doc{
		Title:  "hand-off loop",
		Detect: "hand-offs A→B, B→A, A→B within one turn: two prompts claim the same job.",
		Price:  "each switch's first model call's input tokens, sent under a new system prompt and tool array: a conversation start (an expected cache miss) per switch.",
		Fix:    "both agents' prompts, so exactly one of them owns the job.",
		Next:   "one hand-off, or none.",
	},
	Run:    run(runHandoffLoop),
	Expect: expectWith(expectHandoffLoop),
}

// forAnswerMaxCalls is handoff.for-answer's threshold.
var forAnswerMaxCalls = &findings.Threshold[int]{Key: "for-answer-max-calls", Text: "most calls of the target before its final answer", Def: 2, Min: 0}

// HandoffForAnswer: a hand-off spent on one question.
var HandoffForAnswer = &findings.Rule{
	ID:       "handoff.for-answer",
	Area:     findings.Handoffs,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "hand-off for an answer",
		Detect: "A hands to B after making calls of its own in the turn, B ends the turn with a final answer within {for-answer-max-calls} calls, " +
			"and B hands back to A at the next turn, or the run ends: A wanted an answer and spent the conversation on it. " +
			"A hand-off back to the agent that handed A the conversation earlier in the same turn is A going home, not a question, and is not counted; " +
			"nor is a hand-off whose answer took at least {specialist-min-calls} calls of tools that mark B as a specialist (delegation.missed-specialist would flag A making them).",
		Price: "one conversation start: the input tokens of B's first model call under its new system prompt.",
		Fix:   "the outgoing agent's prompt: make the call or two B made itself and keep the conversation (agents.yaml: give A the tools it lacks); a one-branch fork to B would be fork.one-branch's mistake.",
		Next:  "A making B's calls itself, and no hand-off.",
	},
	Options: []findings.Option{forAnswerMaxCalls, specialistMinCalls},
	Run:     run(runHandoffForAnswer),
	Expect:  expectWith(expectHandoffForAnswer),
}

// specialistMinCalls is delegation.missed-specialist's threshold.
var specialistMinCalls = &findings.Threshold[int]{Key: "specialist-min-calls", Text: "calls of a specialist's tool the agent made itself", Def: 2, Min: 1}

// DelegationMissedSpecialist: the agent did a reachable specialist's job.
var DelegationMissedSpecialist = &findings.Rule{
	ID:       "delegation.missed-specialist",
	Area:     findings.Delegation,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "specialist never used",
		Detect: "agent A can reach specialist S (S is in A's handoffs or fork agents), S never runs in the run, and A itself called " +
			"a tool that S declares at least {specialist-min-calls} times. Built-in workspace tools (read_file, list_dir, find_files, " +
			"write_file) mark no specialist. When several specialists match the same calls, one finding names the one whose tools " +
			"cover most of them, and no call is priced twice.",
		Price: "the calls A made of S's tools: their time (model step plus tool) and the tokens of the model steps.",
		Fix:   "the deciding agent's prompt: say when to hand off or fork to S, in this domain's terms.",
		Next:  "a fork or hand-off to S, and S's tools called by S.",
	},
	Options: []findings.Option{specialistMinCalls},
	Run:     run(runMissedSpecialist),
	Expect:  expectWith(expectMissedSpecialist),
}

// handoffPromise names the two agents of a hand-off finding.
type handoffPromise struct{ From, To string }

// handoffsIn lists the indexes of hand-off nodes of conversation c.
func handoffsIn(c *graph.Conversation) []int {
	var out []int
	for i, n := range c.Nodes {
		if n.Kind == record.KindHandoff && n.Handoff != nil {
			out = append(out, i)
		}
	}
	return out
}

func noHandoffs(p *pass) bool {
	if len(p.Graph.Handoffs) == 0 {
		p.NotApplicable("no hand-off in this run")
		return true
	}
	return false
}

func runHandoffEarly(p *pass) {
	if noHandoffs(p) {
		return
	}
	for _, c := range p.Graph.Conversations {
		turn := turnOf(c)
		hs := handoffsIn(c)
		for k, i := range hs {
			h := c.Nodes[i]
			a := h.Handoff.From
			if ownCallInTurn(c, turn, i, a) {
				continue
			}
			// A's return within the same turn, then A's calls.
			back := -1
			for _, j := range hs[k+1:] {
				if turn[j] != turn[i] {
					break
				}
				if c.Nodes[j].Handoff.To == a {
					back = j
					break
				}
			}
			if back < 0 {
				continue
			}
			var later []*graph.Node
			for _, n := range c.Nodes[back+1:] {
				if n.Kind == record.KindUser || n.Kind == record.KindHandoff {
					break
				}
				if isCall(n) && n.Agent == a {
					later = append(later, n)
				}
			}
			if len(later) == 0 {
				continue
			}
			var price findings.Price
			for _, n := range c.Nodes[i+1 : back] {
				if isCall(n) {
					price.Calls++
				}
				addUsage(&price, n)
			}
			d := c.Nodes[back].Started.Sub(h.Started)
			price.ElapsedMS = d.Milliseconds()
			price.Basis = fmt.Sprintf("from %s to %s: %s, %s and %d tokens in, %d out before %s was back", h.ID(), c.Nodes[back].ID(),
				graph.FormatDuration(d), plural(price.Calls, "call", "calls"), price.TokensIn, price.TokensOut, a)
			var names []string
			for _, n := range later {
				names = append(names, n.Tool.Name)
			}
			p.Report(findings.Finding{
				Agent: a,
				Message: fmt.Sprintf("%s handed to %s at %s without a call of its own this turn, got the conversation back at %s and then made %s (%s)",
					a, h.Handoff.To, h.ID(), c.Nodes[back].ID(), plural(len(later), "call", "calls"), strings.Join(uniq(names), ", ")),
				Nodes:   ids(h, c.Nodes[back], later[0]),
				Fix:     p.Owner(a, "transfer", "hand", h.Handoff.To).Fix(fmt.Sprintf("make its own calls (%s) before handing to %s", strings.Join(uniq(names), ", "), h.Handoff.To)),
				Next:    fmt.Sprintf("%s's own calls first, then the hand-off to %s", a, h.Handoff.To),
				Price:   price,
				Shape:   fmt.Sprintf("%s to %s and back, %s", a, h.Handoff.To, convShape(c)),
				Promise: handoffPromise{From: a, To: h.Handoff.To},
			})
		}
	}
	p.Clear("%s examined", plural(len(p.Graph.Handoffs), "hand-off", "hand-offs"))
}

// ownCallInTurn reports whether agent made a call in c between the start
// of node i's turn (turn = turnOf(c)) and node i.
func ownCallInTurn(c *graph.Conversation, turn []int, i int, agent string) bool {
	for _, n := range c.Nodes[turn[i]:i] {
		if isCall(n) && n.Agent == agent {
			return true
		}
	}
	return false
}

// expectHandoffEarly: the agent hands to the same target again, each time
// after a call of its own in that turn.
func expectHandoffEarly(p handoffPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	seen := 0
	for _, c := range next.Conversations {
		turn := turnOf(c)
		for _, i := range handoffsIn(c) {
			h := c.Nodes[i].Handoff
			if h.From != p.From || h.To != p.To {
				continue
			}
			seen++
			if !ownCallInTurn(c, turn, i, p.From) {
				return verdict(false, "%s handed to %s at %s before a call of its own in that turn", p.From, p.To, c.Nodes[i].ID())
			}
		}
	}
	if seen == 0 {
		return verdict(false, "no hand-off from %s to %s in the new run", p.From, p.To)
	}
	return verdict(true, "%s made its own calls before each hand-off to %s (%d)", p.From, p.To, seen)
}

func runHandoffLoop(p *pass) {
	if noHandoffs(p) {
		return
	}
	for _, c := range p.Graph.Conversations {
		turn := turnOf(c)
		hs := handoffsIn(c)
		for k := 0; k+2 < len(hs); k++ {
			h1, h2, h3 := c.Nodes[hs[k]], c.Nodes[hs[k+1]], c.Nodes[hs[k+2]]
			if turn[hs[k]] != turn[hs[k+2]] {
				continue
			}
			a, b := h1.Handoff.From, h1.Handoff.To
			if h2.Handoff.From != b || h2.Handoff.To != a || h3.Handoff.From != a || h3.Handoff.To != b {
				continue
			}
			// Extend the chain while it keeps alternating in this turn.
			end := k + 2
			for end+1 < len(hs) && turn[hs[end+1]] == turn[hs[k]] {
				prev, next := c.Nodes[hs[end]].Handoff, c.Nodes[hs[end+1]].Handoff
				if next.From != prev.To || next.To != prev.From {
					break
				}
				end++
			}
			var price findings.Price
			var nodes []*graph.Node
			var parts []string
			for _, idx := range hs[k : end+1] {
				h := c.Nodes[idx]
				nodes = append(nodes, h)
				if n := firstLLM(c, idx+1); n != nil && n.LLM != nil && n.Agent == h.Handoff.To {
					price.TokensIn += n.LLM.Usage.In
					price.LLMCalls++
					price.ConversationStarts++
					addCached(&price, n)
					parts = append(parts, fmt.Sprintf("%s %d", n.ID(), n.LLM.Usage.In))
				}
			}
			price.Basis = fmt.Sprintf("first call after each switch under a new system prompt: %s = %d tokens in", strings.Join(parts, " + "), price.TokensIn)
			if !price.CachedReported {
				price.Basis += " (each an expected cache miss; the provider reported no cached tokens)"
			}
			oa, ob := p.Owner(a, b, "transfer", "hand"), p.Owner(b, a, "transfer", "hand")
			p.Report(findings.Finding{
				Agent:   a,
				Message: fmt.Sprintf("%s and %s passed the conversation back and forth %d times in one turn (%s)", a, b, end-k+1, strings.Join(ids(nodes...), ", ")),
				Nodes:   ids(nodes...),
				Fix: findings.Fix{Location: oa.Location, Also: []findings.Location{ob.Location},
					Text: fmt.Sprintf("Decide whether %s or %s owns this job and say so in both %s and %s", a, b, oa.Where, ob.Where)},
				Next:    fmt.Sprintf("one hand-off between %s and %s in the turn, or none", a, b),
				Price:   price,
				Shape:   fmt.Sprintf("%s<->%s %s", a, b, convShape(c)),
				Promise: handoffPromise{From: a, To: b},
			})
			k = end
		}
	}
	p.Clear("%s examined", plural(len(p.Graph.Handoffs), "hand-off", "hand-offs"))
}

// expectHandoffLoop: at most one hand-off between the two agents in any
// turn of any conversation.
func expectHandoffLoop(p handoffPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	most, total := 0, 0
	for _, c := range next.Conversations {
		turn := turnOf(c)
		perTurn := map[int]int{}
		for _, i := range handoffsIn(c) {
			h := c.Nodes[i].Handoff
			if h.From == p.From && h.To == p.To || h.From == p.To && h.To == p.From {
				perTurn[turn[i]]++
				most = max(most, perTurn[turn[i]])
				total++
			}
		}
	}
	return verdict(most <= 1, "at most %s between %s and %s in one turn (%d in the run)", plural(most, "hand-off", "hand-offs"), p.From, p.To, total)
}

func runHandoffForAnswer(p *pass) {
	if noHandoffs(p) {
		return
	}
	for _, c := range p.Graph.Conversations {
		turn := turnOf(c)
		hs := handoffsIn(c)
		for k, i := range hs {
			h := c.Nodes[i]
			a, b := h.Handoff.From, h.Handoff.To
			if k > 0 && turn[hs[k-1]] == turn[i] && c.Nodes[hs[k-1]].Handoff.From == b {
				continue // A returns the conversation to the agent that handed it over this turn: its way home
			}
			var own []*graph.Node
			for _, n := range c.Nodes[turn[i]:i] {
				if isCall(n) && n.Agent == a {
					own = append(own, n)
				}
			}
			if len(own) == 0 {
				continue
			}
			// The rest of the turn: B only, few calls, ends in an answer.
			calls, answered, ok := 0, false, true
			var answer *graph.Node
			var bCalls []*graph.Node
			next := len(c.Nodes)
			for j := i + 1; j < len(c.Nodes); j++ {
				n := c.Nodes[j]
				if n.Kind == record.KindUser {
					next = j
					break
				}
				if n.Kind == record.KindHandoff || n.Kind == record.KindFork {
					ok = false
					break
				}
				if isCall(n) {
					calls++
					bCalls = append(bCalls, n)
				}
				if n.Agent == b && (n.Kind == record.KindFinal && n.Status == record.StatusOK || n.Kind == record.KindLLM && n.LLM != nil && len(n.LLM.Calls) == 0 && n.Status == record.StatusOK) {
					answered = true
					if answer == nil {
						answer = n
					}
				}
			}
			if !ok || !answered || calls > forAnswerMaxCalls.Get(p.Options) || specialistWork(p, b, bCalls) {
				continue
			}
			then := "the run ended"
			if next < len(c.Nodes) {
				back := false
				for _, n := range c.Nodes[next+1:] {
					if n.Kind == record.KindUser {
						break
					}
					if n.Kind == record.KindHandoff && n.Handoff != nil {
						back = n.Handoff.From == b && n.Handoff.To == a
						break
					}
				}
				if !back {
					continue
				}
				then = fmt.Sprintf("at the next turn %s handed back to %s", b, a)
			}
			first := firstLLM(c, i+1)
			price := findings.Price{ConversationStarts: 1}
			if first != nil && first.LLM != nil {
				price.TokensIn, price.LLMCalls = first.LLM.Usage.In, 1
				if first.LLM.Usage.CachedReported {
					price.CachedReported, price.CachedTokens = true, first.LLM.Usage.Cached
				}
				price.Basis = fmt.Sprintf("%s's first call %s sent the whole transcript under a new system prompt: %d tokens in, one conversation start", b, first.ID(), first.LLM.Usage.In)
			}
			p.Report(forAnswerFinding(p, c, h, own, bCalls, first, answer, then, price))
		}
	}
	p.Clear("%s examined", plural(len(p.Graph.Handoffs), "hand-off", "hand-offs"))
}

// specialistWork reports whether B's calls are a specialist's job: at
// least specialist-min-calls calls of tools that mark B as a specialist.
// Made by A they would be delegation.missed-specialist's mistake, as a
// one-branch fork would be fork.one-branch's: the hand-off is then what
// the audit asks for, not a finding.
func specialistWork(p *pass, b string, calls []*graph.Node) bool {
	sa := p.Project.Agent(b)
	if sa == nil {
		return false
	}
	marks, n := specialistTools(sa), 0
	for _, c := range calls {
		if c.Agent == b && contains(marks, c.Tool.Name) {
			n++
		}
	}
	return len(marks) > 0 && n >= specialistMinCalls.Get(p.Options)
}

// forAnswerPromise: no hand-off from A to B, and A making B's calls
// (their keys: tool and canonical arguments) itself.
type forAnswerPromise struct {
	From, To string
	Calls    []string // keys of B's calls, in order, once each
	Names    []string // the same calls for messages ("read_file policy/refunds.md")
}

// forAnswerFinding is the finding for hand-off h from A to B. Its fix is
// one no other rule flags: A makes B's one or two calls itself (a
// one-branch fork to B would be fork.one-branch; the calls are built-in
// or fewer than specialist-min-calls of B's own tools, so no missed
// specialist), given the tools it lacks.
func forAnswerFinding(p *pass, c *graph.Conversation, h *graph.Node, own, bCalls []*graph.Node, first, answer *graph.Node, then string, price findings.Price) findings.Finding {
	a, b := h.Handoff.From, h.Handoff.To
	prom := forAnswerPromise{From: a, To: b}
	var tools []string
	seen := map[string]bool{}
	for _, n := range bCalls {
		if k := p.call(n).key; !seen[k] {
			seen[k] = true
			prom.Calls = append(prom.Calls, k)
			prom.Names = append(prom.Names, n.Tool.Name+" "+p.call(n).summary)
			tools = append(tools, n.Tool.Name)
		}
	}
	tools = uniq(tools)
	oa, ob := p.Owner(a, "transfer", "hand", b), p.Owner(b)
	fix := findings.Fix{Location: oa.Location}
	if len(bCalls) == 0 {
		fix.Also = []findings.Location{ob.Location}
		fix.Text = oa.Tell(fmt.Sprintf("answer questions like this one itself instead of handing to %s: %s answered without a call, from what %s says, so put those lines into %s",
			b, b, ob.Where, oa.Where))
	} else {
		var lacks []string
		if ac := p.Project.Agent(a); ac != nil {
			for _, t := range tools {
				if !contains(ac.Tools, t) {
					lacks = append(lacks, t)
				}
			}
		}
		fix.Text = oa.Tell(fmt.Sprintf("make the %s %s made (%s) itself when it only needs an answer, and keep the conversation instead of handing to %s",
			map[bool]string{true: "call", false: "calls"}[len(prom.Calls) == 1], b, listCut(prom.Names, maxListed), b))
		if len(lacks) > 0 {
			fix.Also = []findings.Location{oa.Entry()}
			if ac := p.Project.Agent(a); ac != nil && ac.ToolsLine > 0 {
				fix.Also = []findings.Location{{Path: findings.AgentsFile, Line: ac.ToolsLine}}
			}
			fix.Text += fmt.Sprintf("; add %s to %s's tools in agents.yaml", strings.Join(lacks, ", "), a)
		}
	}
	next := fmt.Sprintf("%s making %s's %s itself, and no hand-off to %s", a, b, map[bool]string{true: "call", false: "calls"}[len(prom.Calls) == 1], b)
	if len(bCalls) == 0 {
		next = fmt.Sprintf("%s answering itself, and no hand-off to %s", a, b)
	}
	return findings.Finding{
		Agent: a,
		Message: fmt.Sprintf("%s made %s, handed to %s at %s, %s answered with %s and %s",
			a, plural(len(own), "call", "calls"), b, h.ID(), b, plural(len(bCalls), "call", "calls"), then),
		Nodes:   ids(h, first, answer),
		Fix:     fix,
		Next:    next,
		Price:   price,
		Shape:   fmt.Sprintf("%s to %s for answer, %s", a, b, convShape(c)),
		Promise: prom,
	}
}

// expectHandoffForAnswer: no hand-off from A to B, and A made B's calls
// itself (any of them), or, when B had made none, simply no hand-off.
func expectHandoffForAnswer(p forAnswerPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	for _, h := range next.Handoffs {
		if h.Handoff != nil && h.Handoff.From == p.From && h.Handoff.To == p.To {
			return verdict(false, "%s still hands to %s at %s", p.From, p.To, h.ID())
		}
	}
	if len(p.Calls) == 0 {
		return verdict(true, "no hand-off from %s to %s", p.From, p.To)
	}
	lp := laterPass(next)
	for _, n := range ownCalls(next, p.From) {
		if contains(p.Calls, lp.call(n).key) {
			return verdict(true, "%s made %s itself at %s, and no hand-off to %s", p.From, n.Tool.Name+" "+lp.call(n).summary, n.ID(), p.To)
		}
	}
	return verdict(false, "no hand-off from %s to %s, but %s made none of %s's calls itself (%s)", p.From, p.To, p.From, p.To, listCut(p.Names, maxListed))
}

// specialistTools are the tools of s that mark it as a specialist: those
// it declares that are not built-in workspace tools (any agent may read
// and write the workspace; DESIGN §8).
func specialistTools(s *snapshot.Agent) []string {
	var out []string
	for _, t := range s.Tools {
		if !snapshot.IsBuiltinTool(t) {
			out = append(out, t)
		}
	}
	return out
}

// candidate is a reachable specialist that never ran, with the agent's
// calls of its marking tools not yet given to another finding.
type candidate struct {
	spec       *snapshot.Agent
	tools      []string
	viaHandoff bool
	viaFork    bool
}

func runMissedSpecialist(p *pass) {
	ran := map[string]bool{}
	for _, a := range p.Graph.Agents {
		ran[a] = true
	}
	callsBy := map[string][]*graph.Node{} // each running agent's calls, in order
	for _, n := range p.Graph.Nodes {
		if isCall(n) {
			callsBy[n.Agent] = append(callsBy[n.Agent], n)
		}
	}
	min := specialistMinCalls.Get(p.Options)
	reachable := 0
	for _, name := range p.Graph.Agents {
		a := p.Project.Agent(name)
		if a == nil {
			continue
		}
		var cands []*candidate
		for _, s := range p.Project.Agents {
			if s.Name == name {
				continue
			}
			viaHandoff, viaFork := contains(a.Handoffs, s.Name), a.Fork.Allows(s.Name)
			if !viaHandoff && !viaFork {
				continue
			}
			reachable++
			if tools := specialistTools(s); !ran[s.Name] && len(tools) > 0 {
				cands = append(cands, &candidate{spec: s, tools: tools, viaHandoff: viaHandoff, viaFork: viaFork})
			}
		}
		// One finding per set of calls: the specialist whose tools cover
		// most of the agent's calls not yet priced (declared order on a
		// tie) takes them; the others may only take what is left.
		priced := map[*graph.Node]bool{}
		for len(cands) > 0 {
			best, bestCalls := -1, []*graph.Node(nil)
			for i, c := range cands {
				var mine []*graph.Node
				for _, n := range callsBy[name] {
					if !priced[n] && contains(c.tools, n.Tool.Name) {
						mine = append(mine, n)
					}
				}
				if len(mine) > len(bestCalls) {
					best, bestCalls = i, mine
				}
			}
			if best < 0 || len(bestCalls) < min {
				break
			}
			c := cands[best]
			cands = append(cands[:best], cands[best+1:]...)
			var also []string
			for _, o := range cands {
				for _, n := range bestCalls {
					if contains(o.tools, n.Tool.Name) {
						also = append(also, o.spec.Name)
						break
					}
				}
			}
			for _, n := range bestCalls {
				priced[n] = true
			}
			p.Report(missedSpecialistFinding(p, name, c, bestCalls, also))
		}
	}
	if reachable == 0 {
		p.NotApplicable("no agent that ran can reach another by hand-off or fork")
		return
	}
	p.Clear("%s of a running agent examined", plural(reachable, "reachable agent", "reachable agents"))
}

// missedSpecialistFinding is the finding for agent name's calls of
// specialist c's tools; also names the other specialists that declare some
// of those tools (their calls are priced here, once).
func missedSpecialistFinding(p *pass, name string, c *candidate, calls []*graph.Node, also []string) findings.Finding {
	s := c.spec.Name
	price, d := callsPrice(calls)
	var tools []string
	for _, n := range calls {
		tools = append(tools, n.Tool.Name)
	}
	tools = uniq(tools)
	price.Basis = fmt.Sprintf("%s of %s's tools made by %s: %s and %d tokens in, %d out", plural(len(calls), "call", "calls"), s, name, graph.FormatDuration(d), price.TokensIn, price.TokensOut)
	how, verb := "fork", "fork"
	if c.viaHandoff {
		how, verb = "hand-off", "hand off"
	}
	msg := fmt.Sprintf("%s can reach %s by %s, %s never ran, and %s made %s of %s's tools itself (%s)",
		name, s, how, s, name, plural(len(calls), "call", "calls"), s, strings.Join(tools, ", "))
	if len(also) > 0 {
		msg += fmt.Sprintf("; %s %s some of them too, and %s tools cover fewer of these calls", listCut(also, 3), map[bool]string{true: "declares", false: "declare"}[len(also) == 1], map[bool]string{true: "its", false: "their"}[len(also) == 1])
	}
	o := p.Owner(name, s, "delegate", "fork", "transfer")
	return findings.Finding{
		Agent:   name,
		Message: msg,
		Nodes:   ids(calls...),
		Causes:  p.specialistCauses(llmStepOf(calls[0]), name, s, c.viaHandoff, c.viaFork),
		Fix:     findings.Fix{Location: o.Location, Text: o.Say(fmt.Sprintf("when to %s to %s, in this task's terms (work that needs %s)", verb, s, strings.Join(tools, ", ")))},
		Next:    fmt.Sprintf("a %s to %s, with %s's tools called by %s", how, s, s, s),
		Price:   price,
		Shape:   fmt.Sprintf("%s did %s's %s", name, s, strings.Join(tools, ",")),
		Promise: specialistPromise{Specialist: s, Tools: tools},
	}
}

// specialistPromise: the specialist runs and calls its own tools.
type specialistPromise struct {
	Specialist string
	Tools      []string // the specialist's tools the agent called, sorted, once each
}

// expectMissedSpecialist: the specialist runs and itself calls one of the
// tools the agent called in its place.
func expectMissedSpecialist(p specialistPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	if next.FirstOwned(p.Specialist) == nil {
		return verdict(false, "%s never ran in the new run", p.Specialist)
	}
	for _, n := range next.Nodes {
		if isCall(n) && n.Agent == p.Specialist && contains(p.Tools, n.Tool.Name) {
			return verdict(true, "%s ran and called %s itself (%s)", p.Specialist, n.Tool.Name, n.ID())
		}
	}
	return verdict(false, "%s ran but made none of the calls %s made in its place (%s)", p.Specialist, f.Agent, strings.Join(p.Tools, ", "))
}

// specialistCauses checks, in the request of llm node n, whether S was
// offered (transfer tool, fork enum) and whether fork instructions reached
// the system prompt.
func (p *pass) specialistCauses(n *graph.Node, agent, s string, viaHandoff, viaFork bool) []findings.Cause {
	if n == nil {
		return []findings.Cause{{Check: "specialist offered", Result: "unknown", Detail: "no model call found before the first call"}}
	}
	req, err := p.ReadRequest(n.Seq)
	if err != nil {
		return []findings.Cause{{Check: "specialist offered", Result: "unknown", Detail: fmt.Sprintf("request of %s not readable (%v)", n.ID(), err)}}
	}
	var out []findings.Cause
	if viaHandoff {
		t := "transfer_to_" + s
		if req.Tool(t) != nil {
			out = append(out, findings.Cause{Check: "transfer tool offered", Result: "yes", Detail: fmt.Sprintf("%s offered %s; the model did the work itself", n.ID(), t)})
		} else {
			out = append(out, findings.Cause{Check: "transfer tool offered", Result: "no", Detail: fmt.Sprintf("%s had no %s", n.ID(), t)})
		}
	}
	if viaFork {
		enum := forkAgents(req)
		switch {
		case req.Tool("fork") == nil:
			out = append(out, findings.Cause{Check: "specialist in fork agent enum", Result: "no", Detail: fmt.Sprintf("%s had no fork tool (depth cap?)", n.ID())})
		case enum == nil || contains(enum, s):
			out = append(out, findings.Cause{Check: "specialist in fork agent enum", Result: "yes", Detail: fmt.Sprintf("%s's fork tool let a branch run %s", n.ID(), s)})
		default:
			out = append(out, findings.Cause{Check: "specialist in fork agent enum", Result: "no", Detail: fmt.Sprintf("%s's fork enum was [%s]", n.ID(), strings.Join(enum, ", "))})
		}
		out = append(out, p.forkInstructionsCause(n, req, req.Tool("fork") != nil))
	}
	return out
}
