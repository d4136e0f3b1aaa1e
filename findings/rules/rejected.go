package rules

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// availableRE finds the list of types a refusal offers ("Available
// agents: Bash, general-purpose, Explore").
var availableRE = regexp.MustCompile(`(?i)available (?:agents|agent types|subagents|types)\s*:\s*(.+)`)

// refusal is the refused calls of one agent for one type.
type refusal struct {
	agent, typ string
	calls      []refused
	why        string
}

// refused is one refused delegation call: a branch an importer made of
// it, or our runtime's fork call that named an agent it may not fork to.
type refused struct {
	call *graph.Node   // the fork node, or the failed fork tool call
	end  *graph.Node   // the branch's error (the tool call itself for ours)
	wait time.Duration // from the call to the refusal
}

// forkRefusedRE is our runtime's answer to a fork call naming an agent
// the forking agent may not fork to.
var forkRefusedRE = regexp.MustCompile(`branch "[^"]*" asks for agent "([^"]+)", which is not one \S+ may fork to; choose one of: (.*)`)

// agentDefDirs are the folders a stack keeps its sub-agent definitions
// in, one file per type (the file's base name is the type).
var agentDefDirs = []string{".claude/agents", ".gemini/agents", ".codex/agents", ".kimi/agents"}

func runDelegationRejected(p *pass) {
	if len(p.Graph.Forks) == 0 {
		p.NotApplicable("no delegation call in this run")
		return
	}
	var order []*refusal
	by := map[[2]string]*refusal{}
	add := func(agent, typ, why string, c refused) {
		k := [2]string{agent, typ}
		r := by[k]
		if r == nil {
			r = &refusal{agent: agent, typ: typ, why: why}
			by[k] = r
			order = append(order, r)
		}
		r.calls = append(r.calls, c)
	}
	calls := 0
	for _, n := range p.Graph.Nodes { // in sequence order; open forks too: a refusal is over at once
		switch {
		case n.Kind == record.KindFork && n.ForkOf != nil:
			for _, b := range n.ForkOf.Branches {
				calls++
				if why := branchWhy(b).why; refusedDelegation(b.Status, why, b.Conv) {
					add(forkingAgent(n.ForkOf), b.Agent, why, refused{call: n, end: lastNode(b.Conv), wait: b.Duration})
				}
			}
		case n.Kind == record.KindTool && n.Tool != nil && n.Tool.Name == "fork" && n.Status == record.StatusError:
			calls++
			if m := forkRefusedRE.FindStringSubmatch(toolError(n)); m != nil {
				add(n.Agent, m[1], toolError(n), refused{call: n, end: n, wait: n.Duration()})
			}
		}
	}
	charged := map[*graph.Node]bool{}
	for _, r := range order {
		p.Report(p.rejectedFinding(r, charged))
	}
	p.Clear("%s examined", plural(calls, "delegation call", "delegation calls"))
}

// rejectedFinding is the finding of refusal r; charged holds the model
// steps an earlier finding priced.
func (p *pass) rejectedFinding(r *refusal, charged map[*graph.Node]bool) findings.Finding {
	var price findings.Price
	var nodes []*graph.Node
	waits := map[*graph.Node]time.Duration{} // the longest refusal of each call
	for _, c := range r.calls {
		waits[c.call] = max(waits[c.call], c.wait)
	}
	for _, c := range r.calls {
		price.Calls++
		nodes = append(nodes, c.call, c.end)
		wait, first := waits[c.call]
		if !first {
			continue
		}
		delete(waits, c.call)
		price.ElapsedMS += wait.Milliseconds()
		if step := llmStepOf(c.call); step != nil && !charged[step] {
			charged[step] = true
			nodes = append(nodes, step)
			addUsage(&price, step)
			price.ElapsedMS += step.Duration().Milliseconds()
		}
	}
	price.Basis = fmt.Sprintf("%s of type %s refused; the model steps that made them and the wait for the refusal", plural(len(r.calls), "call", "calls"), r.typ)
	avail := p.availableTypes(r)
	near := nearestType(r.typ, avail)
	first := r.calls[0].call
	tool := "fork"
	if first.Fork != nil && first.Fork.Tool != "" {
		tool = first.Fork.Tool
	}
	msg := fmt.Sprintf("%s's %s call of type %q was refused at %s (%s)", r.agent, tool, r.typ, first.ID(), truncate(r.why, 140))
	if len(r.calls) > 1 {
		msg = fmt.Sprintf("%s's %d %s calls of type %q were refused, first at %s (%s)", r.agent, len(r.calls), tool, r.typ, first.ID(), truncate(r.why, 140))
	}
	if then := p.recovered(r, near); then != "" {
		msg += "; " + then
	}
	return findings.Finding{
		Agent:   r.agent,
		Message: msg,
		Nodes:   ids(nodes...),
		Fix:     p.rejectedFix(r, avail, near),
		Next:    fmt.Sprintf("no refused call of type %q from %s", r.typ, r.agent),
		Price:   price,
		Cause:   findings.CauseRejected,
		Shape:   fmt.Sprintf("refused type %s", r.typ),
		Promise: rejectedPromise{Type: r.typ},
	}
}

