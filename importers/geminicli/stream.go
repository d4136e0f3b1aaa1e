package geminicli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Each conversation (the trunk, a sub-agent's branch) is handed over as
// it is read (importers.Streamer): the first pass over its chat file when
// it starts (a sub-agent's when Write comes to its branch), then a
// message at a time from the second, each turned into its steps as the
// steps handed over run out. A message's steps never change once made:
// the first pass knows each message's last write, the sub-agents the
// calls name (the chats no call names are read then, one interrupted fork
// at the end) and which response is the last. The session's own facts
// (tasks, models, how it ended, what the import reported) are final once
// every conversation has ended.

// builder turns chats into conversations: what the conversations of one
// session share.
type builder struct {
	ctx     context.Context
	opt     importers.Options
	report  *importers.Report
	dir     string // the chats folder
	session string // the main session's id: sub-agent chats are in dir/session/
	cwd     string
	tasks   []string
	models  map[string]bool
	open    map[*messages]bool // second passes whose file is open
	live    int                // conversations begun and not ended
	done    func()             // once the last has ended
}

// orphan is a sub-agent chat of the session no call names.
type orphan struct {
	chat   *chat
	prompt string
}

// conv maps one chat's messages to a conversation's steps
// (importers.StepReader).
type conv struct {
	b             *builder
	c             *importers.Conversation
	agent, prompt string
	level         int                           // the trunk 0, its sub-agents 1, ...
	chat          *chat                         // the first pass's
	start         func() (*chat, error)         // the first pass, when chat is not read yet (a sub-agent's)
	startAt       time.Time                     // when it started, when its chat says nothing
	end           func(*importers.Conversation) // how it ended as the parent learnt it
	ms            *messages
	out           []importers.Step // made, not handed over yet
	begun, done   bool
	i             int // messages mapped

	lastInput, last time.Time
	lastLLM         *importers.LLM
	steps           int  // steps made
	final           bool // the last step made is a final
	status          record.Status
	err             string
	orphans         []orphan
	orphanReport    *importers.Report // what reading the orphans' chats reported
}

func (b *builder) newConv(agent, prompt string, level int) *conv {
	v := &conv{b: b, c: &importers.Conversation{Agent: agent}, agent: agent, prompt: prompt, level: level}
	v.c.Live = v
	b.live++
	return v
}

// clip cuts a kept text to the import's cap (importers.Options.Clip).
func (b *builder) clip(s string) string { return b.opt.Clip(s) }

// Files implements importers.Watched: the session file and its sub-agents'
// folder.
func (Format) Files(path string) []string {
	files := []string{path}
	if c, err := readChat(context.Background(), path, importers.Options{}, &importers.Report{}); err == nil {
		files = append(files, filepath.Join(filepath.Dir(path), c.head.SessionID))
	}
	return files
}

// Read implements importers.Format: the stream, collected.
func (f Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	return importers.Collected(f.Stream(ctx, path, opt))
}

// Stream implements importers.Streamer.
func (Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	report := &importers.Report{}
	c, err := readChat(ctx, path, opt, report)
	if err != nil {
		return nil, err
	}
	s := &importers.Session{
		Source:       record.Source{Format: Name, ID: c.head.SessionID, Path: path},
		Title:        c.summary,
		Started:      c.started,
		RequestsLack: []string{"the system prompt", "the tool definitions", "the session context Gemini CLI adds"},
	}
	b := &builder{ctx: ctx, opt: opt, report: report, dir: filepath.Dir(path), session: c.head.SessionID,
		models: map[string]bool{}, open: map[*messages]bool{}}
	trunk := b.newConv("main", "", 0)
	trunk.chat = c
	trunk.c.Started = c.started
	s.Trunk = trunk.c
	b.done = func() {
		s.Tasks = b.tasks
		s.Models = nil
		for m := range b.models {
			s.Models = append(s.Models, m)
		}
		sort.Strings(s.Models)
		if s.Trunk.Status == record.StatusOK {
			s.Ended = s.Trunk.Ended
		}
		s.Report = *report
		opt.Instructions(s, b.cwd, []string{"GEMINI.md"})
		if len(s.Project.Files) > 0 {
			s.Instructions = map[string]string{"main": "GEMINI.md"}
		}
	}
	s.Close = func() {
		for ms := range b.open {
			ms.close()
		}
		clear(b.open)
	}
	return []*importers.Session{s}, nil
}

// Next implements importers.StepReader: the conversation's next step.
func (v *conv) Next() (importers.Step, bool, error) {
	if !v.begun {
		v.begun = true
		if err := v.begin(); err != nil {
			return importers.Step{}, false, err
		}
	}
	for len(v.out) == 0 && !v.done {
		if err := v.b.ctx.Err(); err != nil {
			return importers.Step{}, false, err
		}
		if v.ms == nil {
			ms, err := openMessages(v.chat)
			if err != nil {
				return importers.Step{}, false, err
			}
			v.ms = ms
			v.b.open[ms] = true
		}
		m, ok, err := v.ms.next()
		if err != nil {
			v.closeMessages()
			return importers.Step{}, false, err
		}
		if !ok {
			v.closeMessages()
			v.finish()
			break
		}
		v.add(m)
		v.i++
	}
	if len(v.out) == 0 {
		return importers.Step{}, false, nil
	}
	st := v.out[0]
	v.out[0] = importers.Step{}
	v.out = v.out[1:]
	return st, true, nil
}

func (v *conv) closeMessages() {
	if v.ms != nil {
		v.ms.close()
		delete(v.b.open, v.ms)
		v.ms = nil
	}
}

// begin reads the chat's first pass when it was not read yet (a chat that
// cannot be read is a conversation that says why), and the sub-agent
// chats no call names when the conversation is main's.
func (v *conv) begin() error {
	if v.chat == nil {
		c, err := v.start()
		if err != nil {
			v.c.Started, v.c.Status, v.c.Error = v.startAt, record.StatusInterrupted, err.Error()
			v.ended()
			return nil
		}
		v.chat = c
		v.c.Started = c.started
		if v.c.Started.IsZero() {
			v.c.Started = v.startAt
		}
	}
	if v.agent == "main" {
		return v.findOrphans()
	}
	return nil
}

// ended is the end of the conversation: how the parent learnt it ended,
// and the session's facts once it was the last one.
func (v *conv) ended() {
	v.done = true
	v.chat = nil
	if v.end != nil {
		v.end(v.c)
	}
	if v.b.live--; v.b.live == 0 && v.b.done != nil {
		v.b.done()
	}
}

// emit makes step st.
func (v *conv) emit(st importers.Step) {
	v.out = append(v.out, st)
	v.steps++
	v.final = st.Final != nil
}

// add maps one message; sub-agents' prompt is their instructions (their
// first user message is that, not a user turn).
func (v *conv) add(m *message) {
	b := v.b
	if !m.at.IsZero() {
		v.last = m.at
	}
	switch m.Type {
	case "user":
		text, responses := userText(m.Content)
		if responses {
			v.lastInput = later(v.lastInput, m.at)
			return
		}
		if strings.HasPrefix(strings.TrimSpace(text), "<session_context>") {
			if b.cwd == "" && v.agent == "main" {
				b.cwd = workspace(text)
			}
			return
		}
		v.lastInput = later(v.lastInput, m.at)
		if isSnapshot(text) {
			// a compression (/compress, or the CLI's own at its
			// threshold): the model goes on from this summary
			v.emit(importers.Step{Compact: &importers.Compact{At: m.at, Summary: b.clip(text)}})
			return
		}
		if text == "" || (v.prompt != "" && strings.TrimSpace(text) == strings.TrimSpace(v.prompt) && v.steps == 0) {
			return
		}
		if v.agent == "main" {
			b.tasks = append(b.tasks, b.clip(text))
		}
		v.emit(importers.Step{User: &importers.User{At: m.at, Text: b.clip(text)}})
	case "gemini":
		if m.Model == "" && m.Tokens == nil && len(m.ToolCalls) == 0 {
			// the CLI's own words in the history ("Got it. Thanks for
			// the additional context!" after a compression's summary):
			// no model answered them
			return
		}
		l := b.llm(m, v.lastInput)
		if v.i == v.chat.lastLLM {
			// the last response asked for the sub-agents no call names:
			// its calls were written once they returned
			for len(l.Calls) < len(v.orphans) {
				l.Calls = append(l.Calls, delegation)
			}
		}
		v.lastLLM = l
		v.emit(importers.Step{LLM: l})
		var fork *importers.Fork
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			at := parseTime(tc.Timestamp)
			v.lastInput = later(v.lastInput, at)
			if tc.Name != delegation {
				v.emit(importers.Step{Tool: b.tool(tc, m.at, at)})
				if tc.Name == "complete_task" && v.agent != "main" {
					v.emit(importers.Step{Final: &importers.Final{At: later(m.at, at), Text: b.clip(completeText(tc.Args))}})
				}
				continue
			}
			if fork == nil {
				fork = &importers.Fork{At: m.at, Tool: delegation, Context: "none"}
				v.emit(importers.Step{Fork: fork})
			}
			br := v.branch(tc, m.at)
			br.Name = uniqueName(fork.Branches, br.Name)
			fork.Branches = append(fork.Branches, br)
			if at.After(fork.JoinAt) {
				fork.JoinAt = at
			}
		}
		if len(m.ToolCalls) == 0 && l.Content != "" {
			v.emit(importers.Step{Final: &importers.Final{At: m.at, Text: l.Content}})
		}
	case "info", "warning":
		// notices Gemini CLI shows the user; the model never sees them
	case "error":
		v.status, v.err = record.StatusError, b.clip(contentText(m.Content))
	default:
		b.report.Skip(fmt.Sprintf("message of type %q", m.Type))
	}
}

