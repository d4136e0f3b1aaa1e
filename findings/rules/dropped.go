package rules

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// HandoffDropped: a second hand-off in one response that the framework
// ignored (the Agents SDK takes the first transfer_to_* of a response;
// our runtime refuses every one after the first).
var HandoffDropped = &findings.Rule{
	ID:       "handoff.dropped",
	Area:     findings.Handoffs,
	Severity: findings.Error,
	Doc: findings.Doc{
		Title: "dropped hand-off",
		Detect: "one model response asks for two or more hand-offs (transfer_to_* calls) and the stack takes one: the conversation goes " +
			"to the first, and the others are dropped (a transfer_to_* call that failed or never became a hand-off) — the Agents SDK takes " +
			"the first hand-off of a response and ignores the rest, our runtime refuses every one after the first. What the request asked " +
			"of the dropped agents has no agent. One finding per response.",
		Price: "the dropped hand-off calls; the work they were meant for was not done, which the recording cannot price in time or tokens.",
		Fix: "the instructions of the agent whose response asked for several hand-offs (its prompt file, or its instructions in code): hand off to " +
			"one agent per response, the first the request needs, and let it hand on; where the stack offers it, one call per response " +
			"(the Agents SDK's parallel_tool_calls=False), or the other agents called as tools.",
		Next: "no response of that agent asking for more than one hand-off.",
	},
	Run:    run(runHandoffDropped),
	Expect: expectWith(expectHandoffDropped),
}

// droppedPromise: the agent whose response asked for several hand-offs.
type droppedPromise struct{ Agent string }

// handoffTarget is the agent a hand-off tool call names
// (transfer_to_refunds → refunds), or "".
func handoffTarget(name string) string {
	if t, ok := strings.CutPrefix(name, "transfer_to_"); ok {
		return t
	}
	return ""
}

// response is what one model response made: its hand-offs taken and the
// hand-off calls that never became one.
type response struct {
	llm     *graph.Node
	taken   []*graph.Node // hand-off nodes
	dropped []*graph.Node // failed transfer_to_* tool nodes
	asked   []string      // the targets of its transfer_to_* calls, in order
}

// responses lists the model responses of g that asked for a hand-off, with
// what became of each call: the nodes a response made are the ones whose
// CalledBy names it, else those between it and the conversation's next
// model call.
func responses(g *graph.Run) []*response {
	var out []*response
	for _, c := range g.Conversations {
		var cur *response
		bySeq := map[int64]*response{}
		for _, n := range c.Nodes {
			if n.Kind == record.KindLLM {
				cur = &response{llm: n}
				if n.LLM != nil {
					for _, call := range n.LLM.Calls {
						if t := handoffTarget(call); t != "" {
							cur.asked = append(cur.asked, t)
						}
					}
				}
				bySeq[n.Seq] = cur
				if len(cur.asked) > 0 {
					out = append(out, cur)
				}
				continue
			}
			r := cur
			if x := bySeq[n.CalledBy]; n.CalledBy != 0 && x != nil {
				r = x
			}
			if r == nil {
				continue
			}
			switch {
			case n.Kind == record.KindHandoff && n.Handoff != nil:
				r.taken = append(r.taken, n)
			case n.Kind == record.KindTool && n.Tool != nil && handoffTarget(n.Tool.Name) != "" && n.Status == record.StatusError:
				r.dropped = append(r.dropped, n)
			}
		}
	}
	return out
}

