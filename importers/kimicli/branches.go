package kimicli

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/events"
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

// release builds the branches of a fork of the trunk being handed over:
// one per Agent call, with the sub-agent's conversation read from its own
// folder as the branch is read (or rebuilt from its forwarded events when
// the folder is missing). The fork's join time is known once every branch
// has been read.
func (r *reader) release(f *importers.Fork, dels []*events.Delegation) error {
	names := importers.BranchNames{}
	live := 0
	for _, d := range dels {
		i := r.taken
		r.taken++
		a := kimi.ParseArgs(d.Args)
		var res kimi.Result
		if d.Done {
			res = kimi.ParseResult(d.Result)
		}
		agentID := agentOf(res, r.wrappedAgent[d.CallID], a)
		w := kimi.Window{}
		if i < len(r.scan.calls) && r.scan.calls[i].id == d.CallID {
			w = r.scan.window(agentID, i)
		}
		br, cw, err := r.branch(d, a, res, agentID, w)
		if err != nil {
			return err
		}
		br.Name = names.Unique(br.Name)
		f.Branches = append(f.Branches, br)
		delete(r.wrapped, d.CallID)
		if cw != nil {
			live++
			cw.end = func() {
				if live--; live == 0 {
					f.JoinAt = kimi.JoinAt(f)
				}
			}
		}
	}
	if live == 0 {
		f.JoinAt = kimi.JoinAt(f)
	}
	return nil
}

