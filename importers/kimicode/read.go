package kimicode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/events"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
	"github.com/inspect-dev/inspect/record"
)

// maxDepth bounds how deep sub-agents of sub-agents are followed (custom
// agents may delegate further; a crafted state.json may loop).
const maxDepth = 8

// state is state.json.
type state struct {
	Title     string `json:"title"`
	CreatedAt string `json:"createdAt"`
	Agents    map[string]struct {
		Type      string  `json:"type"`
		Parent    *string `json:"parentAgentId"`
		SwarmItem *string `json:"swarmItem"`
	} `json:"agents"`
}

type reader struct {
	ctx    context.Context
	dir    string
	opt    importers.Options
	sess   *importers.Session
	log    *kimi.Log
	state  state
	models map[string]bool
	cwd    string
	named  []string // AGENTS.md paths the session loaded
	// toolsSeen: some journal recorded the tools offered (llm.tools_snapshot).
	toolsSeen bool

	children map[string][]string // agent id -> its sub-agents per state.json (or found on disk), in agent-N order
	claimed  map[string]bool     // sub-agents some call is linked to
	busy     map[string]bool     // agents being read (a loop in state.json)

	quiet *reader                // the second pass's: it reports nothing (the first did)
	open  map[*kimi.Journal]bool // the journals the second pass is reading
}

func newReader(ctx context.Context, dir string, opt importers.Options) *reader {
	s := &importers.Session{Source: record.Source{Format: Name, ID: filepath.Base(dir), Path: dir}}
	return &reader{
		ctx: ctx, dir: dir, opt: opt, sess: s,
		log:      kimi.NewLog(&s.Report, opt, dir),
		models:   map[string]bool{},
		children: map[string][]string{},
		claimed:  map[string]bool{},
		busy:     map[string]bool{},
		open:     map[*kimi.Journal]bool{},
	}
}

func (r *reader) newBuilder(agent string) *events.Builder {
	return events.NewBuilder(agent, r.opt,
		func(tool string) bool { return IsResearch(r.opt, tool) },
		isDelegation, r.log.Skip)
}

func (r *reader) session() (*importers.Session, error) {
	s := r.sess
	if _, err := kimi.ReadJSONIn(r.dir, filepath.Join(r.dir, "state.json"), &r.state); err != nil {
		r.log.Note(filepath.Join(r.dir, "state.json"), 0, "unreadable, so sub-agents are found from their folders alone: "+err.Error())
	}
	s.Title = r.state.Title
	r.agentTree()

	trunk, err := r.agent("main", kimi.Window{}, 0)
	if err != nil {
		return nil, err
	}
	s.Trunk = r.live(trunk, "")
	if s.Trunk.Agent == "main" && trunk.profile != "" {
		s.Trunk.Agent = trunk.profile
	}
	s.Tasks = trunk.tasks
	s.Close = r.close
	s.Started, s.Ended = s.Trunk.Started, s.Trunk.Ended
	if s.Started.IsZero() {
		if t, err := time.Parse(time.RFC3339Nano, r.state.CreatedAt); err == nil {
			s.Started = t.UTC()
		}
	}
	s.RequestsLack = []string{"thinking blocks"}
	if !r.toolsSeen {
		s.RequestsLack = append(s.RequestsLack, "the tool definitions (no llm.tools_snapshot in the journal)")
	}
	if s.Trunk.System == "" {
		s.RequestsLack = append([]string{"the system prompt"}, s.RequestsLack...)
	}
	// The AGENTS.md files the session loaded, when they are in its working
	// folder (read from its project folder), then the ones Kimi Code reads.
	var rel []string
	for _, n := range r.named {
		if p := importers.RelTo(r.cwd, n); p != "" {
			rel = append(rel, p)
		}
	}
	rel = append(rel, "AGENTS.md", ".kimi-code/AGENTS.md", ".kimi-code/agents/*.md", ".agents/agents/*.md")
	r.opt.Instructions(s, r.cwd, rel)
	for m := range r.models {
		s.Models = append(s.Models, m)
	}
	sort.Strings(s.Models)
	return s, nil
}

