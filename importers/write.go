package importers

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/internal/secret"
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
// every conversation ends with a final node; each tool, fork and hand-off
// node names the llm node whose response made it (record.Node.CalledBy:
// the response its step names, else the one it follows). Statuses follow
// DESIGN §13: a conversation that never finished is interrupted, and the
// run's status is its trunk's. Requests are reconstructed (record.FidelityReconstructed)
// from the messages visible to the model, unless the session gives one.
//
// A Live session is recorded as it is read: each step when its reader
// gives it, the run's header (tasks, models, snapshot, options) once the
// trunk has ended; Write keeps no step after recording it.
//
// Every text is redacted on its way (DESIGN §11, Secrets): what a rule of
// internal/secret takes for a secret is stored as [redacted], and the
// run's Options.Redacted says how many values were.
func Write(ctx context.Context, w Writer, s *Session) (string, error) {
	wr, err := write(ctx, w, s)
	return wr.id, err
}

// written is what write recorded.
type written struct {
	id           string
	nodes, convs int
	redacted     *secret.Tally
}

// write is Write, also saying how many nodes and conversations it
// recorded and what it redacted.
func write(ctx context.Context, w Writer, s *Session) (written, error) {
	trunk := s.Trunk
	if trunk == nil {
		trunk = &Conversation{}
	}
	m := &mapper{ctx: ctx, red: &redactor{}}
	cur := newCursor(trunk, m.red)
	// A live trunk's first step says when the session started.
	first, _, err := cur.peek(0)
	if err != nil {
		return written{}, fmt.Errorf("read %s session %s: %w", s.Source.Format, s.Source.ID, err)
	}
	m.first = first.At()
	run := &record.Run{Source: s.Source}
	header(run, s, trunk, m)
	err = w.ImportRun(ctx, run, func(add func(*record.Node) error) error {
		m.add, m.last = add, run.Started
		m.red.conversation(trunk)
		if _, err := m.conversation(trunk, cur, "", 0, 0, newRequest(trunk.System, trunk.Tools), time.Time{}, ""); err != nil {
			return err
		}
		// The trunk has ended: what the session says of itself is final.
		header(run, s, trunk, m)
		run.Status, run.Error = convStatus(trunk)
		run.Error = m.red.text(run.Error)
		if n := m.red.tally.Total(); n > 0 {
			run.Options.Redacted = n
		}
		last := m.last
		if run.Started.After(last) {
			last = run.Started
		}
		run.Ended = s.Ended
		if run.Ended.IsZero() || run.Ended.Before(last) {
			run.Ended = last
		}
		return nil
	})
	// The tally alone outlives the write, not the redactor (the last
	// bodies' messages it keeps).
	tally := m.red.tally
	wr := written{id: run.ID, nodes: int(m.seq), convs: m.convs, redacted: &tally}
	flatReport(s, m.flattened)
	if err != nil {
		return wr, fmt.Errorf("record %s session %s: %w", s.Source.Format, s.Source.ID, err)
	}
	return wr, nil
}

// header sets run's fields from what s says so far (a live session's
// header is final once its trunk has ended); m has recorded the nodes so
// far, whose models the run lists after the session's own.
func header(run *record.Run, s *Session, trunk *Conversation, m *mapper) {
	run.Source = s.Source
	run.Tasks, run.Project = m.red.tasks(s.Tasks), m.red.project(s.Project)
	run.Models = nil
	seen := map[string]bool{}
	for _, list := range [][]string{s.Models, m.models} {
		for _, name := range list {
			if name != "" && !seen[name] {
				seen[name] = true
				run.Models = append(run.Models, name)
			}
		}
	}
	run.Started = s.Started
	if run.Started.IsZero() {
		run.Started = trunk.Started
	}
	if run.Started.IsZero() && trunk.Live == nil {
		run.Started = firstTime(trunk)
	}
	if run.Started.IsZero() {
		run.Started = m.first // a live trunk's first step with a time, once recorded
	}
	if run.Started.IsZero() {
		run.Started = trunk.Ended
	}
	run.Options = record.Options{RequestsLack: s.RequestsLack, Instructions: s.Instructions, ProjectDir: s.Dir}
	if s.Dir != "" {
		if run.Project.Name == "" {
			run.Project.Name = filepath.Base(s.Dir)
		}
	}
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
	ctx    context.Context
	add    func(*record.Node) error
	seq    int64
	last   time.Time // the latest moment recorded so far
	first  time.Time // the time of the trunk's first step that has one
	convs  int       // conversations recorded (the trunk and every branch)
	models []string  // the models of the responses recorded, in order, once each
	seen   map[string]bool
	red    *redactor // every text on its way to the store
	flat   int       // > 0 while recording sub-agents flat, past MaxDepth (flatten)
	// flattened counts the sub-agents recorded flat.
	flattened int
}

