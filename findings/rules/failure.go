package rules

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// BranchFailed: a branch did not end ok, with what made it fail.
var BranchFailed = &findings.Rule{
	ID:       "branch.failed",
	Area:     findings.Forking,
	Severity: findings.Error,
	Doc: findings.Doc{
		Title: "failed branch",
		Detect: "a fork branch whose status is error or exhausted, with its cause: limit (a step, turn or token budget ended it), " +
			"provider (an HTTP error such as 500, 529 or 429, overloaded, a timeout), tool (the branch ended on a failing tool call), " +
			"rejected (the call was refused: a permission denied; a refused sub-agent type is delegation.rejected's) or prompt (none of these). " +
			"A branch cancelled or interrupted with its run is no prompt mistake, and its open fork is not applicable.",
		Price: "the branch's tokens and time, spent without an answer.",
		Fix: "by cause: prompt — the forking agent's prompt: put every fact the branch needs into its instructions, a branch cannot ask back; " +
			"provider — retry with backoff or fall back to another model, not a prompt change; tool — the tool named, or what the branch does when it fails; " +
			"limit — a narrower job for the branch, or a higher limit; rejected — allow the call, or stop asking for it.",
		Next: "that branch ok.",
	},
	Run:    run(runBranchFailed),
	Expect: expectWith(expectBranchFailed),
}

// DelegationRejected: a sub-agent call the stack refused.
var DelegationRejected = &findings.Rule{
	ID:       "delegation.rejected",
	Area:     findings.Delegation,
	Severity: findings.Error,
	Doc: findings.Doc{
		Title: "refused sub-agent call",
		Detect: "a delegation call (Claude Code's Task/Agent, Codex's spawn_agent, Gemini CLI's invoke_agent, a fork) that the stack " +
			"refused before any sub-agent ran: its branch made no model call and ended error with a refusal naming the agent type (not found, " +
			"unknown, not allowed), or our runtime's fork call named an agent its fork: agents do not list. One finding per agent and refused type, listing every such call.",
		Price: "the model steps that made the refused calls (their time and tokens; a step shared by several refused types is charged once) " +
			"and the wait for the refusals: work spent asking for an agent that could not run.",
		Fix: "name a type that exists — the refusal's list of available agents, the agent definitions the session holds, or the types that ran — " +
			"in the file that tells the agent which types to use (CLAUDE.md or .claude/agents/<type>.md, AGENTS.md, the agent's instructions), " +
			"or define the missing type.",
		Next: "no refused delegation call of that type.",
	},
	Run:    run(runDelegationRejected),
	Expect: expectWith(expectDelegationRejected),
}

// failure is why a branch (or a conversation) failed: its cause, the text
// that says so, and the node that carries it.
type failure struct {
	cause string      // a findings.Cause* value
	why   string      // the recorded reason, one line
	node  *graph.Node // the node with the error (nil: none has one)
	tool  *graph.Node // the failing tool call, for findings.CauseTool
}

