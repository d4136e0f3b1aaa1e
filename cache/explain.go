package cache

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/cache/prefix"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// snippetRunes bounds the text of a changed line or message quoted in a
// break.
const snippetRunes = 60

// explain names where call c's reuse broke, how its report differs from the
// prediction, and whether its prefix is unstable.
func (a *analysis) explain(c *Call, rep *Report) {
	q := a.prompts.get(c.Node.Seq)
	if c.Match == nil {
		c.Break = Break{Message: -1, Cause: CauseCold, Why: c.cold, Expected: true}
	} else {
		m := a.prompts.get(c.Match.Seq)
		c.Break = a.describe(c, c.Match, a.tree.Break(q.p, m.p))
	}
	c.Mismatch = a.mismatch(c, rep)
	a.unstable(c, rep)
}

// unstable sets c.Unstable when, against the previous request of its
// conversation by the same agent, c's prefix breaks before that request's
// last message (and the history was not cut).
func (a *analysis) unstable(c *Call, rep *Report) {
	q := a.prompts.get(c.Node.Seq)
	prev := c.Previous
	if prev == nil || prev.Agent != c.Node.Agent {
		return
	}
	pq := a.prompts.get(prev.Seq)
	if pq == nil || !pq.ok && !prev.LLM.Exact() {
		return
	}
	pp := pq.p
	br := a.tree.Break(q.p, pp)
	lastStart := len(a.tree.PartBytes(pp.Tools)) + len(a.tree.PartBytes(pp.System))
	if pp.Last != prefix.Root {
		lastStart += a.tree.Offset(pp.Last, a.tree.Depth(pp.Last))
	}
	cut := br.Where == prefix.InMessages && (a.tree.Depth(q.p.Last) < a.tree.Depth(pp.Last) || a.compacted(q, pp, br))
	if br.Shared >= lastStart || cut {
		a.unkeyedChange(c, q, pq, br, rep)
		return
	}
	lost := a.tree.Len(pp) - 1 - br.Shared
	c.Unstable = &Unstable{Previous: prev, Break: a.describe(c, prev, br), Lost: a.tokens(c, lost, rep)}
}

// unkeyedChange sets c.Unkeyed when a part the provider leaves out of the
// compared prefix, and that an endpoint elsewhere compares, changed
// against the previous request while the rest held (br: where the two
// part without it).
func (a *analysis) unkeyedChange(c *Call, q, pq *prompt, br prefix.Break, rep *Report) {
	unkeyed := a.stack.Unkeyed()
	for i := range unkeyed {
		u := &unkeyed[i]
		now, was := q.frame.leftOf(i), pq.frame.leftOf(i)
		if u.Elsewhere == "" || string(now) == string(was) {
			continue
		}
		prev := c.Previous
		// the part stood first in the system prompt, after the tools
		before := len(a.tree.PartBytes(q.p.Tools))
		c.Unkeyed = &UnkeyedChange{Previous: prev, Part: u, What: leftChange(now, was),
			Kept: a.tokens(c, br.Shared, rep), Lost: a.tokens(c, max(br.Shared-before, 0), rep),
			Fresh: !prev.Ended.IsZero() && prefix.Reusable(prev.Ended, c.Node.Started, rep.Lifetime)}
		return
	}
}

// leftOf is the JSON of the elements left out for the stack's Unkeyed[i].
func (f *frame) leftOf(i int) []byte {
	if f == nil || i >= len(f.left) {
		return nil
	}
	return f.left[i]
}

// leftChange says how the text of the elements left out changed: where
// the two texts first differ, as systemChange quotes a line.
func leftChange(now, was []byte) string {
	text := func(b []byte) string {
		var blocks []struct{ Text string }
		if json.Unmarshal(append(append([]byte{'['}, b...), ']'), &blocks) != nil {
			return string(b)
		}
		var ts []string
		for _, x := range blocks {
			ts = append(ts, x.Text)
		}
		return strings.Join(ts, "\n")
	}
	n, w := text(now), text(was)
	d := 0
	for d < len(n) && d < len(w) && n[d] == w[d] {
		d++
	}
	// from the start of the field that differs ("cc_version=…")
	start := max(strings.LastIndexAny(n[:d], " ;")+1, 0)
	return fmt.Sprintf("%q, was %q", snippet(n[start:]), snippet(w[min(start, len(w)):]))
}

