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
	model          string    // the model of its latest response
	respAt         time.Time // when its latest response began

	branchNames importers.BranchNames // its branches' names so far: no two of its branches share a path

	// api holds the api-request records read (request.go); requests, the
	// rebuilt request of each response not handed over yet.
	api        *apiState
	requests   map[*importers.LLM]*apiReq
	entrypoint string // the lines' entrypoint (cli, sdk-cli, …)
	seen       ids    // the uuids of mirrored lines (agent_progress records), read once each
}

// sessionInfo is what the lines of every conversation of a session tell
// about the session.
type sessionInfo struct {
	sessionID, version, cwd, title string
	thinking, meta, images         bool
	// exact counts the responses whose request was rebuilt from the
	// api-request records, rebuilt the others (from the transcript).
	exact, rebuilt int
	// agentOf links a delegation call's tool_use id to the sub-agent id
	// (agent_progress records, toolUseResult.agentId).
	agentOf map[string]string
}

// task is one delegation call: a branch of its response's fork.
type task struct {
	id       string
	index    int       // its place among its conversation's delegation calls, from 1
	at       time.Time // when the call was made
	branch   *importers.Branch
	fork     *importers.Fork
	input    taskInput
	agentID  string
	result   *taskResult
	resultAt time.Time // when the sub-agent's outcome reached the parent
	answered bool      // its tool_result arrived (status may still be async_launched)
	isError  bool
	cancel   bool
	// background: the call returned at once (async_launched) and the
	// sub-agent's outcome came later, in a notification or a TaskOutput
	// result; status is the one it reported (completed, failed, killed).
	background bool
	status     string
	gotAnswer  bool // the sub-agent's answer reached the parent (a background one may notify without it)
}

func newConv(c *importers.Conversation, sub bool, opt importers.Options, rep *importers.Report, info *sessionInfo) *conv {
	return &conv{c: c, sub: sub, opt: opt, rep: rep, info: info, tools: map[string]*importers.Tool{}, tasks: map[string]*task{}, done: ids{},
		branchNames: importers.BranchNames{}}
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
		return st.Fork != cv.fork && !st.Fork.JoinAt.IsZero() && (!st.Fork.Detached || cv.answersIn(st.Fork))
	}
	return true
}

// answersIn reports whether the answers of detached fork f's sub-agents
// reached the parent: each came with its outcome, or the parent made a
// response since the last outcome (what it had then is all it got).
func (cv *conv) answersIn(f *importers.Fork) bool {
	if cv.respAt.After(f.JoinAt) {
		return true
	}
	for _, tk := range cv.order {
		if tk.fork == f && !tk.gotAnswer {
			return false
		}
	}
	return true
}

// handedOver forgets a step given away: its calls are only ids now. A
// response takes its rebuilt request's bytes (written only now, the
// messages they repeat shared until then).
func (cv *conv) handedOver(st importers.Step) {
	if l := st.LLM; l != nil {
		if req := cv.requests[l]; req != nil {
			l.Request = req.body()
			delete(cv.requests, l)
			cv.info.exact++
		} else {
			cv.info.rebuilt++
		}
	}
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
		cv.llm = &importers.LLM{Started: start, Model: m.Model, ID: id}
		cv.llmID = id
		cv.respAt = t
		cv.add(importers.Step{LLM: cv.llm})
		if cv.api != nil {
			if req := cv.api.take(e.RequestRef); req != nil {
				if cv.requests == nil {
					cv.requests = map[*importers.LLM]*apiReq{}
				}
				cv.requests[cv.llm] = req
			}
		}
	}
	l := cv.llm
	l.Ended = t
	if m.Model != "" && m.Model != "<synthetic>" {
		l.Model = m.Model
		cv.model = m.Model
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
			cv.fork = &importers.Fork{At: t, Tool: b.Name, Context: "none", Response: cv.llmID}
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
		tk := &task{id: b.ID, index: cv.ntask, at: t, branch: br, fork: cv.fork, input: in}
		cv.tasks[b.ID] = tk
		cv.order = append(cv.order, tk)
		return
	}
	tool := &importers.Tool{Started: t, CallID: b.ID, Name: b.Name, Args: cv.opt.Clip(args),
		Research: ownResearch(b.Name) || cv.opt.IsResearch(b.Name), Response: cv.llmID}
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

