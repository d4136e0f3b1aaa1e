package otlp

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
)

// Trace gathers one trace's spans, from a file or as a receiver gets them.
type Trace struct {
	ID    string
	spans []*otel.Span
	index map[string]int // span id -> position in spans
	dups  int
	bytes int64 // the spans' otel.Span.Size
}

// NewTrace returns an empty trace of id.
func NewTrace(id string) *Trace { return &Trace{ID: id, index: map[string]int{}} }

// Add adds s. A span id seen before is a duplicate: the copy that has
// ended wins (an exporter may send a span again once it ends), otherwise
// the first is kept; either way the duplicate is counted.
func (t *Trace) Add(s *otel.Span) {
	if i, ok := t.index[s.SpanID]; ok {
		t.dups++
		if t.spans[i].End.IsZero() && !s.End.IsZero() {
			t.bytes += s.Size() - t.spans[i].Size()
			t.spans[i] = s
		}
		return
	}
	t.index[s.SpanID] = len(t.spans)
	t.spans = append(t.spans, s)
	t.bytes += s.Size()
}

// Len is the number of distinct spans.
func (t *Trace) Len() int { return len(t.spans) }

// Bytes is about how many bytes its spans hold (otel.Span.Size).
func (t *Trace) Bytes() int64 { return t.bytes }

// Ended reports whether the trace's root span (one without a parent) has
// arrived and every such root has ended; spans whose parent has not
// arrived do not count.
func (t *Trace) Ended() bool {
	roots := 0
	for _, s := range t.spans {
		if s.ParentID == "" {
			roots++
			if s.End.IsZero() {
				return false
			}
		}
	}
	return roots > 0
}

// madeBy is a span of the instrumentation that recorded the trace's
// agent work when the root's own scope recorded none of it: an app's span
// of its own scope around a framework's (a LangGraph run traced by
// OpenInference under a "weather-chat" span of scope "weather-app"). Of
// the scopes whose spans are model calls, tool calls or agents, the one
// with most of them (the earliest on a tie) is the trace's maker; nil when
// the root's scope made one of them, or none did.
func (b *builder) madeBy(root *otel.Span, spans []*otel.Span) *otel.Span {
	if b.native {
		return nil
	}
	n := map[string]int{}
	var first []*otel.Span
	for _, s := range spans {
		switch b.classOf(s) {
		case classLLM, classTool, classAgent:
		default:
			continue
		}
		if s.Scope == root.Scope && s.ScopeVersion == root.ScopeVersion {
			return nil
		}
		k := s.Scope + "\x00" + s.ScopeVersion
		if n[k] == 0 {
			first = append(first, s)
		}
		n[k]++
	}
	var best *otel.Span
	for _, s := range first {
		if best == nil || n[s.Scope+"\x00"+s.ScopeVersion] > n[best.Scope+"\x00"+best.ScopeVersion] ||
			n[s.Scope+"\x00"+s.ScopeVersion] == n[best.Scope+"\x00"+best.ScopeVersion] && s.Start.Before(best.Start) {
			best = s
		}
	}
	if best == nil || best.Scope == "" {
		return nil
	}
	return best
}

// langGraphMarked reports whether spans carry LangGraph's own marks,
// whatever instrumentation scope recorded them: a langgraph.node or
// langgraph.step attribute (langgraph_node in the metadata LangChain's
// tracers write), a span named LangGraph or after its compiled graph.
func langGraphMarked(spans []*otel.Span) bool {
	for _, s := range spans {
		if s.Name == "LangGraph" || strings.Contains(s.Name, "CompiledStateGraph") || strings.Contains(s.Name, "CompiledGraph") {
			return true
		}
		for _, k := range []string{"langgraph.node", "langgraph.step", "langgraph_node", "langgraph_step", "metadata.langgraph_node"} {
			if s.Attrs.Has(k) {
				return true
			}
		}
		if strings.Contains(s.Attrs.Str("metadata"), `"langgraph_node"`) {
			return true
		}
	}
	return false
}

