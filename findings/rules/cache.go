package rules

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// CacheUnstablePrefix is DESIGN §15's rule: within one conversation and
// agent, a request whose reusable prefix breaks before the previous
// request's last message.
var CacheUnstablePrefix = &findings.Rule{
	ID:       "cache.unstable-prefix",
	Area:     findings.Caching,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "unstable prompt prefix",
		Detect: "within one conversation and one agent, a request whose prefix (tools, then system prompt, then messages) breaks " +
			"before the previous request's last message: something early changed — a timestamp or counter in a prompt, a reordered " +
			"or changed tool array, an edited earlier message — so everything after it is sent uncached. A hand-off, a fork " +
			"branch's start, a new turn and a history cut by a compaction are not this rule. Read from the stored request bytes " +
			"(exact requests, and reconstructed ones that kept the system prompt and tools); never called measured unless the " +
			"provider reported cached tokens. In the stack's own terms: what its provider leaves out of the prefix it caches is " +
			"left out of the comparison (Claude Code's billing block, x-anthropic-billing-header, and the deferred tools ToolSearch " +
			"loads), a history its compaction rewrote starts again, and a change the stack makes to its own built-in tools is " +
			"named in the check, not reported (no file of the user's changes it). A change of Claude Code's billing block alone is " +
			"reported only when the provider's reported cached tokens are under half of the prefix kept without it: an endpoint " +
			"that caches by prefix (a proxy reached through ANTHROPIC_BASE_URL) compares it.",
		Price: "the tokens re-sent uncached: for each such request, the previous request's prompt it did not share (bytes/4, or " +
			"the provider's tokens in proportion when it reported the input); the cached tokens the provider reported on those " +
			"requests beside it.",
		Fix: "the file and line of the text that changed (a system prompt), else the agent's entry: keep the prefix still — move " +
			"what changes per call to the latest message, offer the tools in one fixed order. An MCP server's tools that change " +
			"mid-session: that server (.mcp.json), or Claude Code's deferred loading; Claude Code's billing block at an endpoint " +
			"that compares it: \"env\": {\"CLAUDE_CODE_ATTRIBUTION_HEADER\": \"0\"} in .claude/settings.json.",
		Next: "the agent's consecutive requests in a conversation reuse the previous one's prefix: each reports cached tokens of at " +
			"least half the previous request's input.",
	},
	Run:    run(runCacheUnstablePrefix),
	Expect: expectWith(expectCacheUnstablePrefix),
}

// unstablePromise is what a cache.unstable-prefix finding promises: agent's
// requests keep their prefix.
type unstablePromise struct {
	Agent string
	Part  string // tools, system or messages
}

