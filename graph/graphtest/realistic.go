package graphtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// RealisticVersion changes whenever Realistic generates a different run, so
// a benchmark may keep generated files between runs keyed by it.
const RealisticVersion = 1

// Realistic calls fn with about n nodes of one run shaped like a real
// multi-agent run (DESIGN §12), in sequence order, each node with its Seq,
// times and status set. Every round of the trunk has:
//
//   - serial reads without dependencies (three reads in separate responses)
//     and with them (an index read, then the file it names);
//   - a fork of four branches whose context rotates through inherit,
//     compact and none, one branch forking again (nested, depth 2), one
//     branch in seven failing;
//   - a join followed by a repeat of a read a branch already made;
//   - a hand-off to the other agent, back and forth (a loop), and a tool
//     called three times with the same arguments.
//
// Every llm node carries the exact request body of its conversation as the
// runtime would send it: the agent's system prompt, every message so far,
// the tools; conversations grow until the trunk's user turn ends (every
// eight rounds a new turn with a fresh conversation begins), so request
// bodies reach tens of kilobytes. Nodes are produced one at a time: memory
// stays bounded whatever n is.
func Realistic(n int, fn func(*record.Node) error) error {
	g := &gen{fn: fn, clock: map[string]time.Time{}}
	return g.run(n)
}

// RealisticRun is the run record Realistic's nodes belong to.
func RealisticRun() *record.Run {
	return &record.Run{Started: Start, Tasks: []string{"Compare Q3 revenue across every region"},
		Models:  []string{"gpt-4.1-mini"},
		Project: record.Project{Name: "realistic", Files: []record.File{{Path: "agents.yaml", Content: realisticAgents}}}}
}

const realisticAgents = `model: gpt-4.1-mini
agents:
  - name: analyst
    tools: [read_file, list_dir]
    fork: {agents: [researcher]}
    handoffs: [billing]
  - name: billing
    tools: [read_file]
    handoffs: [analyst]
  - name: researcher
    tools: [read_file, list_dir]
    fork: {agents: [researcher]}
`

// RecordRealistic records Realistic(n) as one finished run into db through
// the store's recorder, as the runtime would, and returns the run id.
func RecordRealistic(ctx context.Context, db *store.DB, n int) (string, error) {
	rec, err := db.CreateRun(ctx, RealisticRun())
	if err != nil {
		return "", err
	}
	end := Start
	if err := Realistic(n, func(nd *record.Node) error {
		if nd.Ended.After(end) {
			end = nd.Ended
		}
		return rec.AddNode(ctx, nd)
	}); err != nil {
		return "", err
	}
	return rec.RunID(), rec.Finish(ctx, record.StatusOK, "", end)
}

type gen struct {
	fn    func(*record.Node) error
	seq   int64
	clock map[string]time.Time
	err   error
}

// conv is one conversation being generated: its place and its messages,
// kept as the JSON the runtime would send.
type conv struct {
	branch string
	fork   int64
	depth  int
	agent  string
	system string
	msgs   []string // encoded messages after the system prompt
	calls  int
}

func (g *gen) emit(c *conv, nd *record.Node, d time.Duration) *record.Node {
	if g.err != nil {
		return nd
	}
	g.seq++
	nd.Seq = g.seq
	nd.Branch, nd.ForkSeq, nd.Depth = c.branch, c.fork, c.depth
	if nd.Agent == "" {
		nd.Agent = c.agent
	}
	key := fmt.Sprintf("%d/%s", c.fork, c.branch)
	if _, ok := g.clock[key]; !ok {
		g.clock[key] = Start
	}
	nd.Started = g.clock[key]
	nd.Ended = nd.Started.Add(d)
	g.clock[key] = nd.Ended
	if nd.Status == "" {
		nd.Status = record.StatusOK
	}
	g.err = g.fn(nd)
	return nd
}