// sameScope reports whether every span of ss has the same instrumentation
// scope.
func sameScope(ss []*otel.Span) bool {
	for _, s := range ss[1:] {
		if s.Scope != ss[0].Scope || s.ScopeVersion != ss[0].ScopeVersion {
			return false
		}
	}
	return true
}

// Build maps t to a Session (DESIGN §13, §14): an agent span is a
// conversation, its chat spans llm nodes, its tool spans tool nodes;
// sibling agent spans that overlap in time are a fork with one branch each
// and a join; an agent taking the conversation over from another (after a
// transfer_to_* call, as LangGraph supervisors and swarms do) is a
// hand-off. A span of inspect's own export is read by its inspect.*
// attributes, so an exported run comes back as the same graph. What could
// not be read as it is — duplicate ids, missing parents, ends before
// starts, open spans, cut values — is counted in the Report.
func Build(t *Trace, opt importers.Options) *importers.Session {
	b := &builder{opt: opt, kids: map[string][]*otel.Span{}, llmBelow: map[*otel.Span]bool{}, models: map[string]bool{},
		report: importers.Report{Skipped: map[string]int{}}, parent: map[*otel.Span]*otel.Span{}}
	if t.dups > 0 {
		b.report.Skipped["duplicate span ids (one copy kept)"] += t.dups
	}
	var roots []*otel.Span
	for _, s := range t.spans {
		if !s.End.IsZero() && s.End.Before(s.Start) {
			b.report.Skipped["spans ending before they start (read as instant)"]++
			s.End = s.Start
		}
		if s.Attrs.Has(otel.AttrInspectKind) || s.Attrs.Has(otel.AttrInspectRunID) {
			b.native = true
		}
		if _, ok := t.index[s.ParentID]; s.ParentID == "" || !ok || s.ParentID == s.SpanID {
			if s.ParentID != "" {
				b.report.Skipped["spans whose parent is missing (read as roots)"]++
			}
			roots = append(roots, s)
			continue
		}
		b.kids[s.ParentID] = append(b.kids[s.ParentID], s)
		b.parent[s] = t.spans[t.index[s.ParentID]]
	}
	for _, ks := range b.kids {
		sortByStart(ks)
	}
	sortByStart(roots)
	reached := 0
	for _, r := range roots {
		reached += b.mark(r)
	}
	if n := len(t.spans) - reached; n > 0 {
		b.report.Skipped["spans in a parent cycle (unreachable)"] += n
	}

	sess := &importers.Session{Source: record.Source{Format: Name, ID: t.ID}}
	if len(roots) == 0 {
		// every span in a parent cycle (counted above): an empty run that
		// says so, starting at the earliest span
		start := time.Time{}
		for _, s := range t.spans {
			if start.IsZero() || s.Start.Before(start) {
				start = s.Start
			}
		}
		roots = []*otel.Span{{SpanID: "", Start: start, End: start}}
	}
	root := roots[0]
	if c := b.classOf(root); len(roots) > 1 || c == classLLM || c == classTool || c == classInspect {
		// several roots, or a root that is a step itself: one container above them
		root = &otel.Span{SpanID: "", Start: roots[0].Start}
		if sameScope(roots) {
			// the roots' scope names the source: a trace of inspect's
			// export whose root has not come is still inspect's
			root.Scope, root.ScopeVersion = roots[0].Scope, roots[0].ScopeVersion
		}
		b.kids[""] = roots
		for _, r := range roots {
			if r.End.IsZero() {
				root.End = time.Time{}
				break
			}
			if r.End.After(root.End) {
				root.End = r.End
			}
		}
	}
	if v := root.ScopeVersion; root.Scope != "" {
		sess.Source.Version = strings.TrimSpace(root.Scope + " " + v)
	}
	if root.ScopeVersion == "" {
		for _, s := range t.spans { // the AI SDK names its version only in its user agent: ai/6.0.326
			if ua := s.Attrs.Str("ai.request.headers.user-agent"); ua != "" {
				sess.Source.Version = strings.ReplaceAll(ua, "/", " ")
				break
			}
		}
	}
	if made := b.madeBy(root, t.spans); made != nil {
		// the app's own span around the framework's: the framework's scope
		sess.Source.Version = strings.TrimSpace(made.Scope + " " + made.ScopeVersion)
	}
	if v := strings.ToLower(sess.Source.Version); !strings.Contains(v, "langgraph") && !strings.Contains(v, "langchain") && langGraphMarked(t.spans) {
		sess.Source.Version = strings.TrimSpace(sess.Source.Version + " (langgraph)")
	}
	if b.native {
		b.readRun(root, sess)
	}
	b.trunk = true
	if allClaudeCode(roots) {
		// Claude Code's own spans: sub-agents under their Agent calls
		sess.Trunk = b.claudeCode(root, "main")
	} else if wf, input, ok := mastraWorkflow(root); ok {
		// A Mastra workflow run: the workflow holds the conversation (its
		// parallel steps are its forks, the agents after them its nodes
		// taking their turn), and its input is the user's.
		sess.Trunk = b.conv(root, false, wf)
		if input != "" {
			sess.Trunk.Steps = append([]importers.Step{{User: &importers.User{At: root.Start, Text: input}}}, sess.Trunk.Steps...)
			b.tasks = append([]string{input}, b.tasks...)
		}
	} else {
		sess.Trunk = b.conv(root, b.classOf(root) == classAgent, "")
	}
	sess.Started, sess.Ended = root.Start, root.End
	if len(sess.Tasks) == 0 {
		sess.Tasks = b.tasks
	}
	sess.Models = sortedKeys(b.models)
	sess.Report = b.report
	return sess
}

