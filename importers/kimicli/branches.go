package kimicli

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
	"github.com/inspect-dev/inspect/record"
)

// meta is subagents/<id>/meta.json.
type meta struct {
	AgentID     string  `json:"agent_id"`
	Type        string  `json:"subagent_type"`
	Status      string  `json:"status"`
	Description string  `json:"description"`
	CreatedAt   float64 `json:"created_at"`
	UpdatedAt   float64 `json:"updated_at"`
	LaunchSpec  struct {
		EffectiveModel *string `json:"effective_model"`
	} `json:"launch_spec"`
}

// taskRuntime is tasks/<id>/runtime.json of a background agent.
type taskRuntime struct {
	Status   string   `json:"status"`
	Finished *float64 `json:"finished_at"`
	TimedOut bool     `json:"timed_out"`
	Reason   *string  `json:"failure_reason"`
}

// branches turns every Agent call of the trunk into a branch of its step's
// fork, with the sub-agent's conversation read from its own folder (or
// rebuilt from its forwarded events when the folder is missing), and
// attaches the sub-agents no call names.
// call is one Agent call with what its arguments and result say.
type call struct {
	d       *kimi.Delegation
	args    kimi.Args
	res     kimi.Result
	agentID string
}

func (r *reader) branches(trunk *kimi.Builder) error {
	calls := make([]*call, 0, len(trunk.Delegations))
	claims := map[string][]*call{} // agent id -> the calls that ran it, in order
	for _, d := range trunk.Delegations {
		c := &call{d: d, args: kimi.ParseArgs(d.Args)}
		if d.Done {
			c.res = kimi.ParseResult(d.Result)
		}
		c.agentID = kimi.FirstOf(c.res.AgentID, r.wrappedAgent[d.CallID], c.args.Resume)
		if !kimi.SafeID(c.agentID) {
			c.agentID = ""
		}
		calls = append(calls, c)
		if c.agentID != "" {
			claims[c.agentID] = append(claims[c.agentID], c)
		}
	}
	names := map[*importers.Fork]map[string]int{}
	for _, c := range calls {
		w := kimi.Window{}
		if list := claims[c.agentID]; len(list) > 1 {
			at := make([]time.Time, len(list))
			for i, x := range list {
				at[i] = x.d.At
			}
			w = kimi.Claim(at, slices.Index(list, c))
		}
		br, err := r.branch(c.d, c.args, c.res, c.agentID, w)
		if err != nil {
			return err
		}
		seen := names[c.d.Fork]
		if seen == nil {
			seen = map[string]int{}
			names[c.d.Fork] = seen
		}
		br.Name = kimi.UniqueName(seen, br.Name)
		c.d.Fork.Branches = append(c.d.Fork.Branches, br)
	}
	for _, st := range trunk.Conv.Steps {
		if f := st.Fork; f != nil {
			f.JoinAt = kimi.JoinAt(f)
		}
	}
	return r.orphans(trunk.Conv, claims)
}