var (
	// refusalRE is a refusal of the call itself (Claude Code: "Agent type
	// 'x' not found. Available agents: …", AgentTypeError in its traces;
	// Codex: "unknown agent_type 'x'"; Gemini CLI: "Subagent 'x' not
	// found.").
	refusalRE = regexp.MustCompile(`(?i)\b(sub-?agent|agent[ _]?type|subagent_type|agent_name|agent)\b[^.\n]{0,80}?\b(not found|unknown|not allowed|not permitted|not available|does not exist)\b|\bunknown (sub-?agent|agent)|\bno such agent\b|\bcall was refused\b|\bAgentTypeError\b`)
	// deniedRE is a call the user, a permission or a hook refused.
	deniedRE = regexp.MustCompile(`(?i)permission denied|doesn't want to proceed|was denied|\bblocked by\b|\brejected\b`)
	// limitRE is a limit that ended the work.
	limitRE = regexp.MustCompile(`(?i)max[_ -]?turns|max[_ -]?steps|maximum (number of )?(turns|steps|iterations)|(step|turn|token|iteration|recursion) limit|max_tokens|budget[_ ]exhausted|context (length|window)|reached its limit|limit reached|exceeded (the )?max`)
	// providerRE is the model provider failing: HTTP errors, overload,
	// rate limits, timeouts, a dropped connection (Claude Code's traces:
	// AgentApiErrorTerminationError). Gemini CLI records
	// Google's error body as it came: {"error":{"code":400,…,"status":
	// "INVALID_ARGUMENT"}}, its status one of Google's canonical codes.
	providerRE = regexp.MustCompile(`(?i)\bHTTP ?[45]\d\d\b|\bstatus(code)?[ :=]*[45]\d\d\b|API Error|\bapi_error\b|ApiError|invalid_request_error|overloaded|rate[ _-]?limit|\b(429|500|502|503|504|529)\b|timed? ?out\b|timeout|ECONNRESET|ECONNREFUSED|connection (reset|refused|closed)|internal server error|service unavailable|bad gateway|model call failed|"code": ?[45]\d\d\b|` + googleStatus)
	// googleStatus is a Google API error's canonical status, as Gemini
	// CLI records it (upper case: "not found" in a sentence is not one).
	googleStatus = `(?-i:\b(INVALID_ARGUMENT|FAILED_PRECONDITION|OUT_OF_RANGE|UNAUTHENTICATED|PERMISSION_DENIED|NOT_FOUND|RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED)\b)`
	// httpStatusRE is the HTTP status a provider's error names: "HTTP
	// 500", "status 429", Claude Code's "API Error: 400", Google's
	// "code":400.
	httpStatusRE = regexp.MustCompile(`(?i)(?:\bHTTP ?|\bstatus(?:code)?[ :=]*|"code": ?|API Error:? )([45]\d\d)\b`)
	// badRequestRE is a provider refusing the request itself (no status
	// named): OpenAI's and Anthropic's error types, Google's statuses.
	badRequestRE = regexp.MustCompile(`(?i)invalid_request_error|authentication_error|permission_error|not_found_error|invalid api key|incorrect api key|(?-i:\b(INVALID_ARGUMENT|FAILED_PRECONDITION|OUT_OF_RANGE|UNAUTHENTICATED|PERMISSION_DENIED|NOT_FOUND)\b)`)
)

// badRequest reports whether a provider's failure why is the provider
// refusing the request itself — a 4xx other than 408 (timeout) and 429
// (rate limit), an invalid request, a key or model it does not know —
// which the same request meets again, so a retry cannot help.
func (p *pass) badRequest(why string) bool {
	if v, ok := p.shared.bad[why]; ok {
		return v
	}
	if p.shared.bad == nil {
		p.shared.bad = map[string]bool{}
	}
	v := badRequest(why)
	p.shared.bad[why] = v
	return v
}

func badRequest(why string) bool {
	if m := httpStatusRE.FindStringSubmatch(why); m != nil {
		return m[1][0] == '4' && m[1] != "408" && m[1] != "429"
	}
	return badRequestRE.MatchString(why)
}

// branchFailure tells why branch b (status error or exhausted) failed.
func (p *pass) branchFailure(b *graph.Branch) failure {
	f := branchWhy(b)
	f.cause = p.classify(b.Status, f.why, b.Conv)
	if f.cause == findings.CauseTool {
		f.tool = failingTool(b.Conv)
	}
	return f
}

// branchWhy is the reason branch b gives for its end, unclassified (no
// cause, no tool): the last error its conversation recorded, else its
// answer, else "no reason recorded". What a rule that only reads the
// reason asks of every branch, without the cause's patterns.
func branchWhy(b *graph.Branch) failure {
	f := failure{why: strings.TrimSpace(b.Answer)}
	for i := len(b.Conv.Nodes) - 1; i >= 0; i-- {
		if n := b.Conv.Nodes[i]; n.Error != "" {
			f.node, f.why = n, n.Error
			break
		}
	}
	if f.why == "" {
		f.why = "no reason recorded"
	}
	return f
}