type builder struct {
	opt      importers.Options
	kids     map[string][]*otel.Span
	llmBelow map[*otel.Span]bool
	classes  map[*otel.Span]class
	models   map[string]bool
	tasks    []string
	report   importers.Report
	native   bool // the trace is inspect's own export
	trunk    bool // building the trunk (user turns are read only there)
	parent   map[*otel.Span]*otel.Span
	// ccBranches are the Claude Code sub-agents met so far, by agent_id
	ccBranches map[string]*importers.Branch
	// tlAgents are OpenLLMetry graph spans' agents (traceloopAgent)
	tlAgents map[*otel.Span]string
	// goTo holds the tool calls of OpenLLMetry's spans: the one node the
	// LangGraph Command each returned goes to, "" when it returned none
	goTo map[*importers.Tool]string
}

// mark computes which spans have a model call below them and counts the
// spans reached from r (iteratively: a trace may nest deeply).
func (b *builder) mark(r *otel.Span) int {
	type frame struct {
		s    *otel.Span
		next int
	}
	n := 0
	stack := []frame{{s: r}}
	onStack := map[*otel.Span]bool{r: true}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		ks := b.kids[f.s.SpanID]
		if f.next < len(ks) {
			c := ks[f.next]
			f.next++
			if onStack[c] {
				continue
			}
			onStack[c] = true
			stack = append(stack, frame{s: c})
			continue
		}
		n++
		below := false
		for _, c := range ks {
			if b.llmBelow[c] || classify(c, false) == classLLM {
				below = true
				break
			}
		}
		b.llmBelow[f.s] = below
		stack = stack[:len(stack)-1]
	}
	return n
}

func (b *builder) classOf(s *otel.Span) class {
	if b.classes == nil {
		b.classes = map[*otel.Span]class{}
	}
	c, ok := b.classes[s]
	if !ok {
		c = classify(s, b.llmBelow[s])
		if c == classOther && b.llmBelow[s] && traceloopGraph(s) && b.insideGraph(s) && b.traceloopAgent(s) != "" {
			// OpenLLMetry: the graph of an agent a LangGraph supervisor
			// runs as a node, named by its messages
			c = classAgent
		}
		b.classes[s] = c
	}
	return c
}

// item is one thing a conversation's span holds: a model call, a tool call,
// an agent span, a tool span running agents (a delegation), an inspect span.
type item struct {
	s      *otel.Span
	cls    class
	agents bool // a tool span with agent spans below it
}