// branch builds the branch of one Agent call.
func (r *reader) branch(d *kimi.Delegation, a kimi.Args, res kimi.Result, agentID string, w kimi.Window) (*importers.Branch, error) {
	sub := filepath.Join(r.dir, "subagents", agentID)
	var m meta
	hasMeta := false
	if agentID != "" {
		ok, err := kimi.ReadJSON(filepath.Join(sub, "meta.json"), &m)
		if err != nil {
			r.log.Note(filepath.Join(sub, "meta.json"), 0, "unreadable: "+err.Error())
		}
		hasMeta = ok && err == nil
	}
	agent := kimi.FirstOf(res.Type, m.Type, a.SubagentType, kimi.DefaultSubagentType)
	model := ""
	if m.LaunchSpec.EffectiveModel != nil {
		model = *m.LaunchSpec.EffectiveModel
	}
	model = kimi.FirstOf(a.Model, model)
	if model != "" {
		r.models[model] = true
	}

	// The conversation: the sub-agent's own journal, else its forwarded events.
	var conv *importers.Conversation
	missing := ""
	switch {
	case agentID != "" && r.ownWire(agentID):
		b := r.newBuilder(agent)
		if err := r.readWire(filepath.Join(sub, "wire.jsonl"), b, w, false); err != nil {
			return nil, err
		}
		b.Finish()
		conv = b.Conv
	case r.wrapped[d.CallID] != nil:
		if agentID != "" {
			r.log.Note(filepath.Join(sub, "wire.jsonl"), 0, "missing; the branch is rebuilt from the sub-agent events the session's own journal forwarded")
		}
		b := r.wrapped[d.CallID]
		b.Finish()
		conv = b.Conv
		b.Conv.Agent = agent
	default:
		conv = &importers.Conversation{Agent: agent}
		if agentID != "" {
			missing = "subagents/" + agentID + "/wire.jsonl"
		} else {
			missing = "-"
		}
	}
	for _, st := range conv.Steps {
		if st.LLM != nil && st.LLM.Model == "" {
			st.LLM.Model = model
		}
	}
	if conv.Started.IsZero() || d.At.Before(conv.Started) {
		conv.Started = d.At
	}

	instructions := kimi.FirstOf(a.Prompt, kimi.AsBranch(conv))
	if instructions == "" && agentID != "" {
		instructions = readPrompt(filepath.Join(sub, "prompt.txt"))
	}
	if agentID != "" {
		conv.System = systemPrompt(filepath.Join(sub, "context.jsonl"))
	}
	name := agentID
	if name == "" {
		name = strings.ReplaceAll(kimi.FirstOf(strings.TrimSpace(a.Description), "call-"+d.CallID), "/", "-")
	}
	br := &importers.Branch{Name: name, Agent: agent, Instructions: kimi.Clip(instructions), CallID: d.CallID, Args: d.Args, Conv: conv}

	// The outcome.
	childEnded := conv.Ended
	status, errText, ended := record.Status(""), "", time.Time{}
	background := res.TaskID != "" || a.Background && !d.IsError
	switch {
	case background && d.Done && !d.IsError:
		taskID := res.TaskID
		if n, ok := r.notices[taskID]; ok && taskID != "" {
			status, errText = kimi.Outcome(n.status, n.reason), n.reason
			ended = firstTime(n.ended, n.at)
		} else if rt, ok := r.runtime(taskID); ok {
			st := rt.Status
			if rt.TimedOut {
				st = "timed_out"
			}
			reason := ""
			if rt.Reason != nil {
				reason = *rt.Reason
			}
			status, errText = kimi.Outcome(st, reason), reason
			if rt.Finished != nil && status != record.StatusInterrupted {
				ended = kimi.Seconds(*rt.Finished)
			}
		} else if hasMeta && m.Status != "running_background" {
			status = kimi.Outcome(m.Status, "")
			if status != record.StatusInterrupted {
				ended = firstTime(childEnded, kimi.Seconds(m.UpdatedAt))
			}
		} else {
			status = record.StatusInterrupted
		}
		br.Answer = readSummary(filepath.Join(sub, "output"))
	case d.Done && !d.IsError:
		status = kimi.Outcome(kimi.FirstOf(res.Status, "completed"), "")
		ended = d.ResultAt
		br.Answer = res.Summary
	case d.Done:
		reason := strings.TrimSpace(d.Note + " " + d.Result)
		status = kimi.Outcome("failed", reason)
		errText = kimi.FirstOf(d.Result, d.Note, "the sub-agent failed")
		ended = d.ResultAt
		br.Answer = d.Result
	default:
		st, reason := "", ""
		if hasMeta {
			st = m.Status
		}
		if stage := lastStage(filepath.Join(sub, "output")); stage != "" && agentID != "" {
			switch {
			case stage == "cancelled":
				st = "killed"
			case strings.HasPrefix(stage, "failed"):
				st, reason = "failed", strings.TrimPrefix(strings.TrimPrefix(stage, "failed"), ": ")
			}
		}
		if st == "idle" {
			st = "" // idle without a result: it never got back to the parent
		}
		status = kimi.Outcome(st, reason)
		errText = reason
		if status == record.StatusInterrupted {
			errText = "the sub-agent never finished: no result came back to the Agent call"
		} else if status == record.StatusCancelled {
			ended = firstTime(childEnded, kimi.Seconds(m.UpdatedAt))
		}
	}
	if missing != "" {
		file, why := filepath.Join(r.dir, "wire.jsonl"), "Agent call "+d.CallID+" names no sub-agent (no result or forwarded event gives its agent_id), so its branch has no steps"
		if agentID != "" {
			file, why = filepath.Join(r.dir, filepath.FromSlash(missing)), "missing, so the branch of Agent call "+d.CallID+" has no steps"
		}
		r.log.Note(file, 0, why)
		if !d.Done {
			errText = why
		}
	}
	if status != record.StatusOK && strings.TrimSpace(errText) == "" {
		errText = kimi.Why(status)
	}
	conv.Status, conv.Error, conv.Ended = status, errText, ended
	if status == record.StatusInterrupted {
		conv.Ended = time.Time{}
	}
	return br, nil
}

