package kimicode

import (
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/events"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
	"github.com/inspect-dev/inspect/record"
)

// slot is one branch-to-be of a delegation call: one sub-agent.
type slot struct {
	d        *events.Delegation
	i        int    // its index among the call's sub-agents
	agentID  string // "" when nothing links it to a sub-agent
	task     *task
	entry    *kimi.SwarmEntry
	prompt   string
	agent    string
	byOrder  bool // linked through state.json's order, not by id
	resumeOf string
}

// branches turns the Agent and AgentSwarm calls of one agent's journal into
// the branches of their steps' forks, reading each sub-agent's journal.
func (r *reader) branches(a *agentFile, depth int) error {
	var slots []*slot
	linked := map[string]bool{}
	for _, d := range a.b.Delegations {
		args := kimi.ParseArgs(d.Args)
		if args.Fork {
			d.Fork.Context = "inherit"
		}
		tasks := a.started[d.CallID]
		var res kimi.Result
		var entries []kimi.SwarmEntry
		n := 1
		var prompts []string
		if d.Name == kimi.ToolAgentSwarm {
			prompts = args.SwarmPrompts()
			if d.Done {
				entries = kimi.ParseSwarmResult(d.Result)
			}
			n = max(len(tasks), len(entries), len(prompts), 1)
		} else {
			prompts = []string{args.Prompt}
			if d.Done {
				res = kimi.ParseResult(d.Result)
			}
		}
		for i := range n {
			s := &slot{d: d, i: i, agent: kimi.FirstOf(args.SubagentType, kimi.DefaultSubagentType)}
			if i < len(prompts) {
				s.prompt = prompts[i]
			}
			if i < len(tasks) {
				s.task = tasks[i]
				s.agentID = tasks[i].AgentID
			}
			if i < len(entries) {
				s.entry = &entries[i]
				s.agentID = kimi.FirstOf(s.agentID, entries[i].AgentID)
			}
			if d.Name != kimi.ToolAgentSwarm {
				s.agentID = kimi.FirstOf(s.agentID, res.AgentID, args.Resume)
				s.agent = kimi.FirstOf(res.Type, s.agent)
				if args.Fork && args.SubagentType == "" {
					s.agent = a.b.Conv.Agent
				}
			} else if i < len(args.ResumeIDs) {
				s.agentID = kimi.FirstOf(s.agentID, args.ResumeIDs[i])
			}
			if s.task != nil && s.task.SubagentType != "" {
				s.agent = s.task.SubagentType
			}
			if !kimi.SafeID(s.agentID) {
				s.agentID = ""
			}
			if s.agentID != "" {
				linked[s.agentID] = true
			}
			slots = append(slots, s)
		}
	}
	// Calls nothing links to a sub-agent take this agent's unlinked
	// sub-agents in the order state.json (or the folders) give them.
	var spare []string
	for _, id := range r.children[a.id] {
		if !linked[id] && !r.claimed[id] {
			spare = append(spare, id)
		}
	}
	for _, s := range slots {
		launchFailed := s.d.Done && s.d.IsError && s.entry == nil && !strings.Contains(s.d.Result, "agent_id")
		if s.agentID == "" && len(spare) > 0 && !launchFailed {
			s.agentID, s.byOrder = spare[0], true
			spare = spare[1:]
		}
	}
	claims := map[string][]*slot{}
	for _, s := range slots {
		if s.agentID != "" {
			claims[s.agentID] = append(claims[s.agentID], s)
			r.claimed[s.agentID] = true
		}
	}
	names := map[*importers.Fork]importers.BranchNames{}
	for _, s := range slots {
		list := claims[s.agentID]
		at := make([]time.Time, len(list))
		for j, x := range list {
			at[j] = x.d.At
		}
		w := kimi.Claim(at, slices.Index(list, s))
		br, err := r.branch(a, s, w, depth)
		if err != nil {
			return err
		}
		seen := names[s.d.Fork]
		if seen == nil {
			seen = importers.BranchNames{}
			names[s.d.Fork] = seen
		}
		br.Name = seen.Unique(br.Name)
		s.d.Fork.Branches = append(s.d.Fork.Branches, br)
	}
	for _, f := range a.forks {
		f.JoinAt = kimi.JoinAt(f)
	}
	return r.orphans(a, spare, depth)
}