// finish ends the conversation once its messages are mapped: the fork of
// the sub-agents no call names, then how it ended — a last response that
// answered (or a sub-agent that completed its task) ends it; anything
// else stopped mid-way.
func (v *conv) finish() {
	b := v.b
	var fork *importers.Fork
	for _, o := range v.orphans {
		if fork == nil {
			at := o.chat.started
			if v.lastLLM != nil {
				at = v.lastLLM.Ended
			}
			fork = &importers.Fork{At: at, Tool: delegation, Context: "none"}
			v.emit(importers.Step{Fork: fork})
		}
		sub := b.newConv("generalist", o.prompt, v.level+1)
		sub.chat = o.chat
		sub.c.Started = o.chat.started
		sub.end = func(c *importers.Conversation) {
			c.Status, c.Error, c.Ended = record.StatusInterrupted, "the session stopped while the sub-agent ran", time.Time{}
		}
		fork.Branches = append(fork.Branches, &importers.Branch{Name: uniqueName(fork.Branches, "sub-agent"), Agent: "generalist",
			Instructions: b.clip(o.prompt), Conv: sub.c})
	}
	v.orphans = nil
	if r := v.orphanReport; r != nil {
		for k, n := range r.Skipped {
			for range n {
				b.report.Skip(k)
			}
		}
		b.report.Problems = append(b.report.Problems, r.Problems...)
		v.orphanReport = nil
	}
	c := v.c
	switch {
	case v.status == record.StatusError:
		c.Status, c.Error, c.Ended = v.status, v.err, v.last
	case v.steps > 0 && v.final:
		c.Ended, c.Status = v.last, record.StatusOK
	default:
		c.Status = record.StatusInterrupted
		c.Error = "the chat ends before a final answer (a session still running, or one the user interrupted)"
	}
	v.ended()
}

