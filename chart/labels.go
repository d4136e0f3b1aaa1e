package chart

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Label lengths, in runes of the untrusted text before escaping.
const (
	taskRunes   = 60 // user and final messages
	argRunes    = 40 // a tool's argument summary
	reasonRunes = 60 // an error
	nameRunes   = 40 // agent, branch and tool names
)

// labeler writes the labels of a view; esc makes untrusted text safe for
// the output language (mermaid.Escape for Mermaid; identity for DOT, which
// quotes whole labels, and for plain text).
type labeler struct {
	v     *view
	esc   func(string) string
	notes Notes
}

func newLabeler(v *view, ls Labels) *labeler {
	l := &labeler{v: v, esc: ls.Escape, notes: ls.Notes}
	if l.esc == nil {
		l.esc = func(s string) string { return s }
	}
	return l
}

// note is " · <note>" when the caller has a note on n, else "".
func (l *labeler) note(n *graph.Node) string {
	if l.notes.Node == nil {
		return ""
	}
	if s := l.notes.Node(n); s != "" {
		return " · " + l.esc(s)
	}
	return ""
}

func (l *labeler) name(s string) string { return l.esc(oneLine(s, nameRunes)) }

func (l *labeler) names(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = l.name(s)
	}
	return strings.Join(parts, ", ")
}

// at is " @agent" on the node its agent is marked on, else "".
func (l *labeler) at(n *graph.Node) string {
	if l.v.marked[n] {
		return " @" + l.name(n.Agent)
	}
	return ""
}

// label is the text of an item's box.
func (l *labeler) label(it *item) string {
	switch it.kind {
	case itemNode, itemFork:
		return l.node(it.node)
	case itemFold:
		return l.fold(it)
	case itemSummary:
		return l.summary(it.nodes, "")
	case itemGap:
		return l.summary(it.covered(), "… not shown: ")
	case itemGroup:
		return l.group(it)
	case itemParallel:
		return fmt.Sprintf("%d calls at once · %s", it.par.Calls, graph.FormatDuration(it.par.Span()))
	case itemCalls:
		return l.moreCalls(it)
	default:
		panic("internal error: unhandled item kind " + strconv.Itoa(int(it.kind)))
	}
}

// node is the label of one node, per DESIGN §7.
func (l *labeler) node(n *graph.Node) string {
	var b strings.Builder
	switch n.Kind {
	case record.KindUser:
		b.WriteString("user")
		b.WriteString(l.at(n))
		b.WriteString(": ")
		b.WriteString(l.esc(oneLine(n.Text, taskRunes)))
	case record.KindLLM:
		b.WriteString("llm")
		b.WriteString(l.at(n))
		b.WriteString(" · ")
		var u record.Usage
		switch {
		case n.Failed():
			b.WriteString(string(n.Status))
		case n.Status == record.StatusRunning:
			b.WriteString("running")
		case n.LLM != nil && len(n.LLM.Calls) > 0:
			b.WriteString("calls ")
			b.WriteString(l.calls(n.LLM.Calls))
		default:
			b.WriteString("answers")
		}
		if n.LLM != nil {
			u = n.LLM.Usage
		}
		fmt.Fprintf(&b, " · in %d out %d", u.In, u.Out)
		b.WriteString(l.note(n))
		if n.Status != record.StatusRunning {
			b.WriteString(" · ")
			b.WriteString(graph.FormatDuration(n.Duration()))
		}
	case record.KindTool:
		b.WriteString("tool")
		b.WriteString(l.at(n))
		if n.Tool != nil {
			b.WriteByte(' ')
			b.WriteString(l.name(n.Tool.Name))
			if s := argSummary(n.Tool.Args); s != "" {
				b.WriteByte(' ')
				b.WriteString(l.esc(s))
			}
		}
		l.status(&b, n)
	case record.KindHandoff:
		b.WriteString("handoff")
		if h := n.Handoff; h != nil {
			b.WriteString(" " + l.name(h.From) + " to " + l.name(h.To))
		}
		l.status(&b, n)
	case record.KindFork:
		ctx := "inherit"
		var names []string
		if f := n.Fork; f != nil {
			if f.Context != "" {
				ctx = f.Context
			}
			for _, fb := range f.Branches {
				names = append(names, fb.Name)
			}
		}
		b.WriteString("fork")
		b.WriteString(l.at(n))
		parts := make([]string, 0, min(len(names), maxListed+1))
		for i, s := range names {
			if l.v.stats.level > 0 && i == maxListed {
				break
			}
			parts = append(parts, l.name(s))
		}
		if len(parts) < len(names) {
			parts = append(parts, fmt.Sprintf("… %d more", len(names)-len(parts)))
		}
		b.WriteString(" (" + l.name(ctx) + " context) " + strings.Join(parts, ", "))
	case record.KindJoin:
		b.WriteString("join ")
		if j := n.Join; j != nil {
			for i, jb := range j.Branches {
				if l.v.stats.level > 0 && i == maxListed {
					counts := map[string]int{}
					for _, rest := range j.Branches[i:] {
						counts[string(rest.Status)]++
					}
					fmt.Fprintf(&b, ", … %d more (%s)", len(j.Branches)-i, l.statusCounts(counts))
					break
				}
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(l.name(jb.Name) + "=" + l.name(string(jb.Status)))
			}
		}
	case record.KindFinal:
		b.WriteString("final")
		b.WriteString(l.at(n))
		if n.Failed() {
			b.WriteString(" · " + string(n.Status) + ": " + l.esc(oneLine(n.Error, reasonRunes)))
		} else {
			b.WriteString(": " + l.esc(oneLine(n.Text, taskRunes)))
		}
	default:
		panic(fmt.Sprintf("internal error: unhandled node kind %v", n.Kind))
	}
	if n.Kind != record.KindLLM { // an llm node's note follows its tokens
		b.WriteString(l.note(n))
	}
	return b.String()
}