func (it item) agentLike() bool { return it.cls == classAgent || it.agents }

// items lists what s holds, in start order, reading through spans of no
// meaning of their own. The calls a model call's span holds are the
// conversation's, after it: AI SDK 7's LegacyOpenTelemetry nests each
// ai.toolCall (and the agent runs a tool starts) under the
// ai.generateText.doGenerate span of the response that made the call.
func (b *builder) items(s *otel.Span) []item {
	var out []item
	var walk func(p *otel.Span)
	walk = func(p *otel.Span) {
		for _, c := range b.kids[p.SpanID] {
			switch cls := b.classOf(c); cls {
			case classOther:
				walk(c)
			case classTool:
				out = append(out, item{s: c, cls: cls, agents: b.hasAgentBelow(c)})
			case classLLM:
				out = append(out, item{s: c, cls: cls})
				walk(c)
			default:
				out = append(out, item{s: c, cls: cls})
			}
		}
	}
	walk(s)
	sort.SliceStable(out, func(i, j int) bool { return out[i].s.Start.Before(out[j].s.Start) })
	return out
}

func (b *builder) hasAgentBelow(s *otel.Span) bool {
	for _, c := range b.kids[s.SpanID] {
		if cls := b.classOf(c); cls == classAgent || (cls == classOther && b.hasAgentBelow(c)) {
			return true
		}
	}
	return false
}

// state is a conversation being built.
type state struct {
	c         *importers.Conversation
	cur       string            // its current agent (the graph node running)
	owner     string            // the agent that holds it: changed by hand-offs only
	handedBy  map[string]string // agent -> the agent that handed it the conversation
	first     string            // the agent it started with
	usersSeen int
	lastLLM   *importers.LLM
	outKnown  map[*importers.LLM]bool // the span recorded its output (calls known)
}

// conv builds the conversation span s holds. isAgent: s is an agent span
// (its agent spans below are sub-agents: forks); else s is a container (a
// graph, a workflow) whose agent spans take the conversation in turn.
func (b *builder) conv(s *otel.Span, isAgent bool, agent string) *importers.Conversation {
	c := &importers.Conversation{Started: s.Start, Ended: s.End}
	if agent == "" && isAgent {
		agent = b.agentName(s)
	}
	st := &state{c: c, cur: agent, owner: agent, outKnown: map[*importers.LLM]bool{}}
	st.first = agent
	b.fill(st, s, isAgent)
	if c.Agent == "" {
		c.Agent = st.first
	}
	if c.Agent == "" {
		c.Agent = "main"
		if s.Service != "" {
			c.Agent = s.Service
		}
	}
	if c.Ended.IsZero() && !s.End.IsZero() {
		c.Ended = s.End
	}
	c.Status, c.Error = spanStatus(s)
	if c.Status == record.StatusOK {
		c.Status = "" // derived from Ended
	}
	b.finish(st)
	return c
}

func (b *builder) fill(st *state, s *otel.Span, isAgent bool) {
	its := b.items(s)
	for i := 0; i < len(its); i++ {
		it := its[i]
		switch {
		case it.cls == classLLM:
			b.llm(st, it.s)
		case it.cls == classInspect:
			b.inspectStep(st, it.s)
		case it.cls == classTool && it.s.Attrs.Str(otel.AttrInspectKind) == "fork":
			b.nativeFork(st, it.s)
		case it.cls == classTool && !it.agents:
			b.tool(st, it.s)
		default: // agent-like: a group of overlapping ones is a fork
			j, end := i, it.s.End
			for j+1 < len(its) && its[j+1].agentLike() && (end.IsZero() || its[j+1].s.Start.Before(end)) {
				j++
				if e := its[j].s.End; e.IsZero() || end.IsZero() {
					end = time.Time{}
				} else if e.After(end) {
					end = e
				}
			}
			group := its[i : j+1]
			if len(group) == 1 && it.cls == classAgent && b.agentName(it.s) == st.cur {
				b.fill(st, it.s, true) // the same agent a level down (a subgraph of its own name)
			} else if len(group) == 1 && it.cls == classAgent && (!isAgent || b.transferTo(st, b.agentName(it.s))) {
				b.takeOver(st, it.s)
				b.fill(st, it.s, true)
			} else {
				b.fork(st, group)
			}
			i = j
		}
	}
}

