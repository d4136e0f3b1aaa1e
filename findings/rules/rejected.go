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
	"github.com/inspect-dev/inspect/stack"
)

// availableRE finds the list of types a refusal offers ("Available
// agents: Bash, general-purpose, Explore").
var availableRE = regexp.MustCompile(`(?i)available (?:agents|agent types|subagents|types)\s*:\s*(.+)`)

// refusal is one mistake: the refused calls of one agent made in one
// response (a fork node's branches), with any later call of a type
// already refused joined to it. Three types refused at once are one
// mistake with one fix, not three.
type refusal struct {
	agent string
	types []string // the refused types, in the order first refused
	calls []refused
	why   string // the first refusal's text
}

// refused is one refused delegation call: a branch an importer made of
// it, or our runtime's fork call that named an agent it may not fork to.
type refused struct {
	call *graph.Node   // the fork node, or the failed fork tool call
	end  *graph.Node   // the branch's error (the tool call itself for ours)
	typ  string        // the type it asked for
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
	byCall := map[*graph.Node]*refusal{} // the response's refusal
	byType := map[[2]string]*refusal{}   // the refusal that holds a type
	add := func(agent, typ, why string, c refused) {
		c.typ = typ
		r := byCall[c.call]
		if r == nil || r.agent != agent {
			r = byType[[2]string{agent, typ}]
		}
		if r == nil {
			r = &refusal{agent: agent, why: why}
			order = append(order, r)
		}
		byCall[c.call] = r
		byType[[2]string{agent, typ}] = r
		if !slices.Contains(r.types, typ) {
			r.types = append(r.types, typ)
		}
		r.calls = append(r.calls, c)
	}
	calls := 0
	for _, n := range p.Graph.Nodes { // in sequence order; open forks too: a refusal is over at once
		switch {
		case n.Kind == record.KindFork && n.ForkOf != nil:
			for _, b := range n.ForkOf.Branches {
				calls++
				if why := branchWhy(b).why; p.refusedDelegation(b.Status, why, b.Conv) {
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
	forks := 0 // the responses that made the refused calls
	for _, c := range r.calls {
		price.Calls++
		nodes = append(nodes, c.call, c.end)
		wait, first := waits[c.call]
		if !first {
			continue
		}
		forks++
		delete(waits, c.call)
		price.ElapsedMS += wait.Milliseconds()
		if step := llmStepOf(c.call); step != nil && !charged[step] {
			charged[step] = true
			nodes = append(nodes, step)
			addUsage(&price, step)
			price.ElapsedMS += step.Duration().Milliseconds()
		}
	}
	price.Basis = fmt.Sprintf("%s of %s refused; the model steps that made them and the wait for the refusal", plural(len(r.calls), "call", "calls"), typeWord(r.types, false, "and"))
	avail := p.availableTypes(r)
	near := make([]string, len(r.types)) // the type each one meant, or ""
	for i, t := range r.types {
		near[i] = nearestType(t, avail)
	}
	first := r.calls[0].call
	tool := "fork"
	if first.Fork != nil && first.Fork.Tool != "" {
		tool = first.Fork.Tool
	}
	at := "at " + first.ID()
	if forks > 1 {
		at = "first at " + first.ID()
	}
	kind := typeWord(r.types, true, "and")
	if len(r.types) == 1 && r.types[0] == record.UnrecordedType {
		kind = "a type the recording does not name"
	}
	msg := fmt.Sprintf("%s's %s call of %s was refused %s (%s)", r.agent, tool, kind, at, truncate(r.why, 140))
	if len(r.calls) > 1 {
		msg = fmt.Sprintf("%s's %d %s calls of %s were refused %s (%s)", r.agent, len(r.calls), tool, typeWord(r.types, true, "and"), at, truncate(r.why, 140))
	}
	if then := p.recovered(r, near); then != "" {
		msg += "; " + then
	}
	shape := "refused type " + r.types[0]
	if len(r.types) > 1 {
		shape = "refused types " + strings.Join(r.types, ",")
	}
	return findings.Finding{
		Agent:   r.agent,
		Message: msg,
		Nodes:   ids(nodes...),
		Fix:     p.rejectedFix(r, avail, near),
		Next:    fmt.Sprintf("no refused call of %s from %s", typeWord(r.types, true, "or"), r.agent),
		Price:   price,
		Cause:   findings.CauseRejected,
		Shape:   shape,
		Promise: rejectedPromise{Types: r.types},
	}
}

// typeWord names the refused types: `type "a"`, or `types "a", "b" and
// "c"` (unquoted when quote is false; conj joins the last).
func typeWord(types []string, quote bool, conj string) string {
	q := make([]string, len(types))
	for i, t := range types {
		q[i] = t
		if quote {
			q[i] = fmt.Sprintf("%q", t)
		}
	}
	if len(q) == 1 {
		return "type " + q[0]
	}
	return "types " + strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

// availableTypes are the sub-agent types that exist for refusal r: the
// refusal's own list, the definitions the session's snapshot holds, and
// the types that ran in the run, in that order, each once.
func (p *pass) availableTypes(r *refusal) []string {
	var out []string
	add := func(t string) {
		t = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t), ".…"))
		if t != "" && !slices.Contains(r.types, t) && !slices.Contains(out, t) {
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
// same conversation ran the types it meant: "then called it as X (n9)",
// "then called "a" as X and "b" as Y (n9)".
func (p *pass) recovered(r *refusal, near []string) string {
	last := r.calls[len(r.calls)-1].call
	var as []string
	var at []string
	for i, t := range r.types {
		if near[i] == "" {
			continue
		}
	forks:
		for _, fk := range p.Graph.Forks {
			if fk.Parent != last.Conv || fk.Node.Seq <= last.Seq {
				continue
			}
			for _, b := range fk.Branches {
				if b.Agent == near[i] {
					as = append(as, fmt.Sprintf("%q as %s", t, near[i]))
					if !slices.Contains(at, fk.Node.ID()) {
						at = append(at, fk.Node.ID())
					}
					break forks
				}
			}
		}
	}
	switch {
	case len(as) == 0:
		return ""
	case len(r.types) == 1:
		return fmt.Sprintf("%s then called it as %s (%s), a model round trip later", r.agent, near[0], at[0])
	case len(as) == len(r.types) && len(at) == 1:
		return fmt.Sprintf("%s then called them as %s (%s), a model round trip later", r.agent, strings.Join(near, ", "), at[0])
	}
	return fmt.Sprintf("%s then called %s (%s)", r.agent, strings.Join(as, " and "), strings.Join(at, ", "))
}

// rejectedFix points at the file that tells the agent which types to use,
// in the stack's terms, with the types that exist.
func (p *pass) rejectedFix(r *refusal, avail []string, near []string) findings.Fix {
	exists := "no list of the types that exist was recorded"
	if len(avail) > 0 {
		exists = "the types that exist: " + listCut(avail, 8)
	}
	var named, unknown []string // "X" for "x"; the types with no near name
	for i, t := range r.types {
		if near[i] != "" {
			named = append(named, fmt.Sprintf("%q for %q", near[i], t))
		} else {
			unknown = append(unknown, fmt.Sprintf("%q", t))
		}
	}
	var use string
	switch {
	case len(r.types) == 1 && near[0] != "":
		use = fmt.Sprintf("ask for %q: %q exists under that name (%s)", near[0], r.types[0], exists)
	case len(r.types) == 1:
		use = fmt.Sprintf("ask for a type that exists (%s)", exists)
	case len(unknown) == 0:
		use = "ask for the types by the names they exist under: " + strings.Join(named, ", ")
	case len(named) == 0:
		use = fmt.Sprintf("ask for types that exist instead of %s (%s)", strings.Join(unknown, ", "), exists)
	default:
		use = fmt.Sprintf("ask for the types by the names they exist under: %s, and for types that exist instead of %s (%s)", strings.Join(named, ", "), strings.Join(unknown, ", "), exists)
	}
	o := p.Owner(r.agent, r.types[0], "agent", "subagent")
	format := p.Profile.Format
	if p.Project.Imported && p.Graph.Source.Format != stack.OTLP.Format {
		format = p.Graph.Source.Format // whatever profile the audit was given; a trace's, by its framework
	}
	// in names the definition files: "in .claude/agents/x.md", or "in
	// .claude/agents/ (x.md and y.md)".
	in := func(dir, ext string) string {
		if len(r.types) == 1 {
			return "it in " + dir + "/" + r.types[0] + ext
		}
		f := make([]string, len(r.types))
		for i, t := range r.types {
			f[i] = t + ext
		}
		return fmt.Sprintf("them in %s/ (%s and %s)", dir, strings.Join(f[:len(f)-1], ", "), f[len(f)-1])
	}
	var define string
	if len(r.types) == 1 && r.types[0] == record.UnrecordedType {
		// nothing to define: the recording does not say what was asked for
		return findings.Fix{Location: o.Location, Text: o.Tell(use)}
	}
	switch format {
	case "claude-code":
		define = "or define " + in(".claude/agents", ".md")
		if cmd := p.commandOf(r); cmd != "" {
			define += fmt.Sprintf("; the turn ran the command %s: if a plugin installed it, it is not yours to edit, so name the types to use in %s", cmd, o.Where)
		}
	case "codex":
		define = "or define " + in(".codex/agents", ".toml")
	case "gemini-cli":
		define = "or define " + in(".gemini/agents", ".md")
	case record.SourceInspect:
		may := "none"
		if len(avail) > 0 {
			may = listCut(avail, 8)
		}
		return findings.Fix{Location: p.Project.ForkLocation(r.agent), Also: []findings.Location{o.Location},
			Text: fmt.Sprintf("Fork only to the agents %s may fork to (%s): say in %s which of them does what, or add %s to fork: agents: of %s in agents.yaml", r.agent, may, o.Where, strings.Join(r.types, ", "), r.agent)}
	default:
		name := "that name"
		if len(r.types) > 1 {
			name = "each name"
		}
		define = fmt.Sprintf("or give %s a sub-agent of %s in the code that builds it", r.agent, name)
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

// rejectedPromise: the refused types, none refused again.
type rejectedPromise struct{ Types []string }

// expectDelegationRejected: the agent delegates in the later run and no
// call of that type is refused (a run where it delegates nothing shows
// nothing of the fix).
func expectDelegationRejected(pr rejectedPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	n, lp := 0, laterPass(next)
	for _, fk := range forksBy(next, f.Agent) {
		for _, b := range fk.Branches {
			n++
			if slices.Contains(pr.Types, b.Agent) && lp.refusedDelegation(b.Status, branchWhy(b).why, b.Conv) {
				return verdict(false, "the call of type %q at %s was refused", b.Agent, fk.Node.ID())
			}
		}
	}
	for _, c := range next.Nodes {
		if c.Kind == record.KindTool && c.Tool != nil && c.Tool.Name == "fork" && c.Agent == f.Agent && c.Status == record.StatusError {
			n++
			if m := forkRefusedRE.FindStringSubmatch(toolError(c)); m != nil && slices.Contains(pr.Types, m[1]) {
				return verdict(false, "the fork call at %s asking for %q was refused", c.ID(), m[1])
			}
		}
	}
	if n == 0 {
		return verdict(false, "%s made no delegation call in the new run", f.Agent)
	}
	return verdict(true, "no refused call of %s (%s from %s examined)", typeWord(pr.Types, true, "or"), plural(n, "delegation call", "delegation calls"), f.Agent)
}
