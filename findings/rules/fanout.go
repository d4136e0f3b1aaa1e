package rules

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
	"github.com/inspect-dev/inspect/stack"
)

// The fan-out rules' thresholds.
var (
	fanoutMinCalls = &findings.Threshold[int]{Key: "fanout-min-calls", Text: "consecutive independent research calls that make a missed fan-out", Def: 3, Min: 2}
	tokenMinLen    = &findings.Threshold[int]{Key: "token-min-len", Text: "shortest argument token that ties a call to an earlier result", Def: 3, Min: 1}
	// parallelMinCalls is fanout-min-calls on a stack that runs the calls
	// of one response at once (stack.ParallelCalls): there the fix costs
	// nothing new — the calls go into one response — so two are enough.
	parallelMinCalls = &findings.Threshold[int]{Key: "parallel-min-calls", Text: "consecutive independent calls, one per response, that make a missed parallel call on a stack that runs a response's calls at once", Def: 2, Min: 2}
	// noisyResultTokens is how much the items' results must come to before
	// a missed parallel call also proposes sub-agents.
	noisyResultTokens = &findings.Threshold[int64]{Key: "subagent-min-result-tokens", Text: "tokens of the calls' results (bytes/4) above which a missed parallel call also proposes sub-agents, where the agent can start them", Def: 20000, Min: 0}
)

// FanoutMissed: independent research calls in series, fork available.
var FanoutMissed = &findings.Rule{
	ID:       "fanout.missed",
	Area:     findings.Forking,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "missed fan-out",
		Detect: "at least {fanout-min-calls} research calls or one-branch forks in one conversation, each in its own model response, one after another, " +
			"none using an earlier one's result, with at least {fanout-min-calls} different items among them, while fork was in the agent's " +
			"recorded tools. A call uses an earlier call's result when a token of its arguments ({token-min-len}+ characters, and each path " +
			"whole and by its file name; a fork's instructions) first appears in that result (a fork's join), or when it reads inside a folder " +
			"an earlier call of the series listed; a call whose arguments are empty or redacted is unknown, and ends the series. Calls of " +
			"one response are one step, never a series. The items are the argument values that differ between the calls; " +
			"a series of one identical call is reported here once, as the same call N times, whatever the agent's tools. " +
			"On a stack that runs the calls of one response at once (Claude Code, Codex, Kimi, the Agents SDK, LangGraph's ToolNode, " +
			"the AI SDK), {parallel-min-calls} such calls are enough, and the fix is to make them in one response; sub-agents are proposed " +
			"besides only when the calls' results came to more than {subagent-min-result-tokens} tokens and the agent can start them.",
		Price: "elapsed time: the sum of the items' times minus the longest item, where an item is its model step plus its tool call " +
			"(or its one-branch fork's branch). A fan-out buys time, not tokens, so no tokens are charged. On a stack that runs a " +
			"response's calls at once: the model round trips saved (every response of the series but the first), their input tokens, " +
			"and their model time plus the calls' time side by side (the sum of the calls minus the longest).",
		Fix: "the agent's prompt: say in the domain's terms when to fork, one branch per item, and what each branch returns; on a stack " +
			"that runs a response's calls at once, the agent's instructions (CLAUDE.md, AGENTS.md, the agent's instructions in code): " +
			"make independent calls in one response.",
		Next: "one fork with a branch per item (at most the agent's maxBranches), and the reads inside the branches; for the same call N times, " +
			"that call made once; on a stack that runs a response's calls at once, one response making the calls.",
	},
	Options: []findings.Option{fanoutMinCalls, tokenMinLen, parallelMinCalls, noisyResultTokens},
	Run:     run(func(p *pass) { runFanout(p, true) }),
	Expect:  expectWith(expectFanout),
	Lane:    fanoutLane,
}

// fanoutLane is the audit lane of the two fan-out rules: they share the
// serial runs (fanoutFacts), the costliest facts of an audit, which the
// other rules do not read, so the rest run beside them.
const fanoutLane = "fanout"

// FanoutMissedNoFork: the same series, but the agent had no fork tool.
var FanoutMissedNoFork = &findings.Rule{
	ID:       "fanout.missed.nofork",
	Area:     findings.Forking,
	Severity: findings.Warning,
	Doc: findings.Doc{
		Title: "missed fan-out, fork unavailable",
		Detect: "the series of fanout.missed (at least {fanout-min-calls} independent research calls or one-branch forks in separate responses) by an agent " +
			"whose recorded tools had no fork: agents.yaml gives it none, or the run's maxForkDepth withdrew it. Never on a stack that runs the " +
			"calls of one response at once: there a series of {parallel-min-calls} is fanout.missed, fixed in one response.",
		Price: "elapsed time: the sum of the items' times minus the longest item.",
		Fix:   "agents.yaml: add fork: to that agent (or raise maxForkDepth when the depth cap withdrew it), then the prompt trigger of fanout.missed.",
		Next:  "one fork with a branch per item.",
	},
	Options: []findings.Option{fanoutMinCalls, tokenMinLen, parallelMinCalls},
	Run:     run(func(p *pass) { runFanout(p, false) }),
	Expect:  expectWith(expectFanout),
	Lane:    fanoutLane,
}

// fanoutPromise is what a missed fan-out promises: a fork from the agent
// with a branch per item (at most its maxBranches), the items' calls
// inside the branches; or, for the same call repeated, that call made once.
type fanoutPromise struct {
	Items int      // the branches the fix asks for: distinct items, at most maxBranches
	Tools []string // the items' tools, sorted, once each ("fork" for one-branch forks)
	Same  string   // the repeated call's key, when the series is one call N times
	// Parallel is set on a stack that runs a response's calls at once:
	// the fix is one response making Items calls of Tools.
	Parallel bool
}

// expectFanout looks for a fork from the finding's agent with at least one
// branch per item whose branches (with their own branches) make a call of
// the items' tools; for a repeated call, that the agent made it at most once.
func expectFanout(p fanoutPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	if p.Same != "" {
		lp, n := laterPass(next), 0
		for _, c := range ownCalls(next, f.Agent) {
			if lp.call(c).key == p.Same {
				n++
			}
		}
		return verdict(n <= 1, "%s made the call %s %s in the new run", f.Agent, p.Same, plural(n, "time", "times"))
	}
	if p.Parallel {
		return expectParallel(p, f, next)
	}
	tools := strings.Join(p.Tools, ", ")
	callTools := slices.DeleteFunc(slices.Clone(p.Tools), func(t string) bool { return t == "fork" })
	best := 0
	for _, fk := range forksBy(next, f.Agent) {
		if len(fk.Branches) >= p.Items {
			if len(callTools) == 0 {
				return verdict(true, "the fork at %s from %s has %d branches (base: %d serial one-branch forks)", fk.Node.ID(), f.Agent, len(fk.Branches), p.Items)
			}
			for _, b := range fk.Branches {
				if callsOf(subtreeCalls(next, b.Conv), callTools) > 0 {
					return verdict(true, "the fork at %s from %s has %d branches (base: %d serial calls), with %s inside the branches",
						fk.Node.ID(), f.Agent, len(fk.Branches), p.Items, tools)
				}
			}
		}
		best = max(best, len(fk.Branches))
	}
	if best == 0 {
		return verdict(false, "no fork from %s in the new run (base: %d serial calls)", f.Agent, p.Items)
	}
	return verdict(false, "the widest fork from %s with the calls inside has fewer than %d branches, or its branches make no %s call", f.Agent, p.Items, tools)
}

