// Package geminicli imports Gemini CLI sessions (format "gemini-cli",
// DESIGN §13): ~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl,
// one JSON record a line — a header {sessionId, projectHash, startTime,
// kind}, messages {id, timestamp, type: user|gemini|info|error, content,
// tokens, model, toolCalls} written again under the same id as they grow
// (a response first, then with its tool calls and their results), and
// {"$set": {...}} patches (the whole message list, lastUpdated, summary).
// A resumed session writes a new header and goes on; a compression the CLI
// applies writes the list again with its <state_snapshot> summary as a user
// message (read as a compaction), the CLI's own reply to it and the kept
// history under new ids (neither is a model call). The invoke_agent
// calls of one response are one fork; each sub-agent's chat is
// chats/<session id>/<agentId>.jsonl (kind subagent), ended by its
// complete_task call. Gemini CLI 0.61 and the single-JSON session files
// of earlier versions ({..., "messages": [...]}) are read. It only parses:
// importers.Write records the Session.
package geminicli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Name is the format's name.
const Name = "gemini-cli"

// Format is the gemini-cli importer.
type Format struct{}

var (
	_ importers.Format  = Format{}
	_ importers.Locator = Format{}
	_ importers.Watched = Format{}
)

// Name implements importers.Format.
func (Format) Name() string { return Name }

// research are Gemini CLI's read-only tools (DESIGN §13).
var research = map[string]bool{
	"read_file": true, "read_many_files": true, "list_directory": true, "glob": true, "grep_search": true,
	"search_file_content": true, "google_web_search": true, "web_fetch": true, "read_background_output": true,
	"list_background_processes": true,
}

// delegation is the tool that starts a sub-agent.
const delegation = "invoke_agent"

// header is a session file's first record (and a resumed run's).
type header struct {
	SessionID   string   `json:"sessionId"`
	ProjectHash string   `json:"projectHash"`
	StartTime   string   `json:"startTime"`
	LastUpdated string   `json:"lastUpdated"`
	Kind        string   `json:"kind"`
	Directories []string `json:"directories"`
	Summary     string   `json:"summary"`
	// Messages is the whole list in a single-JSON session file.
	Messages []json.RawMessage `json:"messages"`
}

// message is one chat record.
type message struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Tokens    *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
	} `json:"tokens"`
	Model     string     `json:"model"`
	ToolCalls []toolCall `json:"toolCalls"`
	at        time.Time
}

// toolCall is one call of a response, with its result once it came.
type toolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	Status    string          `json:"status"`
	Timestamp string          `json:"timestamp"`
	AgentID   string          `json:"agentId"`
	Display   json.RawMessage `json:"resultDisplay"`
}

// chat is one session file read: its header and its messages in order,
// each as last written.
type chat struct {
	path     string
	head     header
	started  time.Time
	updated  time.Time
	summary  string
	messages []*message
	resumed  int // headers after the first: runs that resumed the session
	seed     maphash.Seed
}

// key identifies a message by its type and content.
func (c *chat) key(typ string, content json.RawMessage) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(typ)
	h.WriteByte(0)
	h.Write(bytes.TrimSpace(content))
	return h.Sum64()
}

// Detect implements importers.Format: a JSON object whose first line
// carries sessionId and projectHash.
func (Format) Detect(path string) bool {
	head := importers.Head(path, 64<<10)
	line := head
	if i := strings.IndexByte(string(head), '\n'); i >= 0 {
		line = head[:i]
	}
	var h struct {
		SessionID   *string `json:"sessionId"`
		ProjectHash *string `json:"projectHash"`
	}
	if json.Unmarshal(line, &h) == nil && h.SessionID != nil && h.ProjectHash != nil {
		return true
	}
	// a single-JSON session file: its start names both
	s := string(head)
	return strings.HasPrefix(strings.TrimSpace(s), "{") && strings.Contains(s, `"sessionId"`) && strings.Contains(s, `"projectHash"`)
}