// agentTree reads who started whom from state.json, and adds the agent
// folders state.json does not list as sub-agents of main (Kimi Code's own
// viewer does the same when state.json is gone).
func (r *reader) agentTree() {
	listed := map[string]bool{"main": true}
	for id, a := range r.state.Agents {
		listed[id] = true
		if id == "main" || !kimi.SafeID(id) {
			continue
		}
		parent := "main"
		if a.Parent != nil && *a.Parent != "" {
			parent = *a.Parent
		}
		r.children[parent] = append(r.children[parent], id)
	}
	if entries, err := os.ReadDir(filepath.Join(r.dir, "agents")); err == nil {
		for _, e := range entries {
			if id := e.Name(); e.IsDir() && !listed[id] && kimi.SafeID(id) {
				r.children["main"] = append(r.children["main"], id)
			}
		}
	}
	for _, ids := range r.children {
		sort.Slice(ids, func(i, j int) bool { return compareAgentIDs(ids[i], ids[j]) })
	}
}

// compareAgentIDs orders agent-N ids by N, then the rest by name.
func compareAgentIDs(a, b string) bool {
	na, oka := agentNumber(a)
	nb, okb := agentNumber(b)
	switch {
	case oka && okb && na != nb:
		return na < nb
	case oka != okb:
		return oka
	}
	return a < b
}

func agentNumber(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "agent-"))
	return n, err == nil && strings.HasPrefix(id, "agent-")
}

// task is a task.started / task.terminated info of kind agent.
type task struct {
	TaskID       string   `json:"taskId"`
	Kind         string   `json:"kind"`
	AgentID      string   `json:"agentId"`
	SubagentType string   `json:"subagentType"`
	CallID       string   `json:"parentToolCallId"`
	Model        string   `json:"model"`
	Description  string   `json:"description"`
	Status       string   `json:"status"`
	StartedAt    float64  `json:"startedAt"`
	EndedAt      *float64 `json:"endedAt"`
	StopReason   string   `json:"stopReason"`
	Detached     bool     `json:"detached"`
	at           time.Time
}

// agentFile is one agent's journal (the turns of one window of it), read.
type agentFile struct {
	id         string
	path       string
	w          kimi.Window
	name       string // its builder's agent
	b          *events.Builder
	profile    string
	started    map[string][]*task // Agent call id -> the tasks it started, in order
	terminated map[string]*task   // task id -> how it ended
	userTurns  map[*importers.User]bool

	// What the first pass keeps for the second, which reads the journal
	// again and hands its steps over: the conversation's facts (no steps),
	// its forks in step order with their branches, the forks of its
	// sub-agents no call names (by start), how many steps it has, the
	// first, and the trunk's user turns.
	conv    importers.Conversation
	forks   []*importers.Fork
	orphans []*importers.Fork
	steps   int
	first   importers.Step
	tasks   []string
}

func newAgentFile(id, path string, w kimi.Window, name string, b *events.Builder) *agentFile {
	return &agentFile{id: id, path: path, w: w, name: name, b: b,
		started: map[string][]*task{}, terminated: map[string]*task{}, userTurns: map[*importers.User]bool{}}
}

// keep forgets the steps of the first pass as they come, counting them
// (the trunk's user turns kept as its tasks); all but the latest, which
// may still change (a compaction goes before it), unless final.
func (a *agentFile) keep(final bool) {
	steps := a.b.Conv.Steps
	n := len(steps)
	if !final {
		n--
	}
	if n <= 0 {
		return
	}
	for _, st := range steps[:n] {
		if a.steps == 0 {
			a.first = st
		}
		a.steps++
		if u := st.User; u != nil && a.userTurns[u] {
			delete(a.userTurns, u)
			if a.id == "main" && u.Text != "" && !u.At.IsZero() {
				a.tasks = append(a.tasks, u.Text)
			}
		}
	}
	rest := copy(steps, steps[n:])
	clear(steps[rest:])
	a.b.Conv.Steps = steps[:rest]
}