// model notes a response's model for the run's list.
func (m *mapper) model(name string) {
	if name == "" || m.seen[name] {
		return
	}
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	m.seen[name] = true
	m.models = append(m.models, name)
}

func (m *mapper) emit(n *record.Node) error {
	if err := m.ctx.Err(); err != nil {
		return err
	}
	m.seq++
	n.Seq = m.seq
	n.Error = m.red.text(n.Error) // the conversation's own error among others
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

// conversation records c's nodes, read through cur: c is the
// conversation at branch path path, opened by fork forkSeq (0 for the
// trunk), at fork depth depth; req holds what the model sees when c starts;
// start and agent stand in for c's own when it has none. It returns the
// text of c's last final step.
//
// While m.flat > 0, c is a sub-agent recorded flat in the conversation at
// path (flatten): its steps are that conversation's nodes, and it records
// no final node of its own.
func (m *mapper) conversation(c *Conversation, cur *cursor, path string, forkSeq int64, depth int, req *request, start time.Time, agent string) (string, error) {
	if m.flat == 0 {
		m.convs++
	}
	if _, _, err := cur.peek(0); err != nil { // a live conversation's start
		return "", err
	}
	if c.Agent != "" {
		agent = c.Agent
	}
	if agent == "" {
		agent = "main"
	}
	at := c.Started // the conversation's clock: the latest step time seen
	if at.IsZero() {
		at = start
	}
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
	lastFinal := ""
	// The joins of detached forks not recorded yet, in the order their
	// results came: each goes before the first later step that started
	// after it (the parent's own steps made meanwhile come first).
	var pending []*record.Node
	flush := func(before time.Time) error {
		for len(pending) > 0 && (before.IsZero() || !pending[0].Started.After(before)) {
			j := pending[0]
			pending = pending[1:]
			if err := m.emit(j); err != nil {
				return err
			}
			if j.Started.After(at) {
				at = j.Started
			}
		}
		return nil
	}
	// The llm node whose calls the steps that follow it are (0: none) and
	// its source id: a call is its response's when it names that response,
	// or names none and follows it.
	var caller int64
	callerID := ""
	calledBy := func(response string) int64 {
		if response != "" && response != callerID {
			return 0
		}
		return caller
	}
	for i := 0; ; i++ {
		st, ok, err := cur.next()
		if err != nil {
			return "", err
		}
		if !ok {
			break
		}
		if err := st.Check(); err != nil {
			where := "the trunk"
			if path != "" {
				where = "branch " + path
			}
			return "", fmt.Errorf("%s, step %d: %w", where, i+1, err)
		}
		if t := st.At(); len(pending) > 0 && !t.IsZero() {
			if err := flush(t); err != nil { // a join at t comes before the step
				return "", err
			}
		}
		if depth == 0 && m.first.IsZero() {
			m.first = st.At()
		}
		endedWithFinal = false
		switch {
		case st.User != nil:
			n := node(record.KindUser, st.User.At)
			n.Text = st.User.Text
			if err := m.emit(n); err != nil {
				return "", err
			}
			req.user(st.User.Text)
			caller, callerID = 0, ""
		case st.LLM != nil:
			l := st.LLM
			n := node(record.KindLLM, l.Started)
			if l.Agent != "" {
				n.Agent = l.Agent
			}
			n.Ended, n.Status, n.Error = l.Ended, l.Status, l.Error
			calls, err := callsAfter(cur)
			if err != nil {
				return "", err
			}
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
					names = append(names, cl.Name)
				}
			}
			resp := l.Response
			if resp == nil {
				resp = req.response(l.Model, l.Content, calls, u)
			}
			n.LLM = &record.LLM{Model: l.Model, Calls: names, Usage: u, Content: l.Content,
				Request: body, Response: resp, Fidelity: record.FidelityReconstructed}
			m.model(l.Model)
			if err := m.emit(n); err != nil {
				return "", err
			}
			caller, callerID = n.Seq, l.ID
			if len(names) == 0 {
				caller = 0 // it called nothing: what follows is not its
			}
			if n.Ended.After(at) {
				at = n.Ended
			}
			req.assistant(l.Content, calls)
		case st.Tool != nil:
			t := st.Tool
			n := node(record.KindTool, t.Started)
			if t.Agent != "" {
				n.Agent = t.Agent
			}
			n.Ended, n.Status, n.Error = t.Ended, t.Status, t.Error
			if t.Ended.IsZero() && t.Status == "" {
				n.Status, n.Error = record.StatusInterrupted, "no result was recorded for this call"
			}
			n.Tool = &record.Tool{CallID: t.CallID, Name: t.Name, Args: t.Args, Result: t.Result, Research: t.Research}
			n.CalledBy = calledBy(t.Response)
			if err := m.emit(n); err != nil {
				return "", err
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
			n.Status, n.Error = h.Status, h.Error
			n.CalledBy = calledBy("")
			if err := m.emit(n); err != nil {
				return "", err
			}
			if h.To != "" {
				agent = h.To
			}
			if h.Tools != nil {
				req.setTools(h.Tools)
			}
		case st.Fork != nil:
			fn := node(record.KindFork, st.Fork.At)
			fn.CalledBy = calledBy(st.Fork.Response)
			j, err := m.fork(st.Fork, fn, req)
			if err != nil {
				return "", err
			}
			if j != nil { // detached: its join comes among the later steps
				k := len(pending)
				for k > 0 && pending[k-1].Started.After(j.Started) {
					k--
				}
				pending = slices.Insert(pending, k, j)
			} else if st.Fork.JoinAt.After(at) {
				at = st.Fork.JoinAt
			}
		case st.Final != nil:
			n := node(record.KindFinal, st.Final.At)
			if st.Final.Agent != "" {
				n.Agent = st.Final.Agent
			}
			n.Text = st.Final.Text
			n.Status, n.Error = st.Final.Status, st.Final.Error
			_, more, err := cur.peek(0)
			if err != nil {
				return "", err
			}
			if status, errMsg := convStatus(c); !more && status != record.StatusOK {
				n.Status, n.Error = status, errMsg
			}
			if !more {
				if err := flush(time.Time{}); err != nil {
					return "", err
				}
			}
			if m.flat == 0 {
				if err := m.emit(n); err != nil {
					return "", err
				}
			}
			endedWithFinal = true
			lastFinal = st.Final.Text
			caller, callerID = 0, ""
		case st.Compact != nil:
			req.reset(c.System, st.Compact.Summary)
			caller, callerID = 0, ""
		}
	}
	if err := flush(time.Time{}); err != nil {
		return "", err
	}
	if endedWithFinal || m.flat > 0 {
		return lastFinal, nil
	}
	end := c.Ended
	if end.IsZero() {
		end = at
	}
	n := node(record.KindFinal, end)
	status, errMsg := convStatus(c)
	n.Status, n.Error = status, errMsg
	if status == record.StatusOK {
		n.Error = ""
	}
	return lastFinal, m.emit(n)
}