func runCacheUnstablePrefix(p *pass) {
	rep, err := p.Cache()
	if err != nil {
		p.NotApplicable("the prompt-cache analysis could not read the requests: %v", err)
		return
	}
	if rep == nil {
		p.NotApplicable("no recorded requests were given to this audit")
		return
	}
	type key struct{ agent, part, where string }
	type group struct {
		calls []*cache.Call
		lost  int64
	}
	var order []key
	groups := map[key]*group{}
	add := func(k key, c *cache.Call, lost int64) {
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			order = append(order, k)
		}
		g.calls = append(g.calls, c)
		g.lost += lost
	}
	compared := 0
	var own []string // the stack's own changes: not the user's to fix
	for _, c := range rep.Calls {
		if !c.Analyzed {
			continue
		}
		if prev := c.Previous; prev != nil && prev.Agent == c.Node.Agent {
			compared++
		}
		if x := c.Unkeyed; x != nil && unkeyedMissed(c) {
			add(key{c.Node.Agent, "unkeyed", x.Part.Name}, c, x.Lost)
			continue
		}
		u := c.Unstable
		if u == nil {
			continue
		}
		part := u.Break.Where
		if strings.HasPrefix(part, "messages[") {
			part = "messages"
		}
		if part == "tools" && u.Break.Tool != "" && !p.Profile.UserTool(u.Break.Tool) {
			own = append(own, fmt.Sprintf("%s at %s", u.Break.What, c.Node.ID()))
			continue
		}
		add(key{c.Node.Agent, part, u.Break.Location.String()}, c, u.Lost)
	}
	if compared == 0 {
		p.NotApplicable("no request followed another of the same agent in a conversation (with its tools and system prompt recorded)")
		return
	}
	for _, k := range order {
		g := groups[k]
		if k.part == "unkeyed" {
			p.Report(unkeyedFinding(p, k.agent, g.calls, g.lost))
			continue
		}
		first := g.calls[0]
		u := first.Unstable
		var nodes []string
		var cached int64
		reported := true
		for _, c := range g.calls {
			nodes = append(nodes, c.Unstable.Previous.ID(), c.Node.ID())
			reported = reported && c.Reported.CachedReported
			cached += c.Reported.Cached
		}
		nodes = dedupe(nodes)
		f := findings.Finding{
			Agent: k.agent,
			Message: fmt.Sprintf("%s of agent %s broke before the previous request's last message at %s (%s): %s; ≈%d tokens re-sent uncached",
				plural(len(g.calls), "request", "requests"), k.agent, u.Break.Where, u.Break.What, u.Break.Why, g.lost),
			Nodes: nodes,
			Next:  fmt.Sprintf("agent %s's consecutive requests reuse the previous one's prefix (reported cached tokens of at least half its input)", k.agent),
			Price: findings.Price{TokensIn: g.lost, LLMCalls: len(g.calls), CachedTokens: cached, CachedReported: reported,
				Basis: fmt.Sprintf("%s re-sent ≈%d tokens of the previous request's prompt uncached (predicted from the request bytes)", plural(len(g.calls), "request", "requests"), g.lost)},
			Shape:   "unstable " + k.part + " " + k.where,
			Promise: unstablePromise{Agent: k.agent, Part: k.part},
		}
		who := "agent " + k.agent
		if p.Profile.Dialect == stack.LangGraph.Dialect {
			who = "node " + k.agent // LangGraph's words, as its fix location's
		}
		switch k.part {
		case "system":
			f.Fix.Text = fmt.Sprintf("Move what changes per call out of %s's system prompt into the latest message, so the prefix before it stays the same", who)
			if u.Break.Location.Path != "" {
				f.Fix.Location = findings.Location{Path: u.Break.Location.Path, Line: u.Break.Location.Line}
			} else {
				f.Fix.Location = p.Owner(k.agent).Location
			}
		case "tools":
			f.Fix.Text = fmt.Sprintf("Offer %s's tools in one fixed order, built the same way for every call (%s)", who, u.Break.What)
			if a := p.Project.Agent(k.agent); a != nil && a.ToolsLine > 0 {
				f.Fix.Location = findings.Location{Path: findings.AgentsFile, Line: a.ToolsLine}
			}
			if p.Profile.UserTools != nil && p.Profile.UserTool(u.Break.Tool) {
				f.Fix = userToolsFix(p, k.agent, u.Break)
			}
		default:
			f.Fix.Text = fmt.Sprintf("Append to %s's conversation instead of editing earlier messages (%s changed)", who, u.Break.Where)
		}
		p.Report(f)
	}
	clear := fmt.Sprintf("%s compared with the previous request of the same agent and conversation", plural(compared, "request", "requests"))
	if len(own) > 0 {
		// a built-in tool the stack adds itself: no file of the user's
		// changes it, so it is no mistake of theirs
		clear += fmt.Sprintf("; not counted, as %s changed them itself (its own tools, which no file of yours sets): %s", p.Profile.Name, strings.Join(own, ", "))
	}
	p.Clear("%s", clear)
}

// unkeyedMissed reports whether the provider's report shows that c's
// prefix was not reused although only a part its own provider leaves out
// of the comparison changed (Claude Code's billing block): cached tokens
// reported, the previous request fresh, and fewer than half of the prefix
// that held without the part — an endpoint that compares the part.
func unkeyedMissed(c *cache.Call) bool {
	x, r := c.Unkeyed, c.Reported
	if x == nil || x.Part.Off == "" || !x.Fresh || !r.CachedReported || c.Node.Status != record.StatusOK || x.Lost <= 0 {
		return false
	}
	return 2*r.Cached < x.Kept
}