// expectParallel looks for a response of the finding's agent making at
// least p.Items calls of the items' tools at once (a parallel call group;
// a fork of delegation calls counts a call per branch).
func expectParallel(p fanoutPromise, f findings.Finding, next *graph.Run) findings.Verdict {
	best := 0
	for _, g := range next.Groups {
		if g.LLM.Agent != f.Agent {
			continue
		}
		n := 0
		for _, m := range g.Members {
			switch {
			case m.Kind == record.KindFork && m.Fork != nil && contains(p.Tools, m.Fork.Tool):
				n += m.CallCount()
			case m.Tool != nil && contains(p.Tools, m.Tool.Name):
				n++
			}
		}
		if n >= p.Items {
			return verdict(true, "%s made %d %s calls in one response at %s (base: %d, one per response)", f.Agent, n, strings.Join(p.Tools, ", "), g.LLM.ID(), p.Items)
		}
		best = max(best, n)
	}
	return verdict(false, "no response of %s made %d %s calls at once in the new run (at most %d)", f.Agent, p.Items, strings.Join(p.Tools, ", "), best)
}

// callsOf counts the calls among calls whose tool is one of tools.
func callsOf(calls []*graph.Node, tools []string) int {
	n := 0
	for _, c := range calls {
		if contains(tools, c.Tool.Name) {
			n++
		}
	}
	return n
}

// serialRun is a series of independent research calls in separate responses.
type serialRun struct {
	Conv  *graph.Conversation
	Agent string
	Items []*step

	// what both fan-out rules read of the series, made once by the first
	// (serialRun.items, serialRun.asked)
	named    *seriesItems
	askedFor *string
}

// items is p.seriesItems(sr), named once for both fan-out rules.
func (sr *serialRun) items(p *pass) seriesItems {
	if sr.named == nil {
		it := p.seriesItems(sr)
		sr.named = &it
	}
	return *sr.named
}

// asked is p.askedSerial(sr), looked up once for both fan-out rules.
func (sr *serialRun) asked(p *pass) string {
	if sr.askedFor == nil {
		w := p.askedSerial(sr)
		sr.askedFor = &w
	}
	return *sr.askedFor
}

// fanoutFacts are computed once per audit and shared by both fanout rules.
type fanoutFacts struct {
	runs      int // serial runs of 2+ research calls examined
	longest   int
	research  int // research calls examined
	oneForks  int // one-branch forks in series position examined
	grouped   int // responses that made 2+ research calls at once
	forkInRun bool
	found     []*serialRun
}

// sharedFacts holds facts several rules need, computed once per audit
// (findings.Pass.Memo).
type sharedFacts struct {
	fanout *fanoutFacts
	calls  *callTable // the run's parsed calls, shared by every lane
	// the failure patterns matched, by pattern and reason (pass.matches),
	// and the reasons that are a request the provider refused (badRequest)
	matched map[matchKey]bool
	bad     map[string]bool
	io      map[*graph.Branch]*branchIO           // fork.sequence: what each branch read and wrote
	users   map[*graph.Conversation][]*graph.Node // each conversation's user nodes (turnUser)
}

// callArgs are a call's arguments in the forms rules compare and print,
// parsed once per audit (several rules look at every call).
type callArgs struct {
	key     string            // tool name and canonical arguments: equal keys are the same call
	text    string            // the string values, joined
	summary string            // a short form for messages
	fields  map[string]string // the top-level arguments, each as one string
	// path is the cleaned path argument of a built-in workspace tool ("."
	// for the workspace itself), "" for any other call; pattern is
	// find_files's substring.
	path, pattern string
	known         bool // the arguments say what the call did (pass.argsKnown)
}

// callsKey keys the run's parsed calls in findings.Pass.Shared.
type callsKey struct{}

// callTable holds the parsed arguments of a run's calls, each parsed once
// per audit by the first rule that asks, whatever its lane (rules of every
// lane look at every call): a slot per node of the run, by its index.
type callTable struct {
	nodes []*graph.Node
	slots []callSlot
}

type callSlot struct {
	once sync.Once
	args *callArgs
}

func newCallTable(g *graph.Run) *callTable {
	return &callTable{nodes: g.Nodes, slots: make([]callSlot, len(g.Nodes))}
}

// index is n's index in the run's nodes, -1 when it is not one of them:
// nodes are in seq order, seq 1, 2, 3… in a run without gaps.
func (t *callTable) index(n *graph.Node) int {
	if len(t.nodes) == 0 {
		return -1
	}
	if i := n.Seq - t.nodes[0].Seq; i >= 0 && i < int64(len(t.nodes)) && t.nodes[i] == n {
		return int(i)
	}
	i := sort.Search(len(t.nodes), func(i int) bool { return t.nodes[i].Seq >= n.Seq })
	if i < len(t.nodes) && t.nodes[i] == n {
		return i
	}
	return -1
}

// call returns the parsed arguments of call n.
func (p *pass) call(n *graph.Node) *callArgs {
	t := p.shared.calls
	if t == nil {
		t = p.Shared(callsKey{}, func() any { return newCallTable(p.Graph) }).(*callTable)
		p.shared.calls = t
	}
	i := t.index(n)
	if i < 0 {
		return parseCall(n)
	}
	s := &t.slots[i]
	s.once.Do(func() { s.args = parseCall(n) })
	return s.args
}

// parseCall parses call n's arguments into the forms the rules read.
func parseCall(n *graph.Node) *callArgs {
	canon, text, fields := parseArgs(n.Tool.Name, n.Tool.Args)
	a := &callArgs{key: n.Tool.Name + " " + canon, text: text, summary: summarize(text), fields: fields}
	for _, k := range []string{"command", "cmd"} {
		if v, ok := fields[k]; ok {
			fields[k] = commandText(v) // ["bash","-lc","cat a.md"] is cat a.md
		}
	}
	for _, k := range []string{"pattern", "query", "file_path", "absolute_path", "url", "command", "cmd"} {
		if v := strings.TrimSpace(fields[k]); v != "" && !snapshot.IsBuiltinTool(n.Tool.Name) {
			a.summary = shorten(v) // what the call is about, not its first option
			break
		}
	}
	if snapshot.IsBuiltinTool(n.Tool.Name) {
		a.path, a.pattern = fields["path"], fields["pattern"]
		switch {
		case n.Tool.Name == snapshot.ToolFindFiles && a.pattern != "":
			a.summary = shorten(a.pattern)
		case a.path != "":
			a.summary = shorten(a.path)
		}
	}
	a.known = knownArgs(a)
	return a
}

// parallel reports whether the run's stack runs the calls of one response
// at once (stack.ParallelCalls): a missed fan-out there is fixed by making
// the calls in one response, not by sub-agents.
func (p *pass) parallel() bool { return p.Profile.Has(stack.ParallelCalls) }

// minSeries is the shortest series of independent calls that is a finding:
// fanout-min-calls, or parallel-min-calls on a stack that runs a
// response's calls at once.
func (p *pass) minSeries() int {
	if p.parallel() {
		return parallelMinCalls.Get(p.Options)
	}
	return fanoutMinCalls.Get(p.Options)
}

func (p *pass) fanoutFacts() *fanoutFacts {
	if p.shared.fanout != nil {
		return p.shared.fanout
	}
	ff := &fanoutFacts{forkInRun: len(p.Graph.Forks) > 0}
	min := p.minSeries()
	for _, c := range p.Graph.Conversations {
		var cur []*step
		var sc *tokenScan
		flush := func() {
			if len(cur) >= 2 {
				ff.runs++
			}
			if len(cur) > ff.longest {
				ff.longest = len(cur)
			}
			if len(cur) >= min {
				if sc == nil {
					sc = newTokenScan(p, c)
				}
				for _, seg := range independentSegments(p, sc, cur) {
					if len(seg) >= min {
						ff.found = append(ff.found, &serialRun{Conv: c, Agent: seg[0].LLM.Agent, Items: seg})
					}
				}
			}
			cur = nil
		}
		for _, s := range steps(c) {
			ok := isItem(s) && p.Graph.GroupOf(s.LLM) == nil && p.known(s)
			switch {
			case ok && s.Fork != nil:
				ff.oneForks++
			case ok:
				ff.research++
			default:
				n := 0
				for _, t := range s.Tools {
					if isResearch(t) {
						n++
					}
				}
				ff.research += n
				if n >= 2 {
					ff.grouped++
				}
			}
			if !ok || s.Break || (len(cur) > 0 && cur[0].LLM.Agent != s.LLM.Agent) {
				flush()
			}
			if ok {
				cur = append(cur, s)
			}
		}
		flush()
	}
	p.shared.fanout = ff
	return ff
}

