package claudecode

import (
	json "github.com/goccy/go-json"
	"regexp"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// conv builds one conversation (the trunk, or one sub-agent) from its
// lines, in order. Its steps are held until they are handed over (a
// stream's Next): steps holds those not handed over yet, the rest of what
// it remembers of the ones handed over are their ids (done).
type conv struct {
	c     *importers.Conversation // its outcome and times; the steps are in steps
	steps []importers.Step
	sub   bool // a sub-agent: its first user message is its instructions, not a turn
	opt   importers.Options
	rep   *importers.Report
	info  *sessionInfo

	last time.Time // the time of its latest line

	llm     *importers.LLM // the response being read (its lines may be split by tool results)
	llmID   string
	bestUse *usage // the usage line with the most output tokens
	names   []string
	fork    *importers.Fork // the fork of the response being read

	tools map[string]*importers.Tool // open tool calls by tool_use id
	tasks map[string]*task           // delegation calls by tool_use id, until their fork is handed over
	order []*task                    // those, in call order
	ntask int                        // delegation calls so far
	done  ids                        // hashed ids of the calls handed over (a repeated line names them again)

	interrupted    bool // the user interrupted the current turn
	pendingCompact bool // a compact_boundary: the next user line is the summary
	sawPrompt      bool
	forkPrefix     bool   // a fork's file: the parent's lines come first, up to its directive
	prompt         string // a sub-agent's first user message
	lastUsage      *usage // of its last response, to compare with the parent's copy
	lastLLM        *importers.LLM
}

// sessionInfo is what the lines of every conversation of a session tell
// about the session.
type sessionInfo struct {
	sessionID, version, cwd, title string
	thinking, meta, images         bool
	// agentOf links a delegation call's tool_use id to the sub-agent id
	// (agent_progress records, toolUseResult.agentId).
	agentOf map[string]string
}

// task is one delegation call: a branch of its response's fork.
type task struct {
	id       string
	index    int // its place among its conversation's delegation calls, from 1
	branch   *importers.Branch
	fork     *importers.Fork
	input    taskInput
	agentID  string
	result   *taskResult
	resultAt time.Time
	answered bool // its tool_result arrived (status may still be async_launched)
	isError  bool
	cancel   bool
}

func newConv(c *importers.Conversation, sub bool, opt importers.Options, rep *importers.Report, info *sessionInfo) *conv {
	return &conv{c: c, sub: sub, opt: opt, rep: rep, info: info, tools: map[string]*importers.Tool{}, tasks: map[string]*task{}, done: ids{}}
}

func (cv *conv) add(st importers.Step) { cv.steps = append(cv.steps, st) }

// settled reports whether a step the conversation holds will not change
// as more lines come: a response once the next began, a tool call once its
// result came, a fork once its response ended and every branch came back.
func (cv *conv) settled(st importers.Step) bool {
	switch {
	case st.LLM != nil:
		return st.LLM != cv.llm
	case st.Tool != nil:
		return !st.Tool.Ended.IsZero()
	case st.Fork != nil:
		return st.Fork != cv.fork && !st.Fork.JoinAt.IsZero()
	}
	return true
}

// handedOver forgets a step given away: its calls are only ids now.
func (cv *conv) handedOver(st importers.Step) {
	if t := st.Tool; t != nil {
		delete(cv.tools, t.CallID)
		cv.done.add(t.CallID)
	}
}

// forkTasks takes the delegation calls of fork f out of the open ones, in
// call order.
func (cv *conv) forkTasks(f *importers.Fork) []*task {
	var out []*task
	keep := cv.order[:0]
	for _, tk := range cv.order {
		if tk.fork == f {
			out = append(out, tk)
			delete(cv.tasks, tk.id)
			cv.done.add(tk.id)
		} else {
			keep = append(keep, tk)
		}
	}
	clear(cv.order[len(keep):])
	cv.order = keep
	return out
}

// time is a line's time, or the conversation's latest when it has none
// (times never run backwards within a conversation).
func (cv *conv) time(e *entry) time.Time {
	t := parseTime(e.Timestamp)
	if t.IsZero() || t.Before(cv.last) {
		t = cv.last
	}
	if cv.c.Started.IsZero() {
		cv.c.Started = t
	}
	cv.last = t
	return t
}

// assistant reads one assistant line: one or more content blocks of one
// API response, identified by message.id.
func (cv *conv) assistant(e *entry) {
	before := cv.last
	t := cv.time(e)
	m := e.Message
	if m == nil {
		cv.rep.Skip("assistant line without a message")
		return
	}
	id := m.ID
	if id == "" {
		id = e.RequestID
	}
	if id == "" {
		id = e.UUID
	}
	if cv.llm == nil || id != cv.llmID {
		cv.finishResponse()
		start := before
		if start.IsZero() {
			start = t
		}
		cv.llm = &importers.LLM{Started: start, Model: m.Model}
		cv.llmID = id
		cv.add(importers.Step{LLM: cv.llm})
	}
	l := cv.llm
	l.Ended = t
	if m.Model != "" && m.Model != "<synthetic>" {
		l.Model = m.Model
	}
	if m.Usage != nil && (cv.bestUse == nil || n64(m.Usage.Output) >= n64(cv.bestUse.Output)) {
		cv.bestUse = m.Usage
	}
	for _, b := range blocks(m.Content) {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				continue
			}
			if l.Content != "" {
				l.Content += "\n\n"
			}
			l.Content += b.Text
			if e.IsAPIError {
				l.Status, l.Error = record.StatusError, cv.opt.Clip(b.Text)
			}
		case "thinking", "redacted_thinking":
			cv.info.thinking = true
		case "tool_use":
			cv.toolUse(b, t)
		default:
			cv.rep.Skip("assistant content block " + b.Type)
		}
	}
}

