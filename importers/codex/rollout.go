package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// line is one rollout line: {"timestamp", "ordinal"?, "type", "payload"}.
type line struct {
	Timestamp string          `json:"timestamp"`
	Ordinal   *int64          `json:"ordinal"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// meta is the session_meta payload (the first line of a rollout).
type meta struct {
	ID                 string          `json:"id"`
	Timestamp          string          `json:"timestamp"`
	Cwd                string          `json:"cwd"`
	Originator         string          `json:"originator"`
	CLIVersion         string          `json:"cli_version"`
	Source             json.RawMessage `json:"source"`
	AgentNickname      string          `json:"agent_nickname"`
	AgentRole          string          `json:"agent_role"`
	AgentType          string          `json:"agent_type"`
	AgentPath          string          `json:"agent_path"`
	ForkedFromID       string          `json:"forked_from_id"`
	ParentThreadID     string          `json:"parent_thread_id"`
	HistoryStart       *int64          `json:"subagent_history_start_ordinal"`
	BaseInstructions   json.RawMessage `json:"base_instructions"`
	ForkedFromOrdinal  *int64          `json:"forked_from_ordinal_exclusive"`
	ThreadSource       string          `json:"thread_source"`
	MultiAgentVersion  json.RawMessage `json:"multi_agent_version"`
	parsedAt           time.Time
	spawn              *threadSpawn
	internal           string // review, compact, guardian, memory_consolidation: not the user's sub-agent
	firstLineTimestamp time.Time
}

// threadSpawn is source.subagent.thread_spawn: the parent of a sub-agent.
type threadSpawn struct {
	ParentThreadID string `json:"parent_thread_id"`
	Depth          int    `json:"depth"`
	AgentPath      string `json:"agent_path"`
	AgentNickname  string `json:"agent_nickname"`
	AgentRole      string `json:"agent_role"`
	AgentType      string `json:"agent_type"`
}

// readSource reads meta.Source: a bare string ("cli", "exec", ...) or
// {"subagent": {"thread_spawn": {...}}}, {"subagent": "review"}, ...
func (m *meta) readSource() {
	var s string
	if json.Unmarshal(m.Source, &s) == nil {
		return
	}
	var v struct {
		Subagent json.RawMessage `json:"subagent"`
		Internal json.RawMessage `json:"internal"`
	}
	if json.Unmarshal(m.Source, &v) != nil {
		return
	}
	if len(v.Internal) > 0 {
		m.internal = "internal"
		return
	}
	if len(v.Subagent) == 0 {
		return
	}
	if json.Unmarshal(v.Subagent, &s) == nil {
		m.internal = s
		return
	}
	var sub struct {
		ThreadSpawn *threadSpawn    `json:"thread_spawn"`
		Other       json.RawMessage `json:"other"`
	}
	if json.Unmarshal(v.Subagent, &sub) != nil {
		return
	}
	if sub.ThreadSpawn != nil {
		m.spawn = sub.ThreadSpawn
	} else {
		m.internal = "other"
	}
}

// parent returns the thread that spawned this one, or "".
func (m *meta) parent() string {
	if m.spawn != nil && m.spawn.ParentThreadID != "" {
		return m.spawn.ParentThreadID
	}
	if m.internal == "" {
		return m.ParentThreadID
	}
	return ""
}

func (m *meta) nickname() string {
	if m.AgentNickname != "" {
		return m.AgentNickname
	}
	if m.spawn != nil {
		return m.spawn.AgentNickname
	}
	return ""
}

func (m *meta) role() string {
	for _, r := range []string{m.AgentRole, m.AgentType} {
		if r != "" {
			return r
		}
	}
	if m.spawn != nil {
		if m.spawn.AgentRole != "" {
			return m.spawn.AgentRole
		}
		return m.spawn.AgentType
	}
	return ""
}

func (m *meta) path() string {
	if m.AgentPath != "" {
		return m.AgentPath
	}
	if m.spawn != nil {
		return m.spawn.AgentPath
	}
	return ""
}

// usage is Codex's TokenUsage.
type usage struct {
	InputTokens           *int64 `json:"input_tokens"`
	CachedInputTokens     *int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens *int64 `json:"cache_write_input_tokens"`
	OutputTokens          *int64 `json:"output_tokens"`
	ReasoningOutputTokens *int64 `json:"reasoning_output_tokens"`
	TotalTokens           *int64 `json:"total_tokens"`
}

func (u *usage) record() record.Usage {
	var r record.Usage
	if u == nil {
		return r
	}
	if u.InputTokens != nil {
		r.In = *u.InputTokens
	}
	if u.OutputTokens != nil {
		r.Out = *u.OutputTokens
	}
	if u.CachedInputTokens != nil {
		r.Cached, r.CachedReported = *u.CachedInputTokens, true
	}
	if u.CacheWriteInputTokens != nil {
		r.CacheWrite, r.CacheWriteReported = *u.CacheWriteInputTokens, true
	}
	if u.ReasoningOutputTokens != nil {
		r.Reasoning, r.ReasoningReported = *u.ReasoningOutputTokens, true
	}
	r.Clamp()
	return r
}

// call is a tool call of the response being read, waiting for its output.
type call struct {
	tool   *importers.Tool
	spawn  *spawn // set for spawn_agent
	wait   bool   // wait / wait_agent: its output is the join
	callID string
	seq    int // the call's number in the file, from 0: the same in both passes
}

// spawn is one spawn_agent call: a branch to be.
type spawn struct {
	branch    *importers.Branch
	fork      *importers.Fork
	at        time.Time
	threadID  string // from the output's agent_id (v1) or collab_agent_spawn_end
	taskName  string // from the output's task_name (v2)
	nickname  string
	role      string
	inherit   bool
	failed    string // the call's output when it did not spawn
	reported  time.Time
	status    record.Status
	statusErr string
	child     *childFile // the sub-agent's rollout (match), or nil
}

// reader reads one rollout file (one thread) into a conversation.
type reader struct {
	path   string
	opt    importers.Options
	report *importers.Report
	meta   *meta
	conv   *importers.Conversation
	tasks  []string
	models []string
	model  string

	// the response being read: items since the last boundary
	pendingText  strings.Builder
	pendingCalls []*call
	pendingStart time.Time
	pendingAny   bool
	lastInputAt  time.Time // the last thing sent to the model (user message, tool output, boundary)
	lastLLM      *importers.LLM
	lastBoundary string // "token_count" or "token_usage_record"
	lastTotal    *usage
	usageRecords bool // the file has token_usage_record lines: token_count lines are not counted

	open     map[string]*call // tool calls waiting for their output, by call id
	spawns   []*spawn         // every spawn_agent call, in order
	lastUser string
	lastAt   time.Time
	turnDone bool // the last turn completed
	aborted  bool
	inherit  *inheritance

	// The file is read twice (stream.go). The first pass (keep false)
	// keeps no step: it learns what later lines change of earlier steps —
	// each fork whole (forks: the branches' outcomes, answers and joins
	// come late), the calls never answered (unanswered: their numbers) —
	// and the thread's outcome, tasks and models. The second (keep true)
	// holds its steps in conv.Steps until a thread hands them over.
	keep       bool
	forks      []*importers.Fork
	unanswered map[int]bool
	calls      int // calls added so far
	lines      int // the number of the last line the first pass took in
	attached   int // spawns before this one have their branches (attachFork)
}

// add appends a step to the conversation (the second pass) or lets it go
// (the first, which keeps its forks only).
func (r *reader) add(st importers.Step) {
	if st.Fork != nil && !r.keep {
		r.forks = append(r.forks, st.Fork)
	}
	if r.keep {
		r.conv.Steps = append(r.conv.Steps, st)
	}
}

// inheritance tells the copied parent history at the start of a forked
// child from the child's own lines.
type inheritance struct {
	startOrdinal *int64
	since        time.Time
}

func (h *inheritance) inherited(l *line, at time.Time) bool {
	if h == nil {
		return false
	}
	if h.startOrdinal != nil && l.Ordinal != nil {
		return *l.Ordinal < *h.startOrdinal
	}
	return !h.since.IsZero() && !at.IsZero() && at.Before(h.since)
}

// readThread reads one rollout file in a first pass (keeping no step).
func readThread(ctx context.Context, path string, opt importers.Options, report *importers.Report) (*reader, error) {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &reader{path: path, opt: opt, report: report, conv: &importers.Conversation{Agent: "main"}, open: map[string]*call{}}
	if err := r.read(ctx, importers.NewLineReader(f), -1); err != nil {
		return nil, err
	}
	if r.meta == nil {
		return nil, fmt.Errorf("%s: no session_meta line: not a Codex rollout", path)
	}
	r.finish()
	return r, nil
}

// read takes in lines from lr up to the end, or (limit >= 0) up to line
// limit; r.lines is the last one taken in. With keep it stops once steps
// are held, to let them be handed over, and says whether the lines are
// all read.
func (r *reader) read(ctx context.Context, lr *importers.LineReader, limit int) error {
	_, err := r.readSome(ctx, lr, limit)
	return err
}

// readSome is read, returning after a line that added a step when r.keep;
// done says the lines ran out (or limit was passed).
func (r *reader) readSome(ctx context.Context, lr *importers.LineReader, limit int) (done bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		raw, n, unterminated, err := lr.Next()
		if err == io.EOF {
			return true, nil
		}
		if limit >= 0 && n > limit {
			return true, nil
		}
		if errors.Is(err, importers.ErrLineTooLong) {
			if perr := r.report.Problem(r.opt, r.path, n, err); perr != nil {
				return false, perr
			}
			r.lines = n
			continue
		}
		if err != nil {
			return false, err
		}
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			if unterminated {
				r.report.Skip("truncated last line")
				return true, nil
			}
			if perr := r.report.Problem(r.opt, r.path, n, fmt.Errorf("not a JSON object: %v", err)); perr != nil {
				return false, perr
			}
			r.lines = n
			continue
		}
		before := len(r.conv.Steps)
		if err := r.line(&l, n); err != nil {
			return false, err
		}
		r.lines = n
		if r.keep && len(r.conv.Steps) > before {
			return false, nil
		}
	}
}

// line takes in one rollout line read at line n.
func (r *reader) line(l *line, n int) error {
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	if r.meta == nil {
		if l.Type != "session_meta" {
			return r.report.Problem(r.opt, r.path, n, fmt.Errorf("the first record is %q, not session_meta", l.Type))
		}
		var m meta
		if err := json.Unmarshal(l.Payload, &m); err != nil || m.ID == "" {
			return fmt.Errorf("%s:%d: session_meta without a thread id", r.path, n)
		}
		m.readSource()
		m.parsedAt, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
		m.firstLineTimestamp = at
		r.meta = &m
		r.conv.System = r.opt.Clip(baseInstructions(m.BaseInstructions))
		r.conv.Started = m.parsedAt
		if r.conv.Started.IsZero() {
			r.conv.Started = at
		}
		if m.spawn != nil || m.HistoryStart != nil || m.ForkedFromID != "" {
			// A sub-agent or fork may start with a copy of its parent's
			// history: lines before its own start are not its own.
			r.inherit = &inheritance{startOrdinal: m.HistoryStart, since: m.parsedAt}
		}
		r.lastInputAt = r.conv.Started
		return nil
	}
	if l.Type == "session_meta" || r.inherit.inherited(l, at) {
		return nil // a copied parent line (the parent's turns are this child's prefix)
	}
	if !at.IsZero() {
		r.lastAt = at
	}
	switch l.Type {
	case "turn_context":
		var tc struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(l.Payload, &tc) == nil && tc.Model != "" {
			r.model = tc.Model
			if !slices.Contains(r.models, tc.Model) {
				r.models = append(r.models, tc.Model)
			}
		}
	case "response_item":
		return r.responseItem(l.Payload, at, n)
	case "event_msg":
		return r.event(l.Payload, at, n)
	case "token_usage_record":
		var v struct {
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal(l.Payload, &v); err != nil {
			return r.report.Problem(r.opt, r.path, n, fmt.Errorf("token_usage_record: %v", err))
		}
		if !r.usageRecords && r.lastBoundary == "token_count" && !r.pendingAny && r.lastLLM != nil &&
			r.lastLLM.Usage == v.Usage.record() {
			// The same response already closed by its token_count.
			r.usageRecords = true
			return nil
		}
		r.usageRecords = true
		r.boundary(v.Usage, at, "token_usage_record")
	case "compacted":
		var c struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(l.Payload, &c) == nil {
			r.closePending(at)
			if l := r.lastLLM; l != nil && len(l.Calls) == 0 && l.Content != "" && strings.Contains(c.Message, l.Content) {
				// the response that wrote the summary (a compaction Codex
				// runs through the model itself): priced, not the agent's
				l.Agent = "compaction"
			}
			r.add(importers.Step{Compact: &importers.Compact{At: at, Summary: r.opt.Clip(c.Message)}})
		}
	case "world_state", "inter_agent_communication_metadata", "retained_context",
		"security_risk_score", "realtime_item":
		// Known records that carry no model response, tool call or turn.
	case "inter_agent_communication":
		r.interAgent(l.Payload, at)
	default:
		r.report.Skip("record " + quoteType(l.Type))
	}
	return nil
}

func quoteType(t string) string {
	if t == "" {
		return `without a type`
	}
	return fmt.Sprintf("%q", t)
}

// responseItem reads a response_item payload.
func (r *reader) responseItem(p json.RawMessage, at time.Time, n int) error {
	var it struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
		Action    json.RawMessage `json:"action"`
		Status    string          `json:"status"`
		Author    string          `json:"author"`
	}
	if err := json.Unmarshal(p, &it); err != nil {
		return r.report.Problem(r.opt, r.path, n, fmt.Errorf("response_item: %v", err))
	}
	switch it.Type {
	case "message":
		text := importers.MessageText(it.Content)
		switch it.Role {
		case "user":
			r.userMessage(text, at)
		case "assistant":
			r.startPending(at)
			if r.pendingText.Len() < r.opt.TextCap() {
				r.pendingText.WriteString(text)
			}
		}
		// developer and system messages are instructions Codex injects.
	case "reasoning":
		r.startPending(at)
	case "function_call":
		r.addCall(it.Name, it.Arguments, it.CallID, at)
	case "custom_tool_call":
		r.addCall(it.Name, it.Input, it.CallID, at)
	case "local_shell_call":
		args := "{}"
		var a struct {
			Command json.RawMessage `json:"command"`
		}
		if json.Unmarshal(it.Action, &a) == nil && len(a.Command) > 0 {
			b, _ := json.Marshal(map[string]json.RawMessage{"command": a.Command})
			args = string(b)
		}
		r.addCall("local_shell", args, it.CallID, at)
	case "web_search_call", "tool_search_call", "image_generation_call":
		name := strings.TrimSuffix(it.Type, "_call")
		args := string(it.Action)
		if args == "" {
			args = "{}"
		}
		c := r.addCall(name, args, it.CallID, at)
		if it.Type != "tool_search_call" || it.CallID == "" {
			// No output follows: the call is its own result.
			c.tool.Ended = at
			delete(r.open, c.callID)
		}
	case "function_call_output", "custom_tool_call_output", "tool_search_output":
		r.output(it.CallID, it.Output, at)
	case "agent_message":
		r.agentMessage(it.Author, it.Content, at)
	case "compaction", "context_compaction", "additional_tools", "ghost_snapshot":
	default:
		r.report.Skip("response_item " + quoteType(it.Type))
	}
	return nil
}

// injected reports whether a user-role message is context Codex adds
// (environment, AGENTS.md instructions, sub-agent notifications) rather
// than something the user typed.
func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<subagent_notification>", "<turn_aborted>", "<user_shell_command>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func (r *reader) userMessage(text string, at time.Time) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "<subagent_notification>") {
		r.notification(t, at)
		return
	}
	if t == "" || injected(t) {
		return
	}
	r.lastInputAt = at
	if t == r.lastUser {
		return // the same message as a response_item and as a user_message event
	}
	r.lastUser = t
	if !r.keep {
		r.tasks = append(r.tasks, r.opt.Clip(t))
	}
	r.add(importers.Step{User: &importers.User{At: at, Text: r.opt.Clip(t)}})
}

func (r *reader) startPending(at time.Time) {
	if !r.pendingAny {
		r.pendingAny = true
		r.pendingStart = r.lastInputAt
		if r.pendingStart.IsZero() || r.pendingStart.After(at) {
			r.pendingStart = at
		}
	}
}

// addCall adds a tool call to the response being read.
func (r *reader) addCall(name, args, callID string, at time.Time) *call {
	r.startPending(at)
	c := &call{seq: r.calls, callID: callID, tool: &importers.Tool{Started: at, CallID: callID, Name: name, Args: r.opt.Clip(args), Status: record.StatusOK}}
	switch name {
	case "spawn_agent":
		c.spawn = r.newSpawn(args, at)
	case "wait", "wait_agent":
		c.wait = true
	}
	c.tool.Research = r.isResearch(name, args)
	r.calls++
	r.pendingCalls = append(r.pendingCalls, c)
	if callID != "" {
		r.open[callID] = c
	}
	return c
}

// newSpawn reads spawn_agent's arguments: v1 {message, agent_type,
// fork_context}, v2 {message, task_name, agent_type, fork_turns}.
func (r *reader) newSpawn(args string, at time.Time) *spawn {
	var a struct {
		Message     string          `json:"message"`
		Items       json.RawMessage `json:"items"`
		AgentType   string          `json:"agent_type"`
		TaskName    string          `json:"task_name"`
		ForkContext bool            `json:"fork_context"`
		ForkTurns   json.RawMessage `json:"fork_turns"`
	}
	_ = json.Unmarshal([]byte(args), &a)
	s := &spawn{at: at, role: a.AgentType, taskName: a.TaskName, inherit: a.ForkContext}
	if len(a.ForkTurns) > 0 {
		var ft string
		if json.Unmarshal(a.ForkTurns, &ft) != nil || (ft != "" && ft != "none") {
			s.inherit = true
		}
	}
	instr := a.Message
	if instr == "" && len(a.Items) > 0 {
		instr = importers.MessageText(a.Items)
	}
	s.branch = &importers.Branch{Agent: a.AgentType, Instructions: r.opt.Clip(instr), Args: r.opt.Clip(args)}
	if s.branch.Agent == "" {
		s.branch.Agent = "default"
	}
	return s
}

// output joins a tool's output to its call.
func (r *reader) output(callID string, out json.RawMessage, at time.Time) {
	r.lastInputAt = at
	c := r.open[callID]
	if c == nil {
		r.report.Skip("tool outputs without their call")
		return
	}
	delete(r.open, callID)
	text, failed := outputText(out)
	if c.spawn == nil && !c.wait {
		if t, f := execText(text); t != text {
			text, failed = t, failed || f
		}
	}
	c.tool.Result, c.tool.Ended = r.opt.Clip(text), at
	if failed {
		c.tool.Status, c.tool.Error = record.StatusError, importers.FirstLine(text)
	}
	switch {
	case c.spawn != nil:
		var v struct {
			AgentID  string `json:"agent_id"`
			TaskName string `json:"task_name"`
			Nickname string `json:"nickname"`
		}
		if json.Unmarshal([]byte(text), &v) == nil && (v.AgentID != "" || v.TaskName != "") {
			if v.AgentID != "" {
				c.spawn.threadID = v.AgentID
			}
			if v.TaskName != "" {
				c.spawn.taskName = v.TaskName
			}
			c.spawn.nickname = v.Nickname
		} else if c.spawn.threadID == "" {
			c.spawn.failed = importers.FirstLine(text)
		}
	case c.wait:
		r.waitResult(text, at)
	}
}

// waitResult reads wait's output {"status": {target: status}, "timed_out"}:
// a final status is the branch's outcome and its report time the join.
func (r *reader) waitResult(text string, at time.Time) {
	var v struct {
		Status map[string]json.RawMessage `json:"status"`
	}
	if json.Unmarshal([]byte(text), &v) != nil {
		return
	}
	for target, st := range v.Status {
		r.report1(target, st, at)
	}
}

// report1 records one child's status as its parent learnt it.
func (r *reader) report1(target string, st json.RawMessage, at time.Time) {
	s := r.spawnFor(target)
	if s == nil {
		return
	}
	status, answer, final := agentStatus(st)
	if !final {
		return
	}
	if s.reported.IsZero() {
		s.reported = at
	}
	s.status = status
	if status == record.StatusOK {
		s.branch.Answer = r.opt.Clip(answer)
	} else {
		s.statusErr = answer
	}
}

// agentStatus reads Codex's AgentStatus as serialised: "pending_init",
// "running", {"completed": "final message"}, {"errored": "..."},
// "shutdown", "not_found", "interrupted".
func agentStatus(raw json.RawMessage) (st record.Status, text string, final bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "completed":
			return record.StatusOK, "", true
		case "shutdown":
			return record.StatusCancelled, "the sub-agent was shut down", true
		case "not_found":
			return record.StatusInterrupted, "the sub-agent was not found", true
		case "interrupted":
			return record.StatusInterrupted, "the sub-agent was interrupted", true
		}
		return "", "", false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", "", false
	}
	for k, v := range m {
		var t string
		_ = json.Unmarshal(v, &t)
		switch k {
		case "completed":
			return record.StatusOK, t, true
		case "errored", "failed":
			return record.StatusError, t, true
		}
	}
	return "", "", false
}

// spawnFor finds the spawn a wait target or notification names: a thread
// id, an agent path (/root/name), a task name or a nickname.
func (r *reader) spawnFor(target string) *spawn {
	for _, s := range r.spawns {
		if target != "" && (target == s.threadID || target == s.taskName || target == s.nickname ||
			strings.TrimPrefix(target, "/root/") == strings.TrimPrefix(s.taskName, "/root/")) {
			return s
		}
	}
	return nil
}

// notification reads a <subagent_notification>{...}</subagent_notification>
// message: a child's final status pushed to the parent.
func (r *reader) notification(text string, at time.Time) {
	body := strings.TrimSuffix(strings.TrimPrefix(text, "<subagent_notification>"), "</subagent_notification>")
	var v struct {
		AgentPath string          `json:"agent_path"`
		AgentID   string          `json:"agent_id"`
		ThreadID  string          `json:"thread_id"`
		Status    json.RawMessage `json:"status"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(body)), &v) != nil {
		return
	}
	for _, t := range []string{v.AgentID, v.ThreadID, v.AgentPath} {
		if t != "" {
			r.report1(t, v.Status, at)
			return
		}
	}
}

