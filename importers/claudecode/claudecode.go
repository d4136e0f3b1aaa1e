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
// line; a tool result or text over 256 KiB is cut with a note, so memory
// grows with the number of steps, not their bytes.
package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	json "github.com/goccy/go-json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
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
	used   map[string]bool   // sub-agent files read, by path
	inline map[string]*conv  // inline sidechains, by agent id (or root uuid)
	side   map[string]string // inline sidechain line uuid -> its group
}

// Read reads the session at path with its sub-agents into one Session.
func (Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	r := &reader{ctx: ctx, opt: opt, rep: &importers.Report{}, info: &sessionInfo{agentOf: map[string]string{}},
		dir: filepath.Dir(abs), stem: strings.TrimSuffix(filepath.Base(abs), ".jsonl"),
		meta: map[string]string{}, used: map[string]bool{abs: true}, inline: map[string]*conv{}, side: map[string]string{}}
	trunk := &importers.Conversation{Agent: "main"}
	cv := newConv(trunk, false, opt, r.rep, r.info)
	var standalone string // the agent id, when path is itself a sub-agent's file
	first := true
	err = r.readFile(abs, func(e *entry) {
		if first && e.IsSidechain && e.AgentID != "" {
			standalone, cv.sub = e.AgentID, true
		}
		if e.Type == "user" || e.Type == "assistant" {
			first = false
		}
		if e.IsSidechain && standalone == "" {
			r.sidechain(e)
			return
		}
		r.route(cv, e)
	})
	if err != nil {
		return nil, err
	}
	cv.finish()
	r.readMeta()
	r.resolve(cv, 1, map[string]bool{standalone: true})
	r.internalAgents(trunk)

	s := &importers.Session{
		Source:  record.Source{Format: Name, Version: r.info.version, ID: r.info.sessionID, Path: abs},
		Title:   r.info.title,
		Dir:     r.info.cwd,
		Started: trunk.Started,
		Ended:   trunk.Ended,
		Trunk:   trunk,
		Report:  *r.rep,
	}
	if s.Source.ID == "" {
		s.Source.ID = r.stem
	}
	if standalone != "" {
		s.Source.ID += "#agent-" + standalone
		if s.Title == "" {
			s.Title = fmt.Sprintf("sub-agent %s of session %s, imported on its own", standalone, r.info.sessionID)
		}
		if cv.prompt != "" { // its instructions are the run's task
			trunk.Steps = append([]importers.Step{{User: &importers.User{At: trunk.Started, Text: capText(cv.prompt)}}}, trunk.Steps...)
		}
	}
	for _, st := range trunk.Steps {
		if st.User != nil {
			s.Tasks = append(s.Tasks, st.User.Text)
		}
	}
	s.Project = r.project(trunk)
	s.Instructions = instructions(s.Project, trunk)
	s.RequestsLack = []string{"the system prompt", "the tool definitions"}
	if r.info.thinking {
		s.RequestsLack = append(s.RequestsLack, "the thinking blocks of earlier responses")
	}
	if r.info.meta {
		s.RequestsLack = append(s.RequestsLack, "the text Claude Code injects (skills, command expansions, reminders)")
	}
	if r.info.images {
		s.RequestsLack = append(s.RequestsLack, "images")
	}
	return []*importers.Session{s}, nil
}