func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func (r *reader) runtime(taskID string) (taskRuntime, bool) {
	var rt taskRuntime
	if !kimi.SafeID(taskID) {
		return rt, false
	}
	p := filepath.Join(r.dir, "tasks", taskID, "runtime.json")
	ok, err := kimi.ReadJSON(p, &rt)
	if err != nil {
		r.log.Note(p, 0, "unreadable: "+err.Error())
	}
	return rt, ok && err == nil
}

func readPrompt(path string) string {
	return kimi.Clip(string(importers.Head(path, kimi.MaxText+1)))
}

// tail returns the last n bytes of a file.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if off := fi.Size() - n; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// lastStage is the last "[stage] …" line of a sub-agent's output file.
func lastStage(path string) string {
	stage := ""
	sc := bufio.NewScanner(strings.NewReader(tail(path, 64<<10)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "[stage] "); ok {
			stage = strings.TrimSpace(s)
		}
	}
	return stage
}

// readSummary is the text after the last "[summary]" of an output file.
func readSummary(path string) string {
	t := tail(path, kimi.MaxText)
	if i := strings.LastIndex(t, "\n[summary]\n"); i >= 0 {
		return strings.TrimSpace(t[i+len("\n[summary]\n"):])
	}
	return ""
}

// orphans attaches the sub-agents of subagents/ that no Agent call of the
// trunk names, each as a fork of its own at the time it started, and says
// so; sub-agents that never did anything are only counted.
func (r *reader) orphans(trunk *importers.Conversation, claims map[string][]*call) error {
	entries, err := os.ReadDir(filepath.Join(r.dir, "subagents"))
	if err != nil {
		return nil
	}
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || claims[id] != nil || !kimi.SafeID(id) {
			continue
		}
		if !r.ownWire(id) {
			r.log.Note(filepath.Join(r.dir, "subagents", id), 0, "a sub-agent folder no Agent call names, with no journal: not imported")
			continue
		}
		sub := filepath.Join(r.dir, "subagents", id)
		var m meta
		if _, err := kimi.ReadJSON(filepath.Join(sub, "meta.json"), &m); err != nil {
			r.log.Note(filepath.Join(sub, "meta.json"), 0, "unreadable: "+err.Error())
		}
		agent := kimi.FirstOf(m.Type, kimi.DefaultSubagentType)
		b := r.newBuilder(agent)
		if err := r.readWire(filepath.Join(sub, "wire.jsonl"), b, kimi.Window{}, false); err != nil {
			return err
		}
		b.Finish()
		conv := b.Conv
		if len(conv.Steps) == 0 {
			r.log.Note(filepath.Join(sub, "wire.jsonl"), 0, "a sub-agent no Agent call names that never started a turn: not imported")
			continue
		}
		model := ""
		if m.LaunchSpec.EffectiveModel != nil {
			model = *m.LaunchSpec.EffectiveModel
			if model != "" {
				r.models[model] = true
			}
		}
		for _, st := range conv.Steps {
			if st.LLM != nil && st.LLM.Model == "" {
				st.LLM.Model = model
			}
		}
		conv.Status = kimi.Outcome(m.Status, "")
		if conv.Status == record.StatusInterrupted {
			conv.Ended = time.Time{}
			conv.Error = "the sub-agent never finished"
		} else if conv.Ended.IsZero() {
			conv.Ended = kimi.Seconds(m.UpdatedAt)
		}
		prompt := kimi.FirstOf(kimi.AsBranch(conv), readPrompt(filepath.Join(sub, "prompt.txt")))
		conv.System = systemPrompt(filepath.Join(sub, "context.jsonl"))
		br := &importers.Branch{Name: id, Agent: agent, Instructions: kimi.Clip(prompt), Conv: conv}
		kimi.InsertFork(trunk, &importers.Fork{At: conv.Started, Tool: kimi.ToolAgent, Context: "none",
			Branches: []*importers.Branch{br}, JoinAt: conv.Ended})
		r.log.Note(filepath.Join(sub, "wire.jsonl"), 0, "no Agent call of the session names this sub-agent; it is imported as a fork of its own where it started")
	}
	return nil
}

// systemPrompt is the system prompt a context.jsonl starts with (its
// _system_prompt marker line), or "".
func systemPrompt(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _, _, err := importers.NewLineReader(f).Next()
	if err != nil {
		return ""
	}
	var m struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	if json.Unmarshal(line, &m) != nil || m.Role != "_system_prompt" {
		return ""
	}
	return kimi.Clip(m.Content)
}