// finalFromParent adds the sub-agent's final response as the parent
// recorded it, to a branch read from the parent's records: the
// agent_progress records mirror every response but that one, whose usage
// is the call result's (toolUseResult.usage) and whose text is the answer.
// A response the mirror already holds (the same input counts) is not added
// again: outcome corrects its output count. Without usage (a background
// sub-agent's notification), the answer is the branch's final message.
func (cv *conv) finalFromParent(tk *task) {
	res := tk.result
	cv.finishResponse()
	if res == nil || tk.resultAt.IsZero() || tk.isError || tk.cancel ||
		res.Usage != nil && cv.lastUsage != nil && res.Usage.sameInput(cv.lastUsage) {
		return
	}
	if res.Usage == nil { // its answer, without the response that wrote it
		cv.add(importers.Step{Final: &importers.Final{At: tk.resultAt, Text: cv.opt.Clip(tk.branch.Answer)}})
		return
	}
	start := cv.last
	if start.IsZero() || start.After(tk.resultAt) {
		start = tk.resultAt
	}
	model := cv.model
	if model == "" {
		model = res.ResolvedModel
	}
	l := &importers.LLM{Started: start, Ended: tk.resultAt, Model: model, Usage: res.Usage.normalised(),
		Content: cv.opt.Clip(tk.branch.Answer), Calls: []string{}}
	cv.add(importers.Step{LLM: l})
	cv.lastUsage, cv.lastLLM = res.Usage, l
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
	case strings.HasPrefix(text, "<command-name>"), strings.HasPrefix(text, "<command-message>"):
		text = commandLine(text) // a slash command: the command as typed (the run's title when it is the first task)
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
		case tool.Name == "TaskOutput" && len(e.ToolUseResult) > 0 && e.ToolUseResult[0] == '{':
			cv.taskOutput(e.ToolUseResult, t)
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
		// A background agent: the parent goes on, and its outcome comes
		// later (a notification, a TaskOutput result).
		tk.background, tk.fork.Detached = true, true
		tk.branch.Launched = all
		return
	}
	tk.branch.Answer = answer(first)
	if cancelled || b.IsError {
		tk.branch.Answer = all
	}
	tk.status, tk.gotAnswer = res.Status, true
	tk.resultAt = t
	cv.joinIfDone(tk.fork)
}

// backgroundTask is the background delegation call whose sub-agent has
// agent id or call id id, still waiting for its outcome; nil when none.
func (cv *conv) backgroundTask(id string) *task {
	if id == "" {
		return nil
	}
	for _, tk := range cv.order {
		if tk.background && (tk.agentID == id || tk.id == id) {
			return tk
		}
	}
	return nil
}

// returned records that background task tk's outcome reached the parent
// at t: the earliest word of it ends its branch; the answer, when this
// word carries it, is its answer.
func (cv *conv) returned(tk *task, t time.Time, status, answer string) {
	if tk.resultAt.IsZero() || t.Before(tk.resultAt) {
		tk.resultAt = t
	}
	if tk.status == "" {
		tk.status = status
	}
	if answer != "" && !tk.gotAnswer {
		tk.branch.Answer, tk.gotAnswer = cv.opt.Clip(answer), true
	}
	cv.joinIfDone(tk.fork)
}

// notification reads a background agent's notification — a
// <task-notification> turn or queued message (current versions), an
// <agent-notification> queued message (2.0): its status and, when it
// holds one, its answer. Its task is named by its call's id or its agent id.
func (cv *conv) notification(text string, t time.Time) {
	tk := cv.backgroundTask(tag(text, "tool-use-id"))
	if tk == nil {
		tk = cv.backgroundTask(tag(text, "task-id"))
	}
	if tk == nil {
		tk = cv.backgroundTask(tag(text, "agent-id"))
	}
	if tk == nil {
		return
	}
	cv.returned(tk, t, tag(text, "status"), tag(text, "result"))
}

// taskOutput reads a TaskOutput call's result: a background task's
// output once it finished (retrieval_status success).
func (cv *conv) taskOutput(raw []byte, t time.Time) {
	var out outputResult
	if json.Unmarshal(raw, &out) != nil || out.Task == nil || out.RetrievalStatus != "success" {
		return
	}
	tk := cv.backgroundTask(out.Task.TaskID)
	if tk == nil {
		return
	}
	result := out.Task.Result
	if result == "" {
		result = out.Task.Output
	}
	// The output lists the sub-agent's calls ("[Tool: Read] {…}"), then its answer.
	if _, after, ok := strings.Cut(result, "--- RESULT ---\n"); ok {
		result = after
	}
	cv.returned(tk, t, out.Task.Status, strings.Clone(result))
}

// tag is the text of the first <name>…</name> in s (to its end when the
// tag is not closed), trimmed; "" when there is none.
func tag(s, name string) string {
	_, rest, ok := strings.Cut(s, "<"+name+">")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, "</"+name+">")
	return strings.TrimSpace(v)
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
	line := tag(text, "command-name")
	if args := tag(text, "command-args"); args != "" {
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