// llm maps one response.
func (b *builder) llm(m *message, lastInput time.Time) *importers.LLM {
	start := lastInput
	if start.IsZero() || start.After(m.at) {
		start = m.at
	}
	l := &importers.LLM{Started: start, Ended: m.at, Model: m.Model, Status: record.StatusOK, Content: b.clip(contentText(m.Content))}
	if m.Model != "" {
		b.models[m.Model] = true
	}
	if t := m.Tokens; t != nil {
		// input counts the cached tokens; output leaves out thoughts
		l.Usage = record.Usage{In: t.Input, Cached: t.Cached, CachedReported: true, Out: t.Output + t.Thoughts,
			Reasoning: t.Thoughts, ReasoningReported: true}
		l.Usage.Clamp()
	}
	for _, tc := range m.ToolCalls {
		l.Calls = append(l.Calls, tc.Name)
	}
	return l
}

// tool maps one tool call and its result.
func (b *builder) tool(tc *toolCall, started, ended time.Time) *importers.Tool {
	args := "{}"
	if len(tc.Args) > 0 {
		args = string(tc.Args)
	}
	t := &importers.Tool{Started: started, Ended: ended, CallID: tc.ID, Name: tc.Name, Args: b.clip(args),
		Research: research[tc.Name] || b.opt.IsResearch(tc.Name), Status: record.StatusOK}
	out, failed := resultText(tc.Result)
	t.Result = b.clip(out)
	switch {
	case tc.Status == "error" || failed:
		t.Status, t.Error = record.StatusError, importers.FirstLine(out)
	case tc.Status == "cancelled":
		t.Status, t.Error = record.StatusCancelled, "the call was cancelled"
	case len(tc.Result) == 0 && tc.Status == "":
		t.Status, t.Error = record.StatusInterrupted, "no result was recorded for this call"
	}
	if t.Ended.IsZero() || t.Ended.Before(t.Started) {
		t.Ended = t.Started
	}
	return t
}

