package web

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/chat"
)

// A report holds, for the nodes its findings name, each node in full as
// its page shows it (the request folded, the response, usage, a tool's
// arguments and result), within these bounds: a CI artifact stays a file
// one can open and mail, and says what it cut.
const (
	// reportNodes is how many nodes a report holds in full.
	reportNodes = 40
	// reportBody is the most of one body (a message, a tool result, a
	// response) a report holds.
	reportBody = 16 << 10
	// reportNodeBytes is the most of one node's bodies together a report
	// holds: a long conversation's history is cut from its oldest message.
	reportNodeBytes = 256 << 10
)

// reportDetails fills p.Details with the nodes the report's findings
// name, in the findings' order, once each, at most reportNodes of them.
func (s *Server) reportDetails(ctx context.Context, a *analysed, p *runPage) error {
	seen := map[string]bool{}
	var refs []string
	for _, it := range p.Items {
		if it.F == nil {
			continue
		}
		for _, ref := range it.F.Nodes {
			if !seen[ref] {
				seen[ref] = true
				refs = append(refs, ref)
			}
		}
	}
	in := map[string]bool{}
	for _, ref := range refs {
		if len(p.Details) == reportNodes {
			p.DetailsLeft = append(p.DetailsLeft, ref)
			continue
		}
		seq, err := parseNode(ref)
		if err != nil {
			continue // not a node of the run (a finding names nodes as n<seq>)
		}
		v, err := s.analyzer().Node(ctx, p.ID, seq, analysis.NodeOptions{})
		var nn *analysis.NoNodeError
		if errors.As(err, &nn) {
			continue
		}
		if err != nil {
			return err
		}
		if v.LLM != nil && a.cached() && a.cache != nil {
			v.Cache = &analysis.NodeCache{Report: a.cache}
		}
		np := nodeOf(v, p.ID, seq)
		np.Report = true
		np.cutForReport()
		p.Details = append(p.Details, np)
		in[np.ID] = true
	}
	for _, it := range p.Items {
		if it.F == nil {
			continue
		}
		for _, ref := range it.F.Nodes {
			if in[ref] {
				it.F.InFull = append(it.F.InFull, ref)
			}
		}
	}
	for i := range p.Boxes {
		p.Boxes[i].InFull = in[p.Boxes[i].Node]
	}
	return nil
}

// budget cuts a node's bodies for a report: each to reportBody, all of
// them together to reportNodeBytes.
type budget struct {
	left int
	node string // n<seq>, for the note
	run  string
}

// cut returns s within the budget, with a note saying how much of it is
// not in the report and how to see it whole.
func (b *budget) cut(s string) string {
	limit := min(reportBody, b.left)
	if len(s) <= limit {
		b.left -= len(s)
		return s
	}
	k := max(limit, 0)
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	b.left -= k
	head := s[:k]
	why := fmt.Sprintf("a report holds at most %s of one body", sizeText(reportBody))
	if k < reportBody {
		why = fmt.Sprintf("a report holds at most %s of one node", sizeText(reportNodeBytes))
	}
	note := fmt.Sprintf("[cut: %s of %s not in this report (%s); inspect show %s %s shows it whole]",
		sizeText(len(s)-k), sizeText(len(s)), why, b.run, b.node)
	if head == "" {
		return note
	}
	return head + "\n… " + note
}

// sizeText is a byte count as a reader reads it: 812 bytes, 16 KiB, 1.2 MiB.
func sizeText(n int) string {
	switch {
	case n < 1<<10:
		return plural(n, "byte", "bytes")
	case n < 1<<20:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// cutForReport cuts the node's bodies for a report. The budget goes first
// to what the node did (its response, its tool call, its text), then to
// the request's messages from the newest back, then to the system prompt
// and the tools offered. The node's record is copied, not changed.
func (p *nodePage) cutForReport() {
	b := &budget{left: reportNodeBytes, node: p.ID, run: p.RunID}
	n := *p.Node
	p.Node = &n
	n.Error = b.cut(n.Error)
	n.Text = b.cut(n.Text)
	p.ArgsJSON = b.cut(p.ArgsJSON)
	if n.Tool != nil {
		t := *n.Tool
		t.Result = b.cut(t.Result)
		n.Tool = &t
	}
	if n.Handoff != nil {
		h := *n.Handoff
		h.Reason = b.cut(h.Reason)
		n.Handoff = &h
	}
	if n.Fork != nil {
		f := *n.Fork
		f.Branches = append(f.Branches[:0:0], f.Branches...)
		for i := range f.Branches {
			f.Branches[i].Instructions = b.cut(f.Branches[i].Instructions)
		}
		n.Fork = &f
	}
	if n.Join != nil {
		j := *n.Join
		j.Branches = append(j.Branches[:0:0], j.Branches...)
		for i := range j.Branches {
			j.Branches[i].Answer = b.cut(j.Branches[i].Answer)
		}
		n.Join = &j
	}
	if n.LLM != nil {
		// the llm record's text is shown through the view below
		l := *n.LLM
		n.LLM = &l
	}
	v := p.LLM
	if v == nil {
		return
	}
	if v.Response != nil {
		r := *v.Response
		r.Message.Text = b.cut(r.Message.Text)
		v.Response = &r
	}
	for i := range v.RespCalls {
		v.RespCalls[i].Args = b.cut(v.RespCalls[i].Args)
	}
	v.ResponseRaw = b.cut(v.ResponseRaw)
	v.UsageJSON = b.cut(v.UsageJSON)
	for i := len(v.Messages) - 1; i >= 0; i-- {
		m := &v.Messages[i]
		m.Text = b.cut(m.Text)
		for j := range m.Calls {
			m.Calls[j].Args = b.cut(m.Calls[j].Args)
		}
	}
	v.System = b.cut(v.System)
	for i := range v.Tools {
		v.Tools[i].Description = b.cut(v.Tools[i].Description)
		v.Tools[i].Params = b.cut(v.Tools[i].Params)
	}
	v.RequestRaw = b.cut(v.RequestRaw)
	if v.Request != nil {
		// the template reads the request's format and tool choice from it,
		// its bodies from the view above
		r := chat.Request{Format: v.Request.Format, ToolChoice: v.Request.ToolChoice}
		v.Request = &r
	}
}