// Files implements importers.Watched: the session file and its sub-agents'
// folder.
func (Format) Files(path string) []string {
	files := []string{path}
	if c, err := readChat(context.Background(), path, importers.Options{}, &importers.Report{}); err == nil {
		files = append(files, filepath.Join(filepath.Dir(path), c.head.SessionID))
	}
	return files
}

// Read implements importers.Format.
func (Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
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
	b := &builder{opt: opt, report: report, dir: filepath.Dir(path), session: c.head.SessionID, models: map[string]bool{}}
	s.Trunk = b.conversation(ctx, c, "main", "")
	s.Tasks = b.tasks
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
	return []*importers.Session{s}, nil
}

// readChat reads a session file: records upserted by id in the order they
// first came, $set patches applied.
func readChat(ctx context.Context, path string, opt importers.Options, report *importers.Report) (*chat, error) {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &chat{path: path, seed: maphash.MakeSeed()}
	byID := map[string]int{}
	read := map[uint64]bool{} // c.key of every message read
	upsert := func(raw json.RawMessage) {
		var m message
		if json.Unmarshal(raw, &m) != nil || m.Type == "" {
			report.Skip("message without a type")
			return
		}
		m.at, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
		read[c.key(m.Type, m.Content)] = true
		if i, ok := byID[m.ID]; ok && m.ID != "" {
			c.messages[i] = &m
			return
		}
		byID[m.ID] = len(c.messages)
		c.messages = append(c.messages, &m)
	}
	// setAll takes a whole message list. A resumed run writes the history
	// again from memory: new timestamps, tool calls as content parts, an
	// id written twice; the records already read keep what they said and
	// only messages not seen before are added.
	setAll := func(list []json.RawMessage) {
		if len(c.messages) == 0 {
			for _, raw := range list {
				upsert(raw)
			}
			return
		}
		for _, raw := range list {
			var m struct {
				ID      string          `json:"id"`
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(raw, &m) == nil && m.ID != "" {
				if _, ok := byID[m.ID]; ok {
					continue
				}
				// a compression starts a chat whose kept history has new
				// ids: a message already read, written again, is a copy
				if read[c.key(m.Type, m.Content)] {
					continue
				}
			}
			upsert(raw)
		}
	}
	lr := importers.NewLineReader(f)
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, n, unterminated, err := lr.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, importers.ErrLineTooLong) {
			if perr := report.Problem(opt, path, n, err); perr != nil {
				return nil, perr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			if unterminated {
				report.Skip("truncated last line")
				break
			}
			if first {
				// a single-JSON file spans lines: read it whole
				return readWhole(path, report)
			}
			if perr := report.Problem(opt, path, n, fmt.Errorf("not a JSON object: %v", err)); perr != nil {
				return nil, perr
			}
			continue
		}
		switch {
		case probe["$set"] != nil:
			var set struct {
				Messages    *[]json.RawMessage `json:"messages"`
				LastUpdated string             `json:"lastUpdated"`
				Summary     *string            `json:"summary"`
			}
			if err := json.Unmarshal(probe["$set"], &set); err != nil {
				if perr := report.Problem(opt, path, n, fmt.Errorf("$set: %v", err)); perr != nil {
					return nil, perr
				}
				continue
			}
			if set.Messages != nil {
				setAll(*set.Messages)
			}
			if set.Summary != nil {
				c.summary = *set.Summary
			}
			if t, err := time.Parse(time.RFC3339Nano, set.LastUpdated); err == nil {
				c.updated = t
			}
		case probe["sessionId"] != nil && probe["type"] == nil:
			var h header
			if err := json.Unmarshal(raw, &h); err != nil {
				return nil, fmt.Errorf("%s:%d: session header: %v", path, n, err)
			}
			if first {
				c.head = h
				c.started, _ = time.Parse(time.RFC3339Nano, h.StartTime)
				c.summary = h.Summary
				if h.Messages != nil {
					setAll(h.Messages)
				}
			} else {
				c.resumed++
			}
		case probe["type"] != nil:
			upsert(raw)
		default:
			report.Skip("record without a type")
		}
		first = false
	}
	if c.head.SessionID == "" {
		return nil, fmt.Errorf("%s: no session header: not a Gemini CLI session", path)
	}
	return c, nil
}