// isItem reports whether step s is an item of a fan-out series: a model
// response whose only call is a research call, or a one-branch fork that
// closed (DESIGN §8: an agent that delegates three independent jobs one
// after another, each in its own response, missed a fan-out of three).
func isItem(s *step) bool {
	if s.LLM.LLM == nil || len(s.LLM.LLM.Calls) != 1 {
		return false
	}
	if s.Fork != nil {
		return len(s.Tools) == 0 && len(s.Fork.Branches) == 1 && !s.Fork.Open()
	}
	return len(s.Tools) == 1 && isResearch(s.Tools[0])
}

// known reports whether a series item's arguments are known: a call with
// no argument value, or one whose value a redaction replaced
// ([REDACTED], [redacted]…), says nothing of what it read, so nothing
// proves it independent; it is no item and ends the series.
func (p *pass) known(s *step) bool {
	if s.Fork != nil && s.Fork.Branches[0].Status != record.StatusOK || s.Fork == nil && s.Tools[0].Failed() {
		return false // a failed call: what follows may be its retry or its fallback
	}
	if s.Fork != nil {
		in := s.Fork.Branches[0].Instructions
		return strings.TrimSpace(in) != "" && !redacted(in)
	}
	return p.argsKnown(s.Tools[0])
}

// argsKnown reports whether call n's arguments say what it did: not empty
// and not redacted ([REDACTED], [redacted]…). Two calls whose arguments
// are unknown are never "the same call".
func (p *pass) argsKnown(n *graph.Node) bool { return p.call(n).known }

// knownArgs is argsKnown of parsed arguments a, read once when they are
// parsed.
func knownArgs(a *callArgs) bool {
	if redacted(a.text) {
		return false
	}
	for _, v := range a.fields {
		switch strings.TrimSpace(v) {
		case "", "null", "{}", "[]", `""`:
		default:
			if !redacted(v) {
				return true
			}
		}
	}
	return len(a.fields) == 0 && strings.TrimSpace(a.text) != ""
}

// redacted reports whether text holds a redaction mark: inspect's own
// ([redacted]) or a source's ([REDACTED], REDACTED_SIGNATURE, @REDACTED).
func redacted(text string) bool {
	if strings.Contains(text, "REDACTED") {
		return true
	}
	if !isASCII(text) {
		return strings.Contains(strings.ToLower(text), "[redacted")
	}
	for t := text; ; {
		i := strings.IndexByte(t, '[')
		if i < 0 {
			return false
		}
		if t = t[i+1:]; len(t) >= 8 && strings.EqualFold(t[:8], "redacted") {
			return true
		}
	}
}

// pathTokens are the paths in text, whole and by file name, lower-case: a
// word (split on white space, quotes, brackets and separators, never on
// / or .) holding a / or a file extension, with ./ and trailing
// punctuation cut. A read of a path that first appeared in a listing or a
// search result uses that result even when each part of the path (the
// folders, the name, the extension) was known before.
func pathTokens(text string) []string {
	var out []string
	eachPathToken(text, func(t string) { out = append(out, t) })
	return out
}

// eachPathToken calls fn with each of pathTokens(text), in order, without
// making the list: the words are cut from text as they are scanned (every
// separator is one ASCII byte, which no byte of a longer UTF-8 sequence
// is), and a word with neither / nor . is no path.
func eachPathToken(text string, fn func(string)) {
	for i := 0; i < len(text); {
		for i < len(text) && pathSep[text[i]] {
			i++
		}
		s, pathy := i, false
		for ; i < len(text) && !pathSep[text[i]]; i++ {
			pathy = pathy || text[i] == '/' || text[i] == '.'
		}
		if pathy {
			pathWord(text[s:i], fn)
		}
	}
}

// pathSep holds the bytes that separate the words pathTokens reads.
var pathSep = func() (sep [256]bool) {
	for _, b := range []byte("\"'`()[]{}<>,;|=\\\n\t \r") {
		sep[b] = true
	}
	return sep
}()

// pathWord calls fn with the path of word w and its file name, when it
// names one.
func pathWord(w string, fn func(string)) {
	w = strings.TrimRight(w, ".:")
	if i := strings.IndexByte(w, ':'); i > 0 && !strings.Contains(w[:i], "/") && strings.Contains(w[i:], "/") {
		return // a URL scheme or a host:port, not a path
	}
	w, _, _ = strings.Cut(w, ":") // path:line of a search result
	w = strings.TrimPrefix(w, "./")
	if w == "" || w == "." || w == "/" {
		return
	}
	base := path.Base(w)
	ext := path.Ext(base)
	hasExt := len(ext) > 1 && len(base) > len(ext) && strings.IndexFunc(ext[1:], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0 &&
		strings.IndexFunc(ext[1:], unicode.IsLetter) >= 0
	if !strings.Contains(w, "/") && !hasExt {
		return
	}
	fn(strings.ToLower(path.Clean(w)))
	if base != w && base != "." && base != "/" {
		fn(strings.ToLower(base))
	}
}

// listingTools are the tools that list a folder (their folder is their
// path argument, else the working folder).
func isListing(tool string) bool {
	switch tool {
	case snapshot.ToolListDir, snapshot.ToolFindFiles, "Glob", "LS", "glob", "list_directory", "ListDir", "Find", "find":
		return true
	}
	return false
}

// commandTools run a shell command; its first word says what it does.
func isCommand(tool string) bool {
	switch tool {
	case "Bash", "bash", "shell", "exec_command", "run_shell_command", "Shell", "local_shell":
		return true
	}
	return false
}

// listedFolder is the folder call a lists, when it is a listing: a
// listing tool's path (else "."), or a shell command ls, find, tree or fd
// and its first operand.
func listedFolder(tool string, a *callArgs) (string, bool) {
	if isListing(tool) {
		for _, k := range []string{"path", "dir_path", "directory", "dir", "cwd"} {
			if v := strings.TrimSpace(a.fields[k]); v != "" {
				return path.Clean(v), true
			}
		}
		return ".", true
	}
	if !isCommand(tool) {
		return "", false
	}
	cmd := a.fields["command"]
	if cmd == "" {
		cmd = a.fields["cmd"]
	}
	words := strings.Fields(cmd)
	if len(words) > 2 && (words[0] == "bash" || words[0] == "sh") && words[1] == "-lc" {
		words = strings.Fields(strings.Trim(strings.Join(words[2:], " "), `"'`))
	}
	if len(words) == 0 {
		return "", false
	}
	switch words[0] {
	case "ls", "find", "tree", "fd":
	default:
		return "", false
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") {
			return path.Clean(strings.Trim(w, `"'`)), true
		}
	}
	return ".", true
}

// callPaths are the path-like argument values of call a: the paths
// pathTokens finds in its values, whole (not their file names).
func callPaths(a *callArgs) []string { return wholePaths(pathTokens(a.text)) }