// agentMessage reads a multi-agent v2 message as Codex 0.171 records it:
// a response_item {type: agent_message, author, recipient, content:
// [{input_text: "Message Type: FINAL_ANSWER\nTask name: …\nSender: …\n
// Payload:\n…"}]}. A child's FINAL_ANSWER to this thread is its report
// (each time it ends a task, so a resumed child reports again): its answer,
// or "Agent errored: …" when its turn failed — the child's own rollout
// then ends as if it completed.
func (r *reader) agentMessage(author string, content json.RawMessage, at time.Time) {
	s := r.spawnFor(author)
	if s == nil {
		return // a task sent to a child, or a message of another thread
	}
	text := importers.MessageText(content)
	kind, payload := "", text
	if head, rest, ok := strings.Cut(text, "Payload:\n"); ok {
		payload = rest
		for _, l := range strings.Split(head, "\n") {
			if v, ok := strings.CutPrefix(l, "Message Type: "); ok {
				kind = strings.TrimSpace(v)
			}
		}
	}
	if kind != "FINAL_ANSWER" {
		return
	}
	s.reported = at
	if msg, ok := strings.CutPrefix(payload, "Agent errored: "); ok {
		s.status, s.statusErr = record.StatusError, "the sub-agent's turn failed: "+importers.FirstLine(msg)
		return
	}
	s.status, s.statusErr = record.StatusOK, ""
	s.branch.Answer = r.opt.Clip(strings.TrimSpace(payload))
}