// readFile streams the entries of one JSON Lines file to fn. A malformed
// line is a problem (an error under Strict); an unfinished last line (a
// session still being written) is left for the next import; an unknown
// type is skipped and counted.
func (r *reader) readFile(path string, fn func(e *entry)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	seen := map[uint64]bool{}
	lr := importers.NewLineReader(f)
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		line, n, unterminated, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, importers.ErrLineTooLong) {
			if perr := r.rep.Problem(r.opt, path, n, err); perr != nil {
				return perr
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			if unterminated {
				return nil // the line being written
			}
			if perr := r.rep.Problem(r.opt, path, n, fmt.Errorf("not a JSON record: %v", err)); perr != nil {
				return perr
			}
			continue
		}
		if !knownType(e.Type) {
			r.rep.Skip(strings.Clone(e.Type))
			continue
		}
		e.keep()
		if e.UUID != "" {
			h := hash(e.UUID)
			if seen[h] {
				continue // resumed sessions repeat lines
			}
			seen[h] = true
		}
		fn(&e)
	}
}

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
	switch e.Type {
	case "assistant":
		cv.assistant(e)
	case "user":
		cv.user(e)
	case "system":
		switch e.Subtype {
		case "compact_boundary":
			cv.finishResponse()
			cv.pendingCompact = true
		case "turn_duration":
			cv.endTurn()
		}
	case "progress":
		if e.Data != nil && e.Data.Type == "agent_progress" && e.Data.AgentID != "" && e.ParentToolUseID != "" {
			r.info.agentOf[e.ParentToolUseID] = e.Data.AgentID
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

// readMeta reads the .meta.json files: the cleanest link from a
// delegation call to its sub-agent.
func (r *reader) readMeta() {
	for _, d := range r.subagentDirs() {
		ms, _ := filepath.Glob(filepath.Join(d, "agent-*.meta.json"))
		for _, p := range ms {
			b, err := readSmall(p, 1<<20)
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
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// readAgent reads one sub-agent file into a conversation.
func (r *reader) readAgent(path string) (*conv, error) {
	r.used[path] = true
	cv := newConv(&importers.Conversation{}, true, r.opt, r.rep, r.info)
	err := r.readFile(path, func(e *entry) { r.route(cv, e) })
	cv.finish()
	return cv, err
}

// maxDepth bounds nested sub-agents (a file naming itself is read once).
const maxDepth = 16

// resolve finds the sub-agent of each delegation call of cv, reads it as
// that branch's conversation (recursively), and takes the branch's outcome
// from the parent's record of it.
func (r *reader) resolve(cv *conv, depth int, seen map[string]bool) {
	for i, tk := range cv.order {
		id := r.meta[tk.id]
		if id == "" {
			id = tk.agentID
		}
		if id == "" {
			id = r.info.agentOf[tk.id]
		}
		tk.agentID = id
		var child *conv
		if id != "" && !seen[id] && depth <= maxDepth {
			if p := r.agentFile(id); p != "" {
				c, err := r.readAgent(p)
				if err != nil {
					r.rep.Problem(importers.Options{}, p, 0, err)
				}
				child = c
			} else if ic := r.inline[id]; ic != nil {
				child = ic
				child.finish()
				delete(r.inline, id)
			}
		}
		if child == nil && depth <= maxDepth { // early inline sidechains: matched by their prompt
			for key, ic := range r.inline {
				if strings.HasPrefix(key, "inline:") && ic.prompt != "" && ic.prompt == tk.input.Prompt {
					child = ic
					child.finish()
					delete(r.inline, key)
					break
				}
			}
		}
		if tk.branch.Name == "" {
			tk.branch.Name = id
		}
		if tk.branch.Name == "" {
			tk.branch.Name = fmt.Sprintf("task-%d", i+1)
		}
		if child == nil {
			continue // the mapping marks it interrupted: no transcript
		}
		if id != "" {
			seen[id] = true
		}
		child.c.Agent = tk.branch.Agent
		r.resolve(child, depth+1, seen)
		outcome(tk, child)
		tk.branch.Conv = child.c
	}
}

// outcome sets a branch conversation's status from the parent's record of
// the call (DESIGN §13: completed → ok, failed → error, budget or turn
// limit → exhausted, cancelled → cancelled; never returned → as its own
// file says, interrupted when it did not finish).
func outcome(tk *task, child *conv) {
	c := child.c
	res := tk.result
	if res != nil && res.Usage != nil && child.lastLLM != nil && res.Usage.sameInput(child.lastUsage) &&
		n64(res.Usage.Output) > child.lastLLM.Usage.Out {
		// The sub-agent's file keeps a streaming snapshot of its last
		// output count; the parent has the final one.
		child.lastLLM.Usage.Out = n64(res.Usage.Output)
	}
	if res == nil {
		return
	}
	switch {
	case tk.cancel:
		c.Status, c.Error = record.StatusCancelled, "the user interrupted the sub-agent"
	case tk.isError:
		c.Status, c.Error = record.StatusError, firstLine(tk.branch.Answer)
	default:
		switch strings.ToLower(res.Status) {
		case "completed", "success", "":
			if !tk.resultAt.IsZero() {
				c.Status = record.StatusOK
				if c.Ended.IsZero() {
					c.Ended = tk.resultAt
				}
			}
		case "failed", "error":
			c.Status, c.Error = record.StatusError, "the sub-agent failed: "+firstLine(tk.branch.Answer)
		case "killed", "cancelled", "canceled", "interrupted", "stopped":
			c.Status, c.Error = record.StatusCancelled, "the sub-agent was stopped ("+res.Status+")"
		case "max_turns", "budget_exhausted", "exhausted", "timed_out", "timeout":
			c.Status, c.Error = record.StatusExhausted, "the sub-agent reached its limit ("+res.Status+")"
		}
	}
}

// internalAgents handles the sub-agent files no call of the session
// started: compaction agents become llm nodes of agent "compaction" before
// the compaction they wrote; the others are skipped and counted.
func (r *reader) internalAgents(trunk *importers.Conversation) {
	var files []string
	for _, d := range r.subagentDirs() {
		fs, _ := filepath.Glob(filepath.Join(d, "agent-*.jsonl"))
		files = append(files, fs...)
	}
	sort.Strings(files)
	for _, p := range files {
		if r.used[p] {
			continue
		}
		r.used[p] = true
		base := filepath.Base(p)
		switch {
		case strings.HasPrefix(base, "agent-acompact"):
			cv, err := r.readAgent(p)
			if err != nil {
				r.rep.Problem(importers.Options{}, p, 0, err)
				continue
			}
			if !insertCompaction(trunk, cv.c) {
				r.rep.Skip("compaction agent without its compaction")
			}
		case strings.HasPrefix(base, "agent-aprompt_suggestion"):
			r.rep.Skip("internal agent (prompt suggestion)")
		default:
			r.rep.Skip("sub-agent file no call of this session starts")
		}
	}
	for range r.inline {
		r.rep.Skip("inline sidechain no call of this session starts")
	}
}

// insertCompaction puts the model calls of a compaction agent into the
// trunk just before the first compaction at or after them.
func insertCompaction(trunk *importers.Conversation, c *importers.Conversation) bool {
	var calls []importers.Step
	for _, st := range c.Steps {
		if st.LLM != nil {
			l := *st.LLM
			l.Agent = "compaction"
			calls = append(calls, importers.Step{LLM: &l})
		}
	}
	if len(calls) == 0 {
		return true
	}
	start := calls[0].LLM.Started
	for i, st := range trunk.Steps {
		if st.Compact != nil && !st.Compact.At.Before(start) {
			steps := append([]importers.Step{}, trunk.Steps[:i]...)
			steps = append(steps, calls...)
			trunk.Steps = append(steps, trunk.Steps[i:]...)
			return true
		}
	}
	return false
}

// maxInstructionFile bounds an instruction file taken into the snapshot.
const maxInstructionFile = 1 << 20

// project is the snapshot of the instruction files the session's working
// folder has: CLAUDE.md (and .claude/CLAUDE.md, CLAUDE.local.md) and the
// definition of each sub-agent type the session used
// (.claude/agents/<type>.md).
func (r *reader) project(trunk *importers.Conversation) record.Project {
	p := record.Project{}
	if r.info.cwd == "" {
		return p
	}
	p.Name = filepath.Base(r.info.cwd)
	paths := []string{"CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"}
	for _, a := range agentTypes(trunk) {
		if !strings.ContainsAny(a, `/\`) && a != "." && a != ".." {
			paths = append(paths, ".claude/agents/"+a+".md")
		}
	}
	for _, rel := range paths {
		b, err := readSmall(filepath.Join(r.info.cwd, filepath.FromSlash(rel)), maxInstructionFile)
		if err != nil {
			continue
		}
		p.Files = append(p.Files, record.File{Path: rel, Content: string(b)})
	}
	sort.Slice(p.Files, func(i, j int) bool { return p.Files[i].Path < p.Files[j].Path })
	return p
}

// instructions maps each agent to the snapshot file of its instructions:
// the trunk's CLAUDE.md (or .claude/CLAUDE.md), each sub-agent type's
// .claude/agents/<type>.md, when the snapshot has them.
func instructions(p record.Project, trunk *importers.Conversation) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"CLAUDE.md", ".claude/CLAUDE.md"} {
		if p.File(f) != nil {
			out[trunk.Agent] = f
			break
		}
	}
	for _, a := range agentTypes(trunk) {
		if f := ".claude/agents/" + a + ".md"; p.File(f) != nil {
			out[a] = f
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// agentTypes lists the sub-agent types of every branch, in order.
func agentTypes(c *importers.Conversation) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(c *importers.Conversation)
	walk = func(c *importers.Conversation) {
		if c == nil {
			return
		}
		for _, st := range c.Steps {
			if st.Fork == nil {
				continue
			}
			for _, b := range st.Fork.Branches {
				if b.Agent != "" && !seen[b.Agent] {
					seen[b.Agent] = true
					out = append(out, b.Agent)
				}
				walk(b.Conv)
			}
		}
	}
	walk(c)
	return out
}

// readSmall reads a regular file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > max {
		return nil, fmt.Errorf("%s: not a regular file under %d bytes", path, max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