var toolsJSON = map[string]string{
	"analyst":    `[{"type":"function","function":{"name":"read_file","description":"Read a file of the project","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},{"type":"function","function":{"name":"list_dir","description":"List a folder","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},{"type":"function","function":{"name":"fork","description":"Run branches in parallel","parameters":{"type":"object","properties":{"branches":{"type":"array"}}}}},{"type":"function","function":{"name":"transfer_to_billing","description":"Hand the conversation to billing","parameters":{"type":"object","properties":{"reason":{"type":"string"}}}}}]`,
	"billing":    `[{"type":"function","function":{"name":"read_file","description":"Read a file of the project","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},{"type":"function","function":{"name":"transfer_to_analyst","description":"Hand the conversation to analyst","parameters":{"type":"object","properties":{"reason":{"type":"string"}}}}}]`,
	"researcher": `[{"type":"function","function":{"name":"read_file","description":"Read a file of the project","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},{"type":"function","function":{"name":"list_dir","description":"List a folder","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},{"type":"function","function":{"name":"fork","description":"Run branches in parallel","parameters":{"type":"object","properties":{"branches":{"type":"array"}}}}}]`,
}

func systemFor(agent string) string {
	return "You are " + agent + ", one agent of a team that answers questions about a company's quarterly figures. " +
		strings.Repeat("Use the tools to read the files you need; cite the file each figure comes from. ", 6)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (c *conv) body() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4.1-mini","messages":[{"role":"system","content":`)
	b.WriteString(jsonString(c.system))
	b.WriteString("}")
	for _, m := range c.msgs {
		b.WriteString(",")
		b.WriteString(m)
	}
	b.WriteString(`],"tools":`)
	b.WriteString(toolsJSON[c.agent])
	b.WriteString("}")
	return []byte(b.String())
}

func (c *conv) setAgent(a string) {
	c.agent = a
	c.system = systemFor(a)
}

// llm records a model call of c that calls the given tools (with their
// arguments), or answers with text when calls is empty.
func (g *gen) llm(c *conv, text string, calls ...[2]string) *record.Node {
	c.calls++
	l := &record.LLM{Model: "gpt-4.1-mini", Content: text, Fidelity: record.FidelityExact, Request: c.body()}
	var tcs []string
	for i, call := range calls {
		l.Calls = append(l.Calls, call[0])
		tcs = append(tcs, fmt.Sprintf(`{"id":"call_%d_%d","type":"function","function":{"name":%q,"arguments":%s}}`, g.seq+1, i, call[0], jsonString(call[1])))
	}
	in := int64(len(l.Request) / 4)
	msg := `{"role":"assistant","content":` + jsonString(text)
	if len(tcs) > 0 {
		msg += `,"tool_calls":[` + strings.Join(tcs, ",") + `]`
	}
	msg += "}"
	l.Response = []byte(`{"id":"resp","object":"chat.completion","model":"gpt-4.1-mini","choices":[{"index":0,"message":` + msg + `,"finish_reason":"stop"}]}`)
	l.Usage = record.Usage{In: in, Out: int64(len(msg) / 4), Cached: in / 2, CachedReported: true}
	c.msgs = append(c.msgs, msg)
	return g.emit(c, &record.Node{Kind: record.KindLLM, LLM: l}, time.Second+time.Duration(len(l.Request))*time.Microsecond)
}

func (g *gen) tool(c *conv, name, args, result string) *record.Node {
	research := name == "read_file" || name == "list_dir"
	nd := g.emit(c, &record.Node{Kind: record.KindTool, Tool: &record.Tool{CallID: fmt.Sprintf("call_%d_0", g.seq), Name: name, Args: args, Result: result, Research: research}}, 50*time.Millisecond)
	c.msgs = append(c.msgs, `{"role":"tool","content":`+jsonString(result)+`,"tool_call_id":"`+nd.Tool.CallID+`"}`)
	return nd
}

// read is a model call that reads one file, and the read.
func (g *gen) read(c *conv, path string) {
	args := fmt.Sprintf(`{"path":%q}`, path)
	g.llm(c, "", [2]string{"read_file", args})
	g.tool(c, "read_file", args, "# "+path+"\n"+strings.Repeat("Revenue for the quarter was 4.2M, up 3% on the previous one; costs 3.1M. ", 3))
}