// transferTo reports whether the conversation's last step is a
// transfer_to_<agent> call.
func (b *builder) transferTo(st *state, agent string) bool {
	if n := len(st.c.Steps); n > 0 && st.c.Steps[n-1].Tool != nil {
		return st.c.Steps[n-1].Tool.Name == "transfer_to_"+agent
	}
	return false
}

// takeOver makes the agent of s the one running the conversation: a
// hand-off when a transfer_to_* call asked for it (OpenLLMetry's: a call
// whose LangGraph Command goes to it; that call becomes the hand-off, as
// our runtime records it) or when it goes back to the agent
// that handed it over (a supervisor's agent handing back, as
// langgraph-supervisor's transfer_back_to_* does with no span of its own);
// else the graph's next node taking its turn, which is no hand-off — its
// steps say which node made them.
func (b *builder) takeOver(st *state, s *otel.Span) {
	to := b.agentName(s)
	if to == "" || to == st.cur {
		return
	}
	if st.cur == "" {
		st.cur, st.first, st.owner = to, to, to
		return
	}
	n := len(st.c.Steps)
	var t *importers.Tool
	if n > 0 {
		t = st.c.Steps[n-1].Tool
	}
	var h *importers.Handoff
	cmdTo, traceloop := b.goTo[t]
	switch {
	case t != nil && traceloop && cmdTo == to, t != nil && !traceloop && strings.HasPrefix(t.Name, "transfer_to_"):
		// the call that asked for it: for OpenLLMetry, by the Command
		// the tool returned going to this agent (its name alone says
		// nothing); for the other instrumentations, a transfer_to_* call
		h = &importers.Handoff{At: t.Started, From: st.owner, To: to, Reason: reasonOf(t.Args)}
		st.c.Steps = st.c.Steps[:n-1]
	case st.handedBy[st.owner] == to:
		h = &importers.Handoff{At: s.Start, From: st.owner, To: to}
	default:
		st.cur = to
		return
	}
	st.c.Steps = append(st.c.Steps, importers.Step{Handoff: h})
	if st.handedBy == nil {
		st.handedBy = map[string]string{}
	}
	if st.handedBy[h.From] != to {
		st.handedBy[to] = h.From
	}
	st.cur, st.owner = to, to
}

func reasonOf(args string) string {
	var a struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal([]byte(args), &a)
	return a.Reason
}

func (b *builder) llm(st *state, s *otel.Span) {
	m := messagesOf(s)
	model := modelOf(s)
	if model != "" {
		b.models[model] = true
	}
	u := usageOf(s)
	l := &importers.LLM{Started: s.Start, Ended: s.End, Model: model, Usage: u,
		Request: request(model, m), Response: response(model, m, u)}
	// A model call's span that holds its calls (AI SDK 7) lasts until they
	// return: the response ended when the first of them started.
	for _, c := range b.kids[s.SpanID] {
		if c.Start.After(l.Started) && c.Start.Before(l.Ended) {
			l.Ended = c.Start
		}
	}
	l.Status, l.Error = spanStatus(s)
	if a := s.Attrs.Str(otel.AttrAgentName); a != "" && a != st.cur {
		if st.cur == "" {
			st.cur, st.first, st.owner = a, a, a
		} else {
			l.Agent = a
		}
	}
	if l.Agent == "" && st.cur != st.owner {
		l.Agent = st.cur // a graph node that is not the conversation's owner
	}
	if len(m.Out) > 0 {
		out := m.Out[len(m.Out)-1]
		l.Content = out.Content
		for _, c := range out.Calls {
			l.Calls = append(l.Calls, c.Name)
		}
		// an output that ends in tool calls but names none (Mastra's chat
		// spans) does not say which calls the response made
		st.outKnown[l] = len(l.Calls) > 0 || !strings.Contains(s.Attrs.Str("gen_ai.response.finish_reasons"), "tool")
	}
	if b.trunk && !b.native {
		users := 0
		for _, x := range m.In {
			if x.Role == "user" || x.Role == "human" {
				users++
				if users > st.usersSeen {
					st.c.Steps = append(st.c.Steps, importers.Step{User: &importers.User{At: s.Start, Text: x.Content}})
					b.tasks = append(b.tasks, x.Content)
				}
			}
		}
		if users > st.usersSeen {
			st.usersSeen = users
		}
	}
	st.c.Steps = append(st.c.Steps, importers.Step{LLM: l})
	st.lastLLM = l
}