// branch builds the branch of one Agent call; when the sub-agent has its
// own journal, the branch's conversation is Live, read by the wire
// returned, and its outcome is set once that is read.
func (r *reader) branch(d *events.Delegation, a kimi.Args, res kimi.Result, agentID string, w kimi.Window) (*importers.Branch, *wire, error) {
	sub := filepath.Join(r.dir, "subagents", agentID)
	var m meta
	hasMeta := false
	if agentID != "" {
		ok, err := kimi.ReadJSONIn(r.dir, filepath.Join(sub, "meta.json"), &m)
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
	var cw *wire
	prompt := ""
	missing := ""
	switch {
	case agentID != "" && r.ownWire(agentID):
		var err error
		if cw, err = r.openWire(filepath.Join(sub, "wire.jsonl"), r.newBuilder(agent), w, false); err != nil {
			return nil, nil, err
		}
		first, err := cw.peek()
		if err != nil {
			return nil, nil, err
		}
		if first.User != nil { // the parent's prompt: the fork's instructions
			prompt, cw.dropFirst = first.User.Text, true
		}
		conv = &importers.Conversation{Agent: agent, Live: cw}
		cw.c, cw.start, cw.model = conv, d.At, model
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
	if cw == nil {
		for _, st := range conv.Steps {
			if st.LLM != nil && st.LLM.Model == "" {
				st.LLM.Model = model
			}
		}
		if conv.Started.IsZero() || d.At.Before(conv.Started) {
			conv.Started = d.At
		}
		prompt = events.AsBranch(conv)
	}

	instructions := kimi.FirstOf(a.Prompt, prompt)
	if instructions == "" && agentID != "" {
		instructions = r.readPrompt(filepath.Join(sub, "prompt.txt"))
	}
	if agentID != "" {
		conv.System = r.systemPrompt(filepath.Join(sub, "context.jsonl"))
	}
	name := kimi.BranchName(kimi.FirstOf(strings.TrimSpace(a.Description), m.Description), agentID, d.CallID)
	br := &importers.Branch{Name: name, ID: agentID, Agent: agent, Instructions: r.opt.Clip(instructions), CallID: d.CallID, Args: d.Args, Conv: conv}
	o := outcome{r: r, d: d, a: a, res: res, agentID: agentID, sub: sub, m: m, hasMeta: hasMeta, missing: missing}
	if cw == nil {
		o.set(br, conv, conv.Ended)
	} else {
		cw.atEOF = func() { o.set(br, conv, cw.b.Conv.Ended) }
	}
	return br, cw, nil
}

// outcome is what decides how a branch ended: the call's result, the
// background task's notice or runtime, the sub-agent's meta.json and
// output, whether its journal is missing.
type outcome struct {
	r       *reader
	d       *events.Delegation
	a       kimi.Args
	res     kimi.Result
	agentID string
	sub     string
	m       meta
	hasMeta bool
	missing string
}

// set sets the branch's answer and its conversation's outcome; childEnded
// is when the sub-agent's own conversation ended (zero: never).
func (o outcome) set(br *importers.Branch, conv *importers.Conversation, childEnded time.Time) {
	r, d, a, res, agentID, sub, m, hasMeta := o.r, o.d, o.a, o.res, o.agentID, o.sub, o.m, o.hasMeta
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
		br.Answer = r.readSummary(filepath.Join(sub, "output"))
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
		if stage := r.lastStage(filepath.Join(sub, "output")); stage != "" && agentID != "" {
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
	if o.missing != "" {
		file, why := filepath.Join(r.dir, "wire.jsonl"), "Agent call "+d.CallID+" names no sub-agent (no result or forwarded event gives its agent_id), so its branch has no steps"
		if agentID != "" {
			file, why = filepath.Join(r.dir, filepath.FromSlash(o.missing)), "missing, so the branch of Agent call "+d.CallID+" has no steps"
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
	ok, err := kimi.ReadJSONIn(r.dir, p, &rt)
	if err != nil {
		r.log.Note(p, 0, "unreadable: "+err.Error())
	}
	return rt, ok && err == nil
}

// readPrompt is the head of a sub-agent's prompt.txt, in the session's
// folder.
func (r *reader) readPrompt(path string) string {
	f, err := importers.OpenIn(r.dir, path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, int64(r.opt.TextCap())+1))
	return r.opt.Clip(string(b))
}

// tail returns the last n bytes of a file in the session's folder.
func (r *reader) tail(path string, n int64) string {
	f, err := importers.OpenIn(r.dir, path)
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
func (r *reader) lastStage(path string) string {
	stage := ""
	sc := bufio.NewScanner(strings.NewReader(r.tail(path, 64<<10)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "[stage] "); ok {
			stage = strings.TrimSpace(s)
		}
	}
	return stage
}

// readSummary is the text after the last "[summary]" of an output file.
func (r *reader) readSummary(path string) string {
	t := r.tail(path, int64(r.opt.TextCap()))
	if i := strings.LastIndex(t, "\n[summary]\n"); i >= 0 {
		return strings.TrimSpace(t[i+len("\n[summary]\n"):])
	}
	return ""
}

// orphans reads the sub-agents of subagents/ that no Agent call of the
// trunk names (as the first pass found), each a fork of its own that the
// trunk places where it started, and says so; sub-agents that never did
// anything are only counted.
func (r *reader) orphans() error {
	claims := r.scan.claims
	// What reading them finds is reported after the session's own
	// problems, as they are placed after its calls' sub-agents.
	main := r.log
	r.log = kimi.NewLog(&r.later, r.opt, r.dir)
	defer func() { r.log = main }()
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
		if _, err := kimi.ReadJSONIn(r.dir, filepath.Join(sub, "meta.json"), &m); err != nil {
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
		prompt := kimi.FirstOf(events.AsBranch(conv), r.readPrompt(filepath.Join(sub, "prompt.txt")))
		conv.System = r.systemPrompt(filepath.Join(sub, "context.jsonl"))
		br := &importers.Branch{Name: kimi.BranchName(m.Description, id, ""), ID: id, Agent: agent, Instructions: r.opt.Clip(prompt), Conv: conv}
		r.orphan = append(r.orphan, &importers.Fork{At: conv.Started, Tool: kimi.ToolAgent, Context: "none",
			Branches: []*importers.Branch{br}, JoinAt: conv.Ended})
		r.log.Note(filepath.Join(sub, "wire.jsonl"), 0, "no Agent call of the session names this sub-agent; it is imported as a fork of its own where it started")
	}
	sort.SliceStable(r.orphan, func(i, j int) bool { return r.orphan[i].At.Before(r.orphan[j].At) })
	return nil
}

// systemPrompt is the system prompt a context.jsonl starts with (its
// _system_prompt marker line), or "": a file of the session's folder.
func (r *reader) systemPrompt(path string) string {
	f, err := importers.OpenIn(r.dir, path)
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
	return r.opt.Clip(m.Content)
}
