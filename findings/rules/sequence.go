package rules

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/snapshot"
)

// ForkSequence: a branch depends on a sibling.
var ForkSequence = &findings.Rule{
	ID:       "fork.sequence",
	Area:     findings.Forking,
	Severity: findings.Error,
	Doc: findings.Doc{
		Title: "forked sequence",
		Detect: "a branch's instructions name a sibling branch (its name as a word), or a file a sibling's instructions " +
			"say it writes; or the branch reads a path a sibling writes (read_file of the path, list_dir or find_files of a " +
			"folder holding it), whatever the order in time. Branches run at once and cannot wait for each other.",
		Price: "the dependent branch's tool calls and tokens, spent on work that could not see what it needed.",
		Fix:   "the forking agent's prompt: keep steps that need an earlier step's result in its own conversation; fork only independent parts.",
		Next:  "those steps in the forking conversation, in order, and no branch that waits on a sibling.",
	},
	Run:    run(runForkSequence),
	Expect: expectForkSequence,
}

// writtenPaths lists the paths a branch's instructions say it writes: path
// tokens in a sentence that mentions writing or saving, cleaned. A
// sentence ends at one of . ; ! ? or a line end followed by white space.
func writtenPaths(instr string) []string {
	var out []string
	ascii := isASCII(instr)
	for rest := instr; ; {
		sentence, more := rest, false
		for i := 0; i+1 < len(rest); i++ {
			if sentenceEnd(rest[i]) && space(rest[i+1]) {
				sentence, rest, more = rest[:i], rest[i+2:], true
				break
			}
		}
		if says(sentence, ascii, "write", "save", "store", "create") {
			for _, t := range pathsIn(sentence) {
				out = append(out, path.Clean(t))
			}
		}
		if !more {
			return out
		}
	}
}

func sentenceEnd(b byte) bool { return b == '.' || b == ';' || b == '!' || b == '?' || b == '\n' }