// readWhole reads a single-JSON session file (Gemini CLI before JSONL).
func readWhole(path string, report *importers.Report) (*chat, error) {
	b, err := importers.ReadSmall(path, 512<<20)
	if err != nil {
		return nil, err
	}
	var h header
	if err := json.Unmarshal(b, &h); err != nil || h.SessionID == "" {
		return nil, fmt.Errorf("%s: not a Gemini CLI session", path)
	}
	c := &chat{path: path, head: h, summary: h.Summary}
	c.started, _ = time.Parse(time.RFC3339Nano, h.StartTime)
	for _, raw := range h.Messages {
		var m message
		if json.Unmarshal(raw, &m) != nil || m.Type == "" {
			report.Skip("message without a type")
			continue
		}
		m.at, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
		c.messages = append(c.messages, &m)
	}
	return c, nil
}

// builder turns chats into conversations.
type builder struct {
	opt     importers.Options
	report  *importers.Report
	dir     string // the chats folder
	session string // the main session's id: sub-agent chats are in dir/session/
	cwd     string
	tasks   []string
	models  map[string]bool
	depth   int
}

// conversation maps one chat; prompt is a sub-agent's instructions (its
// first user message is that, not a user turn).
func (b *builder) conversation(ctx context.Context, c *chat, agent, prompt string) *importers.Conversation {
	conv := &importers.Conversation{Agent: agent, Started: c.started}
	lastInput := c.started
	var last time.Time
	var lastLLM *importers.LLM
	named := map[string]bool{} // sub-agent ids the calls name
	for _, m := range c.messages {
		if !m.at.IsZero() {
			last = m.at
		}
		switch m.Type {
		case "user":
			text, responses := userText(m.Content)
			if responses {
				lastInput = later(lastInput, m.at)
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(text), "<session_context>") {
				if b.cwd == "" && agent == "main" {
					b.cwd = workspace(text)
				}
				continue
			}
			lastInput = later(lastInput, m.at)
			if isSnapshot(text) {
				// a compression (/compress, or the CLI's own at its
				// threshold): the model goes on from this summary
				conv.Steps = append(conv.Steps, importers.Step{Compact: &importers.Compact{At: m.at, Summary: b.clip(text)}})
				continue
			}
			if text == "" || (prompt != "" && strings.TrimSpace(text) == strings.TrimSpace(prompt) && len(conv.Steps) == 0) {
				continue
			}
			if agent == "main" {
				b.tasks = append(b.tasks, b.clip(text))
			}
			conv.Steps = append(conv.Steps, importers.Step{User: &importers.User{At: m.at, Text: b.clip(text)}})
		case "gemini":
			if m.Model == "" && m.Tokens == nil && len(m.ToolCalls) == 0 {
				// the CLI's own words in the history ("Got it. Thanks for
				// the additional context!" after a compression's summary):
				// no model answered them
				continue
			}
			l := b.llm(m, lastInput)
			lastLLM = l
			conv.Steps = append(conv.Steps, importers.Step{LLM: l})
			var fork *importers.Fork
			for i := range m.ToolCalls {
				tc := &m.ToolCalls[i]
				at := parseTime(tc.Timestamp)
				lastInput = later(lastInput, at)
				if tc.Name != delegation {
					conv.Steps = append(conv.Steps, importers.Step{Tool: b.tool(tc, m.at, at)})
					if tc.Name == "complete_task" && agent != "main" {
						conv.Steps = append(conv.Steps, importers.Step{Final: &importers.Final{At: later(m.at, at), Text: b.clip(completeText(tc.Args))}})
					}
					continue
				}
				if fork == nil {
					fork = &importers.Fork{At: m.at, Tool: delegation, Context: "none"}
					conv.Steps = append(conv.Steps, importers.Step{Fork: fork})
				}
				if tc.AgentID != "" {
					named[tc.AgentID] = true
				}
				br := b.branch(ctx, tc, m.at)
				br.Name = uniqueName(fork.Branches, br.Name)
				fork.Branches = append(fork.Branches, br)
				if at.After(fork.JoinAt) {
					fork.JoinAt = at
				}
			}
			if len(m.ToolCalls) == 0 && l.Content != "" {
				conv.Steps = append(conv.Steps, importers.Step{Final: &importers.Final{At: m.at, Text: l.Content}})
			}
		case "info", "warning":
			// notices Gemini CLI shows the user; the model never sees them
		case "error":
			conv.Status, conv.Error = record.StatusError, b.clip(contentText(m.Content))
		default:
			b.report.Skip(fmt.Sprintf("message of type %q", m.Type))
		}
	}
	if agent == "main" {
		b.orphans(ctx, conv, named, lastLLM)
	}
	// how it ended: a last response that answered (or a sub-agent that
	// completed its task) ends it; anything else stopped mid-way
	switch n := len(conv.Steps); {
	case conv.Status == record.StatusError:
		conv.Ended = last
	case n > 0 && conv.Steps[n-1].Final != nil:
		conv.Ended, conv.Status = last, record.StatusOK
	default:
		conv.Status = record.StatusInterrupted
		conv.Error = "the chat ends before a final answer (a session still running, or one the user interrupted)"
	}
	return conv
}