// wholePaths are the paths of path tokens toks, without their file names.
func wholePaths(toks []string) []string {
	var out []string
	for _, t := range toks {
		if strings.Contains(t, "/") || strings.Contains(t, ".") {
			out = append(out, t)
		}
	}
	return out
}

// inFolder reports whether path p (lower-case, cleaned) lies inside folder
// dir: every path lies in "." (the working folder), a relative folder
// matches as a whole run of p's folders.
func inFolder(p, dir string) bool {
	dir = strings.ToLower(strings.TrimSuffix(dir, "/"))
	if dir == "." || dir == "" {
		return true
	}
	if p == dir {
		return false
	}
	if strings.HasPrefix(dir, "/") {
		return strings.HasPrefix(p, dir+"/")
	}
	return strings.HasPrefix(p, dir+"/") || strings.Contains(p, "/"+dir+"/")
}

// isSearch reports whether call a of tool searches file contents: a
// search tool (Grep, grep_search, search_file_content) or a shell command
// rg, grep, ag or ack.
func isSearch(tool string, a *callArgs) bool {
	switch tool {
	case "Grep", "grep", "grep_search", "search_file_content", "Search":
		return true
	}
	if !isCommand(tool) {
		return false
	}
	w := strings.Fields(a.fields["command"] + " " + a.fields["cmd"])
	if len(w) == 0 {
		return false
	}
	switch w[0] {
	case "rg", "grep", "ag", "ack", "egrep", "fgrep":
		return true
	}
	return false
}