// classify is the cause of a conversation c that ended with status st for
// reason why.
func (p *pass) classify(st record.Status, why string, c *graph.Conversation) string {
	switch {
	case p.refusedDelegation(st, why, c):
		return findings.CauseRejected
	case st == record.StatusExhausted || p.matches(limitRE, why):
		return findings.CauseLimit
	case p.matches(providerRE, why):
		return findings.CauseProvider
	case failingTool(c) != nil:
		return findings.CauseTool
	case p.matches(deniedRE, why):
		return findings.CauseRejected
	}
	return findings.CausePrompt
}

// refusedDelegation reports whether a branch conversation c that ended
// with status st for reason why was refused at its call: no model call
// ran in it, and the reason is a refusal.
func (p *pass) refusedDelegation(st record.Status, why string, c *graph.Conversation) bool {
	if st != record.StatusError || c == nil || firstLLM(c, 0) != nil {
		return false
	}
	return p.matches(refusalRE, why) && !p.matches(providerRE, why)
}

// matchKey is a pattern and a text it was matched against.
type matchKey struct {
	re   *regexp.Regexp
	text string
}

// matches reports whether re matches text, matched once per lane of the
// audit: a run's failures repeat a few reasons, and every failed branch's
// cause reads its reason again.
func (p *pass) matches(re *regexp.Regexp, text string) bool {
	k := matchKey{re, text}
	if v, ok := p.shared.matched[k]; ok {
		return v
	}
	if p.shared.matched == nil {
		p.shared.matched = map[matchKey]bool{}
	}
	v := re.MatchString(text)
	p.shared.matched[k] = v
	return v
}

// failingTool is the failed tool call conversation c ended on: the last
// tool call of c, when it failed and no model call came after it (nil
// otherwise).
func failingTool(c *graph.Conversation) *graph.Node {
	if c == nil {
		return nil
	}
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		switch n := c.Nodes[i]; {
		case n.Kind == record.KindLLM:
			return nil
		case isCall(n):
			if n.Status == record.StatusError {
				return n
			}
			return nil
		}
	}
	return nil
}

func runBranchFailed(p *pass) {
	if noForks(p) {
		return
	}
	_, rejectedOff := p.Options.Off(DelegationRejected.ID)
	_, loopOff := p.Options.Off(ToolFailureLoop.ID)
	tail := failureLoopTail.Get(p.Options)
	branches, left, looped := 0, 0, 0
	for _, f := range p.Forks() {
		for _, b := range f.Branches {
			branches++
			if b.Status != record.StatusError && b.Status != record.StatusExhausted {
				continue // ok, or stopped by Ctrl-C or a dead process: no prompt mistake
			}
			fl := p.branchFailure(b)
			if fl.cause == findings.CauseRejected && p.refusedDelegation(b.Status, fl.why, b.Conv) && !rejectedOff {
				left++ // delegation.rejected's
				continue
			}
			if !loopOff && ranOutOnFailures(b.Conv, convCalls(b.Conv), tail) {
				looped++ // tool.failure-loop's: its fix names the failing tool
				continue
			}
			var price findings.Price
			for _, n := range b.Conv.Nodes {
				if isCall(n) {
					price.Calls++
				}
				addUsage(&price, n)
			}
			price.ElapsedMS = b.Duration.Milliseconds()
			price.Basis = fmt.Sprintf("branch %s ran %s and spent %d tokens in, %d out, with no answer", b.Name, graph.FormatDuration(b.Duration), price.TokensIn, price.TokensOut)
			agent := forkingAgent(f)
			fix := p.failureFix(agent, b, fl)
			p.Report(findings.Finding{
				Agent:   agent,
				Message: fmt.Sprintf("branch %q (%s) of the fork at %s ended %s: %s (cause: %s)", b.Name, b.Agent, f.Node.ID(), b.Status, truncate(fl.why, 120), fl.cause),
				Nodes:   ids(f.Node, lastNode(b.Conv), f.Join),
				Fix:     fix,
				Next:    fmt.Sprintf("branch %q ok", b.Name),
				Price:   price,
				Cause:   fl.cause,
				Shape:   fmt.Sprintf("branch on %s %s", b.Agent, b.Status),
				Promise: branchPromise{Branch: b.Name},
			})
		}
	}
	detail := plural(branches, "branch", "branches") + " examined"
	if left > 0 {
		detail += fmt.Sprintf("; %s left to delegation.rejected", plural(left, "refused call", "refused calls"))
	}
	if looped > 0 {
		detail += fmt.Sprintf("; %s that ran out of steps on failing calls left to tool.failure-loop", plural(looped, "branch", "branches"))
	}
	p.Clear("%s", detail)
}