// agent reads agents/<id>/wire.jsonl (the turns in w) and, depth-first,
// the sub-agents its Agent and AgentSwarm calls started: the first pass,
// which keeps no step, only what the second needs (agentFile).
func (r *reader) agent(id string, w kimi.Window, depth int) (*agentFile, error) {
	path := filepath.Join(r.dir, "agents", id, "wire.jsonl")
	name := id
	if t := r.state.Agents[id].Type; id != "main" && t != "" && t != "sub" && t != "independent" {
		name = t
	}
	a := newAgentFile(id, path, w, name, r.newBuilder(name))
	if err := r.readWire(path, a, w); err != nil {
		return nil, err
	}
	a.b.Finish()
	a.keep(true)
	if a.profile != "" && id != "main" {
		a.b.Conv.Agent = a.profile
	}
	for _, d := range a.b.Delegations {
		if n := len(a.forks); n == 0 || a.forks[n-1] != d.Fork {
			a.forks = append(a.forks, d.Fork)
		}
	}
	defer a.settle()
	if depth >= maxDepth || r.busy[id] {
		if len(a.b.Delegations) > 0 {
			r.log.Note(path, 0, "its sub-agents are not followed: "+map[bool]string{true: "state.json says it started itself", false: "delegations nest deeper than " + strconv.Itoa(maxDepth)}[r.busy[id]])
		}
		return a, nil
	}
	r.busy[id] = true
	defer delete(r.busy, id)
	if err := r.branches(a, depth); err != nil {
		return nil, err
	}
	return a, nil
}

// rec is the envelope every Kimi Code record shares; its payload fields are
// spread beside it.
type rec struct {
	Type string  `json:"type"`
	Time float64 `json:"time"`
}

// settle keeps the conversation's facts once the first pass is done with
// the agent, and lets go of what reading it held.
func (a *agentFile) settle() {
	a.conv = *a.b.Conv
	a.conv.Steps, a.conv.Live = nil, nil
	for _, d := range a.b.Delegations {
		d.Result, d.Note = "", "" // its branches have what they said
	}
	a.b, a.started, a.terminated, a.userTurns = nil, nil, nil, nil
}

func (r *reader) readWire(path string, a *agentFile, w kimi.Window) error {
	if a.id != "main" && !importers.IsFileIn(r.dir, path) {
		return nil // the caller says the journal is missing
	}
	inWindow := w.Zero()
	return r.log.Lines(r.ctx, path, func(n int, line []byte, unterminated bool) error {
		if err := r.line(path, a, w, &inWindow, n, line, unterminated); err != nil {
			return err
		}
		if len(a.b.Conv.Steps) > 1 {
			a.keep(false)
		}
		return nil
	})
}

// line applies journal line n of path to the agent: inWindow says whether
// the turn it is in is one of window w's.
func (r *reader) line(path string, a *agentFile, w kimi.Window, inWindow *bool, n int, line []byte, unterminated bool) error {
	var h rec
	if err := json.Unmarshal(line, &h); err != nil || h.Type == "" {
		if err == nil {
			err = fmt.Errorf(`no "type"`)
		}
		if unterminated {
			r.log.CutShort(path, n)
			return nil
		}
		return r.log.Malformed(path, n, "not a Kimi Code record: "+kimi.ShortErr(err))
	}
	at := kimi.Millis(h.Time)
	if h.Type == "turn.prompt" && !w.Zero() {
		*inWindow = w.Holds(at)
	}
	if !*inWindow && !setup[h.Type] {
		return nil
	}
	if err := r.record(a, at, h.Type, line); err != nil {
		return r.log.Malformed(path, n, h.Type+": "+kimi.ShortErr(err))
	}
	return nil
}

// setup are the records that describe the agent rather than a turn: read
// whatever the window.
var setup = map[string]bool{"metadata": true, "config.update": true, "profile.bind": true}