func (b *builder) tool(st *state, s *otel.Span) {
	name, id, args, result := toolOf(s)
	t := &importers.Tool{Started: s.Start, Ended: s.End, CallID: id, Name: name, Args: args, Result: result}
	if st.cur != st.owner {
		t.Agent = st.cur
	}
	if a := s.Attrs.Str(otel.AttrAgentName); b.native && a != "" && a != st.owner {
		// inspect's export names each node's agent: a call the response
		// made after its own hand-off (a second transfer_to_*, refused) is
		// the agent's that made the response, not the one taking over
		t.Agent = a
	}
	if s.Attrs.Has("traceloop.entity.output") || s.Attrs.Has("traceloop.entity.input") {
		to := ""
		if gotos, _, ok := langGraphCommand(s.Attrs.Str("traceloop.entity.output")); ok && len(gotos) == 1 {
			to = gotos[0]
		}
		if b.goTo == nil {
			b.goTo = map[*importers.Tool]string{}
		}
		b.goTo[t] = to
	}
	t.Status, t.Error = spanStatus(s)
	if t.Status == record.StatusError && t.Result == "" {
		t.Result = t.Error
	}
	if v, ok := s.Attrs[otel.AttrInspectResearch].(bool); ok {
		t.Research = v
	} else {
		t.Research = b.research(name)
	}
	st.c.Steps = append(st.c.Steps, importers.Step{Tool: t})
}

// research applies the configured patterns, or DESIGN §13's defaults.
func (b *builder) research(name string) bool { return b.opt.IsResearch(name) }

// fork makes one fork of overlapping agent spans (or tool spans running
// agents: a delegation tool called several times in one response).
func (b *builder) fork(st *state, group []item) {
	f := &importers.Fork{At: group[0].s.Start, Context: "none"}
	count := map[string]int{}
	for _, g := range group {
		count[b.branchAgent(g)]++
	}
	seen := map[string]int{}
	names := importers.BranchNames{}
	end := group[0].s.End
	for _, g := range group {
		agent := b.branchAgent(g)
		// Several branches of one agent are numbered from 1 (agent-1,
		// agent-2), as the trace shows them side by side.
		name := agent
		if count[agent] > 1 {
			seen[agent]++
			name = agent + "-" + strconv.Itoa(seen[agent])
		}
		br := &importers.Branch{Agent: agent, Name: names.Unique(name)}
		if g.agents {
			name, id, args, result := toolOf(g.s)
			f.Tool = name
			br.CallID, br.Instructions, br.Answer = id, args, result
			br.Conv = b.sub(g.s, false, agent)
		} else {
			br.Conv = b.sub(g.s, true, agent)
			br.Instructions = firstUser(br.Conv)
			br.Answer = finalText(br.Conv)
		}
		if g.s.End.IsZero() {
			end = time.Time{}
		} else if !end.IsZero() && g.s.End.After(end) {
			end = g.s.End
		}
		f.Branches = append(f.Branches, br)
	}
	if f.Tool == "" && langGraphNode(group[0].s) != "" {
		f.Tool = "Send" // LangGraph fans a node out with Send
	}
	f.JoinAt = end
	if st.lastLLM != nil && !st.outKnown[st.lastLLM] && f.Tool != "" {
		for range group {
			st.lastLLM.Calls = append(st.lastLLM.Calls, f.Tool)
		}
	}
	st.c.Steps = append(st.c.Steps, importers.Step{Fork: f})
}