// status appends " · <status>" unless the node is ok.
func (l *labeler) status(b *strings.Builder, n *graph.Node) {
	if n.Status != record.StatusOK {
		b.WriteString(" · " + l.name(string(n.Status)))
	}
}

// calls lists called names in order, runs of one name as "name xN".
func (l *labeler) calls(calls []string) string {
	var parts []string
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j] == calls[i] {
			j++
		}
		p := l.name(calls[i])
		if j-i > 1 {
			p += " x" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return strings.Join(parts, ", ")
}

// fold labels consecutive repeated calls: "read_file x12 @agent · 12 llm
// calls in N out M · 8.1s · n3..n26".
func (l *labeler) fold(it *item) string {
	tools, llms := 0, 0
	var at string
	for _, n := range it.nodes {
		if n.Kind == record.KindTool {
			tools++
		} else {
			llms++
		}
		if at == "" {
			at = l.at(n)
		}
	}
	first, last := it.nodes[0], it.nodes[len(it.nodes)-1]
	t := graph.SumTokens(it.nodes)
	var b strings.Builder
	fmt.Fprintf(&b, "%s x%d%s", l.name(it.tool), tools, at)
	if llms > 0 {
		fmt.Fprintf(&b, " · %d llm calls in %d out %d", llms, t.In, t.Out)
	}
	b.WriteString(" · " + graph.FormatDuration(span(first, last)))
	if e := failures(it.nodes); e > 0 {
		fmt.Fprintf(&b, " · %d failed", e)
	}
	fmt.Fprintf(&b, " · %s..%s", first.ID(), last.ID())
	return b.String()
}