// compacted reports whether q's history, from where it parts from the
// earlier request m's at br (both go on there), starts again with the
// summary the stack's compaction writes (stack.Profile.Compacted). The
// message there is read whatever the analysis: it has company at its
// path.
func (a *analysis) compacted(q *prompt, m prefix.Prompt, br prefix.Break) bool {
	if a.stack == nil || a.stack.Compacted == "" || br.Where != prefix.InMessages ||
		a.tree.Depth(q.p.Last) < br.Index || a.tree.Depth(m.Last) < br.Index {
		return false
	}
	return strings.HasPrefix(strings.TrimSpace(messageText(a.tree.Data(a.tree.Ancestor(q.p.Last, br.Index)))), a.stack.Compacted)
}

// context links each llm node to the llm node before it in its
// conversation and to the latest hand-off before it there, in one pass
// over each conversation.
func (a *analysis) context() {
	a.prev.reserve(firstSeq(a.g), lastSeq(a.g))
	a.handoff.reserve(firstSeq(a.g), lastSeq(a.g))
	for _, c := range a.g.Conversations {
		var prev, h *graph.Node
		for _, n := range c.Nodes {
			switch n.Kind {
			case record.KindHandoff:
				h = n
			case record.KindLLM:
				if n.LLM == nil {
					continue
				}
				if prev != nil {
					a.prev.set(n.Seq, prev)
				}
				if h != nil {
					a.handoff.set(n.Seq, h)
				}
				prev = n
			}
		}
	}
}

// handoffSince is the latest hand-off of n's conversation after seq and
// before n, or nil.
func (a *analysis) handoffSince(n *graph.Node, seq int64) *graph.Node {
	if h := a.handoff.get(n.Seq); h != nil && h.Seq > seq {
		return h
	}
	return nil
}