// commandText is a shell command as a person reads it: an argument
// vector (["bash","-lc","cat a.md"], Codex's shell) joined, without the
// shell that runs it.
func commandText(v string) string {
	var argv []string
	if err := json.Unmarshal([]byte(v), &argv); err != nil || len(argv) == 0 {
		return v
	}
	if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh" || argv[0] == "zsh") && (argv[1] == "-lc" || argv[1] == "-c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// pathField is the name of call a's path argument, "" when it has none.
func pathField(a *callArgs) string {
	for _, k := range []string{"path", "file_path", "filePath", "absolute_path", "file"} {
		if strings.TrimSpace(a.fields[k]) != "" {
			return k
		}
	}
	return ""
}

// readsInside reports whether one of paths lies inside a folder that an
// item from start to before j listed.
func readsInside(paths []string, listed map[int]string, start, j int) bool {
	for i := start; i < j; i++ {
		dir, ok := listed[i]
		if !ok {
			continue
		}
		for _, q := range paths {
			if inFolder(q, dir) {
				return true
			}
		}
	}
	return false
}

// tokenScan walks one conversation in order once, building the token
// origin map independentSegments reads: each series of the conversation
// continues the walk where the previous one stopped, so a conversation is
// tokenised once, whatever the number of its series.
type tokenScan struct {
	c      *graph.Conversation
	next   int              // index in c.Nodes of the next node to see
	origin map[string]int64 // token → seq of the result it first appeared in (0: not a result)
	buf    []byte           // a token lower-cased (seeWords)
}

func newTokenScan(p *pass, c *graph.Conversation) *tokenScan {
	sc := &tokenScan{c: c, origin: map[string]int64{}}
	min := tokenMinLen.Get(p.Options)
	for _, t := range p.Graph.Tasks {
		sc.see(t, 0, min)
	}
	if c.Branch != nil {
		sc.see(c.Branch.Instructions, 0, min)
	}
	return sc
}

func (sc *tokenScan) see(text string, seq int64, min int) {
	sc.seeWords(text, seq, min)
	eachPathToken(text, func(t string) { sc.seeToken(t, seq) })
}

// seeWords records seq as the origin of each of tokens(text, min) not seen
// before. An ASCII text (most tool results) is cut in place: a token is a
// run of letters and digits, lower-cased in a buffer of the scan's only
// when it holds a capital, and a key is made only for a token not seen.
func (sc *tokenScan) seeWords(text string, seq int64, min int) {
	if !isASCII(text) {
		sc.seeTokens(tokens(text, min), seq)
		return
	}
	for i := 0; i < len(text); {
		for i < len(text) && !isAlnum(text[i]) {
			i++
		}
		s, upper := i, false
		for i < len(text) && isAlnum(text[i]) {
			upper = upper || 'A' <= text[i] && text[i] <= 'Z'
			i++
		}
		if i == s || i-s < min {
			continue
		}
		if !upper {
			sc.seeToken(text[s:i], seq)
			continue
		}
		sc.buf = append(sc.buf[:0], text[s:i]...)
		for k, b := range sc.buf {
			if 'A' <= b && b <= 'Z' {
				sc.buf[k] = b + 'a' - 'A'
			}
		}
		if _, ok := sc.origin[string(sc.buf)]; !ok {
			sc.origin[string(sc.buf)] = seq
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// seeToken records seq as the origin of t if it was not seen before.
func (sc *tokenScan) seeToken(t string, seq int64) {
	if _, ok := sc.origin[t]; !ok {
		sc.origin[t] = seq
	}
}

// seeTokens records seq as the origin of each of toks not seen before.
func (sc *tokenScan) seeTokens(toks []string, seq int64) {
	for _, t := range toks {
		if _, ok := sc.origin[t]; !ok {
			sc.origin[t] = seq
		}
	}
}

// independentSegments cuts a series where an item uses an earlier item's
// result: the token origin map is built over the conversation in order
// (sc continues from the previous series of the same conversation). An
// item's arguments are a call's argument values or a one-branch fork's
// instructions; its result a tool result or the fork's join.
func independentSegments(p *pass, sc *tokenScan, run []*step) [][]*step {
	min := tokenMinLen.Get(p.Options)
	call, result := map[int64]int{}, map[int64]int{} // seq of an item's call / result node → index in run
	var last int64
	for i, s := range run {
		call[s.callNode().Seq] = i
		result[s.resultSeq()] = i
		last = max(last, s.resultSeq())
	}
	var segs [][]*step
	start := 0
	listed := map[int]string{}         // index in run → the folder that item listed
	named := map[int]map[string]bool{} // index in run → the paths its result names
	cut := func(j int) {
		segs = append(segs, run[start:j])
		start = j
	}
	// namedBefore cuts before item j when a path of its arguments is
	// named in the result of an earlier item of the segment, known before
	// or not: a read of a file a search or a listing just showed follows
	// from it.
	namedBefore := func(j int, paths []string) {
		if j <= start {
			return
		}
		for i := start; i < j; i++ {
			for _, q := range paths {
				if named[i][q] {
					cut(j)
					return
				}
			}
		}
	}
	nameResult := func(i int, paths []string) {
		m := map[string]bool{}
		for _, q := range paths {
			m[q] = true
		}
		named[i] = m
	}
	uses := func(j int, toks []string) { // item j uses an earlier item's result (toks: its arguments' tokens, then their paths): cut before it
		if j <= start {
			return
		}
		for _, t := range toks {
			if i, ok := result[sc.origin[t]]; ok && i >= start && i < j {
				cut(j)
				return
			}
		}
	}
	// repeatsBranch cuts before call item j when an earlier one-branch
	// fork of the segment made the same call inside its branch: the call
	// after the join is join.repeat's (or the read an edit needs), never
	// an item to run beside the sub-agent that made it.
	branchMade := map[int]map[string]bool{}
	for i, s := range run {
		if s.Fork != nil {
			m := map[string]bool{}
			for _, c := range subtreeCalls(p.Graph, s.Fork.Branches[0].Conv) {
				m[p.call(c).key] = true
			}
			branchMade[i] = m
		}
	}
	repeatsBranch := func(j int, n *graph.Node) {
		k := p.call(n).key
		for i := start; i < j; i++ {
			if branchMade[i][k] {
				cut(j)
				return
			}
		}
	}
	// readsListed cuts before item j when it reads inside a folder an
	// earlier item of the segment listed: a listing is never an item
	// together with the reads that depend on it.
	readsListed := func(j int, n *graph.Node, paths []string) {
		a := p.call(n)
		if j > start && readsInside(paths, listed, start, j) {
			cut(j)
		}
		if dir, ok := listedFolder(n.Tool.Name, a); ok {
			listed[j] = dir
		}
	}
	for ; sc.next < len(sc.c.Nodes); sc.next++ {
		n := sc.c.Nodes[sc.next]
		if n.Seq > last {
			break
		}
		switch n.Kind {
		case record.KindUser, record.KindFinal:
			sc.see(n.Text, 0, min)
		case record.KindLLM:
			if n.LLM != nil {
				sc.see(n.LLM.Content, 0, min)
			}
		case record.KindTool:
			if n.Tool == nil {
				continue
			}
			// each text tokenised once: its words, then its paths
			args := p.call(n).text
			argPaths := pathTokens(args)
			argToks := append(tokens(args, min), argPaths...)
			var resultPaths []string // listed for a series item only
			if j, ok := call[n.Seq]; ok {
				paths := wholePaths(argPaths) // callPaths
				resultPaths = pathTokens(n.Tool.Result)
				uses(j, argToks)
				repeatsBranch(j, n)
				namedBefore(j, paths)
				readsListed(j, n, paths)
				nameResult(j, resultPaths)
				if isSearch(n.Tool.Name, p.call(n)) {
					for _, q := range paths {
						named[j][q] = true // where to read in a file it searched comes from its hits
					}
				}
			}
			sc.seeTokens(argToks, 0)
			sc.seeWords(n.Tool.Result, n.Seq, min)
			if resultPaths != nil {
				sc.seeTokens(resultPaths, n.Seq)
			} else {
				eachPathToken(n.Tool.Result, func(t string) { sc.seeToken(t, n.Seq) })
			}
		case record.KindFork:
			if n.ForkOf == nil {
				continue
			}
			var instr strings.Builder
			for _, b := range n.ForkOf.Branches {
				instr.WriteString(b.Instructions + " ")
			}
			if j, ok := call[n.Seq]; ok {
				uses(j, append(tokens(instr.String(), min), pathTokens(instr.String())...))
				namedBefore(j, pathTokens(instr.String()))
			}
			sc.see(instr.String(), 0, min)
		case record.KindJoin:
			if n.ForkOf != nil {
				var answers strings.Builder
				for _, b := range n.ForkOf.Branches {
					sc.see(b.Answer, n.Seq, min)
					answers.WriteString(b.Answer + " ")
				}
				if j, ok := result[n.Seq]; ok {
					nameResult(j, pathTokens(answers.String()))
				}
			}
		}
	}
	return append(segs, run[start:])
}

// serialWords are how a request asks for calls one after another.
var serialWords = []string{"one at a time", "one by one", "one after another", "one after the other", "sequentially", "in sequence", "serially", "in series", "then another"}

// askedSerial returns the words with which the turn a series ran in (its
// user message, or a branch's instructions) asked for the work one item
// at a time: a series the request asked for is no mistake of the agent's.
func (p *pass) askedSerial(sr *serialRun) string {
	return asked(p.turnRequest(sr.Conv, sr.Items[0].LLM.Seq), serialWords)
}

// turnRequest is what was asked of conversation c in the turn holding
// node seq: the latest user message before it, else a branch's
// instructions.
func (p *pass) turnRequest(c *graph.Conversation, seq int64) string {
	if u := p.turnUser(c, seq); u != nil {
		return u.Text
	}
	if b := c.Branch; b != nil {
		return b.Instructions
	}
	return ""
}

// turnUser is the user node of conversation c that began the turn holding
// seq: the last one before seq, or nil. Found by binary search over the
// conversation's user nodes, listed once per audit: a rule asking it for
// every series of a long conversation stays linear.
func (p *pass) turnUser(c *graph.Conversation, seq int64) *graph.Node {
	users, ok := p.shared.users[c]
	if !ok {
		for _, n := range c.Nodes {
			if n.Kind == record.KindUser {
				users = append(users, n)
			}
		}
		if p.shared.users == nil {
			p.shared.users = map[*graph.Conversation][]*graph.Node{}
		}
		p.shared.users[c] = users
	}
	i := sort.Search(len(users), func(i int) bool { return users[i].Seq >= seq })
	if i == 0 {
		return nil
	}
	return users[i-1]
}

// asked returns the first of words that text holds (lower-case), or "".
func asked(text string, words []string) string {
	low := strings.ToLower(text)
	for _, w := range words {
		if strings.Contains(low, w) {
			return w
		}
	}
	return ""
}

func runFanout(p *pass, withFork bool) {
	ff := p.fanoutFacts()
	asked := 0
	for _, sr := range ff.found {
		if sr.asked(p) != "" {
			asked++
			continue
		}
		items := sr.items(p)
		if items.distinct == 1 {
			// One call N times is no set of items to fork: reported
			// once, by fanout.missed, whatever the agent's tools (as
			// many times as a fan-out needs, whatever the stack).
			if withFork && len(sr.Items) >= fanoutMinCalls.Get(p.Options) {
				p.Report(sameCallFinding(p, sr, items))
			}
			continue
		}
		if items.distinct < p.minSeries() {
			continue // fewer different items than a fan-out needs
		}
		if p.parallel() {
			// The stack runs a response's calls at once: the calls go
			// into one response, whatever its delegation tools.
			if withFork {
				p.Report(parallelFinding(p, sr, items))
			}
			continue
		}
		first := sr.Items[0].LLM
		causes, forkOffered := p.forkCauses(first, sr.Agent, sr.Conv.Depth)
		if forkOffered != withFork {
			continue
		}
		p.Report(fanoutFinding(p, sr, items, causes, withFork))
	}
	switch {
	case ff.research == 0 && ff.oneForks == 0:
		p.NotApplicable("no research calls in this run")
	case ff.runs == 0:
		what := plural(ff.research, "research call", "research calls")
		if ff.oneForks > 0 {
			what += " and " + plural(ff.oneForks, "one-branch fork", "one-branch forks")
		}
		p.Clear("no research calls in series; %s examined", what)
		if ff.grouped == 0 {
			p.Unexamined() // no fan-out candidate: nothing of Forking's was there
		}
	default:
		p.Clear("%s examined, longest %s", plural(ff.runs, "serial run", "serial runs"), plural(ff.longest, "call", "calls"))
	}
	if asked > 0 {
		p.Clear("%s examined, longest %s; %s as the request asked (one at a time)", plural(ff.runs, "serial run", "serial runs"),
			plural(ff.longest, "call", "calls"), plural(asked, "series ran", "series ran"))
	}
}

// parallelPrice is what one response making a series' calls would have
// saved on a stack that runs them at once: every response but the first
// (a model round trip each, with its input tokens — the whole context sent
// again — and its model time), and the calls' time side by side (their
// sum minus the longest).
func parallelPrice(sr *serialRun) (findings.Price, []*graph.Node) {
	var nodes []*graph.Node
	var price findings.Price
	var model, work, longest time.Duration
	for i, s := range sr.Items {
		nodes = append(nodes, s.LLM, s.callNode())
		w := s.duration() - s.LLM.Duration()
		work += w
		longest = max(longest, w)
		if i == 0 {
			continue
		}
		model += s.LLM.Duration()
		addUsage(&price, s.LLM)
	}
	price.TokensOut = 0 // the calls are written either way
	saved := model + work - longest
	price.ElapsedMS = saved.Milliseconds()
	k := len(sr.Items)
	price.Basis = fmt.Sprintf("%d calls in %d responses; in one response: %s fewer (%d tokens in sent again, %s of model time), and the calls side by side: %s of calls − the longest %s = %s; %s saved",
		k, k, plural(k-1, "model round trip", "model round trips"), price.TokensIn, graph.FormatDuration(model),
		graph.FormatDuration(work), graph.FormatDuration(longest), graph.FormatDuration(work-longest), graph.FormatDuration(saved))
	if price.CachedReported {
		price.Basis += fmt.Sprintf(" (%d of those tokens cached, as the provider reported)", price.CachedTokens)
	}
	return price, nodes
}

// parallelPromise is what a missed parallel call promises: a response of
// the agent making at least Calls calls of Tools at once.
type parallelPromise struct {
	Calls int
	Tools []string // the items' tools (the delegation tool for sub-agent calls)
}

// itemTool is the tool a series item called: its tool, or the delegation
// tool its one-branch fork played.
func itemTool(s *step) string {
	if s.Fork != nil {
		if s.Fork.Node.Fork != nil && s.Fork.Node.Fork.Tool != "" {
			return s.Fork.Node.Fork.Tool
		}
		return "fork"
	}
	return s.Tools[0].Tool.Name
}

// parallelFinding words a missed fan-out on a stack that runs the calls of
// one response at once: the fix is those calls in one response. Sub-agents
// are proposed besides only for long, noisy work — results of more than
// subagent-min-result-tokens — and only when the agent can start them.
func parallelFinding(p *pass, sr *serialRun, items seriesItems) findings.Finding {
	price, nodes := parallelPrice(sr)
	k := len(sr.Items)
	var tools []string
	var resultBytes int
	for _, s := range sr.Items {
		tools = append(tools, itemTool(s))
		if s.Fork != nil {
			resultBytes += len(s.Fork.Branches[0].Answer)
		} else {
			resultBytes += len(s.Tools[0].Tool.Result)
		}
	}
	tools = uniq(tools)
	what := strings.Join(tools, ", ") + " calls"
	switch {
	case len(items.tools) == 1 && items.tools[0] == "fork":
		what = strings.Join(tools, ", ") + " calls, each starting one sub-agent,"
	case len(tools) > 1:
		what = "calls (" + strings.Join(tools, ", ") + ")"
	}
	targets := listCut(items.labels, maxListed)
	name := p.Profile.Name
	msg := fmt.Sprintf("%d %s in %s ran one after another, one per response (%s); none used an earlier one's result, and %s runs the calls of one response at once",
		k, what, where(sr.Conv), targets, name)
	if items.distinct < k {
		msg += fmt.Sprintf("; %d of them repeated an earlier call, %d items differ", k-items.distinct, items.distinct)
	}
	var causes []findings.Cause
	if g := p.groupOf(sr.Agent); g != nil {
		causes = append(causes, findings.Cause{Check: causeParallel, Result: "yes",
			Detail: fmt.Sprintf("%s made %d calls in one response at %s in this run", sr.Agent, g.Calls, g.LLM.ID())})
	} else {
		causes = append(causes, findings.Cause{Check: causeParallel, Result: "no",
			Detail: fmt.Sprintf("%s made every call of this run in a response of its own", sr.Agent)})
	}
	o := p.Owner(sr.Agent, "parallel", "one response", "at once", "tool calls")
	fix := o.Tell(fmt.Sprintf("make several %s that do not depend on each other's results (%s) in one response — %s runs them at once",
		what, targets, name))
	resultTokens := int64(resultBytes / 4)
	if resultTokens > noisyResultTokens.Get(p.Options) {
		fc, offered := p.forkCauses(sr.Items[0].LLM, sr.Agent, sr.Conv.Depth)
		causes = append(causes, fc...)
		if tool, _ := p.delegation(sr.Agent); offered && (sr.Conv.Depth == 0 || p.Profile.NestedSubAgents) && !contains(items.tools, "fork") {
			fix += fmt.Sprintf("; their results came to about %d tokens: where only a short answer from them is needed, start the sub-agents with %s in that one response instead, so the text stays out of this conversation", resultTokens, tool)
		}
	}
	return findings.Finding{
		Agent:   sr.Agent,
		Message: msg,
		Nodes:   ids(nodes...),
		Fix:     findings.Fix{Location: o.Location, Text: fix},
		Next:    fmt.Sprintf("one response from %s making the %d calls (%s)", sr.Agent, items.distinct, strings.Join(tools, ", ")),
		Price:   price,
		Causes:  causes,
		Shape:   fmt.Sprintf("%s parallel %s by %s", convShape(sr.Conv), strings.Join(tools, ", "), sr.Agent),
		Promise: fanoutPromise{Items: items.distinct, Tools: tools, Parallel: true},
	}
}

// causeParallel is the cheap cause of a missed parallel call: did the
// agent make several calls in one response anywhere in the run?
const causeParallel = "calls in one response"

// groupOf is the largest parallel call group agent's responses made in
// the run, or nil.
func (p *pass) groupOf(agent string) *graph.Group {
	var best *graph.Group
	for _, g := range p.Graph.Groups {
		if g.LLM.Agent == agent && (best == nil || g.Calls > best.Calls) {
			best = g
		}
	}
	return best
}

// maxListed is how many items a message names before "…and N more".
const maxListed = 6

// seriesItems are what a series' items are called in messages: the
// argument values that differ between its calls (DESIGN §8), not one
// repeated value.
type seriesItems struct {
	labels   []string // one per distinct item, in series order
	distinct int      // distinct items (calls with different arguments)
	per      string   // what one item is ("destination", "path"; "item" when mixed)
	tools    []string // the items' tools, sorted, once each; "fork" for one-branch forks
	key      string   // the first item's key (the repeated call, when distinct is 1)
}

// itemKey is what makes two items the same: the call's tool and canonical
// arguments, or the one-branch fork's agent and instructions.
func (p *pass) itemKey(s *step) string {
	if s.Fork != nil {
		b := s.Fork.Branches[0]
		return "fork " + b.Agent + "\x00" + b.Instructions
	}
	return p.call(s.Tools[0]).key
}

// seriesItems names the items of sr. Calls of one tool are named by the
// values of the arguments that differ between them (three search_fares
// calls on one date to three destinations are the destinations); a tool
// called once by its summary; a one-branch fork by its branch's name.
func (p *pass) seriesItems(sr *serialRun) seriesItems {
	var it seriesItems
	byTool := map[string][]*callArgs{}
	var order []string
	for _, s := range sr.Items {
		if s.Fork != nil {
			it.tools = append(it.tools, "fork")
			continue
		}
		name := s.Tools[0].Tool.Name
		it.tools = append(it.tools, name)
		if byTool[name] == nil {
			order = append(order, name)
		}
		byTool[name] = append(byTool[name], p.call(s.Tools[0]))
	}
	it.tools = uniq(it.tools)
	differ := map[string][]string{} // tool → the argument names whose values differ
	pers := map[string]bool{}
	for _, name := range order {
		calls := byTool[name]
		keys := map[string]bool{}
		for _, a := range calls {
			for k := range a.fields {
				keys[k] = true
			}
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			for _, a := range calls[1:] {
				if a.fields[k] != calls[0].fields[k] {
					differ[name] = append(differ[name], k)
					break
				}
			}
		}
		if len(calls) > 1 && len(differ[name]) == 1 {
			per := differ[name][0]
			switch {
			case per == "path" && name == snapshot.ToolReadFile:
				per = "file"
			case per == "path" && name == snapshot.ToolListDir:
				per = "folder"
			}
			pers[per] = true
		} else {
			pers[""] = true
		}
	}
	if len(pers) == 1 && !pers[""] && !contains(it.tools, "fork") {
		for k := range pers {
			it.per = k
		}
	} else {
		it.per = "item"
	}
	seen := map[string]bool{}
	for _, s := range sr.Items {
		k := p.itemKey(s)
		if seen[k] {
			continue
		}
		seen[k] = true
		if it.key == "" {
			it.key = k
		}
		var label string
		switch {
		case s.Fork != nil:
			label = shorten(s.Fork.Branches[0].Name)
		case len(differ[s.Tools[0].Tool.Name]) > 0:
			a := p.call(s.Tools[0])
			var vals []string
			diff := differ[s.Tools[0].Tool.Name]
			if f := pathField(a); f != "" && !contains(diff, f) {
				vals = append(vals, path.Base(a.fields[f])) // the file whose parts differ
			}
			for _, k := range diff {
				v := a.fields[k]
				if _, err := strconv.ParseFloat(v, 64); err == nil {
					v = k + " " + v // a number says nothing without its name: offset 79
				}
				vals = append(vals, shorten(v))
			}
			label = strings.Join(vals, " ")
		default:
			label = p.call(s.Tools[0]).summary
		}
		it.labels = append(it.labels, label)
	}
	it.distinct = len(seen)
	return it
}

// seriesPrice is a series' price: the sum of its items' times minus the
// longest, the time they would have taken side by side.
func seriesPrice(sr *serialRun) (findings.Price, []*graph.Node) {
	var nodes []*graph.Node
	var total, longest time.Duration
	for _, s := range sr.Items {
		nodes = append(nodes, s.LLM, s.callNode())
		d := s.duration()
		total += d
		longest = max(longest, d)
	}
	k := len(sr.Items)
	return findings.Price{
		ElapsedMS: (total - longest).Milliseconds(),
		Basis: fmt.Sprintf("%d items took %s in series; in parallel they would take the longest, %s: %s − %s = %s",
			k, graph.FormatDuration(total), graph.FormatDuration(longest), graph.FormatDuration(total), graph.FormatDuration(longest), graph.FormatDuration(total-longest)),
	}, nodes
}

// toolPhrase names the items' tools for messages: "read_file calls",
// "one-branch forks", "read_file calls and one-branch forks".
func toolPhrase(tools []string) string {
	calls := slices.DeleteFunc(slices.Clone(tools), func(t string) bool { return t == "fork" })
	switch {
	case len(calls) == 0:
		return "one-branch forks"
	case len(calls) < len(tools):
		return strings.Join(calls, ", ") + " calls and one-branch forks"
	}
	return strings.Join(calls, ", ") + " calls"
}

// sameCallFinding reports a series that is one call made N times: not N
// items to fork, one call to make once.
func sameCallFinding(p *pass, sr *serialRun, items seriesItems) findings.Finding {
	price, nodes := seriesPrice(sr)
	k := len(sr.Items)
	price.Basis = fmt.Sprintf("the same call %d times: ", k) + price.Basis
	first := sr.Items[0]
	what := fmt.Sprintf("%s %s", first.callNode().Tool.Name, items.labels[0])
	if first.Fork != nil {
		what = fmt.Sprintf("a one-branch fork %q", items.labels[0])
	}
	return findings.Finding{
		Agent:   sr.Agent,
		Message: fmt.Sprintf("%s in %s was the same call %d times in a row, each in its own response; identical calls are one call, not %d items to fork", what, where(sr.Conv), k, k),
		Nodes:   ids(nodes...),
		Fix:     p.Owner(sr.Agent, "once", "repeat", "again").Fix("make a call once and use its result rather than repeating it"),
		Next:    fmt.Sprintf("%s made once by %s", what, sr.Agent),
		Price:   price,
		Shape:   fmt.Sprintf("%s same %s by %s", convShape(sr.Conv), strings.Join(items.tools, ", "), sr.Agent),
		Promise: fanoutPromise{Items: 1, Tools: items.tools, Same: items.key},
	}
}

func fanoutFinding(p *pass, sr *serialRun, items seriesItems, causes []findings.Cause, withFork bool) findings.Finding {
	price, nodes := seriesPrice(sr)
	k := len(sr.Items)
	branches, capped := items.distinct, 0
	if a := p.Project.Agent(sr.Agent); a != nil && a.Fork != nil && a.Fork.MaxBranches > 0 && branches > a.Fork.MaxBranches {
		branches, capped = a.Fork.MaxBranches, a.Fork.MaxBranches
	}
	targets := listCut(items.labels, maxListed)
	toolList := strings.Join(items.tools, ", ")
	msg := fmt.Sprintf("%d %s in %s ran one after another in separate responses (%s); none used an earlier one's result",
		k, toolPhrase(items.tools), where(sr.Conv), targets)
	if items.distinct < k {
		msg += fmt.Sprintf("; %d of them repeated an earlier call, %d items differ", k-items.distinct, items.distinct)
	}
	perItem := fmt.Sprintf("one branch per %s", items.per)
	inside := ""
	if calls := slices.DeleteFunc(slices.Clone(items.tools), func(t string) bool { return t == "fork" }); len(calls) > 0 {
		inside = fmt.Sprintf(", the %s calls inside the branches", strings.Join(calls, ", "))
	}
	next := fmt.Sprintf("one fork from %s with a branch per %s (%d branches)%s", sr.Agent, items.per, branches, inside)
	if capped > 0 {
		perItem = fmt.Sprintf("up to %d branches (its maxBranches), each taking a share of the %d %ss", capped, items.distinct, items.per)
		next = fmt.Sprintf("one fork from %s with %d branches (its maxBranches), each taking a share of the %d %ss%s", sr.Agent, capped, items.distinct, items.per, inside)
	}
	f := findings.Finding{
		Agent:   sr.Agent,
		Nodes:   ids(nodes...),
		Next:    next,
		Price:   price,
		Causes:  causes,
		Shape:   fmt.Sprintf("%s %s by %s", convShape(sr.Conv), toolList, sr.Agent),
		Promise: fanoutPromise{Items: branches, Tools: items.tools},
	}
	if p.Project.Imported {
		return importedFanout(p, f, sr, msg, targets, items, withFork)
	}
	o := p.Owner(sr.Agent, "fork", "branch", "parallel")
	if withFork {
		f.Message = msg + "; fork was in its tools"
		f.Fix = findings.Fix{
			Location: o.Location,
			Text: fmt.Sprintf("Add a line to %s saying when to fork, in this task's terms: when the request covers several independent items (%s), fork %s with context none and say what each branch must return",
				o.Where, targets, perItem),
		}
		if c := findCause(causes, causeForkInstructions); c != nil && c.Result == "no" {
			f.Fix.Also = []findings.Location{{Path: findings.ForkInstructionsFile}}
		}
		return f
	}
	f.Message = msg + "; fork was not in its tools"
	a := p.Project.Agent(sr.Agent)
	if a != nil && a.Fork != nil && sr.Conv.Depth >= p.Project.MaxForkDepth {
		loc := findings.Location{Path: findings.AgentsFile, Line: p.Project.MaxForkDepthLine}
		text := fmt.Sprintf("Raise maxForkDepth in agents.yaml above %d so %s keeps fork at depth %d, or do this work at a shallower depth", p.Project.MaxForkDepth, sr.Agent, sr.Conv.Depth)
		if p.Project.MaxForkDepth != p.Project.YAMLMaxForkDepth {
			text = fmt.Sprintf("Raise the run's maxForkDepth above %d (this run was started with %d, overriding %d in agents.yaml) so %s keeps fork at depth %d, or do this work at a shallower depth",
				p.Project.MaxForkDepth, p.Project.MaxForkDepth, p.Project.YAMLMaxForkDepth, sr.Agent, sr.Conv.Depth)
		}
		f.Fix = findings.Fix{Location: loc, Text: text}
	} else {
		f.Fix = findings.Fix{
			Location: o.Entry(),
			Also:     []findings.Location{o.Location},
			Text:     fmt.Sprintf("Add fork: {agents: [%s]} to %s in agents.yaml, then a line to %s saying when to fork %s", sr.Agent, sr.Agent, o.Where, perItem),
		}
	}
	return f
}

// importedFanout words a missed fan-out of an imported run: the agent
// delegates with its tool's own name, and the fix goes to its instructions.
func importedFanout(p *pass, f findings.Finding, sr *serialRun, msg, targets string, items seriesItems, withFork bool) findings.Finding {
	k := f.Promise.(fanoutPromise).Items
	tool, _ := p.delegation(sr.Agent)
	o := p.Owner(sr.Agent, "parallel", "sub-agent", "subagent", "task", "delegat")
	if withFork {
		f.Message = fmt.Sprintf("%s; %s could delegate (%s)", msg, sr.Agent, tool)
		f.Next = fmt.Sprintf("one response from %s starting %d sub-agents with %s, one per %s, the calls inside them", sr.Agent, k, tool, items.per)
		f.Fix = o.Fix(fmt.Sprintf("start one sub-agent per %s with %s, all in the same response, when the request covers several independent items (%s), and to say what each must return",
			items.per, tool, targets))
		return f
	}
	f.Message = msg + "; no delegation tool was seen in this run"
	f.Next = fmt.Sprintf("one response from %s starting %d sub-agents, one per %s, the calls inside them", sr.Agent, k, items.per)
	f.Fix = findings.Fix{Location: o.Location, Text: fmt.Sprintf("Give %s a way to start sub-agents (%s), then: %s",
		o.Who, orNone(p.Profile.Delegate), o.Clause("to start one sub-agent per "+items.per))}
	return f
}

// delegation is the tool agent delegated with in this run ("fork" for our
// runtime; an imported run's Task, spawn_agent, Agent…) and the first fork
// node it made; "fork" and nil when it never delegated.
func (p *pass) delegation(agent string) (string, *graph.Node) {
	for _, f := range p.Graph.Forks {
		if f.Node.Agent == agent && f.Node.Fork != nil {
			if f.Node.Fork.Tool != "" {
				return f.Node.Fork.Tool, f.Node
			}
			return "fork", f.Node
		}
	}
	return "fork", nil
}

// delegationTools are the names other tools give the tool that plays fork.
func isDelegationTool(name string) bool {
	switch name {
	case "fork", "Task", "Agent", "AgentSwarm", "spawn_agent":
		return true
	}
	return false
}

// importedForkCauses checks whether an imported run's agent could
// delegate at llm node n: the tools its request recorded, or — when the
// source recorded none — whether it delegated anywhere in the run.
func (p *pass) importedForkCauses(n *graph.Node, agent string, req *chat.Request) ([]findings.Cause, bool) {
	noFile := findings.Cause{Check: causeForkInstructions, Result: "not applicable", Detail: "an imported run has no " + findings.ForkInstructionsFile}
	if req != nil && len(req.Tools) > 0 {
		for _, t := range req.Tools {
			if isDelegationTool(t.Name) || p.usedAsDelegation(t.Name) {
				return []findings.Cause{{Check: causeForkInTools, Result: "yes", Detail: fmt.Sprintf("%s offered %s; the model chose not to call it", n.ID(), t.Name)}, noFile}, true
			}
		}
		return []findings.Cause{{Check: causeForkInTools, Result: "no", Detail: fmt.Sprintf("%s's recorded tools hold no delegation tool", n.ID())}, noFile}, false
	}
	if tool, at := p.delegation(agent); at != nil {
		return []findings.Cause{{Check: causeForkInTools, Result: "yes", Detail: fmt.Sprintf("the session did not record %s's tools; %s delegated with %s at %s in this run", n.ID(), agent, tool, at.ID())}, noFile}, true
	}
	return []findings.Cause{{Check: causeForkInTools, Result: "unknown", Detail: fmt.Sprintf("the session did not record %s's tools and %s never delegated in this run", n.ID(), agent)}, noFile}, false
}

// usedAsDelegation reports whether some fork of the run was made with tool.
func (p *pass) usedAsDelegation(tool string) bool {
	for _, f := range p.Graph.Forks {
		if f.Node.Fork != nil && f.Node.Fork.Tool == tool {
			return true
		}
	}
	return false
}

const (
	causeForkInTools      = "fork in tools"
	causeForkInstructions = "fork instructions in system prompt"
)

func findCause(cs []findings.Cause, check string) *findings.Cause {
	for i := range cs {
		if cs[i].Check == check {
			return &cs[i]
		}
	}
	return nil
}

// forkCauses checks the cheap causes of a missed fan-out in the recorded
// request of llm node n, and reports whether fork was offered. When the
// request cannot be read, the answer comes from agents.yaml and the depth.
func (p *pass) forkCauses(n *graph.Node, agent string, depth int) ([]findings.Cause, bool) {
	a := p.Project.Agent(agent)
	configured := a != nil && a.Fork != nil && depth < p.Project.MaxForkDepth
	req, err := p.ReadRequest(n.Seq)
	if p.Project.Imported {
		if err != nil {
			req = nil
		}
		return p.importedForkCauses(n, agent, req)
	}
	if err != nil {
		detail := fmt.Sprintf("request of %s not readable (%v); from agents.yaml: ", n.ID(), err)
		if configured {
			detail += "fork: is set and depth is under maxForkDepth"
		} else {
			detail += "no fork at this depth"
		}
		return []findings.Cause{
			{Check: causeForkInTools, Result: "unknown", Detail: detail},
			{Check: causeForkInstructions, Result: "unknown", Detail: "request not readable"},
		}, configured
	}
	var causes []findings.Cause
	offered := req.Tool("fork") != nil
	switch {
	case offered:
		causes = append(causes, findings.Cause{Check: causeForkInTools, Result: "yes", Detail: fmt.Sprintf("%s offered fork; the model chose not to call it", n.ID())})
	case a != nil && a.Fork != nil:
		causes = append(causes, findings.Cause{Check: causeForkInTools, Result: "no", Detail: fmt.Sprintf("%s had no fork tool: depth %d reached maxForkDepth %d", n.ID(), depth, p.Project.MaxForkDepth)})
	default:
		causes = append(causes, findings.Cause{Check: causeForkInTools, Result: "no", Detail: fmt.Sprintf("%s had no fork tool: %s has no fork: in agents.yaml", n.ID(), agent)})
	}
	causes = append(causes, p.forkInstructionsCause(n, req, offered))
	return causes, offered
}

// forkInstructionsCause checks whether fork-instructions.md reached the
// system prompt of the request.
func (p *pass) forkInstructionsCause(n *graph.Node, req *chat.Request, offered bool) findings.Cause {
	fi := p.Project.Files.File(findings.ForkInstructionsFile)
	if fi == nil || strings.TrimSpace(fi.Content) == "" {
		d := "the project has no " + findings.ForkInstructionsFile
		if !offered {
			d += "; it is needed once the agent can fork"
		}
		return findings.Cause{Check: causeForkInstructions, Result: "no", Detail: d}
	}
	if strings.Contains(req.System, strings.TrimSpace(fi.Content)) {
		return findings.Cause{Check: causeForkInstructions, Result: "yes", Detail: fmt.Sprintf("%s's system prompt held %s", n.ID(), findings.ForkInstructionsFile)}
	}
	d := fmt.Sprintf("%s's system prompt lacked %s", n.ID(), findings.ForkInstructionsFile)
	if !offered {
		d += " (withdrawn with the fork tool, as expected)"
	}
	return findings.Cause{Check: causeForkInstructions, Result: "no", Detail: d}
}