// sub builds a branch's conversation (user turns are the trunk's only).
func (b *builder) sub(s *otel.Span, isAgent bool, agent string) *importers.Conversation {
	was := b.trunk
	b.trunk = false
	defer func() { b.trunk = was }()
	return b.conv(s, isAgent, agent)
}

func (b *builder) branchAgent(g item) string {
	if !g.agents {
		if n := b.agentName(g.s); n != "" {
			return n
		}
		return "agent"
	}
	var find func(p *otel.Span) string
	find = func(p *otel.Span) string {
		for _, c := range b.kids[p.SpanID] {
			switch b.classOf(c) {
			case classAgent:
				return b.agentName(c)
			case classOther:
				if n := find(c); n != "" {
					return n
				}
			}
		}
		return ""
	}
	if n := find(g.s); n != "" {
		return n
	}
	name, _, _, _ := toolOf(g.s)
	return name
}

// finish closes a conversation: the calls of model spans that did not
// record their output are the steps that followed them; a conversation
// whose last model call answered without calls has that answer as its
// final message.
func (b *builder) finish(st *state) {
	if b.native {
		return
	}
	var last *importers.LLM
	for _, step := range st.c.Steps {
		switch {
		case step.LLM != nil:
			last = step.LLM
		case last != nil && !st.outKnown[last]:
			if step.Tool != nil {
				last.Calls = append(last.Calls, step.Tool.Name)
			} else if step.Handoff != nil {
				last.Calls = append(last.Calls, "transfer_to_"+step.Handoff.To)
			}
		}
	}
	n := len(st.c.Steps)
	if n == 0 || st.c.Steps[n-1].LLM == nil {
		return
	}
	l := st.c.Steps[n-1].LLM
	if len(l.Calls) == 0 && l.Content != "" && !l.Ended.IsZero() && l.Status != record.StatusError {
		st.c.Steps = append(st.c.Steps, importers.Step{Final: &importers.Final{At: l.Ended, Text: l.Content, Agent: l.Agent}})
	}
}