// known are the durable record types of Kimi Code's wire manifest (protocol
// 1.5) that are not part of the graph.
var known = map[string]bool{
	"context.append_message": true, "context.clear": true, "context.undo": true,
	"cron.add": true, "cron.cursor": true, "cron.delete": true, "forked": true,
	"full_compaction.begin": true, "full_compaction.cancel": true, "full_compaction.complete": true,
	"goal.clear": true, "goal.create": true, "goal.update": true,
	"interaction.request": true, "interaction.resolved": true, "interruptionReminder.recorded": true,
	"mcp.tools_discovered":              true,
	"permission.record_approval_result": true, "permission.set_mode": true,
	"plan_mode.cancel": true, "plan_mode.enter": true, "plan_mode.exit": true, "plan.revision": true,
	"plugin.session_start": true, "prompt.accepted": true, "runtime.set_binding": true,
	"staleGuard.cleared": true, "staleGuard.recorded": true, "swarm_mode.enter": true, "swarm_mode.exit": true,
	"task.waitDelivered": true, "token_counting.measured": true, "token_counting.rebased": true,
	"token_counting.truncated": true, "token_counting.turn_recorded": true,
	"tools.register_user_tool": true, "tools.reset_active_tools": true, "tools.set_active_tools": true,
	"tools.unregister_user_tool": true, "tools.update_store": true, "tower_mode.enter": true, "tower_mode.exit": true,
	"turn.cancel": true,
}

type tokenUsage struct {
	InputOther    int64 `json:"inputOther"`
	Output        int64 `json:"output"`
	CacheRead     int64 `json:"inputCacheRead"`
	CacheCreation int64 `json:"inputCacheCreation"`
}

func (u tokenUsage) usage() record.Usage {
	return kimi.Usage(u.InputOther, u.Output, u.CacheRead, u.CacheCreation)
}