// unkeyedFinding is the finding of calls whose prefix an endpoint broke on
// a part the stack's own provider leaves out (unkeyedMissed): the fix is
// the stack's setting that stops it sending the part.
func unkeyedFinding(p *pass, agent string, calls []*cache.Call, lost int64) findings.Finding {
	x := calls[0].Unkeyed
	var nodes []string
	var cached, kept int64
	for _, c := range calls {
		nodes = append(nodes, c.Unkeyed.Previous.ID(), c.Node.ID())
		cached += c.Reported.Cached
		kept += c.Unkeyed.Kept
	}
	nodes = dedupe(nodes)
	n := plural(len(calls), "request", "requests")
	return findings.Finding{
		Agent: agent,
		Message: fmt.Sprintf("%s of agent %s reported %d cached tokens of the ≈%d their prefix kept: the only early change was %s, which %s writes itself (%s); %s, but %s compares it, so ≈%d tokens were re-sent uncached",
			n, agent, cached, kept, x.Part.Name, p.Profile.Name, x.What, x.Part.Why, x.Part.Elsewhere, lost),
		Nodes: nodes,
		Next:  fmt.Sprintf("agent %s's consecutive requests reuse the previous one's prefix (reported cached tokens of at least half its input)", agent),
		Price: findings.Price{TokensIn: lost, LLMCalls: len(calls), CachedTokens: cached, CachedReported: true,
			Basis: fmt.Sprintf("%s re-sent ≈%d tokens after %s uncached, as the reported cached tokens show", n, lost, x.Part.Name)},
		Fix: findings.Fix{Location: findings.Location{Label: x.Part.OffFile, Source: p.Owner(agent).Location.Source},
			Text: fmt.Sprintf("Set %s in %s (or %s in the environment) so %s stops sending %s: these requests reached %s, where it breaks the prefix each time it changes (%s, so the setting costs nothing there)",
				x.Part.Off, x.Part.OffFile, x.Part.OffEnv, p.Profile.Name, x.Part.Name, x.Part.Elsewhere, x.Part.Why)},
		Shape:   "unkeyed " + x.Part.Name,
		Promise: unstablePromise{Agent: agent, Part: "system"},
	}
}

// userToolsFix is the fix of a tool array that changed on a tool the user
// added to a stack whose own tools are built in (Claude Code's MCP tools,
// mcp__<server>__<tool>): that server's tools, not the agent's prompt.
func userToolsFix(p *pass, agent string, br cache.Break) findings.Fix {
	ut := p.Profile.UserTools
	server, _, _ := strings.Cut(strings.TrimPrefix(br.Tool, ut.Prefix), "__")
	text := fmt.Sprintf("Keep the tools of MCP server %s (%s) the same for the whole session (%s): have it list every tool when it connects instead of adding or changing them mid-session (tools/list_changed)",
		server, ut.File, br.What)
	if ut.Deferred != "" {
		text += fmt.Sprintf(", or have %s load them deferred, outside the cached prefix (%s)", p.Profile.Name, ut.Deferred)
	}
	return findings.Fix{Location: findings.Location{Label: ut.File, Source: p.Owner(agent).Location.Source}, Text: text}
}

func dedupe(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// expectCacheUnstablePrefix checks, in the next run, that the agent's
// consecutive requests in a conversation report cached tokens of at least
// half the previous request's input.
func expectCacheUnstablePrefix(pr unstablePromise, f findings.Finding, next *graph.Run) findings.Verdict {
	pairs := 0
	for _, conv := range next.Conversations {
		var prev *graph.Node
		for _, n := range conv.Nodes {
			if n.Kind != record.KindLLM || n.LLM == nil {
				continue
			}
			p := prev
			prev = n
			if p == nil || n.Agent != pr.Agent || p.Agent != pr.Agent || n.Status != record.StatusOK {
				continue
			}
			if v, ok := checkReuse(pr, p, n); !ok {
				return v
			}
			pairs++
		}
	}
	if pairs == 0 {
		return verdict(false, "agent %s made no two requests in a row in one conversation", pr.Agent)
	}
	return verdict(true, "each of agent %s's %s reports cached tokens of at least half the previous request's input", pr.Agent, plural(pairs, "later request", "later requests"))
}

// checkReuse checks that n reports cached tokens of at least half of
// prev's input; the verdict says why not.
func checkReuse(pr unstablePromise, prev, n *graph.Node) (findings.Verdict, bool) {
	u := n.LLM.Usage
	if !u.CachedReported {
		return verdict(false, "%s (agent %s) reports no cached tokens: nothing shows its prefix reused", n.ID(), pr.Agent), false
	}
	if 2*u.Cached < prev.LLM.Usage.In {
		return verdict(false, "%s (agent %s) reports %d cached tokens, less than half of %s's input (%d): the prefix still breaks early", n.ID(), pr.Agent, u.Cached, prev.ID(), prev.LLM.Usage.In), false
	}
	return findings.Verdict{}, true
}