func (g *gen) user(c *conv, text string) {
	g.emit(c, &record.Node{Kind: record.KindUser, Text: text}, 0)
	c.msgs = append(c.msgs, `{"role":"user","content":`+jsonString(text)+`}`)
}

func (g *gen) final(c *conv, text string, status record.Status, errText string) {
	g.emit(c, &record.Node{Kind: record.KindFinal, Text: text, Status: status, Error: errText}, 0)
}

var contexts = []string{"inherit", "compact", "none"}

// fork runs a fork of names from c: each branch reads and answers; nested
// forks once more inside its first branch when depth allows.
func (g *gen) fork(c *conv, round int, names []string, nested bool) {
	ctxMode := contexts[round%len(contexts)]
	var args []string
	fb := make([]record.ForkBranch, len(names))
	for i, name := range names {
		fb[i] = record.ForkBranch{Name: name, Agent: "researcher", Instructions: "Total " + name + " revenue for round " + fmt.Sprint(round) + "; return the total."}
		args = append(args, fmt.Sprintf(`{"name":%q,"agent":"researcher","instructions":%s}`, name, jsonString(fb[i].Instructions)))
	}
	g.llm(c, "", [2]string{"fork", `{"context":"` + ctxMode + `","branches":[` + strings.Join(args, ",") + `]}`})
	forkNode := g.emit(c, &record.Node{Kind: record.KindFork, Fork: &record.Fork{Context: ctxMode, Branches: fb}}, 0)
	c.msgs = append(c.msgs, `{"role":"tool","content":"forked","tool_call_id":"call_fork"}`)
	join := &record.Join{ForkSeq: forkNode.Seq}
	end := forkNode.Ended
	for i, name := range names {
		path := name
		if c.branch != "" {
			path = c.branch + "/" + name
		}
		b := &conv{branch: path, fork: forkNode.Seq, depth: c.depth + 1}
		b.setAgent("researcher")
		switch ctxMode {
		case "inherit":
			b.msgs = append([]string(nil), c.msgs...)
		case "compact":
			b.msgs = []string{`{"role":"user","content":` + jsonString("Summary so far: regions compared up to round "+fmt.Sprint(round)+".") + `}`}
		}
		g.clock[fmt.Sprintf("%d/%s", b.fork, b.branch)] = forkNode.Ended
		b.msgs = append(b.msgs, `{"role":"user","content":`+jsonString(fb[i].Instructions)+`}`)
		g.read(b, fmt.Sprintf("regions/%s-%d.md", name, round))
		if nested && i == 0 && b.depth < 2 {
			g.fork(b, round, []string{"a", "b"}, false)
		}
		status, answer, errText := record.StatusOK, name+" total 4.2M", ""
		if (round*len(names)+i)%7 == 6 {
			status, answer, errText = record.StatusError, "", "provider returned 500 after 3 retries"
			g.emit(b, &record.Node{Kind: record.KindLLM, Status: status, Error: errText,
				LLM: &record.LLM{Model: "gpt-4.1-mini", Fidelity: record.FidelityExact, Request: b.body()}}, 2*time.Second)
			g.final(b, "", status, errText)
		} else {
			g.llm(b, answer)
			g.final(b, answer, status, "")
		}
		bEnd := g.clock[fmt.Sprintf("%d/%s", b.fork, b.branch)]
		if bEnd.After(end) {
			end = bEnd
		}
		ans := answer
		if errText != "" {
			ans = errText
		}
		join.Branches = append(join.Branches, record.JoinBranch{Name: name, Agent: "researcher", Status: status, Duration: bEnd.Sub(forkNode.Ended), Answer: ans})
	}
	g.clock[fmt.Sprintf("%d/%s", c.fork, c.branch)] = end
	g.emit(c, &record.Node{Kind: record.KindJoin, Join: join}, 0)
	var answers []string
	for _, jb := range join.Branches {
		answers = append(answers, jb.Name+": "+jb.Answer)
	}
	c.msgs = append(c.msgs, `{"role":"user","content":`+jsonString("Branch answers: "+strings.Join(answers, "; "))+`}`)
}