// availableTypes are the sub-agent types that exist for refusal r: the
// refusal's own list, the definitions the session's snapshot holds, and
// the types that ran in the run, in that order, each once.
func (p *pass) availableTypes(r *refusal) []string {
	var out []string
	add := func(t string) {
		t = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t), ".…"))
		if t != "" && t != r.typ && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if m := forkRefusedRE.FindStringSubmatch(r.why); m != nil {
		for _, t := range strings.Split(m[2], ",") {
			add(t)
		}
	}
	if m := availableRE.FindStringSubmatch(r.why); m != nil {
		for _, t := range strings.Split(m[1], ",") {
			if !strings.HasSuffix(strings.TrimSpace(t), "…") { // a cut name is no name
				add(t)
			}
		}
	}
	for _, f := range p.Graph.Project.Files {
		dir, file := path.Split(f.Path)
		if slices.Contains(agentDefDirs, strings.TrimSuffix(dir, "/")) && strings.HasSuffix(file, ".md") {
			add(strings.TrimSuffix(file, ".md"))
		}
	}
	for _, fk := range p.Graph.Forks {
		for _, b := range fk.Branches {
			if firstLLM(b.Conv, 0) != nil && b.Agent != r.agent {
				add(b.Agent)
			}
		}
	}
	return out
}

// nearestType is the type of avail that typ most likely meant: the same
// name in another case, or a namespaced name ending in it
// ("plugin:research:typ"); "" when none.
func nearestType(typ string, avail []string) string {
	for _, a := range avail {
		if strings.EqualFold(a, typ) {
			return a
		}
	}
	for _, a := range avail {
		if i := strings.LastIndex(a, ":"); i >= 0 && strings.EqualFold(a[i+1:], typ) {
			return a
		}
	}
	return ""
}

// recovered says what the agent did next, when a later delegation of the
// same conversation ran the type it meant: "then called it as X (n9)".
func (p *pass) recovered(r *refusal, near string) string {
	last := r.calls[len(r.calls)-1].call
	for _, fk := range p.Graph.Forks {
		if fk.Parent != last.Conv || fk.Node.Seq <= last.Seq {
			continue
		}
		for _, b := range fk.Branches {
			if near != "" && b.Agent == near {
				return fmt.Sprintf("%s then called it as %s (%s), a model round trip later", r.agent, near, fk.Node.ID())
			}
		}
	}
	return ""
}

// rejectedFix points at the file that tells the agent which types to use,
// in the stack's terms, with the types that exist.
func (p *pass) rejectedFix(r *refusal, avail []string, near string) findings.Fix {
	exists := "no list of the types that exist was recorded"
	if len(avail) > 0 {
		exists = "the types that exist: " + listCut(avail, 8)
	}
	use := fmt.Sprintf("ask for a type that exists (%s)", exists)
	if near != "" {
		use = fmt.Sprintf("ask for %q: %q exists under that name (%s)", near, r.typ, exists)
	}
	o := p.Owner(r.agent, r.typ, "agent", "subagent")
	format := p.Profile.Format
	if p.Project.Imported {
		format = p.Graph.Source.Format // whatever profile the audit was given
	}
	var define string
	switch format {
	case "claude-code":
		define = fmt.Sprintf("or define it in .claude/agents/%s.md", r.typ)
		if cmd := p.commandOf(r); cmd != "" {
			define += fmt.Sprintf("; the turn ran the command %s: if a plugin installed it, it is not yours to edit, so name the types to use in %s", cmd, o.Where)
		}
	case "codex":
		define = fmt.Sprintf("or define it in .codex/agents/%s.toml", r.typ)
	case "gemini-cli":
		define = fmt.Sprintf("or define it in .gemini/agents/%s.md", r.typ)
	case record.SourceInspect:
		may := "none"
		if len(avail) > 0 {
			may = listCut(avail, 8)
		}
		return findings.Fix{Location: p.Project.ForkLocation(r.agent), Also: []findings.Location{o.Location},
			Text: fmt.Sprintf("Fork only to the agents %s may fork to (%s): say in %s which of them does what, or add %s to fork: agents: of %s in agents.yaml", r.agent, may, o.Where, r.typ, r.agent)}
	default:
		define = fmt.Sprintf("or give %s a sub-agent of that name in the code that builds it", r.agent)
	}
	return findings.Fix{Location: o.Location, Text: o.Tell(use) + ", " + define}
}

// commandOf is the slash command the turn of r's first refused call began
// with ("/workflows:plan"), or "".
func (p *pass) commandOf(r *refusal) string {
	fork := r.calls[0].call
	if u := p.turnUser(fork.Conv, fork.Seq+1); u != nil {
		if t := strings.TrimSpace(u.Text); strings.HasPrefix(t, "/") {
			return strings.Fields(t)[0]
		}
	}
	return ""
}

// rejectedPromise: the refused type, never refused again.
type rejectedPromise struct{ Type string }

// expectDelegationRejected: the agent delegates in the later run and no
// call of that type is refused (a run where it delegates nothing shows
// nothing of the fix).
func expectDelegationRejected(pr rejectedPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	n := 0
	for _, fk := range forksBy(next, f.Agent) {
		for _, b := range fk.Branches {
			n++
			if b.Agent == pr.Type && refusedDelegation(b.Status, branchWhy(b).why, b.Conv) {
				return verdict(false, "the call of type %q at %s was refused", pr.Type, fk.Node.ID())
			}
		}
	}
	for _, c := range next.Nodes {
		if c.Kind == record.KindTool && c.Tool != nil && c.Tool.Name == "fork" && c.Agent == f.Agent && c.Status == record.StatusError {
			n++
			if m := forkRefusedRE.FindStringSubmatch(toolError(c)); m != nil && m[1] == pr.Type {
				return verdict(false, "the fork call at %s asking for %q was refused", c.ID(), pr.Type)
			}
		}
	}
	if n == 0 {
		return verdict(false, "%s made no delegation call in the new run", f.Agent)
	}
	return verdict(true, "no refused call of type %q (%s from %s examined)", pr.Type, plural(n, "delegation call", "delegation calls"), f.Agent)
}