func space(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r' }

// says reports whether text, lower-cased, holds one of words (lower-case
// ASCII); an ASCII text is compared in place.
func says(text string, ascii bool, words ...string) bool {
	if !ascii {
		low := strings.ToLower(text)
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(text); i++ {
		for _, w := range words {
			if text[i]|0x20 == w[0] && len(text)-i >= len(w) && strings.EqualFold(text[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// pathsIn lists the path tokens of text: a letter, digit or _, then any of
// those and . / -, ending in a dot and letters or digits (the leftmost
// longest ones, as the regular expression
// [A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+ finds them), in one pass.
func pathsIn(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if !pathStart(text[i]) {
			i++
			continue
		}
		s, e := i, i+1
		for e < len(text) && (pathStart(text[e]) || text[e] == '.' || text[e] == '/' || text[e] == '-') {
			e++
		}
		dot := -1 // the last dot of the run followed by a letter or digit
		for k := e - 2; k > s; k-- {
			if text[k] == '.' && isAlnum(text[k+1]) {
				dot = k
				break
			}
		}
		if dot < 0 {
			i = e // no token starts in this run
			continue
		}
		end := dot + 1
		for end < len(text) && isAlnum(text[end]) {
			end++
		}
		out = append(out, text[s:end])
		i = end
	}
	return out
}

func pathStart(b byte) bool { return isAlnum(b) || b == '_' }

// namedPaths lists the path tokens of text, cleaned: a sibling's file is
// named only as a whole path, so regions/eu.md does not name eu.md and
// layout.md does not name out.md.
func namedPaths(text string) []string {
	var out []string
	for _, t := range pathsIn(text) {
		out = append(out, path.Clean(t))
	}
	return out
}

// words lists the words of text: runs of the bytes wordByte accepts, a
// sentence's closing dots dropped ("totals." is the word totals; eu.md and
// regions/eu are words of their own, never eu).
func words(text string) []string {
	f := strings.FieldsFunc(text, func(r rune) bool { return r > 0x7f || !wordByte(byte(r)) })
	for i, w := range f {
		f[i] = strings.TrimRight(w, ".")
	}
	return f
}

// namesWord reports whether text names word as a word of its own (not
// inside a path or identifier), for names words() cannot hold (a space, a
// non-ASCII letter).
func namesWord(text, word string) bool {
	if word == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(word)
		end := e
		for end < len(text) && text[end] == '.' {
			end++
		}
		if (s == 0 || !wordByte(text[s-1])) && (end == len(text) || !wordByte(text[end])) {
			return true
		}
		i = s + 1
	}
}

func wordByte(b byte) bool {
	return b == '_' || b == '/' || b == '.' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// isPlainWord reports whether a branch name is one words() can return.
func isPlainWord(s string) bool {
	if s == "" || strings.HasSuffix(s, ".") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !wordByte(s[i]) {
			return false
		}
	}
	return true
}

// branchIO is what a branch did with workspace paths, its sub-branches and
// the agents it handed to inside it included.
type branchIO struct {
	reads  []*graph.Node          // read_file, list_dir and find_files calls, in order
	writes map[string]*graph.Node // the first write_file of each path
}

// branchIOs returns what each branch of the run read and wrote, from one
// walk over the calls: a call counts for its own branch and every branch it
// lies inside.
func (p *pass) branchIOs() map[*graph.Branch]*branchIO {
	if p.shared.io != nil {
		return p.shared.io
	}
	out := map[*graph.Branch]*branchIO{}
	for _, n := range p.Graph.Nodes {
		if !isCall(n) || !snapshot.IsBuiltinTool(n.Tool.Name) || p.call(n).path == "" {
			continue
		}
		for c := n.Conv; c != nil && c.Branch != nil; c = c.Branch.Fork.Parent {
			io := out[c.Branch]
			if io == nil {
				io = &branchIO{writes: map[string]*graph.Node{}}
				out[c.Branch] = io
			}
			if n.Tool.Name == snapshot.ToolWriteFile {
				if io.writes[p.call(n).path] == nil {
					io.writes[p.call(n).path] = n
				}
			} else {
				io.reads = append(io.reads, n)
			}
			if c.Branch.Fork == nil {
				break
			}
		}
	}
	p.shared.io = out
	return out
}

// dep is why one branch of a fork depends on a sibling.
type dep struct {
	sibling  int // the sibling's index in the fork's branches
	why      string
	evidence []*graph.Node // the read and the sibling's write, when it is what they did
}

// maxDeps is how many siblings a branch's dependence is collected for: a
// finding names a few and says there are more.
const maxDeps = 4

// written is one write of a fork's branches, for the folder index.
type written struct {
	path   string
	branch int
	node   *graph.Node
}

// dependences says, per branch of f, which siblings it depends on and why
// (at most maxDeps each, sorted by the sibling's declared order), in time
// linear in the branches' instructions and calls: names, told-to-write
// paths and written paths are indexed once, not compared pair by pair.
func (p *pass) dependences(f *graph.Fork) [][]dep {
	bs := f.Branches
	out := make([][]dep, len(bs))
	has := func(i, j int) bool {
		for _, d := range out[i] {
			if d.sibling == j {
				return true
			}
		}
		return false
	}
	add := func(i, j int, d dep) {
		if i != j && len(out[i]) < maxDeps && !has(i, j) {
			d.sibling = j
			out[i] = append(out[i], d)
		}
	}
	// 1. A sibling's name as a word of the instructions.
	byName := map[string][]int{}
	var odd []int // names words() cannot return
	for j, b := range bs {
		if isPlainWord(b.Name) {
			byName[b.Name] = append(byName[b.Name], j)
		} else if b.Name != "" {
			odd = append(odd, j)
		}
	}
	// 2. A file a sibling's instructions say it writes.
	told := map[string][]int{}
	for j, b := range bs {
		for _, w := range writtenPaths(b.Instructions) {
			told[w] = append(told[w], j)
		}
	}
	for i, b := range bs {
		for _, w := range words(b.Instructions) {
			for _, j := range byName[w] {
				add(i, j, dep{why: fmt.Sprintf("its instructions name sibling %q", bs[j].Name)})
			}
		}
		for _, j := range odd {
			if namesWord(b.Instructions, bs[j].Name) {
				add(i, j, dep{why: fmt.Sprintf("its instructions name sibling %q", bs[j].Name)})
			}
		}
		for _, np := range namedPaths(b.Instructions) {
			for _, j := range told[np] {
				add(i, j, dep{why: fmt.Sprintf("its instructions name %s, which sibling %q is told to write", np, bs[j].Name)})
			}
		}
	}
	// 3. A path a sibling wrote, read by the branch: by the path itself, or
	// by a listing or search of a folder that holds it.
	ios := p.branchIOs()
	var all []written
	for j, b := range bs {
		if io := ios[b]; io != nil {
			for w, n := range io.writes {
				all = append(all, written{w, j, n})
			}
		}
	}
	if len(all) > 0 {
		sort.Slice(all, func(a, b int) bool {
			if all[a].path != all[b].path {
				return all[a].path < all[b].path
			}
			return all[a].branch < all[b].branch
		})
		exact := map[string][]written{}
		under := map[string][]written{} // folder → the writes inside it, however deep, sorted by path
		for _, w := range all {
			exact[w.path] = append(exact[w.path], w)
			for d := path.Dir(w.path); ; d = path.Dir(d) {
				under[d] = append(under[d], w)
				if d == "." || d == "/" {
					break
				}
			}
		}
		for i, b := range bs {
			io := ios[b]
			if io == nil {
				continue
			}
			for _, r := range io.reads {
				if len(out[i]) == maxDeps {
					break
				}
				a := p.call(r)
				switch r.Tool.Name {
				case snapshot.ToolReadFile:
					for _, w := range exact[a.path] {
						add(i, w.branch, dep{why: fmt.Sprintf("it read %s, which sibling %q writes", w.path, bs[w.branch].Name), evidence: []*graph.Node{r, w.node}})
					}
				case snapshot.ToolListDir, snapshot.ToolFindFiles:
					needle := strings.ToLower(a.pattern)
					for _, w := range under[a.path] {
						if len(out[i]) == maxDeps {
							break
						}
						if r.Tool.Name == snapshot.ToolFindFiles && !strings.Contains(strings.ToLower(w.path), needle) {
							continue
						}
						verb := "listed"
						if r.Tool.Name == snapshot.ToolFindFiles {
							verb = "searched"
						}
						add(i, w.branch, dep{why: fmt.Sprintf("it %s %s, which holds %s, which sibling %q writes", verb, a.path, w.path, bs[w.branch].Name), evidence: []*graph.Node{r, w.node}})
					}
				}
			}
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i], func(a, b dep) int { return a.sibling - b.sibling })
	}
	return out
}

func runForkSequence(p *pass) {
	if noForks(p) {
		return
	}
	pairs := 0
	for _, f := range p.Forks() {
		k := len(f.Branches)
		pairs += k * (k - 1) / 2
		for i, ds := range p.dependences(f) {
			if len(ds) == 0 {
				continue
			}
			b, s := f.Branches[i], f.Branches[ds[0].sibling]
			var price findings.Price
			for _, n := range b.Conv.Nodes {
				if isCall(n) {
					price.Calls++
				}
				addUsage(&price, n)
			}
			price.Basis = fmt.Sprintf("branch %s made %s and spent %d tokens in, %d out, without its sibling's result", b.Name,
				plural(price.Calls, "call", "calls"), price.TokensIn, price.TokensOut)
			nodes := []*graph.Node{f.Node, firstNode(b.Conv)}
			var others, agents []string
			for k, d := range ds {
				nodes = append(nodes, d.evidence...)
				agents = append(agents, f.Branches[d.sibling].Agent)
				if k > 0 {
					others = append(others, fmt.Sprintf("%q", f.Branches[d.sibling].Name))
				}
			}
			also := ""
			switch {
			case len(ds) == maxDeps:
				also = fmt.Sprintf("; it also depends on %s and more", strings.Join(others, ", "))
			case len(others) > 0:
				also = fmt.Sprintf("; it also depends on %s", strings.Join(others, ", "))
			}
			agent := forkingAgent(f)
			p.Report(findings.Finding{
				Agent:   agent,
				Message: fmt.Sprintf("branch %q of the fork at %s depends on sibling %q: %s%s; branches run at the same time and cannot wait", b.Name, f.Node.ID(), s.Name, ds[0].why, also),
				Nodes:   ids(nodes...),
				Fix: p.Owner(agent, "fork", "branch", "sub-agent").Fix(fmt.Sprintf(p.words("do %q and then %q in its own conversation, and to fork only parts that need nothing from each other",
					"do %q's and then %q's work itself, in order, and to start together only sub-agents that need nothing from each other"), s.Name, b.Name)),
				Next:  fmt.Sprintf("%q's work first, then %q's, in %s; no branch waiting on a sibling", s.Name, b.Name, where(f.Parent)),
				Price: price,
				Shape: fmt.Sprintf("%s needs %s", b.Agent, strings.Join(uniq(agents), ",")),
			})
		}
	}
	p.Clear("%s in %s checked", plural(pairs, "sibling pair", "sibling pairs"), plural(len(p.Forks()), "fork", "forks"))
}

// expectForkSequence: no fork from the agent has a branch that depends on
// a sibling (by the rule's own test), and the agent makes calls of its own,
// the steps it was told to take in order.
func expectForkSequence(f findings.Finding, next *graph.Run) findings.Verdict {
	p := laterPass(next)
	forks := forksBy(next, f.Agent)
	for _, fk := range forks {
		for i, ds := range p.dependences(fk) {
			if len(ds) > 0 {
				return verdict(false, "branch %q of the fork at %s still depends on sibling %q: %s", fk.Branches[i].Name, fk.Node.ID(), fk.Branches[ds[0].sibling].Name, ds[0].why)
			}
		}
	}
	own := len(ownCalls(next, f.Agent))
	if own == 0 {
		return verdict(false, "no branch from %s waits on a sibling, but %s made no call of its own in the new run", f.Agent, f.Agent)
	}
	if len(forks) == 0 {
		return verdict(true, "%s no longer forks, and made %s of its own", f.Agent, plural(own, "call", "calls"))
	}
	return verdict(true, "no branch of the %s from %s waits on a sibling, and %s made %s of its own", plural(len(forks), "fork", "forks"), f.Agent, f.Agent, plural(own, "call", "calls"))
}