// summary labels a branch summary or a gap: the nodes it stands for, their
// llm calls and tokens, the most called tools, forks and failures.
func (l *labeler) summary(nodes []*graph.Node, prefix string) string {
	first, last := nodes[0], nodes[len(nodes)-1]
	t := graph.SumTokens(nodes)
	counts := map[string]int{}
	var forks, handoffs int
	var at string
	for _, n := range nodes {
		switch n.Kind {
		case record.KindTool:
			if n.Tool != nil {
				counts[n.Tool.Name]++
			}
		case record.KindFork:
			forks++
		case record.KindHandoff:
			handoffs++
		}
		if at == "" {
			at = l.at(n)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d nodes %s..%s%s", prefix, len(nodes), first.ID(), last.ID(), at)
	if t.Calls > 0 {
		fmt.Fprintf(&b, " · %d llm calls in %d out %d", t.Calls, t.In, t.Out)
	}
	for i, tc := range sortedCounts(counts) {
		if i == 3 {
			b.WriteString(" …")
			break
		}
		fmt.Fprintf(&b, " · %s x%d", l.name(tc.Name), tc.Count)
	}
	if forks > 0 {
		fmt.Fprintf(&b, " · fork x%d", forks)
	}
	if handoffs > 0 {
		fmt.Fprintf(&b, " · handoff x%d", handoffs)
	}
	if e := failures(nodes); e > 0 {
		fmt.Fprintf(&b, " · %d failed", e)
	}
	return b.String()
}

// group labels the branches of a wide fork drawn as one node: "297 more
// branches (b4..b300) · ok 290, error 5, exhausted 2 · slowest of them apac
// 21.7s · 894 nodes · 600 llm calls in N out M".
func (l *labeler) group(it *item) string {
	counts := map[string]int{}
	var slowest *graph.Branch
	for _, bv := range it.group {
		counts[string(bv.b.Status)]++
		if slowest == nil || bv.b.Duration > slowest.Duration {
			slowest = bv.b
		}
	}
	var b strings.Builder
	first, last := it.group[0], it.group[len(it.group)-1]
	fmt.Fprintf(&b, "%d more branches b%d..b%d · %s", len(it.group), first.k, last.k, l.statusCounts(counts))
	fmt.Fprintf(&b, " · slowest of them %s %s", l.name(slowest.Name), graph.FormatDuration(slowest.Duration))
	if len(it.nodes) > 0 {
		fmt.Fprintf(&b, " · %d nodes", len(it.nodes))
		if t := graph.SumTokens(it.nodes); t.Calls > 0 {
			fmt.Fprintf(&b, " · %d llm calls in %d out %d", t.Calls, t.In, t.Out)
		}
		if e := failures(it.nodes); e > 0 {
			fmt.Fprintf(&b, " · %d failed", e)
		}
	}
	return b.String()
}

// moreCalls labels the calls of a parallel group past its first few: "… 3
// more calls · Read x2, Grep x1 · n14..n16 · 1 failed".
func (l *labeler) moreCalls(it *item) string {
	counts := map[string]int{}
	calls := 0
	for _, n := range it.nodes {
		switch {
		case n.Group != it.par: // a folded fork's branch
			continue
		case n.Kind == record.KindTool && n.Tool != nil:
			counts[n.Tool.Name]++
		case n.Kind == record.KindFork && n.Fork != nil && n.Fork.Tool != "":
			counts[n.Fork.Tool] += n.CallCount()
		default:
			counts[string(n.Kind)]++
		}
		calls += n.CallCount()
	}
	var b strings.Builder
	first, last := it.nodes[0], it.nodes[len(it.nodes)-1]
	fmt.Fprintf(&b, "… %d more calls · ", calls)
	for i, tc := range sortedCounts(counts) {
		if i == 3 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s x%d", l.name(tc.Name), tc.Count)
	}
	fmt.Fprintf(&b, " · %s..%s", first.ID(), last.ID())
	if e := failures(it.nodes); e > 0 {
		fmt.Fprintf(&b, " · %d failed", e)
	}
	return b.String()
}

// statusCounts lists status counts in a fixed order: "ok 290, error 5".
func (l *labeler) statusCounts(counts map[string]int) string {
	var parts []string
	for _, st := range []record.Status{record.StatusOK, record.StatusError, record.StatusExhausted, record.StatusCancelled, record.StatusInterrupted, record.StatusRunning} {
		if n := counts[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
			delete(counts, string(st))
		}
	}
	for _, tc := range sortedCounts(counts) { // statuses of a newer inspect
		parts = append(parts, fmt.Sprintf("%s %d", l.name(tc.Name), tc.Count))
	}
	return strings.Join(parts, ", ")
}

// maxListed is how many branch names a collapsed chart lists in a fork's
// or join's label, or in a header line, before "… N more".
const maxListed = 8

// branchTitle is a branch subgraph's title: "branch eu @researcher · ok ·
// 8.1s · slowest".
func (l *labeler) branchTitle(bv *branchView) string {
	b := bv.b
	var s strings.Builder
	s.WriteString("branch " + l.name(b.Name))
	if len(bv.items) > 0 && l.v.marked[bv.items[0].node] {
		s.WriteString(" @" + l.name(bv.items[0].node.Agent))
	} else if len(bv.items) == 0 && b.Agent != "" {
		s.WriteString(" @" + l.name(b.Agent))
	}
	s.WriteString(" · " + l.name(string(b.Status)) + " · " + graph.FormatDuration(b.Duration))
	if b.Slowest() {
		s.WriteString(" · slowest")
	}
	return s.String()
}

// failed reports whether an item is drawn with the error class.
func failed(it *item) bool {
	switch it.kind {
	case itemNode, itemFork:
		return it.node.Failed()
	default:
		return failures(it.covered()) > 0
	}
}

func failures(nodes []*graph.Node) int {
	n := 0
	for _, x := range nodes {
		if x.Failed() {
			n++
		}
	}
	return n
}

func span(first, last *graph.Node) time.Duration {
	end := last.Ended
	if end.IsZero() {
		end = last.Started
	}
	return end.Sub(first.Started)
}

// sortedCounts turns name counts into a slice, most first, then by name.
func sortedCounts(m map[string]int) []graph.ToolCount {
	out := make([]graph.ToolCount, 0, len(m))
	for name, c := range m {
		out = append(out, graph.ToolCount{Name: name, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// argSummary shortens a tool's JSON arguments to their scalar values in the
// order written ({"path":"a.md","limit":3} → "a.md 3"); text that is not a
// JSON object is shortened as it is.
func argSummary(args string) string {
	args = strings.TrimSpace(args)
	if args == "" || args == "{}" {
		return ""
	}
	if vals, ok := scalarValues(args); ok {
		return fitValues(vals, argRunes)
	}
	return oneLine(args, argRunes)
}

// fitValues joins vals with spaces in at most n runes. When they do not
// fit, the first path among their words that runs past n (a word with a
// slash: a file, a URL, alone or in a command) keeps its end, the part that tells one
// file from another ("…/internal/auth/session.go", not
// "/home/USER/projects/s…"), in the room left before it; what follows is
// cut at the end as any text is.
func fitValues(vals []string, n int) string {
	// each word on its own, so a path inside a command ("cat
	// /home/USER/app/a.txt") keeps its end as a path value does
	var words []string
	for _, v := range vals {
		words = append(words, strings.Fields(v)...)
	}
	vals = words
	whole := strings.Join(vals, " ")
	if utf8.RuneCountInString(whole) <= n {
		return whole
	}
	used := 0 // runes before vals[i], with its separating space
	for i, v := range vals {
		if i > 0 {
			used++
		}
		room := n - used
		size := utf8.RuneCountInString(v)
		if size > room && isPath(v) {
			if i+1 < len(vals) { // a few runes for what follows, so the path's end is not what gets cut
				room -= min(utf8.RuneCountInString(strings.Join(vals[i+1:], " "))+1, maxAfterPath)
			}
			if room >= minPathRunes {
				vals[i] = pathTail(v, room)
			}
			break
		}
		used += size
		if used >= n {
			break
		}
	}
	return oneLine(strings.Join(vals, " "), n)
}

// minPathRunes is the least room a path is shortened into from its start
// (less would keep too little of its end to tell it apart); maxAfterPath
// the most runes kept for the values after it.
const (
	minPathRunes = 12
	maxAfterPath = 8
)

// isPath reports whether v looks like a path or a URL: a slash (or a
// backslash) inside, no space.
func isPath(v string) bool {
	return strings.ContainsAny(v, `/\`) && !strings.ContainsAny(v, " \t\n")
}

// pathTail shortens path v to at most n runes from its start: "…" and the
// longest end of it that begins at a separator and fits, or — when even
// its last part does not — the last n-1 runes.
func pathTail(v string, n int) string {
	r := []rune(v)
	if len(r) <= n {
		return v
	}
	for i := len(r) - (n - 1); i < len(r); i++ {
		if i > 0 && (r[i] == '/' || r[i] == '\\') {
			return "…" + string(r[i:])
		}
	}
	return "…" + string(r[len(r)-(n-1):])
}

// oneLine collapses runs of white space (newlines included) to one space and
// shortens s to at most n runes, ending it with an ellipsis when cut. Labels
// summarize; `inspect show` prints a node in full.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
