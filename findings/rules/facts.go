package rules

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
)

// step is one model response with the tool calls it made.
type step struct {
	LLM   *graph.Node
	Tools []*graph.Node // tool nodes (not hand-offs or forks) it made, in order
	// Fork is the one-branch fork the response made, if it made one: an
	// item of a fan-out series like a research call (DESIGN §8).
	Fork *graph.Fork
	// Break is true when something other than a tool call (a user message,
	// a hand-off, a fork or join other than the step's own one-branch fork)
	// separates this step from the previous one.
	Break bool
}

// duration is the step's model time plus its tools' time, or, for a
// one-branch fork, plus the branch's elapsed time.
func (s *step) duration() time.Duration {
	d := s.LLM.Duration()
	for _, t := range s.Tools {
		d += t.Duration()
	}
	if s.Fork != nil && len(s.Fork.Branches) == 1 {
		d += s.Fork.Branches[0].Duration
	}
	return d
}

// callNode is the node of a series item's call: its tool node, or its
// one-branch fork's fork node.
func (s *step) callNode() *graph.Node {
	if s.Fork != nil {
		return s.Fork.Node
	}
	return s.Tools[0]
}

// resultSeq is the seq of the node holding a series item's result: its
// tool node, or its fork's join.
func (s *step) resultSeq() int64 {
	if s.Fork != nil {
		return s.Fork.Join.Seq
	}
	return s.Tools[0].Seq
}

// steps cuts a conversation into model responses. A tool node belongs to
// the response its CalledBy names when that is a response of this
// conversation (the calls of one response are one step however the
// source interleaved them), else to the latest response before it.
func steps(c *graph.Conversation) []*step {
	var out []*step
	var cur *step
	brk := false
	bySeq := map[int64]*step{}
	for _, n := range c.Nodes {
		switch n.Kind {
		case record.KindLLM:
			cur = &step{LLM: n, Break: brk}
			brk = false
			out = append(out, cur)
			bySeq[n.Seq] = cur
		case record.KindTool:
			if s := bySeq[n.CalledBy]; n.CalledBy != 0 && s != nil && s != cur {
				s.Tools = append(s.Tools, n)
			} else if cur != nil {
				cur.Tools = append(cur.Tools, n)
			}
		case record.KindFork:
			if cur != nil && cur.Fork == nil && n.ForkOf != nil && len(n.ForkOf.Branches) == 1 {
				cur.Fork = n.ForkOf // the step's own one-branch fork: no break
			} else {
				brk = true
			}
		case record.KindJoin:
			if cur == nil || cur.Fork == nil || n.ForkOf != cur.Fork {
				brk = true
			}
			cur = nil
		case record.KindUser, record.KindHandoff, record.KindFinal:
			brk = true
			if n.Kind != record.KindHandoff {
				cur = nil
			}
		default:
			panic("internal error: unhandled node kind " + string(n.Kind))
		}
	}
	return out
}

// isCall reports whether n is "a call" of DESIGN §8: a tool node other than
// transfer_to_* and fork.
func isCall(n *graph.Node) bool {
	if n.Kind != record.KindTool || n.Tool == nil {
		return false
	}
	return n.Tool.Name != "fork" && !strings.HasPrefix(n.Tool.Name, "transfer_to_")
}

// isResearch reports whether n is a research call.
func isResearch(n *graph.Node) bool { return isCall(n) && n.Tool.Research }

// parseArgs decodes the arguments of a call of tool once and returns their
// canonical form (DESIGN §8: the JSON re-encoded with sorted keys and no
// insignificant whitespace, the path arguments of the built-in tools
// cleaned, so ./a.md is a.md), their string values joined, and the
// top-level fields each as one string (a string as it is, anything else as
// its JSON), for naming what differs between calls.
func parseArgs(tool, args string) (canon, text string, fields map[string]string) {
	if fields, ok := flatArgs(args); ok {
		return flatParsed(tool, fields)
	}
	return decodedArgs(tool, args)
}