// failureFix is branch.failed's fix for branch b of agent's fork, failed
// for fl: only a prompt cause is told to change the prompt.
func (p *pass) failureFix(agent string, b *graph.Branch, fl failure) findings.Fix {
	o := p.Owner(agent, "fork", "branch", "instructions", "sub-agent")
	switch fl.cause {
	case findings.CauseProvider:
		loc := o.Entry()
		if !ours(p) {
			// no file of the user's fails a provider: the SARIF location is the session
			loc = findings.Location{Label: "the model provider (no instructions to change)", Source: p.Project.Source}
		}
		return findings.Fix{Location: loc,
			Text: fmt.Sprintf("Not a prompt mistake: the model provider failed under %s %q (%s). %s", p.words("branch", "sub-agent"), b.Name, truncate(fl.why, 80), retryAdvice(p, fl.why))}
	case findings.CauseLimit:
		return findings.Fix{Location: o.Location,
			Text: fmt.Sprintf("%s %q ran out of its limit (%s): %s", p.words("Branch", "Sub-agent"), b.Name, truncate(fl.why, 80), limitAdvice(p, o, b.Agent))}
	case findings.CauseTool:
		tool := "its last tool"
		if fl.tool != nil {
			tool = fmt.Sprintf("tool %s (%s: %s)", fl.tool.Tool.Name, fl.tool.ID(), truncate(toolError(fl.tool), 80))
		}
		return findings.Fix{Location: o.Location,
			Text: fmt.Sprintf("%s %q ended on a failing call of %s: fix the tool or the input it was given; if it can fail, %s", p.words("Branch", "Sub-agent"), b.Name, tool,
				o.Clause(fmt.Sprintf("what %s %q should do then (another tool, or answer with what it has)", p.words("branch", "sub-agent"), b.Name)))}
	case findings.CauseRejected:
		return findings.Fix{Location: o.Entry(),
			Text: fmt.Sprintf("A call of %s %q was refused (%s): allow it in %s's permissions, or %s", p.words("branch", "sub-agent"), b.Name, truncate(fl.why, 80), p.Profile.Name, o.Clause("not to ask for it"))}
	}
	return o.Fix(fmt.Sprintf(p.words("put every fact and path branch %q needs into its instructions; a branch cannot ask back",
		"put every fact and path sub-agent %q needs into the prompt it starts it with; a sub-agent cannot ask back"), b.Name))
}

// toolError is what failed tool call n returned.
func toolError(n *graph.Node) string {
	if n.Error != "" {
		return n.Error
	}
	if n.Tool != nil {
		return n.Tool.Result
	}
	return ""
}