// interAgent reads a multi-agent v2 message; a child's message to its
// parent carries its answer.
func (r *reader) interAgent(p json.RawMessage, at time.Time) {
	var v struct {
		Author  string `json:"author"`
		Content string `json:"content"`
	}
	if json.Unmarshal(p, &v) != nil {
		return
	}
	if s := r.spawnFor(v.Author); s != nil && s.branch.Answer == "" {
		s.branch.Answer = r.opt.Clip(v.Content)
	}
}

// event reads an event_msg payload.
func (r *reader) event(p json.RawMessage, at time.Time, n int) error {
	var e struct {
		Type             string          `json:"type"`
		Message          string          `json:"message"`
		Info             json.RawMessage `json:"info"`
		LastAgentMessage *string         `json:"last_agent_message"`
		CallID           string          `json:"call_id"`
		NewThreadID      string          `json:"new_thread_id"`
		NewAgentNickname string          `json:"new_agent_nickname"`
	}
	if err := json.Unmarshal(p, &e); err != nil {
		return r.report.Problem(r.opt, r.path, n, fmt.Errorf("event_msg: %v", err))
	}
	switch e.Type {
	case "user_message":
		r.userMessage(e.Message, at)
	case "agent_message":
		if e.Message != "" && !strings.Contains(r.pendingText.String(), e.Message) &&
			(r.pendingAny || r.lastLLM == nil || !strings.Contains(r.lastLLM.Content, e.Message)) {
			// The event repeats the response item's text; only text no item carried is added.
			r.startPending(at)
			if r.pendingText.Len() < r.opt.TextCap() {
				r.pendingText.WriteString(e.Message)
			}
		}
	case "token_count":
		if r.usageRecords {
			return nil
		}
		var info *struct {
			Total *usage `json:"total_token_usage"`
			Last  *usage `json:"last_token_usage"`
		}
		if len(e.Info) == 0 || string(e.Info) == "null" {
			return nil // a rate-limit update
		}
		if err := json.Unmarshal(e.Info, &info); err != nil {
			return r.report.Problem(r.opt, r.path, n, fmt.Errorf("token_count: %v", err))
		}
		if info == nil || info.Last == nil {
			return nil
		}
		if info.Total != nil && r.lastTotal != nil && equalUsage(info.Total, r.lastTotal) {
			return nil // the same totals again: no new response
		}
		r.lastTotal = info.Total
		r.boundary(info.Last, at, "token_count")
	case "task_started", "turn_started":
		r.turnDone, r.aborted = false, false
		r.lastInputAt = at
	case "task_complete", "turn_complete":
		r.closePending(at)
		r.turnDone = true
		text, ended := "", r.lastLLM != nil && len(r.lastLLM.Calls) == 0
		if e.LastAgentMessage != nil {
			text = *e.LastAgentMessage
		} else if ended {
			text = r.lastLLM.Content
		}
		if text != "" || ended {
			r.add(importers.Step{Final: &importers.Final{At: at, Text: r.opt.Clip(text)}})
		}
	case "turn_aborted":
		r.closePending(at)
		r.aborted = true
	case "collab_agent_spawn_end":
		if c := r.open[e.CallID]; c != nil && c.spawn != nil && e.NewThreadID != "" {
			c.spawn.threadID, c.spawn.nickname = e.NewThreadID, e.NewAgentNickname
		} else {
			for _, s := range r.spawns {
				if s.branch.CallID == e.CallID && e.NewThreadID != "" {
					s.threadID, s.nickname = e.NewThreadID, e.NewAgentNickname
				}
			}
		}
	case "agent_reasoning", "agent_reasoning_raw_content", "agent_reasoning_section_break",
		"context_compacted", "thread_rolled_back", "patch_apply_begin", "patch_apply_end",
		"mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin", "web_search_end",
		"image_generation_end", "entered_review_mode", "exited_review_mode", "thread_goal_updated",
		"sub_agent_activity", "item_completed", "item_started", "exec_command_begin", "exec_command_end",
		"collab_agent_spawn_begin", "collab_agent_interaction_begin", "collab_agent_interaction_end",
		"collab_waiting_begin", "collab_waiting_end", "collab_close_begin", "collab_close_end",
		"error", "warning", "stream_error", "background_event", "plan_update", "turn_diff",
		"exec_approval_request", "apply_patch_approval_request", "session_configured", "thread_settings_applied", "shutdown_complete":
		// Known events the mapping does not need.
	default:
		r.report.Skip("event_msg " + quoteType(e.Type))
	}
	return nil
}