// flatArgs reads args when it is a JSON object of string values whose keys
// and values are printable ASCII that JSON writes as it is (no quote,
// backslash, <, > or &): the shape of most calls' arguments, read in one
// pass, as encoding/json would read it (the last of a repeated key wins).
// ok is false for any other text, which decodedArgs reads.
func flatArgs(args string) (fields map[string]string, ok bool) {
	i := 0
	ws := func() {
		for i < len(args) && (args[i] == ' ' || args[i] == '\t' || args[i] == '\n' || args[i] == '\r') {
			i++
		}
	}
	str := func() (string, bool) {
		if i >= len(args) || args[i] != '"' {
			return "", false
		}
		s := i + 1
		for i = s; i < len(args) && args[i] != '"'; i++ {
			if c := args[i]; c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
				return "", false
			}
		}
		if i == len(args) {
			return "", false
		}
		i++
		return args[s : i-1], true
	}
	ws()
	if i >= len(args) || args[i] != '{' {
		return nil, false
	}
	i++
	fields = map[string]string{}
	ws()
	if i < len(args) && args[i] == '}' {
		i++
	} else {
		for {
			ws()
			k, ok := str()
			if !ok {
				return nil, false
			}
			ws()
			if i >= len(args) || args[i] != ':' {
				return nil, false
			}
			i++
			ws()
			v, ok := str()
			if !ok {
				return nil, false
			}
			fields[k] = v
			ws()
			if i < len(args) && args[i] == ',' {
				i++
				continue
			}
			if i < len(args) && args[i] == '}' {
				i++
				break
			}
			return nil, false
		}
	}
	ws()
	return fields, i == len(args)
}

// flatParsed is parseArgs of flat arguments (flatArgs): their values are
// strings JSON writes as they are, so the canonical form is written here,
// keys sorted as encoding/json sorts them.
func flatParsed(tool string, fields map[string]string) (canon, text string, _ map[string]string) {
	if snapshot.IsBuiltinTool(tool) { // cleanBuiltinPath, of string values
		folder := tool == snapshot.ToolListDir || tool == snapshot.ToolFindFiles
		switch s, ok := fields["path"]; {
		case ok && s != "" && s != "/":
			fields["path"] = path.Clean(s)
		case folder && (s == "" || s == "/"):
			fields["path"] = "."
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var cb, tb strings.Builder
	cb.WriteByte('{')
	for i, k := range keys {
		v := fields[k]
		if i > 0 {
			cb.WriteByte(',')
		}
		cb.WriteByte('"')
		cb.WriteString(k)
		cb.WriteString(`":"`)
		cb.WriteString(v)
		cb.WriteByte('"')
		tb.WriteString(v)
		tb.WriteByte(' ')
	}
	cb.WriteByte('}')
	return cb.String(), tb.String(), fields
}

// decodedArgs is parseArgs of any arguments, decoded with encoding/json.
func decodedArgs(tool, args string) (canon, text string, fields map[string]string) {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return strings.TrimSpace(args), args, nil
	}
	if m, ok := v.(map[string]any); ok {
		cleanBuiltinPath(tool, m)
		fields = make(map[string]string, len(m))
		for k, x := range m {
			if s, ok := x.(string); ok {
				fields[k] = s
			} else if b, err := json.Marshal(x); err == nil {
				fields[k] = string(b)
			}
		}
	}
	if b, err := json.Marshal(v); err == nil {
		canon = string(b)
	} else {
		canon = strings.TrimSpace(args)
	}
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			sb.WriteString(x)
			sb.WriteByte(' ')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return canon, sb.String(), fields
}

// cleanBuiltinPath cleans the path argument of a built-in workspace tool in
// place, as the tool reads it: ./a.md and a.md//b are a.md and a.md/b, and
// list_dir or find_files without a path (or with "" or "/") mean the
// workspace itself, ".".
func cleanBuiltinPath(tool string, m map[string]any) {
	if !snapshot.IsBuiltinTool(tool) {
		return
	}
	folder := tool == snapshot.ToolListDir || tool == snapshot.ToolFindFiles
	switch s, ok := m["path"].(string); {
	case ok && s != "" && s != "/":
		m["path"] = path.Clean(s)
	case folder && (!ok && m["path"] == nil || s == "" || s == "/"):
		m["path"] = "."
	}
}

// summarize is a short form of a call's argument text for messages: its
// first value, or the text cut to 40 characters.
func summarize(text string) string {
	s := strings.TrimSpace(text)
	if i := strings.IndexByte(s, ' '); i > 0 && !strings.Contains(s[:i], "\n") && len(s[:i]) <= 60 {
		s = s[:i]
	}
	return shorten(s)
}

// shorten cuts one value to 40 characters for messages, on one line. A
// long path keeps its end, where paths differ (…/strategy/hooks.go).
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= 40 {
		return s
	}
	if strings.Contains(s, "/") && !strings.Contains(s, " ") {
		tail := string(r[len(r)-38:])
		if i := strings.IndexByte(tail, '/'); i >= 0 && i < len(tail)-1 {
			tail = tail[i:]
		}
		return "…" + tail
	}
	return string(r[:39]) + "…"
}