func firstUser(c *importers.Conversation) string {
	for _, s := range c.Steps {
		if s.LLM != nil && s.LLM.Request != nil {
			var req struct {
				Messages []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"messages"`
			}
			if json.Unmarshal(s.LLM.Request, &req) == nil {
				for _, m := range req.Messages {
					if m.Role == "user" {
						return m.Content
					}
				}
			}
			return ""
		}
	}
	return ""
}

func finalText(c *importers.Conversation) string {
	for i := len(c.Steps) - 1; i >= 0; i-- {
		if f := c.Steps[i].Final; f != nil {
			return f.Text
		}
	}
	return c.Error
}

// spanStatus maps a span's outcome: inspect.status when inspect wrote it,
// else error for an error status, interrupted for a span that never ended.
func spanStatus(s *otel.Span) (record.Status, string) {
	if v := s.Attrs.Str(otel.AttrInspectStatus); v != "" {
		return record.Status(v), s.StatusMessage
	}
	switch {
	case s.Status == "error":
		msg := s.StatusMessage
		if msg == "" {
			msg = s.Attrs.Str("error.type")
		}
		if msg == "" {
			msg = "the span ended in error"
		}
		return record.StatusError, msg
	case s.End.IsZero():
		return record.StatusInterrupted, "the span never ended"
	}
	return record.StatusOK, ""
}

func sortByStart(ss []*otel.Span) {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start.Before(ss[j].Start) })
}

// readRun reads the run attributes of inspect's own export off its root.
func (b *builder) readRun(root *otel.Span, sess *importers.Session) {
	a := root.Attrs
	if f := a.Str(otel.AttrInspectSourceFormat); f != "" {
		// a run inspect had imported from another tool: the version names
		// that tool after inspect's scope, so its stack's profile comes
		// back (stack.For); one that had made this trip before keeps its
		// first tool
		v := a.Str(otel.AttrInspectSourceVersion)
		if f == Name && strings.HasPrefix(v, otel.ScopeName+" from ") {
			sess.Source.Version = v
		} else {
			sess.Source.Version = strings.TrimSpace(otel.ScopeName + " from " + f + " " + v)
		}
	}
	if v := a.Str(otel.AttrInspectTasks); v != "" {
		_ = json.Unmarshal([]byte(v), &sess.Tasks)
	}
	if v := a.Str(otel.AttrInspectProject); v != "" {
		if err := json.Unmarshal([]byte(v), &sess.Project); err != nil {
			b.report.Problems = append(b.report.Problems, importers.Problem{Err: fmt.Sprintf("%s: %v", otel.AttrInspectProject, err)})
		}
	}
}

// inspectStep reads a user, final, hand-off or join span of inspect's export.
func (b *builder) inspectStep(st *state, s *otel.Span) {
	a := s.Attrs
	switch a.Str(otel.AttrInspectKind) {
	case "user":
		st.c.Steps = append(st.c.Steps, importers.Step{User: &importers.User{At: s.Start, Text: a.Str(otel.AttrInspectText)}})
	case "final":
		st.c.Steps = append(st.c.Steps, importers.Step{Final: &importers.Final{At: s.Start, Text: a.Str(otel.AttrInspectText)}})
	case "handoff":
		h := &importers.Handoff{At: s.Start, From: a.Str(otel.AttrInspectHandoffFrom), To: a.Str(otel.AttrInspectHandoffTo), Reason: a.Str(otel.AttrInspectReason)}
		st.c.Steps = append(st.c.Steps, importers.Step{Handoff: h})
		if st.first == "" {
			st.first = h.From
		}
		st.cur, st.owner = h.To, h.To
	case "join":
		for i := len(st.c.Steps) - 1; i >= 0; i-- {
			if f := st.c.Steps[i].Fork; f != nil {
				f.JoinAt = s.Start
				var jb []joinBranch
				_ = json.Unmarshal([]byte(a.Str(otel.AttrInspectJoin)), &jb)
				for _, j := range jb {
					for _, br := range f.Branches {
						if br.Name == j.Name {
							br.Answer = j.Answer
						}
					}
				}
				break
			}
		}
	}
}

// forkBranch and joinBranch are the JSON of inspect.fork.branches and
// inspect.join.branches.
type forkBranch struct {
	Name         string `json:"name"`
	Agent        string `json:"agent"`
	Instructions string `json:"instructions"`
}

type joinBranch struct {
	Name       string `json:"name"`
	Agent      string `json:"agent"`
	Status     string `json:"status"`
	DurationMS int64  `json:"duration_ms"`
	Answer     string `json:"answer"`
}

// nativeFork reads a fork span of inspect's export: its declared branches,
// each one's conversation from the agent span below it with that branch.
func (b *builder) nativeFork(st *state, s *otel.Span) {
	a := s.Attrs
	f := &importers.Fork{At: s.Start, Tool: "fork", Context: a.Str(otel.AttrInspectContext)}
	var fb []forkBranch
	_ = json.Unmarshal([]byte(a.Str(otel.AttrInspectBranches)), &fb)
	convs := map[string]*otel.Span{}
	for _, c := range b.kids[s.SpanID] {
		if b.classOf(c) == classAgent {
			convs[lastSegment(c.Attrs.Str(otel.AttrInspectBranch))] = c
		}
	}
	for _, x := range fb {
		br := &importers.Branch{Name: x.Name, Agent: x.Agent, Instructions: x.Instructions}
		if c := convs[x.Name]; c != nil {
			br.Conv = b.sub(c, true, x.Agent)
		} else {
			br.Conv = &importers.Conversation{Agent: x.Agent, Started: s.Start}
		}
		f.Branches = append(f.Branches, br)
	}
	st.c.Steps = append(st.c.Steps, importers.Step{Fork: f})
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}