// clip cuts a kept text to the import's cap (importers.Options.Clip).
func (b *builder) clip(s string) string { return b.opt.Clip(s) }

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
func (b *builder) branch(ctx context.Context, tc *toolCall, at time.Time) *importers.Branch {
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
	br.Conv = b.subagent(ctx, tc.AgentID, br.Agent, a.Prompt, at)
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
	c := br.Conv
	if status != record.StatusOK || c.Status != record.StatusOK {
		if status == record.StatusOK {
			status, why = c.Status, c.Error
		}
		c.Status, c.Error = status, why
	}
	if !ended.IsZero() && status != record.StatusInterrupted {
		c.Ended = ended
	}
	return br
}

// subagent reads a sub-agent's chat (chats/<session>/<id>.jsonl); a
// missing one is an empty conversation that says so.
func (b *builder) subagent(ctx context.Context, id, agent, prompt string, at time.Time) *importers.Conversation {
	if id == "" || b.depth > 8 {
		return &importers.Conversation{Agent: agent, Started: at, Status: record.StatusInterrupted, Error: "no chat of the sub-agent was recorded"}
	}
	p := filepath.Join(b.dir, b.session, id+".jsonl")
	f, err := importers.OpenIn(b.dir, p)
	if err != nil {
		return &importers.Conversation{Agent: agent, Started: at, Status: record.StatusInterrupted, Error: "the sub-agent's chat " + id + ".jsonl is missing"}
	}
	f.Close()
	c, err := readChat(ctx, p, b.opt, b.report)
	if err != nil {
		return &importers.Conversation{Agent: agent, Started: at, Status: record.StatusInterrupted, Error: err.Error()}
	}
	b.depth++
	defer func() { b.depth-- }()
	conv := b.conversation(ctx, c, agent, prompt)
	if conv.Started.IsZero() {
		conv.Started = at
	}
	return conv
}

// orphans attaches the sub-agent chats of the session no call names: a
// session interrupted while they ran (the calls are written once they
// return). They are one interrupted fork after the last response, which
// asked for them.
func (b *builder) orphans(ctx context.Context, conv *importers.Conversation, named map[string]bool, last *importers.LLM) {
	dir := filepath.Join(b.dir, b.session)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var fork *importers.Fork
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || named[id] || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		c, err := readChat(ctx, p, b.opt, b.report)
		if err != nil || c.head.Kind != "subagent" {
			continue
		}
		prompt := ""
		for _, m := range c.messages {
			if m.Type == "user" {
				prompt, _ = userText(m.Content)
				break
			}
		}
		if fork == nil {
			at := c.started
			if last != nil {
				at = last.Ended
			}
			fork = &importers.Fork{At: at, Tool: delegation, Context: "none"}
			conv.Steps = append(conv.Steps, importers.Step{Fork: fork})
		}
		b.depth++
		sub := b.conversation(ctx, c, "generalist", prompt)
		b.depth--
		sub.Status, sub.Error, sub.Ended = record.StatusInterrupted, "the session stopped while the sub-agent ran", time.Time{}
		br := &importers.Branch{Name: uniqueName(fork.Branches, "sub-agent"), Agent: "generalist", Instructions: b.clip(prompt), Conv: sub}
		fork.Branches = append(fork.Branches, br)
		if last != nil && len(last.Calls) < len(fork.Branches) {
			// the response that asked for it was written before its calls
			last.Calls = append(last.Calls, delegation)
		}
	}
}