// branch reads one slot's sub-agent and decides its outcome.
func (r *reader) branch(parent *agentFile, s *slot, w kimi.Window, depth int) (*importers.Branch, error) {
	d := s.d
	var conv *importers.Conversation
	wire := filepath.Join(r.dir, "agents", s.agentID, "wire.jsonl")
	missing := false
	prompt := ""
	if s.agentID != "" && importers.IsFileIn(r.dir, wire) {
		child, err := r.agent(s.agentID, w, depth+1)
		if err != nil {
			return nil, err
		}
		model := ""
		if s.task != nil {
			model = s.task.Model
		}
		conv = r.live(child, model)
		prompt = conv.Live.(*stream).asBranch()
		if child.profile != "" && (s.task == nil || s.task.SubagentType == "") {
			s.agent = child.profile
		}
		conv.Agent = s.agent
	} else {
		conv = &importers.Conversation{Agent: s.agent}
		missing = true
	}
	if conv.Started.IsZero() || d.At.Before(conv.Started) {
		conv.Started = d.At
	}
	title := strings.TrimSpace(kimi.ParseArgs(d.Args).Description)
	if title == "" && s.task != nil {
		title = s.task.Description
	}
	name := kimi.BranchName(title, s.agentID, d.CallID)
	if d.Name == kimi.ToolAgentSwarm && strings.TrimSpace(title) != "" {
		name += " #" + strconv.Itoa(s.i+1) // the swarm's items share its title
	}
	s.prompt = kimi.FirstOf(s.prompt, prompt)
	br := &importers.Branch{Name: name, ID: s.agentID, Agent: s.agent, Instructions: r.opt.Clip(s.prompt), CallID: d.CallID, Args: d.Args, Conv: conv}

	// The outcome: the task's end, else the call's result, else the
	// sub-agent's own last turn, else it never finished.
	childStatus, childEnded, childErr := conv.Status, conv.Ended, conv.Error
	status, errText, ended := record.Status(""), "", time.Time{}
	var term *task
	if s.task != nil {
		term = parent.terminated[s.task.TaskID]
	}
	res := kimi.ParseResult(d.Result)
	switch {
	case term != nil:
		status, errText = kimi.Outcome(term.Status, term.StopReason), term.StopReason
		ended = term.at
		if term.EndedAt != nil {
			ended = kimi.Millis(*term.EndedAt)
		}
		switch {
		case s.entry != nil:
			br.Answer = s.entry.Body
		case d.Done && d.Name != kimi.ToolAgentSwarm && res.Status != "running":
			br.Answer = res.Summary
		}
	case s.entry != nil:
		status = kimi.Outcome(s.entry.Outcome, s.entry.Body)
		ended, br.Answer = d.ResultAt, s.entry.Body
		if status != record.StatusOK {
			errText = s.entry.Body
		}
	case d.Done && d.Name == kimi.ToolAgentSwarm:
		status, errText, ended = record.StatusError, kimi.FirstOf(d.Result, "the swarm failed"), d.ResultAt
	case d.Done && res.Status == "running":
		// A background agent: it ends with its own turn, if that is recorded.
		status, ended, errText = childStatus, childEnded, childErr
		if status == "" && !childEnded.IsZero() {
			status = record.StatusOK
		}
	case d.Done && (res.Status != "" || !d.IsError):
		reason := res.Error
		st := res.Status
		if st == "" {
			st = "completed"
		}
		status, ended, br.Answer = kimi.Outcome(st, reason), d.ResultAt, res.Summary
		if status != record.StatusOK {
			errText = kimi.FirstOf(reason, d.Result)
		}
	case d.Done:
		status, errText, ended, br.Answer = record.StatusError, kimi.FirstOf(d.Result, d.Note, "the Agent call failed"), d.ResultAt, d.Result
	case !childEnded.IsZero():
		status, ended, errText = childStatus, childEnded, childErr
		if status == "" {
			status = record.StatusOK
		}
	default:
		status = record.StatusInterrupted
	}
	if status == "" || status == record.StatusRunning {
		status = record.StatusInterrupted
	}
	if status == record.StatusInterrupted {
		ended = time.Time{}
		errText = kimi.FirstOf(errText, "the sub-agent never finished: nothing says it ended")
	}
	if missing {
		file, why := filepath.Join(r.dir, "agents", parent.id, "wire.jsonl"), d.Name+" call "+d.CallID+" names no sub-agent (no task.started, result or state.json entry links it), so its branch has no steps"
		if s.agentID != "" {
			file, why = wire, "missing, so the branch of "+d.Name+" call "+d.CallID+" has no steps"
		}
		r.log.Note(file, 0, why)
		if status == record.StatusInterrupted {
			errText = why
		}
	} else if s.byOrder {
		r.log.Note(wire, 0, "linked to "+d.Name+" call "+d.CallID+" by order: nothing in the session names the sub-agent that call started")
	}
	if status != record.StatusOK && strings.TrimSpace(errText) == "" {
		errText = kimi.Why(status)
	}
	conv.Status, conv.Error, conv.Ended = status, errText, ended
	return br, nil
}

// orphans attaches the sub-agents of a that no call is linked to, each as a
// fork of its own that the second pass places where it started, and says
// so; sub-agents that never did anything are only counted.
func (r *reader) orphans(a *agentFile, ids []string, depth int) error {
	for _, id := range ids {
		if r.claimed[id] {
			continue
		}
		r.claimed[id] = true
		wire := filepath.Join(r.dir, "agents", id, "wire.jsonl")
		if !importers.IsFileIn(r.dir, wire) {
			r.log.Note(filepath.Join(r.dir, "agents", id), 0, "a sub-agent no call names, with no journal: not imported")
			continue
		}
		child, err := r.agent(id, kimi.Window{}, depth+1)
		if err != nil {
			return err
		}
		if child.steps+len(child.orphans) == 0 {
			r.log.Note(wire, 0, "a sub-agent no call names that never started a turn: not imported")
			continue
		}
		conv := r.live(child, "")
		if conv.Ended.IsZero() {
			conv.Status = record.StatusInterrupted
			conv.Error = "the sub-agent never finished"
		} else if conv.Status == "" {
			conv.Status = record.StatusOK
		}
		br := &importers.Branch{Name: id, ID: id, Agent: conv.Agent, Instructions: conv.Live.(*stream).asBranch(), Conv: conv}
		a.orphans = append(a.orphans, &importers.Fork{At: conv.Started, Tool: kimi.ToolAgent, Context: "none",
			Branches: []*importers.Branch{br}, JoinAt: conv.Ended})
		r.log.Note(wire, 0, "no Agent call of "+a.id+" names this sub-agent; it is imported as a fork of its own where it started")
	}
	// Each goes before the first step that started after it (as inserted
	// one by one into the whole conversation).
	sort.SliceStable(a.orphans, func(i, j int) bool { return a.orphans[i].At.Before(a.orphans[j].At) })
	return nil
}