// retryAdvice is what to do about a provider's failure why, in the
// stack's terms: nothing in a prompt causes an HTTP 500. A failure that
// passes (a 5xx, 429, overload, a timeout) is retried or the model
// changed; a request the provider refused (a 400, a bad key or model) fails
// the same way again, so the advice is what to check, and another model.
func retryAdvice(p *pass, why string) string {
	if p.badRequest(why) {
		check := fmt.Sprintf("the model, the API key and the endpoint %s is configured with", p.Profile.Name)
		switch {
		case ours(p):
			check = "the model, the API key and the base URL the run's model client uses (the runtime retries 429, 408, 5xx and timeouts, not this)"
		case p.Profile.Format == stack.ClaudeCode.Format:
			check = "the model (claude --model, or model in .claude/settings.json), the API key, and ANTHROPIC_BASE_URL when a proxy or gateway serves it"
		case p.Profile.Format == stack.Codex.Format:
			check = "the model (codex --model, or model in ~/.codex/config.toml) and the model provider's base_url and key (model_providers in config.toml)"
		case p.Profile.Format == stack.GeminiCLI.Format:
			check = "the model (gemini --model, or model.name in .gemini/settings.json), GEMINI_API_KEY, and GOOGLE_GEMINI_BASE_URL when a proxy serves it"
		case p.Profile.InstructionsInCode:
			check = fmt.Sprintf("the model name, the API key and the base URL of the client the agent is built with (%s)", p.Profile.Name)
		}
		return "The provider refused the request itself, so a retry of the same request will not help: check " + check + ", or fall back to another model"
	}
	switch {
	case ours(p):
		return "The runtime retries 429, 408, 5xx and timeouts 3 times with backoff; raise the model client's Retries, or fall back to another model, when the provider stays down"
	case p.Profile.Format == stack.ClaudeCode.Format:
		return "Claude Code retried it itself; run the sub-agent again once the provider recovers (claude -p takes --fallback-model for an overloaded model)"
	case p.Profile.Format == stack.Codex.Format:
		return "Codex retries a failed request itself (request_max_retries and stream_max_retries of the model provider in ~/.codex/config.toml); run the sub-agent again once the provider recovers, or fall back to another model (codex --model)"
	case p.Profile.Format == stack.GeminiCLI.Format:
		return "Gemini CLI retries 429 and 5xx answers itself; run the sub-agent again once the provider recovers, or fall back to another model (gemini --model, or model.name in .gemini/settings.json)"
	case p.Profile.InstructionsInCode:
		return fmt.Sprintf("Retry the model call with backoff in the code that runs the agent (%s), or fall back to another model or provider", p.Profile.Name)
	}
	return fmt.Sprintf("Run it again once the provider recovers, or configure %s to fall back to another model", p.Profile.Name)
}

// limitAdvice is what to do about a branch on agent branchAgent that
// reached its limit.
func limitAdvice(p *pass, o findings.Owner, branchAgent string) string {
	if ours(p) {
		return o.Clause("to give the branch a narrower job (or split it into several branches)") + fmt.Sprintf(", or raise maxSteps of %s in agents.yaml", branchAgent)
	}
	limit := fmt.Sprintf("the turn or step limit %s sets for %s", p.Profile.Name, branchAgent)
	switch {
	case p.Profile == stack.OpenAIAgents || p.Profile.Dialect == stack.OpenAIAgents.Format:
		limit = fmt.Sprintf("max_turns of the run of %s (Runner.run's max_turns, 10 by default)", branchAgent)
	case p.Profile.Format == stack.ClaudeCode.Format:
		limit = "the turn limit (claude -p --max-turns)"
	}
	return o.Clause("to give the sub-agent a narrower job (or split it)") + ", or raise " + limit
}

// ours reports whether the run is our runtime's, with its agents.yaml
// (an imported run audited without its stack's profile is not).
func ours(p *pass) bool {
	return p.Profile.Format == record.SourceInspect && !p.Project.Imported
}

// branchPromise: the failed branch, by name, ok next time.
type branchPromise struct{ Branch string }

// expectBranchFailed: a fork from the agent has a branch of that name, and
// every branch of that name ended ok.
func expectBranchFailed(p branchPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	found := false
	for _, fk := range forksBy(next, f.Agent) {
		for _, b := range fk.Branches {
			if b.Name != p.Branch {
				continue
			}
			found = true
			if b.Status != record.StatusOK {
				return verdict(false, "branch %q of the fork at %s ended %s", p.Branch, fk.Node.ID(), b.Status)
			}
		}
	}
	if !found {
		return verdict(false, "no branch %q from %s in the new run", p.Branch, f.Agent)
	}
	return verdict(true, "branch %q ended ok", p.Branch)
}
