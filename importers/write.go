package importers

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// Writer is where Write records a run; *store.DB satisfies it.
type Writer interface {
	// ImportRun records r: a new run, or — when a run from the same source
	// (r.Source.Format and a non-empty r.Source.ID) is already stored —
	// that run again, under its id, with its nodes replaced. It creates the
	// run (status running), calls nodes with a function that adds one
	// finished node, then finishes the run with r.Status, r.Error and
	// r.Ended as they are after nodes returns. It sets r.ID. An llm node's
	// Request is valid only during the add call that receives it (Write
	// reuses the conversation's buffer): a Writer that keeps it copies it.
	ImportRun(ctx context.Context, r *record.Run, nodes func(add func(*record.Node) error) error) error
}

// Write records session s through w and returns the run's id. The nodes are
// numbered and addressed as our runtime records them (docs/recording.md): a
// conversation's steps in order; a fork node, then each branch's nodes
// (branch path "name", or "parent/name" inside a branch; depth one more
// than the forking conversation; ForkSeq the fork's seq), then the join;
// every conversation ends with a final node. Statuses follow DESIGN §13: a
// conversation that never finished is interrupted, and the run's status is
// its trunk's. Requests are reconstructed (record.FidelityReconstructed)
// from the messages visible to the model, unless the session gives one.
func Write(ctx context.Context, w Writer, s *Session) (string, error) {
	id, _, err := write(ctx, w, s)
	return id, err
}

// write is Write, also returning how many nodes it recorded.
func write(ctx context.Context, w Writer, s *Session) (string, int, error) {
	trunk := s.Trunk
	if trunk == nil {
		trunk = &Conversation{}
	}
	run := &record.Run{
		Started: s.Started,
		Tasks:   s.Tasks,
		Project: s.Project,
		Models:  models(s),
		Source:  s.Source,
	}
	if run.Started.IsZero() {
		run.Started = trunk.Started
	}
	if run.Started.IsZero() {
		run.Started = firstTime(trunk)
	}
	run.Options = map[string]any{}
	if len(s.RequestsLack) > 0 {
		run.Options[record.OptionRequestsLack] = s.RequestsLack
	}
	if len(s.Instructions) > 0 {
		run.Options[record.OptionInstructions] = s.Instructions
	}
	if s.Dir != "" {
		run.Options[record.OptionProjectDir] = s.Dir
		if run.Project.Name == "" {
			run.Project.Name = filepath.Base(s.Dir)
		}
	}
	run.Status, run.Error = convStatus(trunk)
	var m *mapper
	err := w.ImportRun(ctx, run, func(add func(*record.Node) error) error {
		m = &mapper{ctx: ctx, add: add, last: run.Started}
		if err := m.conversation(trunk, "", 0, 0, newRequest(trunk.System, trunk.Tools)); err != nil {
			return err
		}
		run.Ended = s.Ended
		if run.Ended.IsZero() || run.Ended.Before(m.last) {
			run.Ended = m.last
		}
		return nil
	})
	nodes := 0
	if m != nil {
		nodes = int(m.seq)
	}
	if err != nil {
		return run.ID, nodes, fmt.Errorf("record %s session %s: %w", s.Source.Format, s.Source.ID, err)
	}
	return run.ID, nodes, nil
}

// convStatus is a conversation's outcome: its own status when the source
// gave one, else ok when it ended and interrupted when it never did.
func convStatus(c *Conversation) (record.Status, string) {
	switch {
	case c.Status != "" && c.Status != record.StatusRunning:
		return c.Status, c.Error
	case !c.Ended.IsZero():
		return record.StatusOK, c.Error
	}
	msg := c.Error
	if msg == "" {
		msg = "the session ends before this conversation finished"
	}
	return record.StatusInterrupted, msg
}

