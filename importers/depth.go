package importers

import (
	"fmt"

	"github.com/inspect-dev/inspect/record"
)

// MaxDepth is the deepest fork depth an import records: the trunk is at
// depth 0, its sub-agents at 1, theirs at 2. A sub-agent nested deeper —
// no tool nests sub-agents sixteen levels deep, a crafted trace may nest
// them by the thousand — is recorded flat in its ancestor at MaxDepth
// (flatten), with a note on its node and in the import's report, so what
// an import stores and every reader of it stays linear in the nodes.
const MaxDepth = 16

// flatNote is the note a flattened sub-agent's delegation node carries.
var flatNote = fmt.Sprintf("a sub-agent nested deeper than %d levels, recorded flat: its steps are the nodes before this one in this conversation", MaxDepth)

// flatten records fork f — made by the conversation of fork node n, at
// MaxDepth already — flat in that conversation: for each branch in order,
// the branch's steps as nodes of the conversation (their own forks flat
// too, no final node), then the delegation as a tool node (the fork's
// tool, the branch's instructions as arguments, its answer as result, its
// status, and flatNote). n itself is not recorded: there is no fork.
func (m *mapper) flatten(f *Fork, n *record.Node, req *request) error {
	m.flat++
	defer func() { m.flat-- }()
	for _, b := range f.Branches {
		m.flattened++
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
		m.red.conversation(c)
		var breq *request
		if f.Context == "inherit" {
			breq = req.inherit()
			breq.toolResult(b.CallID, b.Instructions)
		} else {
			breq = newRequest(c.System, c.Tools)
			breq.user(b.Instructions)
		}
		last, err := m.conversation(c, newCursor(c, m.red), n.Branch, n.ForkSeq, n.Depth, breq, f.At, agent)
		if err != nil {
			return err
		}
		status, errMsg := convStatus(c)
		errMsg = m.red.text(errMsg)
		end := c.Ended
		if end.IsZero() {
			end = f.JoinAt
		}
		if end.IsZero() || end.Before(f.At) {
			end = m.last
		}
		answer := b.Answer
		if answer == "" && status != record.StatusOK {
			answer = errMsg
		}
		if answer == "" {
			answer = last
		}
		sent := answer // what the delegation's result told the model
		switch {
		case f.Detached:
			sent = b.Launched
		case f.JoinAt.IsZero():
			sent = "(no result: the sub-agent had not returned when the session ends)"
			answer = sent
		}
		note := flatNote
		if status != record.StatusOK && errMsg != "" {
			note = errMsg + " (" + flatNote + ")"
		}
		t := &record.Node{Kind: record.KindTool, Branch: n.Branch, ForkSeq: n.ForkSeq, Agent: n.Agent, Depth: n.Depth,
			Started: f.At, Ended: end, Status: status, Error: note,
			Tool: &record.Tool{CallID: b.CallID, Name: forkTool(f), Args: branchArgs(b), Result: answer}}
		if err := m.emit(t); err != nil {
			return err
		}
		req.toolResult(b.CallID, sent)
	}
	return nil
}

// flatReport is the import report's note of the sub-agents recorded flat.
func flatReport(s *Session, flattened int) {
	if flattened == 0 {
		return
	}
	s.Report.Problems = append(s.Report.Problems, Problem{File: s.Source.Path,
		Err: fmt.Sprintf("%d %s nested deeper than %d levels recorded flat in their ancestor at depth %d (inspect imports %d levels of sub-agents)",
			flattened, map[bool]string{true: "sub-agent", false: "sub-agents"}[flattened == 1], MaxDepth, MaxDepth, MaxDepth)})
}
