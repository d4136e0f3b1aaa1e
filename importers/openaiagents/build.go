package openaiagents

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// sessions turns every collected trace into a Session.
func (c *collector) sessions() []*importers.Session {
	out := make([]*importers.Session, 0, len(c.order))
	for _, t := range c.order {
		out = append(out, c.session(t))
	}
	return out
}

func (c *collector) session(t *trace) *importers.Session {
	s := &importers.Session{
		Source: record.Source{Format: Name, ID: t.id, Path: c.path},
		Report: c.report,
	}
	// Link the tree; a span whose parent is not in the file hangs from the trace.
	var roots []*span
	for _, sp := range t.ordered {
		if p := t.spans[sp.parent]; p != nil && p != sp {
			p.children = append(p.children, sp)
		} else {
			roots = append(roots, sp)
		}
		if !sp.start.IsZero() && (s.Started.IsZero() || sp.start.Before(s.Started)) {
			s.Started = sp.start
		}
		if sp.end.After(s.Ended) {
			s.Ended = sp.end
		}
		if sp.model != "" && !slices.Contains(s.Models, sp.model) {
			s.Models = append(s.Models, sp.model)
		}
	}
	for _, sp := range t.ordered {
		byStart(sp.children)
		if sp.kind == "turn" {
			attributeTurnUsage(sp)
		}
	}
	byStart(roots)
	if cyclic(t) {
		s.Report.Skip("spans whose parents form a loop")
	}
	b := &builder{opt: c.opt, seen: map[*span]bool{}}
	chain := agentsUnder(roots, b.seen)
	task := findTask(roots)
	s.Trunk = b.conversation(chain, task, nil)
	if s.Trunk.Agent == "" {
		s.Trunk.Agent = "main"
	}
	if s.Trunk.Started.IsZero() {
		s.Trunk.Started = s.Started
	}
	if first := b.user; first != "" {
		s.Tasks = []string{first}
		s.Trunk.Steps = append([]importers.Step{{User: &importers.User{At: s.Trunk.Started, Text: first}}}, s.Trunk.Steps...)
	}
	s.Title = t.workflow
	// Generation spans record the messages, never the tool array (agent
	// spans name the tools); response spans (and generation spans with
	// sensitive data off) record neither.
	s.RequestsLack = []string{"the tool definitions"}
	if b.tools {
		s.RequestsLack = []string{"the tool definitions' descriptions and parameters (the trace names each agent's tools only)"}
	}
	if !b.messages {
		s.RequestsLack = append(s.RequestsLack, "the messages (the trace records none: sensitive data off, or the Responses API, whose input the SDK does not export)")
	}
	return s
}

// byStart orders spans by start time, then by their place in the file.
func byStart(ss []*span) {
	sort.SliceStable(ss, func(i, j int) bool {
		if !ss[i].start.Equal(ss[j].start) {
			return ss[i].start.Before(ss[j].start)
		}
		return ss[i].order < ss[j].order
	})
}

// cyclic reports whether some span's parents loop (a crafted file): those
// spans hang from no root and are not imported.
func cyclic(t *trace) bool {
	for _, sp := range t.ordered {
		seen := 0
		for p := t.spans[sp.parent]; p != nil; p = t.spans[p.parent] {
			if seen++; seen > len(t.ordered) {
				return true
			}
		}
	}
	return false
}

// attributeTurnUsage gives a turn's usage to its model span when the turn
// holds exactly one and that span reported none of its own (the JS SDK puts
// usage on turn spans, not on non-streamed generation or response spans).
// A turn is one model call of the runner loop, and the calls it made: its
// usage includes the runs of the agents it called as tools (their task
// spans, under its function spans), which are theirs, so they are taken
// out. Its usage is otherwise a total and never added to a response's own.
func attributeTurnUsage(turn *span) {
	if turn.turnUsage == nil {
		return
	}
	var models []*span
	var nested []*record.Usage
	var walk func([]*span, bool)
	walk = func(ss []*span, inFunction bool) {
		for _, sp := range ss {
			switch {
			case !inFunction && (sp.kind == "generation" || sp.kind == "response"):
				models = append(models, sp)
			case sp.kind == "task" && inFunction:
				if sp.turnUsage != nil {
					nested = append(nested, sp.turnUsage)
				}
			case sp.kind == "function":
				walk(sp.children, true)
			case sp.kind == "agent" || sp.kind == "turn" || sp.kind == "task":
			default:
				walk(sp.children, inFunction)
			}
		}
	}
	walk(turn.children, false)
	if len(models) == 1 && !models[0].hasUsage {
		u := *turn.turnUsage
		for _, n := range nested {
			u.In, u.Out = max(u.In-n.In, 0), max(u.Out-n.Out, 0)
			u.Cached, u.CacheWrite = max(u.Cached-n.Cached, 0), max(u.CacheWrite-n.CacheWrite, 0)
			u.Reasoning = max(u.Reasoning-n.Reasoning, 0)
		}
		models[0].usage, models[0].hasUsage = u, true
	}
}