func (g *gen) handoff(c *conv, to string) {
	g.llm(c, "", [2]string{"transfer_to_" + to, `{"reason":"billing questions"}`})
	g.emit(c, &record.Node{Kind: record.KindHandoff, Handoff: &record.Handoff{From: c.agent, To: to, Reason: "billing questions"}}, 0)
	c.msgs = append(c.msgs, `{"role":"tool","content":"transferred","tool_call_id":"call_transfer"}`)
	c.setAgent(to)
}

func (g *gen) run(n int) error {
	trunk := &conv{}
	trunk.setAgent("analyst")
	regions := []string{"eu", "us", "apac", "latam"}
	const perRound = 64 // about the nodes one round adds
	for round := 0; int(g.seq)+perRound+3 <= n || round == 0; round++ {
		if round%8 == 0 { // a new user turn, a fresh conversation
			if round > 0 {
				g.llm(trunk, "Turn done.")
				g.final(trunk, "Turn done.", record.StatusOK, "")
				trunk.msgs = nil
				if trunk.agent != "analyst" {
					trunk.setAgent("analyst")
				}
			}
			g.user(trunk, fmt.Sprintf("Compare Q3 revenue across every region (part %d)", round/8+1))
		}
		// serial reads without dependencies
		for i := 0; i < 3; i++ {
			g.read(trunk, fmt.Sprintf("notes/r%d-%d.md", round, i))
		}
		// with dependencies: the index names the next file
		g.read(trunk, fmt.Sprintf("index-%d.md", round))
		g.read(trunk, fmt.Sprintf("regions/from-index-%d.md", round))
		// a fork with a nested fork and failures, then a repeat after the join
		g.fork(trunk, round, regions, true)
		g.read(trunk, fmt.Sprintf("regions/%s-%d.md", regions[round%len(regions)], round))
		// a loop: the same listing three times
		for i := 0; i < 3; i++ {
			args := `{"path":"regions"}`
			g.llm(trunk, "", [2]string{"list_dir", args})
			g.tool(trunk, "list_dir", args, "eu.md us.md apac.md latam.md")
		}
		// a hand-off, and every third round back (a loop between two agents)
		if trunk.agent == "analyst" {
			g.handoff(trunk, "billing")
		} else {
			g.handoff(trunk, "analyst")
		}
		if g.err != nil {
			return g.err
		}
	}
	g.llm(trunk, "All regions compared.")
	g.final(trunk, "All regions compared.", record.StatusOK, "")
	return g.err
}

// LongConversation calls fn with about n nodes of one conversation that
// only grows: series of three independent reads, each series closed by a
// write, every model call carrying the whole conversation as its request
// (the shape where costs per call that grow with the conversation show).
func LongConversation(n int, fn func(*record.Node) error) error {
	g := &gen{fn: fn, clock: map[string]time.Time{}}
	trunk := &conv{}
	trunk.setAgent("analyst")
	g.user(trunk, "Summarise every note")
	for i := 0; int(g.seq)+8 <= n; i++ {
		for k := 0; k < 3; k++ {
			g.read(trunk, fmt.Sprintf("notes/n%d-%d.md", i, k))
		}
		args := fmt.Sprintf(`{"path":"summary-%d.md"}`, i)
		g.llm(trunk, "", [2]string{"write_file", args})
		g.tool(trunk, "write_file", args, "written")
		if g.err != nil {
			return g.err
		}
	}
	g.llm(trunk, "Done.")
	g.final(trunk, "Done.", record.StatusOK, "")
	return g.err
}

// RecordNodes records run r with nodes, in order, into db through the
// store's recorder, finished ok at the end of the last one, and returns
// the run id.
func RecordNodes(ctx context.Context, db *store.DB, r *record.Run, nodes []*record.Node) (string, error) {
	rec, err := db.CreateRun(ctx, r)
	if err != nil {
		return "", err
	}
	end := r.Started
	for i, nd := range nodes {
		if err := rec.AddNode(ctx, nd); err != nil {
			return "", fmt.Errorf("node %d: %w", i+1, err)
		}
		end = nd.Ended
	}
	return rec.RunID(), rec.Finish(ctx, record.StatusOK, "", end)
}