func runHandoffDropped(p *pass) {
	rs := responses(p.Graph)
	if len(rs) == 0 {
		p.NotApplicable("no response asked for a hand-off")
		return
	}
	several := 0
	for _, r := range rs {
		if len(r.asked) < 2 || len(r.taken) == 0 {
			continue
		}
		several++
		taken := map[string]bool{}
		var to []string
		for _, h := range r.taken {
			taken[h.Handoff.To] = true
			to = append(to, h.Handoff.To)
		}
		var lost []string
		for _, t := range r.asked {
			if !taken[t] {
				lost = append(lost, t)
			}
		}
		if len(lost) == 0 {
			continue
		}
		agent := r.llm.Agent
		ran := ""
		for _, t := range lost {
			if laterOwner(p.Graph, r.llm, t) {
				ran = fmt.Sprintf("; %s got the conversation later, from another hand-off", t)
			}
		}
		nodes := append([]*graph.Node{r.llm}, r.taken...)
		nodes = append(nodes, r.dropped...)
		p.Report(findings.Finding{
			Agent: agent,
			Message: fmt.Sprintf("%s asked for %d hand-offs in one response at %s (%s); %s took the one to %s and dropped %s%s",
				agent, len(r.asked), r.llm.ID(), strings.Join(r.asked, ", "), p.Profile.Name, strings.Join(to, ", "),
				map[bool]string{true: "the one to ", false: "those to "}[len(lost) == 1]+strings.Join(lost, ", "), ran),
			Nodes: ids(nodes...),
			Fix:   p.droppedFix(agent, to[0], lost),
			Next:  fmt.Sprintf("no response of %s asking for more than one hand-off", agent),
			Price: findings.Price{Calls: len(lost),
				Basis: fmt.Sprintf("%s dropped; what %s was asked for got no agent (not measurable in time or tokens)",
					plural(len(lost), "hand-off call", "hand-off calls"), strings.Join(lost, ", "))},
			Shape:   fmt.Sprintf("%s asked %s at once", agent, strings.Join(r.asked, ",")),
			Promise: droppedPromise{Agent: agent},
		})
	}
	p.Clear("%s that asked for a hand-off examined, %d asking for several", plural(len(rs), "response", "responses"), several)
}

// laterOwner reports whether agent holds a conversation after node n.
func laterOwner(g *graph.Run, n *graph.Node, agent string) bool {
	for _, m := range g.Nodes {
		if m.Seq > n.Seq && m.Kind == record.KindHandoff && m.Handoff != nil && m.Handoff.To == agent {
			return true
		}
	}
	return false
}

// droppedFix is handoff.dropped's fix in the stack's terms.
func (p *pass) droppedFix(agent, first string, lost []string) findings.Fix {
	o := p.Owner(agent, "transfer", "hand", first)
	rest := strings.Join(lost, ", ")
	switch {
	case ours(p):
		return o.Fix(fmt.Sprintf("hand off to one agent per response — the runtime takes the first transfer_to_* of a response and refuses the rest — "+
			"and, when the request needs %s too, to leave it to %s to hand on (give %s handoffs: [%s] in agents.yaml)", rest, first, first, rest))
	case p.Profile == stack.OpenAIAgents || p.Profile.Dialect == stack.OpenAIAgents.Format:
		return findings.Fix{Location: o.Location, Text: o.Tell(fmt.Sprintf("hand off to one agent per response, and to leave %s to %s to hand on", rest, first)) +
			"; the SDK takes the first hand-off of a response and ignores the rest. So that the model cannot ask for two, set parallel_tool_calls=False in " +
			agent + "'s model_settings (JS: modelSettings: {parallelToolCalls: false}); where a request needs several agents' answers, call them as tools (agent.as_tool) instead of handing off"}
	}
	return findings.Fix{Location: o.Location, Text: o.Tell(fmt.Sprintf("hand off to one agent per response, and to leave %s to %s to hand on", rest, first)) +
		fmt.Sprintf("; %s takes one hand-off of a response", p.Profile.Name)}
}

// expectHandoffDropped: the agent makes model calls in the later run, and
// none of its responses asks for more than one hand-off.
func expectHandoffDropped(pr droppedPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	calls, handing := 0, 0
	for _, n := range next.Nodes {
		if n.Kind == record.KindLLM && n.Agent == pr.Agent {
			calls++
		}
	}
	for _, r := range responses(next) {
		if r.llm.Agent != pr.Agent {
			continue
		}
		handing++
		if len(r.asked) > 1 {
			return verdict(false, "%s asked for %d hand-offs in one response at %s (%s)", pr.Agent, len(r.asked), r.llm.ID(), strings.Join(r.asked, ", "))
		}
	}
	if calls == 0 {
		return verdict(false, "%s made no model call in the new run", pr.Agent)
	}
	return verdict(true, "no response of %s asked for more than one hand-off (%s that handed off)", pr.Agent, plural(handing, "response", "responses"))
}