// toolUse reads one tool_use block: a tool call, or a delegation that
// becomes a branch of the response's fork.
func (cv *conv) toolUse(b block, t time.Time) {
	if b.ID == "" || cv.tools[b.ID] != nil || cv.tasks[b.ID] != nil || cv.done.has(b.ID) {
		return // no id to join on, or a duplicate line (resumed sessions repeat lines)
	}
	args := string(b.Input)
	if args == "" {
		args = "{}"
	}
	cv.names = append(cv.names, b.Name)
	if delegation(b.Name) {
		var in taskInput
		_ = json.Unmarshal(b.Input, &in)
		in.Description, in.Prompt, in.SubagentType = strings.Clone(in.Description), strings.Clone(in.Prompt), strings.Clone(in.SubagentType)
		if cv.fork == nil {
			cv.fork = &importers.Fork{At: t, Tool: b.Name, Context: "none"}
			cv.add(importers.Step{Fork: cv.fork})
		}
		agent := in.SubagentType
		if agent == "" {
			agent = "general-purpose"
		}
		br := &importers.Branch{Name: in.Description, Agent: agent, Instructions: cv.opt.Clip(in.Prompt), CallID: b.ID, Args: cv.opt.Clip(args)}
		cv.fork.Branches = append(cv.fork.Branches, br)
		// a fork-type sub-agent is seeded with the parent's turns: the
		// fork's context is the one most of its branches have
		forks := 0
		for _, o := range cv.fork.Branches {
			if o.Agent == "fork" {
				forks++
			}
		}
		cv.fork.Context = "none"
		if 2*forks >= len(cv.fork.Branches) {
			cv.fork.Context = "inherit"
		}
		cv.ntask++
		tk := &task{id: b.ID, index: cv.ntask, branch: br, fork: cv.fork, input: in}
		cv.tasks[b.ID] = tk
		cv.order = append(cv.order, tk)
		return
	}
	tool := &importers.Tool{Started: t, CallID: b.ID, Name: b.Name, Args: cv.opt.Clip(args),
		Research: ownResearch(b.Name) || cv.opt.IsResearch(b.Name)}
	cv.tools[b.ID] = tool
	cv.add(importers.Step{Tool: tool})
}