// callsAfter lists the tool calls of the response whose steps follow it
// (cur is at them): the tools and delegations up to the next response or
// turn.
func callsAfter(cur *cursor) ([]chat.Call, error) {
	var out []chat.Call
	for i := 0; ; i++ {
		st, ok, err := cur.peek(i)
		if err != nil || !ok {
			return out, err
		}
		switch {
		case st.Tool != nil:
			out = append(out, chat.Call{ID: st.Tool.CallID, Name: st.Tool.Name, Arguments: st.Tool.Args})
		case st.Fork != nil:
			for _, b := range st.Fork.Branches {
				tool := forkTool(st.Fork)
				if b.Tool != "" {
					tool = b.Tool
				}
				out = append(out, chat.Call{ID: b.CallID, Name: tool, Arguments: branchArgs(b)})
			}
		case st.Handoff != nil:
		default:
			return out, nil
		}
	}
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

// fork records a fork node n, each branch's conversation, then the join —
// or, for a detached fork, returns the join for the caller to record
// among the conversation's later steps. A fork whose branches would be
// deeper than MaxDepth is recorded flat (flatten).
func (m *mapper) fork(f *Fork, n *record.Node, req *request) (*record.Node, error) {
	if n.Depth >= MaxDepth {
		return nil, m.flatten(f, n, req)
	}
	ctxName := f.Context
	if ctxName == "" {
		ctxName = "none"
	}
	names := branchNames(f.Branches)
	n.Ended = n.Started
	n.Fork = &record.Fork{Context: ctxName, Tool: f.Tool, Detached: f.Detached}
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
		convs[i] = c
		n.Fork.Branches = append(n.Fork.Branches, record.ForkBranch{Name: names[i], Agent: agent, Instructions: b.Instructions})
	}
	if err := m.emit(n); err != nil {
		return nil, err
	}
	forkSeq := n.Seq
	join := &record.Join{ForkSeq: forkSeq}
	for i, b := range f.Branches {
		c := convs[i]
		path := record.BranchPath(n.Branch, forkSeq, names[i])
		m.red.conversation(c)
		var breq *request
		if ctxName == "inherit" {
			breq = req.inherit()
			breq.toolResult(b.CallID, b.Instructions)
		} else {
			breq = newRequest(c.System, c.Tools)
			breq.user(b.Instructions)
		}
		last, err := m.conversation(c, newCursor(c, m.red), path, forkSeq, n.Depth+1, breq, f.At, n.Fork.Branches[i].Agent)
		if err != nil {
			return nil, err
		}
		status, errMsg := convStatus(c)
		errMsg = m.red.text(errMsg)
		end := c.Ended
		if end.IsZero() {
			end = f.JoinAt
		}
		if end.IsZero() {
			end = m.last
		}
		start := f.At
		if !b.Started.IsZero() {
			start = b.Started
		}
		var dur time.Duration
		if end.After(start) {
			dur = end.Sub(start)
		}
		answer := b.Answer
		if answer == "" && status != record.StatusOK {
			answer = errMsg
		}
		if answer == "" {
			answer = last
		}
		jb := record.JoinBranch{Name: names[i], Agent: n.Fork.Branches[i].Agent, Status: status, Duration: dur, Answer: answer}
		if !start.Equal(f.At) {
			jb.Started = start
		}
		join.Branches = append(join.Branches, jb)
	}
	for i, b := range f.Branches {
		answer := join.Branches[i].Answer
		switch {
		case f.Detached:
			answer = b.Launched // what the call returned; the answers came later
		case f.JoinAt.IsZero():
			answer = "(no result: the sub-agent had not returned when the session ends)"
		}
		req.toolResult(b.CallID, answer)
	}
	if f.JoinAt.IsZero() {
		return nil, nil // never joined: the branches' finals say how each ended
	}
	j := &record.Node{Kind: record.KindJoin, Branch: n.Branch, ForkSeq: n.ForkSeq, Agent: n.Agent, Depth: n.Depth,
		Started: f.JoinAt, Ended: f.JoinAt, Join: join}
	if f.Detached {
		return j, nil
	}
	return nil, m.emit(j)
}

// branchNames makes the branches' names usable as path elements: no
// slash, none empty, unique among the siblings.
func branchNames(bs []*Branch) []string {
	out := make([]string, len(bs))
	names := BranchNames{}
	for i, b := range bs {
		name := strings.TrimSpace(strings.ReplaceAll(b.Name, "/", "-"))
		if name == "" {
			name = fmt.Sprintf("branch-%d", i+1)
		}
		out[i] = names.Unique(name)
	}
	return out
}