// agentsUnder returns the agent spans under ss that no agent or function
// span separates from it, in start order: one conversation's agents (more
// than one when it handed off).
func agentsUnder(ss []*span, seen map[*span]bool) []*span {
	var out []*span
	var walk func([]*span)
	walk = func(ss []*span) {
		for _, sp := range ss {
			if seen[sp] {
				continue
			}
			switch sp.kind {
			case "agent":
				out = append(out, sp)
			case "function", "generation", "response", "handoff":
			default:
				seen[sp] = true
				walk(sp.children)
			}
		}
	}
	walk(ss)
	byStart(out)
	return out
}

// findTask returns the task span among ss (the runner's span for one run),
// whose error says how the run ended.
func findTask(ss []*span) *span {
	for _, sp := range ss {
		if sp.kind == "task" {
			return sp
		}
	}
	return nil
}

// builder maps spans to conversations.
type builder struct {
	opt      importers.Options
	seen     map[*span]bool // spans already mapped (guards against a span reached twice)
	user     string         // the first user message seen
	messages bool           // some model span recorded its input messages
	tools    bool           // some agent span named its tools
}

// conversation maps a chain of agent spans (hand-offs between them) to one
// conversation. task is the runner's task span of that run, fn the
// function span when the chain ran as an agent tool.
func (b *builder) conversation(chain []*span, task, fn *span) *importers.Conversation {
	conv := &importers.Conversation{}
	if len(chain) == 0 {
		return conv
	}
	conv.Agent = chain[0].name
	conv.Started = chain[0].start
	conv.Tools = toolDefs(chain[0])
	b.tools = b.tools || chain[0].toolsKnown
	current := conv.Agent
	var last *importers.LLM
	var lastKind string
	lastErr := ""
	for ai, a := range chain {
		b.seen[a] = true
		if a.name != "" && a.name != current {
			// An agent that follows another with no hand-off span between them.
			current = a.name
		}
		if a.end.After(conv.Ended) {
			conv.Ended = a.end
		}
		if a.err != "" {
			lastErr = joinErr(a.err, a.errData)
		}
		own := ownSpans(a, b.seen)
		var group *importers.LLM // the response whose calls follow
		groupKnown := false      // its output said which calls it made
		var fork *importers.Fork
		var names importers.BranchNames // the names fork's branches took
		for _, sp := range own {
			switch sp.kind {
			case "generation", "response":
				fork = nil
				l := &importers.LLM{Started: sp.start, Ended: sp.end, Model: sp.model, Usage: sp.usage,
					Content: sp.content, Request: sp.request, Response: sp.response, Status: record.StatusOK}
				if sp.callsKnown {
					l.Calls = append([]string(nil), sp.calls...)
				}
				if a.name != current {
					l.Agent = a.name
				}
				if sp.err != "" {
					l.Status, l.Error = record.StatusError, joinErr(sp.err, sp.errData)
				}
				if b.user == "" {
					b.user = sp.firstUser
				}
				b.messages = b.messages || sp.request != nil
				conv.Steps = append(conv.Steps, importers.Step{LLM: l})
				group, groupKnown, last, lastKind = l, sp.callsKnown, l, sp.kind
			case "function":
				lastKind = "function"
				sub := agentsUnder(sp.children, b.seen)
				if len(sub) == 0 {
					conv.Steps = append(conv.Steps, importers.Step{Tool: b.tool(sp)})
					addCall(group, groupKnown, sp.name)
					continue
				}
				br := &importers.Branch{Name: sp.name, Agent: sub[0].name, Tool: sp.name, Instructions: instructions(sp.input), Args: sp.input, Answer: sp.output}
				br.Conv = b.conversation(sub, findTask(sp.children), sp)
				if n := len(br.Conv.Steps); n > 0 && br.Conv.Steps[n-1].Final != nil && br.Conv.Steps[n-1].Final.Text == "" {
					// The response's text was not exported; what came back to the parent was.
					br.Conv.Steps[n-1].Final.Text = br.Answer
				}
				if fork == nil {
					fork = &importers.Fork{At: sp.start, Tool: sp.name, Context: "none"}
					conv.Steps = append(conv.Steps, importers.Step{Fork: fork})
					names = importers.BranchNames{}
				}
				if br.Name == "" {
					br.Name = "branch"
				}
				br.Name = names.Unique(br.Name)
				fork.Branches = append(fork.Branches, br)
				if sp.start.Before(fork.At) {
					fork.At = sp.start
				}
				if sp.end.After(fork.JoinAt) {
					fork.JoinAt = sp.end
				}
				addCall(group, groupKnown, sp.name)
			case "handoff":
				lastKind = "handoff"
				h := &importers.Handoff{At: sp.start, From: sp.from, To: sp.to}
				if h.From == "" {
					h.From = current
				}
				if sp.err != "" {
					// The hand-off's own outcome: "Multiple handoffs
					// requested" — the SDK took this one, dropped the others.
					h.Status, h.Error = record.StatusError, joinErr(sp.err, sp.errData)
					if len(sp.requested) > 1 {
						h.Error = fmt.Sprintf("%s: %s; the SDK took %s", sp.err, strings.Join(sp.requested, ", "), h.To)
					}
				}
				if ai+1 < len(chain) && chain[ai+1].name == h.To {
					h.Tools = toolDefs(chain[ai+1])
				}
				addCall(group, groupKnown, handoffTool(h.To))
				for _, other := range sp.requested {
					if other == h.To {
						continue
					}
					// The hand-off the SDK dropped: the call the model made,
					// answered with no change of owner (before the one taken,
					// while the agent that asked still holds the conversation).
					conv.Steps = append(conv.Steps, importers.Step{Tool: &importers.Tool{Started: sp.start, Ended: sp.end,
						Name: handoffTool(other), Status: record.StatusError,
						Error: fmt.Sprintf("dropped: %s asked for several hand-offs in one response and the SDK took only the one to %s", current, h.To)}})
					addCall(group, groupKnown, handoffTool(other))
				}
				conv.Steps = append(conv.Steps, importers.Step{Handoff: h})
				if h.To != "" {
					current = h.To
				}
			}
		}
	}
	// How it ended.
	status, errText := record.StatusOK, ""
	if task != nil && task.err != "" {
		errText = joinErr(task.err, task.errData)
	} else if lastErr != "" {
		errText = lastErr
	} else if fn != nil && fn.err != "" {
		errText = joinErr(fn.err, fn.errData)
	}
	switch {
	case strings.Contains(strings.ToLower(errText), "max turns"):
		status = record.StatusExhausted
	case errText != "":
		status = record.StatusError
	case lastKind == "handoff":
		// The run stopped right after a hand-off and the target never ran:
		// the SDK's max turns, which it records only on task spans.
		status = record.StatusExhausted
		errText = "the run ended after a hand-off whose target never answered (the Agents SDK's max turns)"
	case last != nil && len(last.Calls) == 0 && last.Status == record.StatusOK:
		conv.Steps = append(conv.Steps, importers.Step{Final: &importers.Final{At: last.Ended, Text: last.Content}})
	}
	conv.Status, conv.Error = status, errText
	if task != nil && task.end.After(conv.Ended) {
		conv.Ended = task.end
	}
	return conv
}