// branch maps one invoke_agent call: its sub-agent's chat, and how it
// ended as the parent learnt it.
func (v *conv) branch(tc *toolCall, at time.Time) *importers.Branch {
	b := v.b
	var a struct {
		AgentName string `json:"agent_name"`
		Prompt    string `json:"prompt"`
	}
	_ = json.Unmarshal(tc.Args, &a)
	br := &importers.Branch{Name: a.AgentName, Agent: a.AgentName, Instructions: b.clip(a.Prompt), CallID: tc.ID, Args: b.clip(string(tc.Args))}
	if br.Agent == "" {
		br.Agent, br.Name = "generalist", "generalist"
	}
	out, failed := resultText(tc.Result)
	var d struct {
		State  string `json:"state"`
		Reason string `json:"terminateReason"`
		Result string `json:"result"`
	}
	_ = json.Unmarshal(tc.Display, &d)
	ended := parseTime(tc.Timestamp)
	status, why := record.StatusOK, ""
	switch {
	case tc.Status == "error" || failed:
		// a refused call (an unknown agent_name) starts no sub-agent
		status, why = record.StatusError, importers.FirstLine(out)
	case d.State == "error" || strings.HasPrefix(d.Reason, "ERROR"):
		status, why = record.StatusError, importers.FirstLine(out)
	case d.Reason == "TIMEOUT" || d.Reason == "MAX_TURNS":
		status, why = record.StatusExhausted, "the sub-agent stopped: "+d.Reason
	case d.Reason == "ABORTED" || d.State == "cancelled" || tc.Status == "cancelled":
		status, why = record.StatusCancelled, "the sub-agent was cancelled"
	case len(tc.Result) == 0:
		status, why = record.StatusInterrupted, "no result came back to the parent"
	}
	if status == record.StatusOK {
		br.Answer = b.clip(d.Result)
		if br.Answer == "" {
			br.Answer = b.clip(out)
		}
	}
	br.Conv = v.subagent(tc.AgentID, br.Agent, a.Prompt, at, func(c *importers.Conversation) {
		status, why := status, why
		if status != record.StatusOK || c.Status != record.StatusOK {
			if status == record.StatusOK {
				status, why = c.Status, c.Error
			}
			c.Status, c.Error = status, why
		}
		if !ended.IsZero() && status != record.StatusInterrupted {
			c.Ended = ended
		}
	})
	return br
}

// subagent is a sub-agent's conversation (chats/<session>/<id>.jsonl, read
// when Write comes to it); a missing chat is an empty conversation that
// says so. end is how the parent learnt it ended.
func (v *conv) subagent(id, agent, prompt string, at time.Time, end func(*importers.Conversation)) *importers.Conversation {
	b := v.b
	none := func(why string) *importers.Conversation {
		c := &importers.Conversation{Agent: agent, Started: at, Status: record.StatusInterrupted, Error: why}
		end(c)
		return c
	}
	if id == "" || v.level > 8 {
		return none("no chat of the sub-agent was recorded")
	}
	p := filepath.Join(b.dir, b.session, id+".jsonl")
	f, err := importers.OpenIn(b.dir, p)
	if err != nil {
		return none("the sub-agent's chat " + id + ".jsonl is missing")
	}
	f.Close()
	sub := b.newConv(agent, prompt, v.level+1)
	sub.start = func() (*chat, error) { return readChat(b.ctx, p, b.opt, b.report) }
	sub.startAt, sub.end = at, end
	return sub.c
}

// findOrphans reads the sub-agent chats of the session no call of the
// conversation names: a session interrupted while they ran (the calls are
// written once they return). They are one interrupted fork after the last
// response, which asked for them (finish).
func (v *conv) findOrphans() error {
	b := v.b
	dir := filepath.Join(b.dir, b.session)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	report := &importers.Report{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || v.chat.named[id] || !e.Type().IsRegular() {
			continue
		}
		c, err := readChat(b.ctx, filepath.Join(dir, e.Name()), b.opt, report)
		if err != nil || c.head.Kind != "subagent" {
			continue
		}
		prompt, err := firstUserText(c)
		if err != nil {
			return err
		}
		v.orphans = append(v.orphans, orphan{chat: c, prompt: prompt})
	}
	v.orphanReport = report
	return nil
}

// firstUserText is the text of a chat's first user message.
func firstUserText(c *chat) (string, error) {
	if c.firstUser < 0 {
		return "", nil
	}
	ms, err := openMessages(c)
	if err != nil {
		return "", err
	}
	defer ms.close()
	if !c.whole {
		ms.i = c.firstUser
	}
	for {
		m, ok, err := ms.next()
		if err != nil || !ok {
			return "", err
		}
		if ms.i == c.firstUser+1 {
			text, _ := userText(m.Content)
			return text, nil
		}
	}
}