// models lists the models the session names and every model its responses
// used.
func models(s *Session) []string {
	seen := map[string]bool{}
	var out []string
	addModel := func(m string) {
		if m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, m := range s.Models {
		addModel(m)
	}
	var walk func(c *Conversation)
	walk = func(c *Conversation) {
		if c == nil {
			return
		}
		for _, st := range c.Steps {
			switch {
			case st.LLM != nil:
				addModel(st.LLM.Model)
			case st.Fork != nil:
				for _, b := range st.Fork.Branches {
					walk(b.Conv)
				}
			}
		}
	}
	walk(s.Trunk)
	return out
}

// firstTime is the time of the first thing a conversation did.
func firstTime(c *Conversation) time.Time {
	for _, st := range c.Steps {
		if t := st.At(); !t.IsZero() {
			return t
		}
	}
	return c.Ended
}

// mapper turns conversations into numbered nodes.
type mapper struct {
	ctx  context.Context
	add  func(*record.Node) error
	seq  int64
	last time.Time // the latest moment recorded so far
}

func (m *mapper) emit(n *record.Node) error {
	if err := m.ctx.Err(); err != nil {
		return err
	}
	m.seq++
	n.Seq = m.seq
	if n.Ended.IsZero() || n.Ended.Before(n.Started) {
		n.Ended = n.Started
	}
	if n.Status == "" || n.Status == record.StatusRunning {
		n.Status = record.StatusOK
	}
	if n.Ended.After(m.last) {
		m.last = n.Ended
	}
	return m.add(n)
}

// conversation records c's nodes: c is the conversation at branch path
// path, opened by fork forkSeq (0 for the trunk), at fork depth depth; req
// holds what the model sees when c starts.
func (m *mapper) conversation(c *Conversation, path string, forkSeq int64, depth int, req *request) error {
	agent := c.Agent
	if agent == "" {
		agent = "main"
	}
	status, errMsg := convStatus(c)
	at := c.Started // the conversation's clock: the latest step time seen
	node := func(kind record.Kind, started time.Time) *record.Node {
		if started.IsZero() {
			started = at
		}
		if started.After(at) {
			at = started
		}
		return &record.Node{Kind: kind, Branch: path, ForkSeq: forkSeq, Agent: agent, Depth: depth, Started: started}
	}
	endedWithFinal := false
	for i, st := range c.Steps {
		endedWithFinal = false
		switch {
		case st.User != nil:
			n := node(record.KindUser, st.User.At)
			n.Text = st.User.Text
			if err := m.emit(n); err != nil {
				return err
			}
			req.user(st.User.Text)
		case st.LLM != nil:
			l := st.LLM
			n := node(record.KindLLM, l.Started)
			if l.Agent != "" {
				n.Agent = l.Agent
			}
			n.Ended, n.Status, n.Error = l.Ended, l.Status, l.Error
			calls := callsAfter(c.Steps[i+1:])
			body := l.Request
			if body == nil {
				body = req.body(l.Model)
			}
			u := l.Usage
			if bad := u.Clamp(); len(bad) > 0 && n.Error == "" {
				n.Error = fmt.Sprintf("the source reported impossible usage (%s); recorded within 0..%d", strings.Join(bad, ", "), record.MaxTokens)
			}
			names := l.Calls
			if names == nil {
				for _, cl := range calls {
					names = append(names, cl.name)
				}
			}
			resp := l.Response
			if resp == nil {
				resp = req.response(l.Model, l.Content, calls, u)
			}
			n.LLM = &record.LLM{Model: l.Model, Calls: names, Usage: u, Content: l.Content,
				Request: body, Response: resp, Fidelity: record.FidelityReconstructed}
			if err := m.emit(n); err != nil {
				return err
			}
			if n.Ended.After(at) {
				at = n.Ended
			}
			req.assistant(l.Content, calls)
		case st.Tool != nil:
			t := st.Tool
			n := node(record.KindTool, t.Started)
			n.Ended, n.Status, n.Error = t.Ended, t.Status, t.Error
			if t.Ended.IsZero() && t.Status == "" {
				n.Status, n.Error = record.StatusInterrupted, "no result was recorded for this call"
			}
			n.Tool = &record.Tool{CallID: t.CallID, Name: t.Name, Args: t.Args, Result: t.Result, Research: t.Research}
			if err := m.emit(n); err != nil {
				return err
			}
			if n.Ended.After(at) {
				at = n.Ended
			}
			req.toolResult(t.CallID, t.Result)
		case st.Handoff != nil:
			h := st.Handoff
			n := node(record.KindHandoff, h.At)
			if h.From != "" {
				n.Agent = h.From
			}
			n.Handoff = &record.Handoff{From: n.Agent, To: h.To, Reason: h.Reason}
			if err := m.emit(n); err != nil {
				return err
			}
			if h.To != "" {
				agent = h.To
			}
		case st.Fork != nil:
			if err := m.fork(st.Fork, node(record.KindFork, st.Fork.At), req); err != nil {
				return err
			}
			if st.Fork.JoinAt.After(at) {
				at = st.Fork.JoinAt
			}
		case st.Final != nil:
			n := node(record.KindFinal, st.Final.At)
			n.Text = st.Final.Text
			n.Status, n.Error = st.Final.Status, st.Final.Error
			if i == len(c.Steps)-1 && status != record.StatusOK {
				n.Status, n.Error = status, errMsg
			}
			if err := m.emit(n); err != nil {
				return err
			}
			endedWithFinal = true
		case st.Compact != nil:
			req.reset(c.System, st.Compact.Summary)
		}
	}
	if endedWithFinal {
		return nil
	}
	end := c.Ended
	if end.IsZero() {
		end = at
	}
	n := node(record.KindFinal, end)
	n.Status, n.Error = status, errMsg
	if status == record.StatusOK {
		n.Error = ""
	}
	return m.emit(n)
}

// callsAfter lists the tool calls of the response whose steps follow it:
// the tools and delegations up to the next response or turn.
func callsAfter(steps []Step) []call {
	var out []call
	for _, st := range steps {
		switch {
		case st.Tool != nil:
			out = append(out, call{st.Tool.CallID, st.Tool.Name, st.Tool.Args})
		case st.Fork != nil:
			for _, b := range st.Fork.Branches {
				out = append(out, call{b.CallID, forkTool(st.Fork), branchArgs(b)})
			}
		case st.Handoff != nil:
		default:
			return out
		}
	}
	return out
}

func forkTool(f *Fork) string {
	if f.Tool == "" {
		return "fork"
	}
	return f.Tool
}

// branchArgs is the delegation call's arguments as sent, or rebuilt.
func branchArgs(b *Branch) string {
	if b.Args != "" {
		return b.Args
	}
	a, _ := json.Marshal(struct {
		Description string `json:"description,omitempty"`
		Prompt      string `json:"prompt"`
		Agent       string `json:"subagent_type,omitempty"`
	}{b.Name, b.Instructions, b.Agent})
	return string(a)
}

// fork records a fork node n, each branch's conversation, then the join.
func (m *mapper) fork(f *Fork, n *record.Node, req *request) error {
	ctxName := f.Context
	if ctxName == "" {
		ctxName = "none"
	}
	names := branchNames(f.Branches)
	n.Ended = n.Started
	n.Fork = &record.Fork{Context: ctxName, Tool: f.Tool}
	convs := make([]*Conversation, len(f.Branches))
	for i, b := range f.Branches {
		c := b.Conv
		agent := b.Agent
		if agent == "" && c != nil {
			agent = c.Agent
		}
		if agent == "" {
			agent = n.Agent
		}
		if c == nil {
			c = &Conversation{Started: f.At, Status: record.StatusInterrupted,
				Error: "no transcript of this sub-agent was found"}
		}
		if c.Agent == "" {
			cc := *c
			cc.Agent = agent
			c = &cc
		}
		convs[i] = c
		n.Fork.Branches = append(n.Fork.Branches, record.ForkBranch{Name: names[i], Agent: agent, Instructions: b.Instructions})
	}
	if err := m.emit(n); err != nil {
		return err
	}
	forkSeq := n.Seq
	join := &record.Join{ForkSeq: forkSeq}
	for i, b := range f.Branches {
		c := convs[i]
		path := names[i]
		if n.Branch != "" {
			path = n.Branch + "/" + names[i]
		}
		var breq *request
		if ctxName == "inherit" {
			breq = req.inherit()
			breq.toolResult(b.CallID, b.Instructions)
		} else {
			breq = newRequest(c.System, c.Tools)
			breq.user(b.Instructions)
		}
		if c.Started.IsZero() {
			cc := *c
			cc.Started = f.At
			c = &cc
		}
		if err := m.conversation(c, path, forkSeq, n.Depth+1, breq); err != nil {
			return err
		}
		status, errMsg := convStatus(c)
		end := c.Ended
		if end.IsZero() {
			end = f.JoinAt
		}
		if end.IsZero() {
			end = m.last
		}
		var dur time.Duration
		if end.After(f.At) {
			dur = end.Sub(f.At)
		}
		answer := b.Answer
		if answer == "" && status != record.StatusOK {
			answer = errMsg
		}
		if answer == "" {
			answer = lastFinal(c)
		}
		join.Branches = append(join.Branches, record.JoinBranch{Name: names[i], Agent: n.Fork.Branches[i].Agent,
			Status: status, Duration: dur, Answer: answer})
	}
	for i, b := range f.Branches {
		answer := join.Branches[i].Answer
		if f.JoinAt.IsZero() {
			answer = "(no result: the sub-agent had not returned when the session ends)"
		}
		req.toolResult(b.CallID, answer)
	}
	if f.JoinAt.IsZero() {
		return nil // never joined: the branches' finals say how each ended
	}
	j := &record.Node{Kind: record.KindJoin, Branch: n.Branch, ForkSeq: n.ForkSeq, Agent: n.Agent, Depth: n.Depth,
		Started: f.JoinAt, Ended: f.JoinAt, Join: join}
	return m.emit(j)
}

// lastFinal is the text of a conversation's last final step.
func lastFinal(c *Conversation) string {
	for i := len(c.Steps) - 1; i >= 0; i-- {
		if f := c.Steps[i].Final; f != nil {
			return f.Text
		}
	}
	return ""
}

// branchNames makes the branches' names usable as path elements: no
// slash, none empty, unique among the siblings.
func branchNames(bs []*Branch) []string {
	out := make([]string, len(bs))
	seen := map[string]bool{}
	for i, b := range bs {
		name := strings.TrimSpace(strings.ReplaceAll(b.Name, "/", "-"))
		if name == "" {
			name = fmt.Sprintf("branch-%d", i+1)
		}
		base := name
		for k := 2; seen[name]; k++ {
			name = fmt.Sprintf("%s-%d", base, k)
		}
		seen[name] = true
		out[i] = name
	}
	return out
}