// describe names break br of call c against the earlier request m.
func (a *analysis) describe(c *Call, m *graph.Node, br prefix.Break) Break {
	n := c.Node
	q, mp := a.prompts.get(n.Seq), a.prompts.get(m.Seq)
	prev := c.Previous
	sameConv := m.Conv == n.Conv
	branchStart := n.Conv.Branch != nil && prev == nil
	var since int64
	if prev != nil {
		since = prev.Seq
	}
	handoff := a.handoffSince(n, since)
	out := Break{Message: -1, Expected: true}
	switch br.Where {
	case prefix.Identical:
		out.Cause, out.Why = CauseRepeat, fmt.Sprintf("the same prompt as %s: all of it reusable", m.ID())
		return out
	case prefix.InTools, prefix.InSystem:
		what := "tool array"
		if br.Where == prefix.InTools {
			out.Where = "tools"
			out.What, out.Tool = toolsChange(q.frame, mp.frame)
		} else {
			what = "system prompt"
			out.Where = "system"
			out.What, out.Location = a.systemChange(q.frame, mp.frame)
		}
		switch {
		case handoff != nil && handoff.Handoff != nil:
			out.Cause = CauseHandoff
			out.Why = fmt.Sprintf("new agent %s after the hand-off at %s: its tools and system prompt are new to the cache, so nothing after them matches", handoff.Handoff.To, handoff.ID())
		case branchStart:
			out.Cause = CauseBranch
			out.Why = fmt.Sprintf("branch %s starts on agent %s: its %s differs from %s's (%s)", n.Conv.Branch.Name, n.Agent, what, m.Agent, m.ID())
		case prev != nil && prev.Agent == n.Agent && m.Agent == n.Agent:
			out.Cause, out.Expected = CauseTools, false
			if br.Where == prefix.InSystem {
				out.Cause = CauseSystem
			}
			out.Why = fmt.Sprintf("the %s of agent %s changed since %s in the same conversation: everything after it is sent uncached", what, n.Agent, m.ID())
		case m.Agent != n.Agent:
			out.Cause = CauseOther
			out.Why = fmt.Sprintf("the nearest earlier prompt is %s's (%s, agent %s): the %s differs", convName(m.Conv), m.ID(), m.Agent, what)
		default:
			out.Cause = CauseOther
			out.Why = fmt.Sprintf("the %s differs from %s's (%s)", what, m.ID(), convName(m.Conv))
		}
		return out
	}
	// In the messages.
	k := br.Index
	out.Message = k - 1
	if q.inArray {
		out.Message = k
	}
	out.Where = fmt.Sprintf("messages[%d]", out.Message)
	qEnd := a.tree.Depth(q.p.Last) < k
	mEnd := a.tree.Depth(mp.p.Last) < k
	if qEnd {
		out.What = "the end of the request (the earlier one goes on)"
	} else {
		out.What = messageWhat(a.data(a.tree.Ancestor(q.p.Last, k)))
	}
	// the earlier request's message, read only by the causes that quote
	// it (most breaks name the request's message alone)
	mWhat := func() string {
		if mEnd {
			return ""
		}
		return messageWhat(a.data(a.tree.Ancestor(mp.p.Last, k)))
	}
	switch {
	case sameConv && mEnd:
		if h := a.handoffSince(n, m.Seq); h != nil && h.Handoff != nil && m != prev {
			out.Cause = CauseBack
			out.Why = fmt.Sprintf("agent %s's prefix up to %s, before it handed off, is reused; from %s on the messages are new to the cache", n.Agent, m.ID(), out.Where)
		} else {
			out.Cause = CauseTail
			out.Why = fmt.Sprintf("%s reused whole; new from %s on (%s)", m.ID(), out.Where, out.What)
		}
	case sameConv && a.tree.Depth(q.p.Last) < a.tree.Depth(mp.p.Last):
		out.Cause = CauseCut
		out.Why = fmt.Sprintf("the history was cut (a compaction): it keeps %d of %s's %d messages and parts from it at %s", a.tree.Depth(q.p.Last), m.ID(), a.tree.Depth(mp.p.Last), out.Where)
	case sameConv && a.compacted(q, mp.p, br):
		out.Cause = CauseCut
		out.Why = fmt.Sprintf("the history was rewritten by %s's compaction: from %s on it starts again with the summary (%s)", a.stack.Name, out.Where, out.What)
	case sameConv:
		out.Cause, out.Expected = CauseEdited, false
		out.Why = fmt.Sprintf("%s differs from %s's (%s): an earlier message was changed, so everything after it is sent uncached", out.Where, m.ID(), mWhat())
	case m.Conv.Branch != nil && m.Conv.Branch.Fork.Parent == n.Conv && joinedSince(n, since, m.Conv.Branch.Fork):
		out.Cause = CauseJoin
		out.Why = fmt.Sprintf("the parent after the join of fork %s: its prefix up to the fork call is reused (%s, branch %s, sent the same); the join's result is new", m.Conv.Branch.Fork.Node.ID(), m.ID(), m.Conv.Branch.Name)
	case branchStart:
		b := n.Conv.Branch
		f := b.Fork
		out.Cause = CauseBranch
		switch {
		case f.Context == "compact" && m.Conv == f.Parent && droppedByCompact(mWhat()):
			out.Cause = CauseCompact
			out.Why = fmt.Sprintf("compact context dropped the parent's %s (%s, in %s): the branch reuses the parent's prefix only up to the first dropped tool call", out.Where, mWhat(), m.ID())
		case f.Context == "none":
			out.Why = fmt.Sprintf("branch %s of fork %s starts from its instructions (none context): only the system prompt and tools are shared, with %s", b.Name, f.Node.ID(), m.ID())
		default:
			out.Why = fmt.Sprintf("the assignment of branch %s (fork %s, %s context): the inherited prefix up to the fork call is reused from %s", b.Name, f.Node.ID(), orDefault(f.Context, "inherit"), m.ID())
		}
	default:
		out.Cause = CauseOther
		out.Why = fmt.Sprintf("shares %s's (%s) prompt up to %s", m.ID(), convName(m.Conv), out.Where)
	}
	return out
}

