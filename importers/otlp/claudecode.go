package otlp

import (
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
)

// Claude Code's own traces (CLAUDE_CODE_ENABLE_TELEMETRY with
// OTEL_TRACES_EXPORTER=otlp; the enhanced-telemetry beta,
// CLAUDE_CODE_ENHANCED_TELEMETRY_BETA, adds the ids): one trace per user
// prompt, rooted at a claude_code.interaction span. Under it, and under
// each sub-agent, come the model calls (claude_code.llm_request) and the
// tool calls (claude_code.tool, tool_use_id, with a claude_code.tool.execution
// child that says whether it succeeded). An Agent (or Task) call's
// execution span holds the sub-agent's own spans, each naming it by
// agent_id: that is the branch. Which response asked for a tool is not in
// the spans; a tool belongs to the model call that started last before it.

const (
	ccInteraction = "claude_code.interaction"
	ccLLM         = "claude_code.llm_request"
	ccTool        = "claude_code.tool"
	ccExecution   = "claude_code.tool.execution"
	ccCompaction  = "claude_code.compaction"
)

// isClaudeCode reports whether root is the root span of a Claude Code
// trace.
func isClaudeCode(root *otel.Span) bool {
	return root.Name == ccInteraction || strings.HasPrefix(root.Scope, "com.anthropic.claude_code")
}

// allClaudeCode reports whether every root is a Claude Code span.
func allClaudeCode(roots []*otel.Span) bool {
	for _, r := range roots {
		if !isClaudeCode(r) && !strings.HasPrefix(r.Name, "claude_code.") {
			return false
		}
	}
	return len(roots) > 0
}

// claudeCode builds the conversation of ctx (the interaction span, the
// container of several roots — a session's prompts and notifications, or
// spans whose parent was never exported — or an Agent call's execution
// span) as agent.
func (b *builder) claudeCode(ctx *otel.Span, agent string) *importers.Conversation {
	c := &importers.Conversation{Agent: agent, Started: ctx.Start, Ended: ctx.End}
	var llms, tools []*otel.Span
	var compacts []importers.Step
	orphans := map[string][]*otel.Span{} // agent_id -> a sub-agent's spans whose Agent call was never exported
	var orphanOrder []string
	cut := false
	var add func(k *otel.Span, root bool)
	add = func(k *otel.Span, root bool) {
		orphan := root && k.ParentID != "" // its parent never arrived: still open when the CLI stopped
		if orphan {
			cut = true
		}
		switch k.Name {
		case ccInteraction:
			// one prompt (or background notification) of the session
			for _, kk := range b.kids[k.SpanID] {
				add(kk, false)
			}
		case ccLLM, ccTool:
			if id := k.Attrs.Str("agent_id"); orphan && id != "" {
				if orphans[id] == nil {
					orphanOrder = append(orphanOrder, id)
				}
				orphans[id] = append(orphans[id], k)
				return
			}
			if k.Name == ccLLM {
				llms = append(llms, k)
			} else {
				tools = append(tools, k)
			}
		case ccCompaction:
			compacts = append(compacts, importers.Step{Compact: &importers.Compact{At: k.End}})
		}
	}
	for _, k := range b.kids[ctx.SpanID] {
		add(k, ctx.SpanID == "")
	}
	sortByStart(llms)
	sortByStart(tools)
	c.Steps = b.ccSteps(llms, tools)
	for _, st := range compacts {
		c.Steps = insertAt(c.Steps, st)
	}
	if len(orphanOrder) > 0 {
		fork := &importers.Fork{At: orphans[orphanOrder[0]][0].Start, Tool: "Agent", Context: "none"}
		for _, id := range orphanOrder {
			sub := &importers.Conversation{Agent: "general-purpose"}
			var l, t []*otel.Span
			for _, s := range orphans[id] {
				if s.Name == ccLLM {
					l = append(l, s)
				} else {
					t = append(t, s)
				}
			}
			sub.Steps = b.ccSteps(l, t)
			sub.Started = orphans[id][0].Start
			sub.Status, sub.Error = record.StatusInterrupted, "the session stopped while the sub-agent ran"
			fork.Branches = append(fork.Branches, &importers.Branch{Name: id, Agent: sub.Agent, Conv: sub})
		}
		c.Steps = append(c.Steps, importers.Step{Fork: fork})
	}
	if st, msg := spanStatus(ctx); st != record.StatusOK {
		c.Status, c.Error = st, msg
	}
	if cut {
		c.Status, c.Error = record.StatusInterrupted, "spans of calls still running were never exported: the session was interrupted"
		c.Ended = time.Time{}
	}
	if c.Ended.IsZero() {
		c.Status = record.StatusInterrupted
	}
	return c
}