func equalUsage(a, b *usage) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

// boundary closes the response being read: one llm step with its usage,
// then its tool calls (spawn_agent calls together as one fork).
func (r *reader) boundary(u *usage, at time.Time, kind string) {
	r.lastBoundary = kind
	start := r.pendingStart
	if !r.pendingAny {
		start = r.lastInputAt
	}
	if start.IsZero() || start.After(at) {
		start = at
	}
	l := &importers.LLM{Started: start, Ended: at, Model: r.model, Usage: u.record(), Status: record.StatusOK,
		Content: r.opt.Clip(r.pendingText.String())}
	for _, c := range r.pendingCalls {
		l.Calls = append(l.Calls, c.tool.Name)
	}
	r.add(importers.Step{LLM: l})
	r.lastLLM = l
	r.emitCalls()
	r.pendingText.Reset()
	r.pendingAny = false
	r.lastInputAt = at
}

// emitCalls appends the pending calls as steps: tools in order, the
// spawn_agent calls as one fork at the place of the first; wait calls are
// the join, not tools. A fork has one context: the one most of its
// children had (inherit on a tie), since the record keeps no context per
// branch and two forks would show concurrent children one after another.
func (r *reader) emitCalls() {
	var fork *importers.Fork
	inherit, fresh := 0, 0
	for _, c := range r.pendingCalls {
		switch {
		case c.spawn != nil:
			if fork == nil {
				fork = &importers.Fork{At: c.tool.Started, Tool: "spawn_agent", Context: "none"}
				r.add(importers.Step{Fork: fork})
			}
			if c.spawn.inherit {
				inherit++
			} else {
				fresh++
			}
			c.spawn.fork = fork
			c.spawn.branch.CallID = c.callID
			fork.Branches = append(fork.Branches, c.spawn.branch)
			r.spawns = append(r.spawns, c.spawn)
		case c.wait:
		default:
			r.add(importers.Step{Tool: c.tool})
		}
	}
	if fork != nil && inherit >= fresh {
		fork.Context = "inherit"
	}
	r.pendingCalls = r.pendingCalls[:0]
}