// tokens splits text into lower-case tokens of at least min characters. It
// splits on every character that is not a letter or digit — a superset of
// DESIGN §8's space, /, ., _, -, comma, so JSON punctuation never sticks.
func tokens(text string, min int) []string {
	f := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := f[:0]
	for _, t := range f {
		if len([]rune(t)) >= min {
			out = append(out, t)
		}
	}
	return out
}

// turnStarts returns, per node of c, the index of the node that began its
// turn: the latest user node, or the conversation's first node.
func turnOf(c *graph.Conversation) []int {
	out := make([]int, len(c.Nodes))
	start := 0
	for i, n := range c.Nodes {
		if n.Kind == record.KindUser {
			start = i
		}
		out[i] = start
	}
	return out
}

// llmStepOf returns the llm node that issued tool node t: the nearest llm
// node before it in its conversation.
func llmStepOf(t *graph.Node) *graph.Node {
	nodes := t.Conv.Nodes
	i := sort.Search(len(nodes), func(i int) bool { return nodes[i].Seq >= t.Seq })
	for j := i - 1; j >= 0; j-- {
		if nodes[j].Kind == record.KindLLM {
			return nodes[j]
		}
	}
	return nil
}

// firstLLM returns the first llm node of a conversation at or after index i.
func firstLLM(c *graph.Conversation, from int) *graph.Node {
	for _, n := range c.Nodes[from:] {
		if n.Kind == record.KindLLM {
			return n
		}
	}
	return nil
}

// convCalls lists the calls of a conversation.
func convCalls(c *graph.Conversation) []*graph.Node {
	var out []*graph.Node
	for _, n := range c.Nodes {
		if isCall(n) {
			out = append(out, n)
		}
	}
	return out
}

// usage sums the usage of llm nodes into a price.
func addUsage(p *findings.Price, n *graph.Node) {
	if n == nil || n.LLM == nil {
		return
	}
	p.TokensIn += n.LLM.Usage.In
	p.TokensOut += n.LLM.Usage.Out
	p.LLMCalls++
	addCached(p, n)
}

// addCached adds the cached input the provider reported on llm node n, if
// it reported any: a price never claims a cache hit nobody measured.
func addCached(p *findings.Price, n *graph.Node) {
	if n != nil && n.LLM != nil && n.LLM.Usage.CachedReported {
		p.CachedReported = true
		p.CachedTokens += n.LLM.Usage.Cached
	}
}

// ids returns the display ids of nodes.
func ids(nodes ...*graph.Node) []string {
	out := make([]string, 0, len(nodes))
	seen := map[int64]bool{}
	for _, n := range nodes {
		if n != nil && !seen[n.Seq] {
			seen[n.Seq] = true
			out = append(out, n.ID())
		}
	}
	return out
}

// where names a conversation for messages: "the trunk" or "branch eu".
func where(c *graph.Conversation) string {
	if c.Path == "" {
		return "the trunk"
	}
	return "branch " + c.Path
}

// convShape names a conversation for fingerprints: its depth and, for a
// branch, its agent rather than its model-chosen name.
func convShape(c *graph.Conversation) string {
	if c.Path == "" {
		return "trunk"
	}
	return "branch"
}

// uniq sorts and deduplicates.
func uniq(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }

// median of durations (the lower middle for an even count is not used: the
// mean of the two middles).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// forkingAgent is the agent that made fork f.
func forkingAgent(f *graph.Fork) string { return f.Node.Agent }

// listCut joins items with commas, cut after the first n with a count of
// the rest ("a, b, c, …and 294 more"), so a message stays short however
// many items a finding has.
func listCut(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", …and %d more", len(items)-n)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