// ccSteps lays out model calls and tool calls: each tool call goes with
// the model call that started last before it (a tool starts as soon as
// its block has streamed, before its response ends). A response that
// asked for nothing ends a turn.
func (b *builder) ccSteps(llms, tools []*otel.Span) []importers.Step {
	owner := make([][]*otel.Span, len(llms))
	for _, t := range tools {
		at := -1
		for i, l := range llms {
			if !l.Start.After(t.Start) {
				at = i
			}
		}
		if at < 0 {
			b.report.Skipped["claude_code.tool spans before any model call"]++
			continue
		}
		owner[at] = append(owner[at], t)
	}
	var steps []importers.Step
	for i, l := range llms {
		llm := b.ccLLM(l)
		steps = append(steps, importers.Step{LLM: llm})
		if llm.Agent == "compaction" {
			steps = append(steps, importers.Step{Compact: &importers.Compact{At: llm.Ended}})
			continue
		}
		var fork *importers.Fork
		for _, t := range owner[i] {
			name := t.Attrs.Str("tool_name")
			llm.Calls = append(llm.Calls, name)
			if name != "Agent" && name != "Task" {
				steps = append(steps, importers.Step{Tool: b.ccToolStep(t)})
				b.ccResume(t)
				continue
			}
			if fork == nil {
				fork = &importers.Fork{At: t.Start, Tool: name, Context: "none"}
				steps = append(steps, importers.Step{Fork: fork})
			}
			br := b.ccBranch(t)
			fork.Branches = append(fork.Branches, br)
			if end := br.Conv.Ended; end.After(fork.JoinAt) {
				fork.JoinAt = end
			}
			if br.Agent == "fork" {
				fork.Context = "inherit"
			}
		}
		if len(owner[i]) == 0 && llm.Status == record.StatusOK {
			steps = append(steps, importers.Step{Final: &importers.Final{At: llm.Ended}})
		}
	}
	return steps
}

// insertAt puts st among steps by time.
func insertAt(steps []importers.Step, st importers.Step) []importers.Step {
	at := st.At()
	for i, s := range steps {
		if s.At().After(at) {
			return append(steps[:i], append([]importers.Step{st}, steps[i:]...)...)
		}
	}
	return append(steps, st)
}

// ccLLM maps one claude_code.llm_request span: gen_ai.usage.input_tokens
// counts every input token (fresh, cache reads and writes), which
// input_tokens, cache_read_tokens and cache_creation_tokens give apart.
func (b *builder) ccLLM(s *otel.Span) *importers.LLM {
	a := s.Attrs
	l := &importers.LLM{Started: s.Start, Ended: s.End, Model: a.Str("model"), Calls: []string{}, Status: record.StatusOK}
	if a.Str("query_source_safe") == "compact" {
		l.Agent = "compaction" // the summary request of a compaction
	}
	if l.Model == "" {
		l.Model = a.Str("gen_ai.request.model")
	}
	if l.Model != "" {
		b.models[l.Model] = true
	}
	fresh, okFresh := a.Int("input_tokens")
	read, okRead := a.Int("cache_read_tokens")
	write, okWrite := a.Int("cache_creation_tokens")
	var u record.Usage
	if total, ok := a.Int("gen_ai.usage.input_tokens"); ok {
		u.In = total
	} else if okFresh {
		u.In = fresh + read + write
	}
	u.Cached, u.CachedReported = read, okRead
	u.CacheWrite, u.CacheWriteReported = write, okWrite
	u.Out, _ = a.Int("output_tokens")
	if out, ok := a.Int("gen_ai.usage.output_tokens"); ok {
		u.Out = out
	}
	u.Clamp()
	l.Usage = u
	if v, ok := a["success"].(bool); ok && !v {
		l.Status, l.Error = record.StatusError, a.Str("error")
		if l.Error == "" {
			l.Error = "the request failed"
		}
	}
	if st, msg := spanStatus(s); st == record.StatusError {
		l.Status, l.Error = st, msg
	}
	if code := a.Str("status_code"); l.Status == record.StatusError && code != "" && !strings.Contains(l.Error, code) {
		// as Claude Code words it in its session files ("API Error: 400
		// …"): the provider's status is what says retry or not
		l.Error = "API Error: " + code + " " + l.Error
	}
	return l
}

// execution is the claude_code.tool.execution span of tool span t, or nil.
func (b *builder) execution(t *otel.Span) *otel.Span {
	for _, k := range b.kids[t.SpanID] {
		if k.Name == ccExecution {
			return k
		}
	}
	return nil
}