// closePending closes a response that no token count closed (a turn that
// ended or was aborted mid-response): its usage is not reported.
func (r *reader) closePending(at time.Time) {
	if r.pendingAny || len(r.pendingCalls) > 0 {
		r.boundary(nil, at, "")
	}
}

// finish ends the thread: a response still open is closed without usage,
// calls without an output are interrupted, and the conversation's outcome.
func (r *reader) finish() {
	end := r.lastAt
	if r.pendingAny || len(r.pendingCalls) > 0 {
		r.boundary(nil, end, "")
		r.lastLLM.Status, r.lastLLM.Error = record.StatusInterrupted, "the response has no token count: the session ended before it closed"
	}
	for _, c := range r.open {
		if c.spawn == nil && !c.wait && c.tool.Ended.IsZero() {
			c.tool.Status, c.tool.Error = record.StatusInterrupted, noOutput
			if !r.keep {
				if r.unanswered == nil {
					r.unanswered = map[int]bool{}
				}
				r.unanswered[c.seq] = true
			}
		}
	}
	r.conv.Agent = "main"
	if r.meta.spawn != nil || r.meta.internal != "" {
		if role := r.meta.role(); role != "" {
			r.conv.Agent = role
		} else {
			r.conv.Agent = "default"
		}
	}
	switch {
	case r.aborted:
		r.conv.Status, r.conv.Error, r.conv.Ended = record.StatusCancelled, "the last turn was aborted", end
	case r.turnDone:
		r.conv.Status, r.conv.Ended = record.StatusOK, end
	default:
		r.conv.Status = record.StatusInterrupted
		r.conv.Error = "the last turn did not complete (a session still running, or one that stopped)"
	}
}

const noOutput = "no output was recorded for this call"

// baseInstructions reads session_meta.base_instructions: {"text": ...}
// or a bare string.
func baseInstructions(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.Text
}

// outputText reads a function_call_output's output: a string, content
// items [{type: input_text, text}], or an object {content, success}; the
// second result is true when the output says the call failed.
func outputText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var obj struct {
		Content *string `json:"content"`
		Success *bool   `json:"success"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content, obj.Success != nil && !*obj.Success
	}
	if t := importers.MessageText(raw); t != "" {
		return t, false
	}
	return string(raw), false
}

// execText reads the output text of a shell or apply_patch call, which
// Codex writes as a JSON string of {"output": ..., "metadata":
// {"exit_code": N}}: the output, and true when the exit code is not 0.
func execText(text string) (string, bool) {
	var v struct {
		Output   *string `json:"output"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(text), &v) != nil || v.Output == nil {
		return text, false
	}
	return *v.Output, v.Metadata.ExitCode != nil && *v.Metadata.ExitCode != 0
}
