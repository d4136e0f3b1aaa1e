// Package events builds a conversation from one agent's journal events,
// in file order: user turns, model steps with their text, usage and tool
// calls, tool results joined to their calls by id, compactions, and the
// delegation calls of a step gathered into one fork whose branches the
// importer fills in once it has read the sub-agents. A format whose journal
// records those events one by one — Kimi CLI's wire.jsonl, Kimi Code's
// agent journals — drives a Builder and hands its steps over as they settle
// (Settled, HandOver), so a session of any size keeps bounded memory.
//
// The formats that build conversations another way do not use it: Claude
// Code groups the lines of one response by message.id, takes its usage from
// the line with the most output tokens (the others are streaming snapshots)
// and reads tool results and sub-agent prompts out of user lines; Codex
// closes a response only at the token count after its items, takes a turn's
// final answer from task_complete's last_agent_message and joins wait calls
// to forks rather than to tools; the Agents SDK and OTLP importers map
// finished spans, whose times, nesting and results are known at once, with
// no event to settle. Each of those keeps its own mapping to importers'
// steps; what they share with this one (the text cap, branch names,
// instruction files, request bodies) is in importers.
package events

import (
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Delegation is one delegation call (Kimi's Agent or AgentSwarm): the
// step's fork holds it; the importer turns it into one branch (Agent) or
// several (AgentSwarm) once it has read the sub-agents' files.
type Delegation struct {
	CallID   string
	Name     string // the tool: Agent, AgentSwarm, Task
	Args     string // JSON text, possibly cut short in a live file
	At       time.Time
	Fork     *importers.Fork // the fork of the step that made the call
	Done     bool            // a result came back
	ResultAt time.Time
	Result   string
	IsError  bool
	Note     string // the source's short message about the result (a brief, a note)
}

// Builder builds one conversation from one agent's events, in file order.
// Its methods take the time of the record they come from.
type Builder struct {
	Conv        *importers.Conversation
	Delegations []*Delegation // every delegation call, in call order

	opt      importers.Options // its Clip caps every text kept
	research func(string) bool // the format's list, else the options' patterns
	delegate func(string) bool // Agent/AgentSwarm (and Task, for old Kimi CLI)
	skipped  func(string)      // counts a record the builder could not place

	step     *step // the open step
	last     *step // the most recent step, open or closed
	turnLLM  *importers.LLM
	turnOpen bool
	tools    map[string]*toolCall
	deleg    map[string]*Delegation
	lastCall *toolCall // the most recent open call, for argument parts
	lastAt   time.Time
}

type toolCall struct {
	tool *importers.Tool
	del  *Delegation
	args strings.Builder
}

type step struct {
	llm       *importers.LLM
	fork      *importers.Fork
	text      strings.Builder
	usage     usageFrom
	messageID string
	lastAt    time.Time // the latest event of the step, its tools' results included
	respAt    time.Time // the latest event of the response itself (text, calls)
	open      bool
}

type usageFrom int

const (
	usageNone usageFrom = iota
	usageStepEnd
	usageRecord
)

// NewBuilder starts a conversation of agent, its texts capped by opt.Clip.
// research says whether a tool is research, delegate whether it starts
// sub-agents (its calls become the step's fork, not tools); skipped counts
// records that reference nothing (a result with no call).
func NewBuilder(agent string, opt importers.Options, research, delegate func(string) bool, skipped func(string)) *Builder {
	return &Builder{
		Conv:     &importers.Conversation{Agent: agent},
		opt:      opt,
		research: research,
		delegate: delegate,
		skipped:  skipped,
		tools:    map[string]*toolCall{},
		deleg:    map[string]*Delegation{},
	}
}

func (b *Builder) touch(at time.Time) {
	if at.IsZero() {
		return
	}
	if b.Conv.Started.IsZero() || at.Before(b.Conv.Started) {
		b.Conv.Started = at
	}
	if at.After(b.lastAt) {
		b.lastAt = at
	}
	if b.step != nil && at.After(b.step.lastAt) {
		b.step.lastAt = at
	}
}

// LastAt is the time of the latest event seen.
func (b *Builder) LastAt() time.Time { return b.lastAt }

// Turn starts a user turn: the previous turn, if still open, ended without
// saying so (interrupted).
func (b *Builder) Turn(at time.Time, text string) {
	b.closeStep(at, false)
	b.touch(at)
	b.turnOpen = true
	b.turnLLM = nil
	b.Conv.Ended = time.Time{}
	b.Conv.Status = ""
	b.Conv.Error = ""
	b.Conv.Steps = append(b.Conv.Steps, importers.Step{User: &importers.User{At: at, Text: b.opt.Clip(text)}})
}

// Steer is user input added to the running turn.
func (b *Builder) Steer(at time.Time, text string) {
	b.touch(at)
	b.Conv.Steps = append(b.Conv.Steps, importers.Step{User: &importers.User{At: at, Text: b.opt.Clip(text)}})
}

// TurnEnd ends the turn with status (empty: ok) and err; the turn's last
// response, when it called nothing and said something, is the final answer.
func (b *Builder) TurnEnd(at time.Time, status record.Status, err string) {
	b.closeStep(at, false)
	b.touch(at)
	if l := b.turnLLM; l != nil && len(l.Calls) == 0 && strings.TrimSpace(l.Content) != "" && (status == "" || status == record.StatusOK) {
		b.Conv.Steps = append(b.Conv.Steps, importers.Step{Final: &importers.Final{At: at, Text: l.Content}})
	}
	b.turnOpen = false
	b.Conv.Ended = at
	b.Conv.Status = status
	b.Conv.Error = err
}

// TurnOpen reports whether a turn has started and not ended.
func (b *Builder) TurnOpen() bool { return b.turnOpen }

// Step starts one model response.
func (b *Builder) Step(at time.Time) {
	b.closeStep(at, false)
	b.touch(at)
	s := &step{llm: &importers.LLM{Started: at}, open: true, lastAt: at}
	s.respAt = at
	b.step, b.last = s, s
	b.turnLLM = s.llm
	b.Conv.Steps = append(b.Conv.Steps, importers.Step{LLM: s.llm})
}

// openStep returns the open step, starting one when an event comes
// outside any (a journal that lost its step record).
func (b *Builder) openStep(at time.Time) *step {
	if b.step == nil {
		b.Step(at)
	}
	return b.step
}

// Text adds response text to the open step.
func (b *Builder) Text(at time.Time, text string) {
	s := b.openStep(at)
	b.touch(at)
	s.respAt = later(s.respAt, at)
	if s.text.Len() <= b.opt.TextCap() {
		s.text.WriteString(text)
	}
}

// Model sets the model of the open (or latest) step.
func (b *Builder) Model(model string) {
	if s := b.last; s != nil && model != "" {
		s.llm.Model = model
	}
}

// StepUsage is usage the step's end repeats: used only when no usage record
// came for the step. (The step's end comes after its tools ran, so it does
// not date the response.)
func (b *Builder) StepUsage(u record.Usage) {
	if s := b.last; s != nil && s.usage == usageNone {
		s.llm.Usage = u
		s.usage = usageStepEnd
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Usage is the usage of one model response, recorded when it completed. It
// belongs to the open step, or to the latest step when that has no usage
// record yet; otherwise (a compaction call, usage outside any step, a
// session-scoped record) it is a model response of its own.
func (b *Builder) Usage(at time.Time, u record.Usage, model, messageID string, own bool) {
	b.touch(at)
	s := b.last
	switch {
	case !own && s != nil && s.usage != usageRecord:
		s.llm.Usage = u
	case !own && s != nil && messageID != "" && s.messageID == messageID:
		s.llm.Usage = u // the same response said twice
	case !own && s != nil && s.open:
		s.llm.Usage = addUsage(s.llm.Usage, u) // a second response in one step (a retry)
	default:
		l := &importers.LLM{Started: at, Ended: at, Model: model, Usage: u, Status: record.StatusOK}
		b.Conv.Steps = append(b.Conv.Steps, importers.Step{LLM: l})
		return
	}
	s.usage = usageRecord
	if messageID != "" {
		s.messageID = messageID
	}
	if model != "" {
		s.llm.Model = model
	}
	s.llm.Ended = at
}

func addUsage(a, b record.Usage) record.Usage {
	return record.Usage{
		In: a.In + b.In, Out: a.Out + b.Out,
		Cached: a.Cached + b.Cached, CachedReported: a.CachedReported || b.CachedReported,
		CacheWrite: a.CacheWrite + b.CacheWrite, CacheWriteReported: a.CacheWriteReported || b.CacheWriteReported,
		Reasoning: a.Reasoning + b.Reasoning, ReasoningReported: a.ReasoningReported || b.ReasoningReported,
	}
}

// Call is one tool call of the open step. A delegation call joins the
// step's fork (made at the step's first one) instead of becoming a tool.
func (b *Builder) Call(at time.Time, id, name, args string) {
	s := b.openStep(at)
	b.touch(at)
	s.respAt = later(s.respAt, at)
	s.llm.Calls = append(s.llm.Calls, name)
	c := &toolCall{}
	c.args.WriteString(args)
	if b.delegate(name) {
		if s.fork == nil {
			s.fork = &importers.Fork{At: at, Tool: name, Context: "none"}
			b.Conv.Steps = append(b.Conv.Steps, importers.Step{Fork: s.fork})
		}
		d := &Delegation{CallID: id, Name: name, At: at, Fork: s.fork}
		c.del = d
		b.Delegations = append(b.Delegations, d)
		if id != "" {
			b.deleg[id] = d
		}
	} else {
		t := &importers.Tool{Started: at, CallID: id, Name: name, Research: b.research(name)}
		c.tool = t
		b.Conv.Steps = append(b.Conv.Steps, importers.Step{Tool: t})
	}
	if id != "" {
		b.tools[id] = c
	}
	b.lastCall = c
}

// ArgsPart appends streamed arguments to the most recent open call.
func (b *Builder) ArgsPart(at time.Time, part string) {
	b.touch(at)
	if b.step != nil {
		b.step.respAt = later(b.step.respAt, at)
	}
	if c := b.lastCall; c != nil && c.args.Len() <= b.opt.TextCap() {
		c.args.WriteString(part)
		return
	}
	b.skipped("argument part with no open call")
}

// Result joins a tool result to its call by id.
func (b *Builder) Result(at time.Time, id, output string, isError bool, note string) {
	b.touch(at)
	c, ok := b.tools[id]
	if !ok {
		b.skipped("tool result with no call")
		return
	}
	delete(b.tools, id)
	if b.lastCall == c {
		b.lastCall = nil
	}
	b.sealArgs(c)
	if d := c.del; d != nil {
		d.Done, d.ResultAt, d.Result, d.IsError, d.Note = true, at, b.opt.Clip(output), isError, note
		return
	}
	t := c.tool
	t.Ended, t.Result = at, b.opt.Clip(output)
	t.Status = record.StatusOK
	if isError {
		t.Status = record.StatusError
		t.Error = firstNonEmpty(note, firstLine(output), "the tool reported an error")
	}
}

func (b *Builder) sealArgs(c *toolCall) {
	args := b.opt.Clip(c.args.String())
	if c.del != nil {
		c.del.Args = args
	} else {
		c.tool.Args = args
	}
}

// StepEnd closes the open step; status says how its response ended (empty:
// it completed).
func (b *Builder) StepEnd(at time.Time, status record.Status, err string) {
	if b.step != nil && status != "" {
		b.step.llm.Status, b.step.llm.Error = status, err
	}
	b.closeStep(at, false)
	b.touch(at)
}

// Interrupted marks the open step as stopped (by the user or an error): its
// response, if it had not completed, and its open tools are interrupted.
func (b *Builder) Interrupted(at time.Time) {
	b.closeStep(at, true)
	b.touch(at)
}

func (b *Builder) closeStep(at time.Time, interrupted bool) {
	s := b.step
	if s == nil {
		return
	}
	b.step = nil
	s.open = false
	l := s.llm
	l.Content = b.opt.Clip(s.text.String())
	if l.Ended.IsZero() {
		l.Ended = s.respAt
	}
	if l.Status == "" {
		switch {
		case s.usage != usageNone || !interrupted && (l.Content != "" || len(l.Calls) > 0):
			l.Status = record.StatusOK
		default:
			l.Status = record.StatusInterrupted
			l.Error = "the response never completed"
		}
	}
	// Arguments are final once the step is over.
	for _, c := range b.tools {
		b.sealArgs(c)
	}
}

// Finish closes what is still open at the end of the journal: the open step
// and every call without a result (interrupted; their end stays unknown).
func (b *Builder) Finish() {
	if b.step != nil {
		b.closeStep(b.lastAt, true)
	}
	for id, c := range b.tools {
		b.sealArgs(c)
		if c.tool != nil && c.tool.Status == "" {
			c.tool.Status = record.StatusInterrupted
			c.tool.Error = "no result was recorded"
		}
		delete(b.tools, id)
	}
}

// Delegation returns the delegation call with id, or nil.
func (b *Builder) Delegation(id string) *Delegation { return b.deleg[id] }

// Settled reports whether step st of Conv.Steps will not change as more
// events come: a response once the next step began (usage may still come
// for the latest one), a tool call once its result came, a fork once the
// step that made it closed (its branches are the importer's to wait for).
// An importer that hands steps over as they settle (importers.StepReader)
// asks this of the oldest it holds, and never hands over the latest (a
// compaction may go before it).
func (b *Builder) Settled(st importers.Step) bool {
	switch {
	case st.LLM != nil:
		return b.last == nil || b.last.llm != st.LLM
	case st.Tool != nil:
		return st.Tool.Status != ""
	case st.Fork != nil:
		return b.step == nil || b.step.fork != st.Fork
	}
	return true
}

// HandOver forgets step st, taken from the front of Conv.Steps and handed
// over whatever its state (a tool still open reads interrupted, as at the
// journal's end); it returns the delegation calls of st when it is a fork,
// in call order, which the builder forgets too.
func (b *Builder) HandOver(st importers.Step) []*Delegation {
	if t := st.Tool; t != nil && t.Status == "" {
		for id, c := range b.tools {
			if c.tool == t {
				b.sealArgs(c)
				delete(b.tools, id)
				if b.lastCall == c {
					b.lastCall = nil
				}
			}
		}
		t.Status, t.Error = record.StatusInterrupted, "no result was recorded"
	}
	f := st.Fork
	if f == nil {
		return nil
	}
	var out []*Delegation
	keep := b.Delegations[:0]
	for _, d := range b.Delegations {
		if d.Fork == f {
			out = append(out, d)
			if b.deleg[d.CallID] == d {
				delete(b.deleg, d.CallID)
			}
		} else {
			keep = append(keep, d)
		}
	}
	clear(b.Delegations[len(keep):])
	b.Delegations = keep
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// InsertFork puts a fork step into conv where it happened: before the first
// step that started after it.
func InsertFork(conv *importers.Conversation, f *importers.Fork) {
	i := len(conv.Steps)
	for j, st := range conv.Steps {
		if at := st.At(); !at.IsZero() && at.After(f.At) {
			i = j
			break
		}
	}
	conv.Steps = append(conv.Steps, importers.Step{})
	copy(conv.Steps[i+1:], conv.Steps[i:])
	conv.Steps[i] = importers.Step{Fork: f}
}

// Compact records a context compaction: from here on the model sees
// summary. Kimi compacts at the start of a step, before its model call, so
// a compaction inside a step whose response has not begun goes before it.
func (b *Builder) Compact(at time.Time, summary string) {
	b.touch(at)
	st := importers.Step{Compact: &importers.Compact{At: at, Summary: b.opt.Clip(summary)}}
	steps := b.Conv.Steps
	if s := b.step; s != nil && len(steps) > 0 && steps[len(steps)-1].LLM == s.llm && s.text.Len() == 0 && len(s.llm.Calls) == 0 {
		b.Conv.Steps = append(steps[:len(steps)-1], st, steps[len(steps)-1])
		return
	}
	b.Conv.Steps = append(steps, st)
}

// AsBranch makes a finished conversation a branch's: its first step, the
// user turn that carries the parent's prompt, goes (the fork's instructions
// are that message); it returns that prompt.
func AsBranch(c *importers.Conversation) string {
	if len(c.Steps) > 0 && c.Steps[0].User != nil {
		text := c.Steps[0].User.Text
		c.Steps = c.Steps[1:]
		return text
	}
	return ""
}