// ccToolStep maps one claude_code.tool span (the arguments and results
// are not exported).
func (b *builder) ccToolStep(t *otel.Span) *importers.Tool {
	name := t.Attrs.Str("tool_name")
	tool := &importers.Tool{Started: t.Start, Ended: t.End, CallID: t.Attrs.Str("tool_use_id"), Name: name, Args: "{}",
		Research: ccResearch[name] || b.research(name), Status: record.StatusOK}
	if e := b.execution(t); e != nil {
		if v, ok := e.Attrs["success"].(bool); ok && !v {
			tool.Status, tool.Error = record.StatusError, e.Attrs.Str("error")
		}
	}
	if tool.Ended.IsZero() {
		tool.Status, tool.Error = record.StatusInterrupted, "the span never ended"
	}
	return tool
}

// ccResearch are Claude Code's read-only tools (DESIGN §13).
var ccResearch = map[string]bool{"Read": true, "Grep": true, "Glob": true, "LS": true, "WebFetch": true, "WebSearch": true, "NotebookRead": true}

// ccBranch maps an Agent call: its sub-agent's spans under the call's
// execution span, named by their agent_id; the agent's type from the
// query source of its model calls (agent.builtin.general-purpose, …).
func (b *builder) ccBranch(t *otel.Span) *importers.Branch {
	br := &importers.Branch{CallID: t.Attrs.Str("tool_use_id"), Agent: "general-purpose"}
	e := b.execution(t)
	if e == nil {
		br.Name = br.CallID
		br.Conv = &importers.Conversation{Agent: br.Agent, Started: t.Start, Status: record.StatusInterrupted,
			Error: "no span of the sub-agent was exported"}
		return br
	}
	for _, k := range b.kids[e.SpanID] {
		if id := k.Attrs.Str("agent_id"); id != "" && br.Name == "" {
			br.Name = id
		}
		if q := k.Attrs.Str("query_source_safe"); strings.HasPrefix(q, "agent.") {
			parts := strings.Split(q, ".")
			br.Agent = parts[len(parts)-1]
		}
	}
	if br.Name == "" {
		br.Name = br.CallID
	}
	if e.Attrs.Str("error_class") == "AgentTypeError" && len(b.kids[e.SpanID]) == 0 {
		// refused at the call: the type it asked for is in the call's
		// input, which the trace does not carry; it is no general-purpose
		br.Agent = record.UnrecordedType
	}
	if b.ccBranches == nil {
		b.ccBranches = map[string]*importers.Branch{}
	}
	b.ccBranches[br.Name] = br
	c := b.claudeCode(e, br.Agent)
	// the sub-agent runs from its first span to its last (a background
	// one outlives the call that launched it)
	for _, st := range c.Steps {
		if at := st.At(); !at.IsZero() && (c.Started.IsZero() || at.Before(c.Started)) {
			c.Started = at
		}
	}
	if last := lastEnd(b.kids[e.SpanID]); last.After(c.Ended) {
		c.Ended = last
	}
	if v, ok := e.Attrs["success"].(bool); ok && !v && c.Status == "" {
		c.Status, c.Error = record.StatusError, "the sub-agent failed"
	}
	if n := len(c.Steps); n > 0 && (c.Status == "" || c.Status == record.StatusError) {
		if l := c.Steps[n-1].LLM; l != nil && l.Status == record.StatusError && !strings.Contains(c.Error, l.Error) {
			// the model call that ended it says why: "AgentApiErrorTermination
			// Error: API Error: 400 …", not the error class alone
			c.Status, c.Error = record.StatusError, strings.TrimPrefix(c.Error+": "+l.Error, ": ")
		}
	}
	br.Conv = c
	return br
}

// ccResume adds to its branch the work a sub-agent did under another
// call's execution span: SendMessage resuming a sub-agent that finished
// runs it there, under the same agent_id — one branch that works in two
// spans.
func (b *builder) ccResume(t *otel.Span) {
	e := b.execution(t)
	if e == nil {
		return
	}
	var llms, tools []*otel.Span
	id := ""
	for _, k := range b.kids[e.SpanID] {
		if a := k.Attrs.Str("agent_id"); a != "" && (k.Name == ccLLM || k.Name == ccTool) {
			id = a
			if k.Name == ccLLM {
				llms = append(llms, k)
			} else {
				tools = append(tools, k)
			}
		}
	}
	br := b.ccBranches[id]
	if id == "" || br == nil || br.Conv == nil {
		return
	}
	c := br.Conv
	c.Steps = append(c.Steps, b.ccSteps(llms, tools)...)
	if last := lastEnd(b.kids[e.SpanID]); last.After(c.Ended) {
		c.Ended = last
	}
}

func lastEnd(ss []*otel.Span) time.Time {
	var t time.Time
	for _, s := range ss {
		if s.End.After(t) {
			t = s.End
		}
	}
	return t
}