// joinedSince reports whether fork f joined in n's conversation after seq
// and before n.
func joinedSince(n *graph.Node, seq int64, f *graph.Fork) bool {
	return f.Join != nil && f.Join.Seq > seq && f.Join.Seq < n.Seq && f.Join.Conv == n.Conv
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func convName(c *graph.Conversation) string {
	if c == nil || c.Path == "" {
		return "trunk"
	}
	return "branch " + c.Path
}

// droppedByCompact reports whether a message described by messageWhat is
// one compact context drops: a tool call or a tool result.
func droppedByCompact(what string) bool {
	return strings.HasPrefix(what, "the assistant's call") || strings.HasPrefix(what, "a tool result")
}

// messageText is the text of one message's JSON ("" when it is none).
func messageText(data []byte) string {
	m, _ := chat.ReadMessage(data)
	return m.Text
}

// messageWhat describes one message's JSON.
func messageWhat(data []byte) string {
	m, ok := chat.ReadMessage(data)
	if !ok {
		return "a message"
	}
	switch {
	case m.Role == "assistant" && len(m.Calls) > 0:
		return "the assistant's call of " + strings.Join(m.CallNames(), ", ")
	case m.Role == "assistant":
		return fmt.Sprintf("the assistant's answer %q", snippet(m.Text))
	case m.Role == "tool":
		if m.CallID != "" {
			return "a tool result (" + m.CallID + ")"
		}
		return "a tool result"
	case m.Role == "user":
		return fmt.Sprintf("the user message %q", snippet(m.Text))
	case m.Role != "":
		return fmt.Sprintf("a %s message %q", m.Role, snippet(m.Text))
	}
	return "a message"
}

// snippet is the first line of s, at most snippetRunes runes.
func snippet(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if utf8.RuneCountInString(s) > snippetRunes {
		r := []rune(s)
		return string(r[:snippetRunes]) + "…"
	}
	return s
}

// toolsChange names the first difference of q's tool array against m's:
// a tool added, removed, changed or moved, and the tool ("" when it
// names none).
func toolsChange(q, m *frame) (string, string) {
	if q.req == nil || m.req == nil {
		return "the tool array", ""
	}
	a, b := q.req.Tools, m.req.Tools
	has := func(ts []chat.Tool, name string) bool {
		for _, t := range ts {
			if t.Name == name {
				return true
			}
		}
		return false
	}
	for i, t := range a {
		if i >= len(b) {
			return fmt.Sprintf("tool %s added", t.Name), t.Name
		}
		if t.Name == b[i].Name {
			if t.Description != b[i].Description || string(t.Parameters) != string(b[i].Parameters) {
				return fmt.Sprintf("tool %s changed", t.Name), t.Name
			}
			continue
		}
		switch {
		case !has(b, t.Name):
			return fmt.Sprintf("tool %s added", t.Name), t.Name
		case !has(a, b[i].Name):
			return fmt.Sprintf("tool %s removed", b[i].Name), b[i].Name
		}
		for j := range b {
			if b[j].Name == t.Name {
				return fmt.Sprintf("tool %s moved from position %d to %d", t.Name, j+1, i+1), t.Name
			}
		}
	}
	if len(b) > len(a) {
		return fmt.Sprintf("tool %s removed", b[len(a)].Name), b[len(a)].Name
	}
	return "the tool array (the same tools, encoded differently)", ""
}

// systemChange names where q's system prompt first differs from m's: the
// prompt file and line when the changed text is in the run's project, and
// the changed line.
func (a *analysis) systemChange(q, m *frame) (string, Location) {
	if q.req == nil || m.req == nil {
		return "the system prompt", Location{}
	}
	qs, ms := q.req.System, m.req.System
	d := 0
	for d < len(qs) && d < len(ms) && qs[d] == ms[d] {
		d++
	}
	lineStart := strings.LastIndexByte(qs[:d], '\n') + 1
	line := strings.Count(qs[:d], "\n") + 1
	now := lineAt(qs, lineStart)
	was := lineAt(ms, strings.LastIndexByte(ms[:d], '\n')+1)
	change := fmt.Sprintf("%q, was %q", snippet(now), snippet(was))
	if loc := a.locate(qs, d, lineStart); loc.Path != "" {
		return fmt.Sprintf("%s: %s", loc, change), loc
	}
	return fmt.Sprintf("line %d of the system prompt: %s", line, change), Location{}
}

func lineAt(s string, start int) string {
	if start > len(s) {
		return ""
	}
	l, _, _ := strings.Cut(s[start:], "\n")
	return l
}

// locate finds the project file whose text holds offset d of system text
// s: a file whose trimmed content appears in s around d, else a file that
// holds the changed line's text before d (a template whose value changed).
func (a *analysis) locate(s string, d, lineStart int) Location {
	files := a.g.Project.Files
	for _, f := range files {
		c := strings.TrimSpace(f.Content)
		if c == "" || f.Path == "agents.yaml" {
			continue
		}
		i := strings.Index(s, c)
		if i < 0 || d < i || d > i+len(c) {
			continue
		}
		lead := strings.Index(f.Content, c) // what TrimSpace took off the front
		return Location{Path: f.Path, Line: strings.Count(f.Content[:lead], "\n") + strings.Count(c[:d-i], "\n") + 1}
	}
	// The changed line's text before the change, shortened until a file
	// holds it: "Current time: " of a template "Current time: {now}".
	before := strings.TrimLeft(s[lineStart:d], " \t")
	for l := len(before); l >= 8; l-- {
		for _, f := range files {
			if f.Path == "agents.yaml" {
				continue
			}
			if i := strings.Index(f.Content, before[:l]); i >= 0 {
				return Location{Path: f.Path, Line: strings.Count(f.Content[:i], "\n") + 1}
			}
		}
	}
	return Location{}
}

// mismatch compares c's reported cached tokens with the prediction.
func (a *analysis) mismatch(c *Call, rep *Report) *Mismatch {
	r := c.Reported
	if !r.CachedReported || c.Node.Status != record.StatusOK {
		return nil // a failed call's usage says nothing of the cache
	}
	predicted, got := c.Tokens, r.Cached
	tol := max(128, predicted/10)
	kind := ""
	switch {
	case rep.Simulated && got < predicted:
		kind = MismatchFewer
	case rep.Simulated && got > predicted:
		kind = MismatchMore
	case rep.Simulated:
	case predicted > 0 && got == 0 && predicted < rep.MinPrefix:
		kind = MismatchMinimum
	case predicted > 0 && got == 0 && c.Since > rep.Lifetime/2:
		kind = MismatchLifetime
	case predicted > 0 && got == 0:
		kind = MismatchRouting
	case got < predicted-tol:
		kind = MismatchFewer
	case got > predicted+tol:
		kind = MismatchMore
	}
	if kind == "" {
		return nil
	}
	return &Mismatch{Kind: kind, Predicted: predicted, Reported: got, Match: c.Match, Since: c.Since,
		MinPrefix: rep.MinPrefix, Lifetime: rep.Lifetime, Simulated: rep.Simulated}
}

// group sums the calls per conversation, per agent and for the run.
func (r *Report) group(g *graph.Run, priced bool) {
	conv := map[*graph.Conversation]*Totals{}
	agent := map[string]*Totals{}
	if priced {
		r.Total.Money = &Money{}
	}
	newTotals := func() *Totals {
		if priced {
			return &Totals{Money: &Money{}}
		}
		return &Totals{}
	}
	for _, c := range r.Calls {
		r.Total.add(c)
		t := conv[c.Node.Conv]
		if t == nil {
			t = newTotals()
			conv[c.Node.Conv] = t
		}
		t.add(c)
		at := agent[c.Node.Agent]
		if at == nil {
			at = newTotals()
			agent[c.Node.Agent] = at
		}
		at.add(c)
	}
	for _, c := range g.Conversations {
		if t := conv[c]; t != nil {
			r.Conversations = append(r.Conversations, Group{Name: c.Path, Totals: *t})
		}
	}
	for _, name := range g.Agents {
		if t := agent[name]; t != nil {
			r.Agents = append(r.Agents, Group{Name: name, Totals: *t})
		}
	}
	if t := agent[""]; t != nil {
		r.Agents = append(r.Agents, Group{Name: "", Totals: *t})
	}
}