// finishResponse closes the response being read: its usage (the line with
// the most output tokens: earlier lines carry streaming snapshots), its
// text (capped) and its calls (the mapping writes its response body).
func (cv *conv) finishResponse() {
	l := cv.llm
	if l == nil {
		return
	}
	l.Usage = cv.bestUse.normalised()
	l.Content = cv.opt.Clip(l.Content)
	l.Calls = cv.names
	if l.Calls == nil {
		l.Calls = []string{}
	}
	cv.lastUsage, cv.lastLLM = cv.bestUse, l
	cv.llm, cv.llmID, cv.bestUse, cv.names, cv.fork = nil, "", nil, nil, nil
}

const interruptText = "[Request interrupted by user"

// rejectedText starts the result of a call the user stopped or refused.
const rejectedText = "The user doesn't want to proceed with this tool use"

// agentIDLine finds "agentId: X" in a delegation result's text.
var agentIDLine = regexp.MustCompile(`agentId: ([A-Za-z0-9_-]+)`)

// user reads one user line: a prompt, tool results, or text the tool
// injected.
func (cv *conv) user(e *entry) {
	t := cv.time(e)
	m := e.Message
	if m == nil {
		cv.rep.Skip("user line without a message")
		return
	}
	bs := blocks(m.Content)
	if e.IsCompactSummary || cv.pendingCompact {
		var text []string
		for _, b := range bs {
			if b.Type == "text" {
				text = append(text, b.Text)
			}
		}
		if e.IsCompactSummary || len(text) > 0 {
			cv.finishResponse()
			cv.pendingCompact = false
			cv.add(importers.Step{Compact: &importers.Compact{At: t, Summary: cv.opt.Clip(strings.Join(text, "\n"))}})
			return
		}
	}
	for _, b := range bs {
		switch b.Type {
		case "tool_result":
			if cv.forkPrefix && !cv.sawPrompt {
				continue // the parent's result of the call that started the fork
			}
			cv.toolResult(e, b, t)
		case "text":
			cv.userText(e, b.Text, t)
		case "image":
			cv.info.images = true
		default:
			cv.rep.Skip("user content block " + b.Type)
		}
	}
}

func (cv *conv) userText(e *entry, text string, t time.Time) {
	switch {
	case e.IsMeta:
		cv.info.meta = true
		return
	case strings.HasPrefix(text, interruptText):
		cv.interrupted = true
		return
	case strings.HasPrefix(text, "<local-command-"), strings.HasPrefix(text, "<task-notification>"):
		if strings.HasPrefix(text, "<task-notification>") {
			cv.notification(text, t)
		}
		return
	case strings.HasPrefix(text, "<command-name>"):
		text = commandLine(text) // a slash command: the command as typed
	}
	switch {
	case cv.sub && !cv.sawPrompt:
		cv.sawPrompt, cv.prompt = true, text
		return
	}
	cv.endTurn()
	cv.interrupted = false
	cv.add(importers.Step{User: &importers.User{At: t, Text: cv.opt.Clip(text)}})
}

// toolResult joins a tool_result block to its call.
func (cv *conv) toolResult(e *entry, b block, t time.Time) {
	all, first := resultText(b.Content, cv.opt)
	cancelled := strings.HasPrefix(all, interruptText)
	if tk := cv.tasks[b.ToolUseID]; tk != nil && strings.HasPrefix(all, rejectedText) {
		// a delegation the user stopped (Ctrl-C while the sub-agent ran
		// reads so in 2.1.3xx, followed by the interrupt line)
		cancelled = true
	}
	if tool := cv.tools[b.ToolUseID]; tool != nil {
		if !tool.Ended.IsZero() {
			return // a repeated line
		}
		tool.Ended, tool.Result = t, all
		switch {
		case cancelled:
			tool.Status, tool.Error = record.StatusCancelled, "the user interrupted the call"
		case b.IsError:
			tool.Status, tool.Error = record.StatusError, importers.FirstLine(all)
		}
		return
	}
	tk := cv.tasks[b.ToolUseID]
	if tk == nil {
		if !cv.done.has(b.ToolUseID) { // else a repeated line
			cv.rep.Skip("tool result without its call")
		}
		return
	}
	if tk.answered {
		return
	}
	var res taskResult
	if len(e.ToolUseResult) > 0 && e.ToolUseResult[0] == '{' {
		_ = json.Unmarshal(e.ToolUseResult, &res)
		res.Status, res.AgentID = strings.Clone(res.Status), strings.Clone(res.AgentID)
	}
	tk.result, tk.isError, tk.cancel = &res, b.IsError, cancelled
	if tk.agentID == "" {
		tk.agentID = res.AgentID
	}
	if tk.agentID == "" {
		if m := agentIDLine.FindStringSubmatch(all); m != nil {
			tk.agentID = m[1]
		}
	}
	if tk.agentID == "" && !e.IsSidechain {
		tk.agentID = e.AgentID // 2.0.x: on the result record
	}
	tk.answered = true
	if res.Status == "async_launched" {
		return // a background agent: its answer comes later in a notification
	}
	tk.branch.Answer = answer(first)
	if cancelled || b.IsError {
		tk.branch.Answer = all
	}
	tk.resultAt = t
	cv.joinIfDone(tk.fork)
}

