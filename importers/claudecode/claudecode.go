// Package claudecode imports Claude Code sessions (DESIGN §13): a session
// file (~/.claude/projects/<slug>/<session>.jsonl) with its sub-agents —
// <session>/subagents/agent-<id>.jsonl with their .meta.json (2.1.2 on),
// agent-<id>.jsonl beside the session (2.0), or sidechain lines inline in
// the session file (early versions).
//
// One model response is one message.id across the lines that split it;
// tools are joined to their results by tool_use_id; the Task/Agent calls
// of one response are one fork, one branch per sub-agent, joined where
// their results come back (serial delegations are one-branch forks each).
// Usage is Anthropic's, normalised: in = input + cache reads + cache
// writes. Compaction calls (agent-acompact-*) are marked as llm nodes of
// agent "compaction" in the trunk and prompt-suggestion agents are
// skipped: neither is one of the user's sub-agents. Files are read line by
// line; a tool result or text over the cap (importers.Options.Clip, 256
// KiB) is cut with a note, so memory grows with the number of steps, not
// their bytes.
package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Name is the format's name.
const Name = "claude-code"

// Format reads Claude Code sessions; it implements importers.Format and
// importers.Locator.
type Format struct{}

// Name is "claude-code".
func (Format) Name() string { return Name }