// record applies one record to the agent's conversation.
func (r *reader) record(a *agentFile, at time.Time, typ string, line []byte) error {
	b := a.b
	switch typ {
	case "metadata":
	case "config.update", "profile.bind":
		var p struct {
			Cwd         string `json:"cwd"`
			Environment *struct {
				Cwd string `json:"cwd"`
			} `json:"environmentDisclosure"`
			AgentsMd     []string `json:"agentsMdPaths"`
			ProfileName  string   `json:"profileName"`
			SystemPrompt string   `json:"systemPrompt"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		cwd := p.Cwd
		if p.Environment != nil && p.Environment.Cwd != "" {
			cwd = p.Environment.Cwd
		}
		if cwd != "" && filepath.IsAbs(cwd) && (r.cwd == "" || a.id == "main") {
			r.cwd = filepath.Clean(cwd)
		}
		r.named = append(r.named, p.AgentsMd...)
		if p.SystemPrompt != "" {
			b.Conv.System = r.opt.Clip(p.SystemPrompt)
		}
		if p.ProfileName != "" && a.id != "main" {
			a.profile = p.ProfileName
		}
	case "turn.prompt", "turn.steer":
		var p struct {
			Input  json.RawMessage `json:"input"`
			Origin json.RawMessage `json:"origin"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		text := kimi.ContentText(p.Input)
		if typ == "turn.steer" {
			b.Steer(at, text)
			return nil
		}
		b.Turn(at, text)
		if o := origin(p.Origin); o == "" || o == "user" {
			if st := b.Conv.Steps; len(st) > 0 && st[len(st)-1].User != nil {
				a.userTurns[st[len(st)-1].User] = true
			}
		}
	case "turn.ended":
		var p struct {
			Reason string `json:"reason"`
			Error  *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		msg, code := "", ""
		if p.Error != nil {
			msg, code = p.Error.Message, p.Error.Code
		}
		var st record.Status
		switch p.Reason {
		case "completed", "":
			st = ""
		case "cancelled":
			st = record.StatusCancelled
		case "blocked":
			st, msg = record.StatusError, kimi.FirstOf(msg, "the turn was blocked")
		default:
			st = kimi.Outcome("failed", code+" "+msg)
			msg = kimi.FirstOf(msg, "the turn failed")
		}
		b.TurnEnd(at, st, msg)
	case "context.append_loop_event":
		var p struct {
			Event json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		return r.loopEvent(b, at, p.Event)
	case "usage.record":
		var p struct {
			Model string      `json:"model"`
			Usage *tokenUsage `json:"usage"`
			Scope string      `json:"usageScope"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		if p.Model != "" {
			r.models[p.Model] = true
		}
		if p.Usage != nil {
			b.Usage(at, p.Usage.usage(), p.Model, "", p.Scope == "session")
		}
	case "llm.request":
		var p struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		if p.Model != "" {
			r.models[p.Model] = true
		}
	case "llm.tools_snapshot":
		var p struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		if len(p.Tools) > 0 {
			tools := make([]importers.ToolDef, 0, len(p.Tools))
			for _, t := range p.Tools {
				tools = append(tools, importers.ToolDef{Name: t.Name, Description: r.opt.Clip(t.Description), Parameters: t.Parameters})
			}
			b.Conv.Tools = tools
			r.toolsSeen = true
		}
	case "context.apply_compaction":
		var p struct {
			Summary        json.RawMessage `json:"summary"`
			ContextSummary string          `json:"contextSummary"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		summary := kimi.ContentText(p.Summary)
		if summary == "" && len(p.Summary) > 0 && p.Summary[0] == '{' {
			var m struct {
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(p.Summary, &m)
			summary = kimi.ContentText(m.Content)
		}
		b.Compact(at, kimi.FirstOf(summary, p.ContextSummary, "(the context was compacted here)"))
	case "task.started", "task.terminated":
		var p struct {
			Info *task `json:"info"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		t := p.Info
		if t == nil || t.Kind != "agent" {
			return nil
		}
		t.at = at
		if typ == "task.started" {
			if t.CallID != "" {
				a.started[t.CallID] = append(a.started[t.CallID], t)
			}
		} else if t.TaskID != "" {
			a.terminated[t.TaskID] = t
		}
		if t.Model != "" {
			r.models[t.Model] = true
		}
	default:
		if !known[typ] {
			r.log.Skip(typ)
		}
	}
	return nil
}

func (r *reader) loopEvent(b *events.Builder, at time.Time, raw json.RawMessage) error {
	var e struct {
		Type         string          `json:"type"`
		FinishReason string          `json:"finishReason"`
		Usage        *tokenUsage     `json:"usage"`
		Part         json.RawMessage `json:"part"`
		CallID       string          `json:"toolCallId"`
		Name         string          `json:"name"`
		Args         json.RawMessage `json:"args"`
		Result       *struct {
			Output  json.RawMessage `json:"output"`
			IsError bool            `json:"isError"`
			Note    string          `json:"note"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return err
	}
	switch e.Type {
	case "step.begin":
		b.Step(at)
	case "content.part":
		var part struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(e.Part, &part) == nil && part.Type == "text" {
			b.Text(at, part.Text)
		}
	case "tool.call":
		args := ""
		if len(e.Args) > 0 && !bytes.Equal(e.Args, []byte("null")) {
			args = kimi.Compact(e.Args)
		}
		b.Call(at, e.CallID, e.Name, args)
	case "tool.result":
		if e.Result == nil {
			return fmt.Errorf("a tool.result without its result")
		}
		b.Result(at, e.CallID, kimi.ContentText(e.Result.Output), e.Result.IsError, e.Result.Note)
	case "step.end":
		if e.Usage != nil {
			b.StepUsage(e.Usage.usage())
		}
		switch e.FinishReason {
		case "interrupted":
			b.Interrupted(at)
		case "error":
			b.StepEnd(at, record.StatusError, "the model call failed")
		default:
			b.StepEnd(at, "", "")
		}
	default:
		r.log.Skip("loop event " + e.Type)
	}
	return nil
}

// origin is a prompt's origin: a string (protocol 1.5) or {"kind": …} (1.1).
func origin(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Kind
}