// notification reads a background agent's <task-notification>: its
// answer, which joins it.
func (cv *conv) notification(text string, t time.Time) {
	for _, tk := range cv.order {
		if tk.answered && tk.resultAt.IsZero() && tk.agentID != "" && strings.Contains(text, tk.agentID) {
			tk.branch.Answer = cv.opt.Clip(text)
			tk.resultAt = t
			cv.joinIfDone(tk.fork)
		}
	}
}

// joinIfDone sets the fork's join time once every branch has returned.
func (cv *conv) joinIfDone(f *importers.Fork) {
	var last time.Time
	for _, tk := range cv.order {
		if tk.fork != f {
			continue
		}
		if tk.resultAt.IsZero() {
			return
		}
		if tk.resultAt.After(last) {
			last = tk.resultAt
		}
	}
	f.JoinAt = last
}

// endTurn closes the current turn: a final answer when its last response
// called nothing, a cancelled final when the user interrupted it.
func (cv *conv) endTurn() {
	cv.finishResponse()
	steps := cv.steps
	if len(steps) == 0 || steps[len(steps)-1].Final != nil || steps[len(steps)-1].User != nil {
		cv.interrupted = false
		return
	}
	lastStep := steps[len(steps)-1]
	switch {
	case cv.interrupted:
		cv.add(importers.Step{Final: &importers.Final{At: cv.last, Status: record.StatusCancelled, Error: "the user interrupted the turn"}})
	case lastStep.LLM != nil && len(lastStep.LLM.Calls) == 0 && lastStep.LLM.Status == "":
		cv.add(importers.Step{Final: &importers.Final{At: lastStep.LLM.Ended, Text: lastStep.LLM.Content}})
	}
	cv.interrupted = false
}

// finish closes the conversation at the end of its file: ended when its
// last turn ended (with an answer, or cancelled by the user), else never
// finished (a live session, or one cut short).
func (cv *conv) finish() {
	cv.endTurn()
	steps := cv.steps
	if len(steps) == 0 {
		return
	}
	if f := steps[len(steps)-1].Final; f != nil {
		cv.c.Ended = f.At
		if f.Status == record.StatusCancelled {
			cv.c.Status, cv.c.Error = record.StatusCancelled, f.Error
			if cv.c.Ended.IsZero() {
				cv.c.Ended = cv.last
			}
		}
	}
}

// commandLine is the slash command a <command-name> message holds, as the
// user typed it ("/review 12").
func commandLine(text string) string {
	tag := func(name string) string {
		_, rest, ok := strings.Cut(text, "<"+name+">")
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(rest, "</"+name+">")
		return strings.TrimSpace(v)
	}
	line := tag("command-name")
	if args := tag("command-args"); args != "" {
		line += " " + args
	}
	if line == "" {
		return text
	}
	return line
}

// answer is a sub-agent's answer without the "agentId: … (for resuming …)"
// trailer Claude Code appends for the model.
func answer(s string) string {
	if m := agentIDLine.FindStringIndex(s); m != nil && (m[0] == 0 || s[m[0]-1] == '\n') {
		return strings.TrimRight(s[:m[0]], "\n ")
	}
	return s
}