// Detect reports whether path is a Claude Code transcript: its first lines
// (at most 64 KiB are read) are records of Claude Code's types carrying a
// sessionId.
func (Format) Detect(path string) bool {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	for i, line := range bytes.Split(buf, []byte("\n")) {
		if i >= 50 {
			break
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e struct {
			Type      string `json:"type"`
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(line, &e) == nil {
			if e.SessionID != "" && knownType(e.Type) {
				return true
			}
			continue
		}
		// A line cut by the 64 KiB window: its start still names it.
		if bytes.Contains(line, []byte(`"sessionId":"`)) && (bytes.Contains(line, []byte(`"type":"user"`)) || bytes.Contains(line, []byte(`"type":"assistant"`))) {
			return true
		}
	}
	return false
}

// reader reads one session and the sub-agent files it names.
type reader struct {
	ctx  context.Context
	opt  importers.Options
	rep  *importers.Report
	info *sessionInfo
	dir  string // the session file's folder
	stem string // the session file's name without .jsonl

	meta   map[string]string // tool_use id -> agent id, from .meta.json files
	used   ids               // sub-agent files read, by hashed path
	seen   map[string]bool   // sub-agents read, by id (a file naming itself is read once)
	inline map[string]*conv  // inline sidechains, by agent id (or root uuid)
	side   map[string]string // inline sidechain line uuid -> its group
	mirror map[string]*conv  // sub-agents' lines mirrored in their parent's file (agent_progress), by agent id
	types  map[string]bool   // the sub-agent types the branches handed over name
	order  []string          // those, in order

	compactions []*compaction // compaction agents' calls, in file order, until placed
	open        []*os.File    // the files streams still read
}

// compaction is a compaction agent's file: its model calls go into the
// trunk just before the first compaction at or after them.
type compaction struct {
	calls []importers.Step
	start time.Time
}

func newReader(ctx context.Context, abs string, opt importers.Options) *reader {
	return &reader{ctx: ctx, opt: opt, rep: &importers.Report{}, info: &sessionInfo{agentOf: map[string]string{}},
		dir: filepath.Dir(abs), stem: strings.TrimSuffix(filepath.Base(abs), ".jsonl"),
		meta: map[string]string{}, used: ids{hash(abs): {}}, seen: map[string]bool{},
		inline: map[string]*conv{}, side: map[string]string{}, mirror: map[string]*conv{}, types: map[string]bool{}}
}

// Read reads the session at path with its sub-agents into one Session.
func (f Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	return importers.Collected(f.Stream(ctx, path, opt))
}

// Stream reads the session at path with its sub-agents as one Session
// whose conversations are Live (importers.Streamer): each step is handed
// over once the lines after it cannot change it, a fork once its branches
// came back, each sub-agent's file read when its branch is.
func (Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	r := newReader(ctx, abs, opt)
	f, err := r.openFile(abs, true)
	if err != nil {
		return nil, err
	}
	id, standalone := head(abs)
	r.info.sessionID = id
	trunk := &importers.Conversation{Agent: "main"}
	s := &importers.Session{Source: record.Source{Format: Name, ID: id, Path: abs}, Trunk: trunk, Close: r.close}
	if s.Source.ID == "" {
		s.Source.ID = r.stem
	}
	if standalone != "" {
		s.Source.ID += "#agent-" + standalone
	}
	r.readMeta()
	r.readCompactions()
	st := r.newStream(newConv(trunk, false, opt, r.rep, r.info), f, abs, 1)
	st.trunk = true
	st.end = func() { r.session(s, st) }
	trunk.Live = st
	return []*importers.Session{s}, nil
}

// head finds what the run's record needs before the session is read: the
// session id of the first record that names one, and the sub-agent's id
// when the file is a sub-agent's own (its records before the first user or
// assistant record are sidechains with an agent id).
func head(path string) (id, standalone string) {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	lr := importers.NewLineReader(f)
	first := true
	for {
		line, _, _, err := lr.Next()
		if errors.Is(err, importers.ErrLineTooLong) {
			continue
		}
		if err != nil {
			return id, standalone
		}
		var e entry
		if json.Unmarshal(line, &e) != nil || !knownType(e.Type) {
			continue
		}
		if first && e.IsSidechain && e.AgentID != "" && standalone == "" {
			standalone = strings.Clone(e.AgentID)
		}
		if e.Type == "user" || e.Type == "assistant" {
			first = false
		}
		if id == "" && e.SessionID != "" {
			id = strings.Clone(e.SessionID)
		}
		if id != "" && !first {
			return id, standalone
		}
	}
}

// session fills in what the session says of itself once its trunk has
// been read to its end.
func (r *reader) session(s *importers.Session, st *stream) {
	r.leftovers()
	trunk := s.Trunk
	s.Source.Version = r.info.version
	s.Title = r.info.title
	s.Started, s.Ended = trunk.Started, trunk.Ended
	s.Tasks = st.tasks
	if st.standalone != "" && s.Title == "" {
		s.Title = fmt.Sprintf("sub-agent %s of session %s, imported on its own", st.standalone, r.info.sessionID)
	}
	r.opt.Instructions(s, r.info.cwd, r.instructionFiles())
	s.Instructions = instructions(s.Project, trunk.Agent, r.order)
	lack := []string{"the system prompt", "the tool definitions"}
	if r.info.thinking {
		lack = append(lack, "the thinking blocks of earlier responses")
	}
	if r.info.meta {
		lack = append(lack, "the text Claude Code injects (skills, command expansions, reminders)")
	}
	if r.info.images {
		lack = append(lack, "images")
	}
	// The requests rebuilt from api-request records lack only what the
	// session does not keep (request.go).
	const metadata = "metadata.user_id (Claude Code's device and account ids, which the session does not keep)"
	switch exact, other := r.info.exact, r.info.rebuilt; {
	case exact == 0:
		s.RequestsLack = lack
	case other == 0:
		s.RequestsLack = []string{metadata}
	default:
		for i := range lack {
			lack[i] += fmt.Sprintf(" (in the %d of %d calls the session keeps no api-request record of)", other, exact+other)
		}
		s.RequestsLack = append(lack, metadata)
	}
	s.Report = *r.rep
}

// openFile opens the session's file (own) or one of its sub-agents' files,
// which are read through the session's folder (importers.OpenIn): a
// symlink out of it is not followed.
func (r *reader) openFile(path string, own bool) (*os.File, error) {
	var f *os.File
	var err error
	if own {
		f, err = importers.OpenRegular(path)
	} else {
		f, err = importers.OpenIn(r.dir, path)
	}
	if errors.Is(err, importers.ErrNotRegular) {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.open = append(r.open, f)
	return f, nil
}

func (r *reader) closeFile(f *os.File) {
	f.Close()
	if i := slices.Index(r.open, f); i >= 0 {
		r.open = slices.Delete(r.open, i, i+1)
	}
}

// close closes the files still open (an import that stopped).
func (r *reader) close() {
	for _, f := range r.open {
		f.Close()
	}
	r.open = nil
}

// ids is a set of hashed ids (a line's uuid, a call's, a file's path):
// a few bytes each, whatever their length.
type ids map[uint64]struct{}

func (s ids) add(id string)      { s[hash(id)] = struct{}{} }
func (s ids) has(id string) bool { _, ok := s[hash(id)]; return ok }

func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// route gives one entry of a conversation's file to it.
func (r *reader) route(cv *conv, e *entry) {
	if r.info.sessionID == "" {
		r.info.sessionID = e.SessionID
	}
	if e.Version != "" {
		r.info.version = e.Version
	}
	if r.info.cwd == "" && e.Cwd != "" {
		r.info.cwd = e.Cwd
	}
	if e.Entrypoint != "" {
		cv.entrypoint = e.Entrypoint
	}
	switch e.Type {
	case "fork-context-ref":
		// a fork's file (2.1.3xx): what follows up to its directive is the
		// parent's, copied (the response that started it and the result
		// that says so), not the fork's own
		cv.forkPrefix = cv.sub
	case "assistant":
		if cv.forkPrefix && !cv.sawPrompt {
			return
		}
		cv.assistant(e)
		if cv.api != nil {
			cv.api.line(e)
		}
	case "user":
		cv.user(e)
		if cv.api != nil && !(cv.forkPrefix && !cv.sawPrompt) {
			cv.api.line(e)
		}
	case "api-request-shape", "api-request-blob", "api-request":
		if e.raw != nil {
			if cv.api == nil {
				cv.api = newAPIState()
			}
			cv.api.record(e.raw, cv)
		}
	case "system":
		switch e.Subtype {
		case "compact_boundary":
			cv.finishResponse()
			cv.pendingCompact = true
		case "turn_duration":
			cv.endTurn()
		}
	case "progress":
		if e.Data != nil && e.Data.Type == "agent_progress" && e.Data.AgentID != "" {
			if e.ParentToolUseID != "" {
				r.info.agentOf[e.ParentToolUseID] = e.Data.AgentID
			}
			r.mirrored(e)
		}
	case "queue-operation":
		if e.Operation == "enqueue" && len(e.Content) > 0 && e.Content[0] == '"' {
			var text string
			if json.Unmarshal(e.Content, &text) == nil && (strings.HasPrefix(text, "<task-notification>") || strings.HasPrefix(text, "<agent-notification>")) {
				cv.notification(text, parseTime(e.Timestamp))
			}
		}
	case "custom-title":
		if e.Title != "" {
			r.info.title = e.Title
		}
	case "ai-title":
		if r.info.title == "" && e.AITitle != "" {
			r.info.title = e.AITitle
		}
	}
}

// mirrored gives the sub-agent line an agent_progress record carries to
// that sub-agent's mirror conversation: its parent's copy of its steps
// (every line but its final answer's), read as its branch when its own
// file is not there (openBranch) and dropped when it is, so a step is
// never counted twice.
func (r *reader) mirrored(e *entry) {
	var m entry
	if len(e.Data.Message) == 0 || json.Unmarshal(e.Data.Message, &m) != nil || !knownType(m.Type) {
		return
	}
	m.keep()
	if m.Timestamp == "" {
		m.Timestamp = e.Timestamp
	}
	id := e.Data.AgentID
	cv := r.mirror[id]
	if cv == nil {
		cv = newConv(&importers.Conversation{}, true, r.opt, r.rep, r.info)
		cv.seen = ids{}
		r.mirror[id] = cv
	}
	if m.UUID != "" {
		if cv.seen.has(m.UUID) {
			return
		}
		cv.seen.add(m.UUID)
	}
	r.route(cv, &m)
}

// sidechain gives an inline sidechain line (early versions) to its
// group: by agent id, else by the chain of parent uuids.
func (r *reader) sidechain(e *entry) {
	key := e.AgentID
	if key == "" {
		key = r.side[e.ParentUUID]
	}
	if key == "" {
		key = "inline:" + e.UUID
	}
	if e.UUID != "" {
		r.side[e.UUID] = key
	}
	cv := r.inline[key]
	if cv == nil {
		cv = newConv(&importers.Conversation{}, true, r.opt, r.rep, r.info)
		r.inline[key] = cv
	}
	r.route(cv, e)
}

// subagentDirs are where sub-agent files of this session may be.
func (r *reader) subagentDirs() []string {
	var out []string
	for _, name := range []string{r.info.sessionID, r.stem} {
		if name != "" {
			out = append(out, filepath.Join(r.dir, name, "subagents"))
		}
	}
	return out
}

// unused lists the sub-agent files matching pattern that were not read
// yet, in name order.
func (r *reader) unused(pattern string) []string {
	var files []string
	for _, d := range r.subagentDirs() {
		fs, _ := filepath.Glob(filepath.Join(d, pattern))
		for _, p := range fs {
			if !r.used.has(p) {
				files = append(files, p)
			}
		}
	}
	sort.Strings(files)
	return slices.Compact(files) // the session's id and its file's name may name one folder
}

// readMeta reads the .meta.json files: the cleanest link from a
// delegation call to its sub-agent.
func (r *reader) readMeta() {
	for _, d := range r.subagentDirs() {
		ms, _ := filepath.Glob(filepath.Join(d, "agent-*.meta.json"))
		for _, p := range ms {
			b, err := importers.ReadSmallIn(r.dir, p, 1<<20)
			if err != nil {
				continue
			}
			var m metaFile
			if json.Unmarshal(b, &m) != nil || m.ToolUseID == "" {
				continue
			}
			r.meta[m.ToolUseID] = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "agent-"), ".meta.json")
		}
	}
}

// agentFile is the transcript of sub-agent id, or "".
func (r *reader) agentFile(id string) string {
	if strings.ContainsAny(id, `/\`) || id == "" {
		return ""
	}
	cands := []string{}
	for _, d := range r.subagentDirs() {
		cands = append(cands, filepath.Join(d, "agent-"+id+".jsonl"))
	}
	cands = append(cands, filepath.Join(r.dir, "agent-"+id+".jsonl"))
	for _, p := range cands {
		if importers.IsFileIn(r.dir, p) {
			return p
		}
	}
	return ""
}

// readAgent reads one sub-agent file whole into a conversation (a
// compaction agent's: a few calls).
func (r *reader) readAgent(path string) (*conv, error) {
	r.used.add(path)
	cv := newConv(&importers.Conversation{}, true, r.opt, r.rep, r.info)
	f, err := r.openFile(path, false)
	if err == nil {
		st := r.newStream(cv, f, path, maxDepth+1)
		err = st.readAll()
	}
	cv.finish()
	return cv, err
}

// maxDepth bounds nested sub-agents (a file naming itself is read once).
const maxDepth = 16

// openBranch finds the sub-agent of delegation call tk, made in a
// conversation at depth depth, and returns the stream of its conversation
// (c, the branch's), or nil when no transcript of it is there: its own
// file, an inline sidechain with its id, or one that received its prompt.
// Its outcome comes from the parent's record of the call once it is read.
func (r *reader) openBranch(tk *task, c *importers.Conversation, depth int) *stream {
	id := tk.agentID
	var child *stream
	mirror := r.mirror[id]
	delete(r.mirror, id) // read as the branch, or dropped: its file has every line of it
	if id != "" && !r.seen[id] && depth <= maxDepth {
		if p := r.agentFile(id); p != "" {
			r.used.add(p)
			cv := newConv(c, true, r.opt, r.rep, r.info)
			f, err := r.openFile(p, false)
			if err != nil {
				r.rep.Problem(importers.Options{}, p, 0, err)
			}
			child = r.newStream(cv, f, p, depth+1)
		} else if ic := r.inline[id]; ic != nil {
			child = r.inlineStream(ic, c, depth+1)
			delete(r.inline, id)
		} else if mirror != nil {
			child = r.inlineStream(mirror, c, depth+1)
			child.mirror = true
		}
	}
	if child == nil && depth <= maxDepth { // early inline sidechains: matched by their prompt
		for key, ic := range r.inline {
			if strings.HasPrefix(key, "inline:") && ic.prompt != "" && ic.prompt == tk.input.Prompt {
				child = r.inlineStream(ic, c, depth+1)
				delete(r.inline, key)
				break
			}
		}
	}
	if child == nil {
		if depth > maxDepth {
			return nil
		}
		// No transcript of it: what the parent recorded of the call is
		// the branch (its outcome, window and final answer).
		child = r.newStream(newConv(c, true, r.opt, r.rep, r.info), nil, "", depth+1)
		child.mirror = true
	}
	if id != "" {
		r.seen[id] = true
	}
	child.task = tk
	return child
}

// inlineStream hands over an inline sidechain's conversation, read with
// the session's file, as branch conversation c.
func (r *reader) inlineStream(ic *conv, c *importers.Conversation, depth int) *stream {
	c.Started, c.Ended, c.Status, c.Error = ic.c.Started, ic.c.Ended, ic.c.Status, ic.c.Error
	ic.c = c
	return r.newStream(ic, nil, "", depth) // at its end: finished, its outcome taken
}

// name names the branches of a fork of conversation cv being handed
// over, unique among all of cv's branches (two never share a path), and
// links each to its sub-agent: the id its .meta.json, its result or its
// progress records give.
func (r *reader) name(cv *conv, tasks []*task) {
	for _, tk := range tasks {
		id := r.meta[tk.id]
		if id == "" {
			id = tk.agentID
		}
		if id == "" {
			id = r.info.agentOf[tk.id]
		}
		delete(r.info.agentOf, tk.id)
		tk.agentID, tk.branch.ID = id, id
		name := strings.TrimSpace(strings.ReplaceAll(tk.branch.Name, "/", "-")) // as a path element
		if name == "" {
			name = id
		}
		if name == "" {
			name = fmt.Sprintf("task-%d", tk.index)
		}
		tk.branch.Name = cv.branchNames.Unique(name)
		if a := tk.branch.Agent; a != "" && !r.types[a] {
			r.types[a] = true
			r.order = append(r.order, a)
		}
	}
}

// outcome sets a branch conversation's status from the parent's record of
// the call (DESIGN §13: completed → ok, failed → error, budget or turn
// limit → exhausted, cancelled → cancelled; a call refused at once, such
// as an unknown agent type, → error with the refusal; never returned → as
// its own file says, interrupted when it did not finish). A mirror — the
// branch read from the parent's records, its own file not there — takes
// its window from them too: from the result's time minus the sub-agent's
// reported duration (else from the call) to the result's time.
func outcome(tk *task, child *conv, mirror bool) {
	c := child.c
	res := tk.result
	if res != nil && res.Usage != nil && child.lastLLM != nil && res.Usage.sameInput(child.lastUsage) &&
		n64(res.Usage.Output) > child.lastLLM.Usage.Out {
		// The sub-agent's file keeps a streaming snapshot of its last
		// output count; the parent has the final one.
		child.lastLLM.Usage.Out = n64(res.Usage.Output)
	}
	if mirror {
		switch {
		case res != nil && res.TotalDurationMs > 0 && !tk.resultAt.IsZero():
			c.Started = tk.resultAt.Add(-time.Duration(res.TotalDurationMs) * time.Millisecond)
		case c.Started.IsZero():
			c.Started = tk.at
		}
		if !tk.resultAt.IsZero() {
			c.Ended = tk.resultAt
		}
		tk.branch.Started = c.Started
	}
	if res == nil {
		if mirror && c.Status == "" {
			c.Error = "the session ends before this sub-agent returned, and no transcript of it was found"
		}
		return
	}
	switch {
	case tk.cancel:
		c.Status, c.Error = record.StatusCancelled, "the user interrupted the sub-agent"
	case tk.isError && mirror && tk.agentID == "":
		// Claude Code refused the call (an unknown subagent_type): no
		// sub-agent started
		c.Status, c.Error = record.StatusError, "the call was refused: "+importers.FirstLine(tk.branch.Answer)
	case tk.isError:
		c.Status, c.Error = record.StatusError, importers.FirstLine(tk.branch.Answer)
	case tk.background && tk.resultAt.IsZero():
		if c.Status == "" && c.Ended.IsZero() {
			c.Error = "the session ends before this background sub-agent reported back"
		}
	default:
		switch strings.ToLower(tk.status) {
		case "completed", "success", "":
			if !tk.resultAt.IsZero() {
				c.Status = record.StatusOK
				if c.Ended.IsZero() {
					c.Ended = tk.resultAt
				}
			}
		case "failed", "error":
			c.Status, c.Error = record.StatusError, "the sub-agent failed: "+importers.FirstLine(tk.branch.Answer)
		case "killed", "cancelled", "canceled", "interrupted", "stopped":
			c.Status, c.Error = record.StatusCancelled, "the sub-agent was stopped ("+tk.status+")"
		case "max_turns", "budget_exhausted", "exhausted", "timed_out", "timeout":
			c.Status, c.Error = record.StatusExhausted, "the sub-agent reached its limit ("+tk.status+")"
		}
	}
}

// readCompactions reads the compaction agents' files (agent-acompact-*):
// their calls go into the trunk as llm nodes of agent "compaction" before
// the compaction they wrote.
func (r *reader) readCompactions() {
	for _, p := range r.unused("agent-acompact*.jsonl") {
		cv, err := r.readAgent(p)
		if err != nil {
			r.rep.Problem(importers.Options{}, p, 0, err)
			continue
		}
		var calls []importers.Step
		for _, st := range cv.steps {
			if st.LLM != nil {
				l := *st.LLM
				l.Agent = "compaction"
				calls = append(calls, importers.Step{LLM: &l})
			}
		}
		if len(calls) > 0 {
			r.compactions = append(r.compactions, &compaction{calls: calls, start: calls[0].LLM.Started})
		}
	}
}

// compactionCalls takes the calls of the compaction agents that ran at or
// before a compaction at at: they go just before it.
func (r *reader) compactionCalls(at time.Time) []importers.Step {
	var out []importers.Step
	keep := r.compactions[:0]
	for _, c := range r.compactions {
		if !at.Before(c.start) {
			out = append(out, c.calls...)
		} else {
			keep = append(keep, c)
		}
	}
	r.compactions = keep
	return out
}

// leftovers counts what no call of the session started, once it is read:
// the other sub-agent files (internal agents such as prompt suggestions
// are not the user's sub-agents), compaction agents with no compaction
// after them, inline sidechains.
func (r *reader) leftovers() {
	for _, p := range r.unused("agent-*.jsonl") {
		r.used.add(p)
		switch base := filepath.Base(p); {
		case strings.HasPrefix(base, "agent-aprompt_suggestion"):
			r.rep.Skip("internal agent (prompt suggestion)")
		default:
			r.rep.Skip("sub-agent file no call of this session starts")
		}
	}
	for range r.compactions {
		r.rep.Skip("compaction agent without its compaction")
	}
	r.compactions = nil
	for range r.inline {
		r.rep.Skip("inline sidechain no call of this session starts")
	}
}

// instructionFiles are the instruction files of the session's project
// folder its snapshot takes: CLAUDE.md (and .claude/CLAUDE.md,
// CLAUDE.local.md) and the definition of each sub-agent type the session
// used (.claude/agents/<type>.md).
func (r *reader) instructionFiles() []string {
	paths := []string{"CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"}
	for _, a := range r.order {
		if !strings.ContainsAny(a, `/\`) && a != "." && a != ".." {
			paths = append(paths, ".claude/agents/"+a+".md")
		}
	}
	return paths
}

// instructions maps each agent to the snapshot file of its instructions:
// the trunk's CLAUDE.md (or .claude/CLAUDE.md), each sub-agent type's
// .claude/agents/<type>.md, when the snapshot has them.
func instructions(p record.Project, trunk string, types []string) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"CLAUDE.md", ".claude/CLAUDE.md"} {
		if p.File(f) != nil {
			out[trunk] = f
			break
		}
	}
	for _, a := range types {
		if f := ".claude/agents/" + a + ".md"; p.File(f) != nil {
			out[a] = f
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