// toolDefs is what agent span a could call: its tools, then one
// transfer_to_<agent> per hand-off; nil when the span names none.
func toolDefs(a *span) []importers.ToolDef {
	if !a.toolsKnown {
		return nil
	}
	out := []importers.ToolDef{}
	for _, name := range a.tools {
		out = append(out, importers.ToolDef{Name: name})
	}
	return out
}

// addCall adds a call to the response l when its output was not recorded
// (sensitive data off, or the Responses API, whose response body the SDK
// does not export): the function and hand-off spans that follow it are its
// calls.
func addCall(l *importers.LLM, known bool, name string) {
	if l != nil && !known {
		l.Calls = append(l.Calls, name)
	}
}

// ownSpans returns the spans an agent span did itself: its model, function
// and hand-off spans, through turn, task and other container spans, not
// inside another agent or a function.
func ownSpans(a *span, seen map[*span]bool) []*span {
	var out []*span
	var walk func([]*span)
	walk = func(ss []*span) {
		for _, sp := range ss {
			if seen[sp] {
				continue
			}
			switch sp.kind {
			case "generation", "response", "function", "handoff":
				seen[sp] = true
				out = append(out, sp)
			case "agent":
			default:
				seen[sp] = true
				walk(sp.children)
			}
		}
	}
	walk(a.children)
	byStart(out)
	return out
}

func (b *builder) tool(sp *span) *importers.Tool {
	t := &importers.Tool{Started: sp.start, Ended: sp.end, Name: sp.name, Args: sp.input, Result: sp.output,
		Research: b.opt.IsResearch(sp.name), Status: record.StatusOK}
	if sp.err != "" {
		t.Status, t.Error = record.StatusError, joinErr(sp.err, sp.errData)
	}
	return t
}

// instructions reads an agent tool's input: {"input": "..."} gives the text.
func instructions(args string) string {
	var v struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(args), &v) == nil && v.Input != nil {
		return *v.Input
	}
	return args
}

func joinErr(msg, detail string) string {
	if detail == "" || detail == msg {
		return msg
	}
	return msg + ": " + detail
}