// Newest implements importers.Locator: the newest session file of the
// working folder cwd, found through the .project_root file Gemini CLI
// keeps in each project's folder of ~/.gemini/tmp ($GEMINI_CLI_HOME, else
// HOME, is the home).
func (Format) Newest(cwd string, getenv func(string) string) (string, error) {
	home, err := importers.ToolHome(getenv, "GEMINI_CLI_HOME", "", "Gemini CLI's", "the session file's")
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(home, ".gemini", "tmp")
	projects, _ := os.ReadDir(tmp)
	var best string
	var bestAt time.Time
	for _, p := range projects {
		root, err := importers.ReadSmall(filepath.Join(tmp, p.Name(), ".project_root"), 64<<10)
		if err != nil || filepath.Clean(strings.TrimSpace(string(root))) != filepath.Clean(cwd) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(tmp, p.Name(), "chats", "session-*.json*"))
		for _, f := range files {
			if info, err := os.Stat(f); err == nil && info.Mode().IsRegular() && info.ModTime().After(bestAt) {
				best, bestAt = f, info.ModTime()
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("no Gemini CLI session of %s under %s", cwd, tmp)
	}
	return best, nil
}

// userText reads a user message's content: its text, and whether it only
// carries function responses (tool results going back to the model).
func userText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var parts []struct {
		Text             *string         `json:"text"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	responses := len(parts) > 0
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
		if len(p.FunctionResponse) == 0 {
			responses = false
		}
	}
	return strings.Join(texts, "\n"), responses
}

// contentText reads a message's content: a string or parts with text.
func contentText(raw json.RawMessage) string {
	t, _ := userText(raw)
	return t
}

// resultText reads a tool call's result [{functionResponse: {response:
// {output} or {error}}}]: its text, and whether it is an error.
func resultText(raw json.RawMessage) (string, bool) {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output json.RawMessage `json:"output"`
				Error  json.RawMessage `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var out []string
	failed := false
	for _, p := range parts {
		r := p.FunctionResponse.Response
		switch {
		case len(r.Error) > 0:
			out, failed = append(out, jsonText(r.Error)), true
		case len(r.Output) > 0:
			out = append(out, jsonText(r.Output))
		case p.Text != "":
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n"), failed
}

// jsonText is a JSON string's text, or the JSON itself.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// completeText is complete_task's answer: {result: {response}} (or the
// arguments as they came).
func completeText(args json.RawMessage) string {
	var a struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(args, &a) != nil || len(a.Result) == 0 {
		return string(args)
	}
	var r struct {
		Response *string `json:"response"`
	}
	if json.Unmarshal(a.Result, &r) == nil && r.Response != nil {
		return *r.Response
	}
	return jsonText(a.Result)
}

// isSnapshot reports whether a user text is a compression's summary, a
// <state_snapshot> block and nothing else.
func isSnapshot(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<state_snapshot>") && strings.HasSuffix(t, "</state_snapshot>")
}

// workspace reads the first workspace folder the session context names.
func workspace(text string) string {
	_, rest, ok := strings.Cut(text, "**Workspace Directories:**")
	if !ok {
		return ""
	}
	for _, line := range strings.Split(rest, "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && filepath.IsAbs(p) {
			return p
		}
	}
	return ""
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// uniqueName makes name unique among a fork's branches.
func uniqueName(bs []*importers.Branch, name string) string {
	taken := func(n string) bool {
		for _, o := range bs {
			if o.Name == n {
				return true
			}
		}
		return false
	}
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s-%d", name, i); !taken(n) {
			return n
		}
	}
}
